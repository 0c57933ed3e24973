"""The dependency direction of the code, read from its import statements (see ARCHITECTURE.md).

Two rules: no import cycle among the modules of memory_agent and compaction, and every import
points to the same layer or one below. Imports inside functions are deferred (they run when
called, not when the module loads); the only upward ones allowed are listed in DEFERRED_UPWARD.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memory_agent

ROOT = Path(memory_agent.__file__).resolve().parent.parent
PACKAGES = ("memory_agent", "compaction")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("compaction",),
    ("memory_agent.errors", "memory_agent.validation", "memory_agent.labels", "memory_agent.memory_paths",
     "memory_agent.blocks", "memory_agent.authors", "memory_agent.settings", "memory_agent.rendering",
     "memory_agent.turn_context", "memory_agent.reserved_names", "memory_agent.testing", "memory_agent.redaction",
     "memory_agent.file_modes"),
    ("memory_agent.store",),
    ("memory_agent.core_memory", "memory_agent.recall", "memory_agent.archival", "memory_agent.compactor",
     "memory_agent.health", "memory_agent.pg_health"),
    ("memory_agent.consolidation",),
    ("memory_agent.manager", "memory_agent.admin"),
    ("memory_agent.tools", "memory_agent.anthropic_memory", "memory_agent.sdk_seams"),
    ("memory_agent.agent", "memory_agent.session_store", "memory_agent.college", "memory_agent.portability"),
    ("memory_agent.cli", "memory_agent.soak", "memory_agent.ui"),
)
"""Lowest first. A module belongs to the layer of the longest prefix that names it; the package
`memory_agent` itself is the facade on top and may import anything."""

DEFERRED_UPWARD = {
    # MemoryManager.execute_tool / get_tools_definitions / tool_specs: one-line delegations kept
    # for existing callers; they import the tools layer when called.
    ("memory_agent.manager", "memory_agent.tools"),
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> Iterator[tuple[str, bool]]:
    """(imported module, deferred) for every import statement of the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    deferred_nodes = {id(inner) for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      for inner in ast.walk(node)}
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, id(node) in deferred_nodes


def _graph(*, deferred: bool) -> dict[str, set[str]]:
    return {module: {target for target, is_deferred in _imports(module, path) if deferred or not is_deferred}
            for module, path in MODULES.items()}


def _layer(module: str) -> int:
    best = (-1, len(LAYERS))  # (prefix length, layer); the facade package sits above every layer
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), number)
    return best[1]


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_the_walker_sees_the_imports_it_should() -> None:
    graph = _graph(deferred=False)
    assert "memory_agent.store.database" in graph["memory_agent.manager"]
    assert "memory_agent.manager" in graph["memory_agent.tools.dispatch"]  # a TYPE_CHECKING import counts
    assert "memory_agent.tools" not in graph["memory_agent.manager"]
    assert "memory_agent.tools" in _graph(deferred=True)["memory_agent.manager"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycles() -> None:
    assert _find_cycle(_graph(deferred=False)) is None


def test_every_module_has_a_layer() -> None:
    unplaced = [module for module in MODULES if module not in PACKAGES and _layer(module) == len(LAYERS)]
    assert unplaced == []


def test_imports_point_down_the_layers() -> None:
    upward = sorted(
        (module, target)
        for module, targets in _graph(deferred=True).items()
        for target in targets
        if _layer(target) > _layer(module) and (module, target) not in DEFERRED_UPWARD
    )
    assert upward == []


def test_the_manager_layer_does_not_import_tools_or_the_sdk_when_loaded() -> None:
    below_tools = [module for module in MODULES if _layer(module) < _layer("memory_agent.tools")]
    for module in below_tools:
        source = MODULES[module].read_text(encoding="utf-8")
        assert "claude_agent_sdk" not in source, module
    assert DEFERRED_UPWARD == {("memory_agent.manager", "memory_agent.tools")}


def test_the_layers_above_the_manager_use_its_public_api_only() -> None:
    """No reaching past the manager into its parts (`memory.recall`, `memory.db`, `memory._x`)."""
    parts = {"recall", "db", "core"}

    def is_memory(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id == "memory") or (
            isinstance(node, ast.Attribute) and node.attr == "memory")

    reaching = []
    for module in MODULES:
        if _layer(module) <= _layer("memory_agent.manager"):
            continue
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and is_memory(node.value) and (
                    node.attr in parts or node.attr.startswith("_")):
                reaching.append(f"{module}:{node.lineno} memory.{node.attr}")
    assert reaching == []
