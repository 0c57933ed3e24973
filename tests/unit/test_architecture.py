"""The dependency direction of the code, read from its import statements (see ARCHITECTURE.md).

Two rules: no import cycle among the modules of memory_agent and compaction, and every import
points to the same layer or one below. Every import statement counts: at the top of a module,
under TYPE_CHECKING, and inside a function (deferred: it runs when called, but still makes the
module depend on its target). A third rule keeps the storage engine a matter of `store/`: no
module above it asks `is_postgres`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import memory_agent

ROOT = Path(memory_agent.__file__).resolve().parent.parent
PACKAGES = ("memory_agent", "compaction")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("compaction",),
    (
        "memory_agent.errors",
        "memory_agent.validation",
        "memory_agent.labels",
        "memory_agent.memory_paths",
        "memory_agent.blocks",
        "memory_agent.authors",
        "memory_agent.settings",
        "memory_agent.rendering",
        "memory_agent.turn_context",
        "memory_agent.reserved_names",
        "memory_agent.testing",
        "memory_agent.redaction",
        "memory_agent.file_modes",
        "memory_agent.sensitivity",
        "memory_agent.encryption_key",
        "memory_agent.time_phrases",
    ),
    ("memory_agent.store",),
    (
        "memory_agent.core_memory",
        "memory_agent.recall",
        "memory_agent.archival",
        "memory_agent.message_vectors",
        "memory_agent.conversation_search",
        "memory_agent.compactor",
        "memory_agent.health",
        "memory_agent.pg_health",
    ),
    ("memory_agent.consolidation", "memory_agent.forgetting"),
    ("memory_agent.manager", "memory_agent.admin"),
    ("memory_agent.tools", "memory_agent.anthropic_memory", "memory_agent.sdk_seams"),
    (
        "memory_agent.agent",
        "memory_agent.session_store",
        "memory_agent.college",
        "memory_agent.portability",
    ),
    ("memory_agent.cli", "memory_agent.soak", "memory_agent.ui"),
)
"""Lowest first. A module belongs to the layer of the longest prefix that names it; the package
`memory_agent` itself is the facade on top and may import anything."""


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


def _imports(module: str, path: Path, source: str | None = None) -> Iterator[tuple[str, bool]]:
    """(imported module, deferred) for every import statement of the module (of `source`, when
    given, read as the text of that module)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    deferred_nodes = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for inner in ast.walk(node)
    }
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, id(node) in deferred_nodes


def _graph(*, deferred: bool = True) -> dict[str, set[str]]:
    return {
        module: {
            target for target, is_deferred in _imports(module, path) if deferred or not is_deferred
        }
        for module, path in MODULES.items()
    }


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
                return stack[stack.index(target) :] + [target]
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
    assert (
        "memory_agent.manager" in graph["memory_agent.tools.dispatch"]
    )  # a TYPE_CHECKING import counts
    # An import inside a function is seen too, and makes a cycle like any other.
    manager = "memory_agent.manager"
    inside = (
        "def f():\n    from .tools import execute_tool\n\n"
        "class C:\n    def g(self):\n        import memory_agent.cli\n"
    )
    found = set(_imports(manager, MODULES[manager], inside))
    assert found == {("memory_agent.tools", True), ("memory_agent.cli", True)}
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycles_function_level_imports_included() -> None:
    assert _find_cycle(_graph()) is None


def test_every_module_has_a_layer() -> None:
    unplaced = [
        module for module in MODULES if module not in PACKAGES and _layer(module) == len(LAYERS)
    ]
    assert unplaced == []


def test_imports_point_down_the_layers_function_level_imports_included() -> None:
    upward = sorted(
        (module, target)
        for module, targets in _graph().items()
        for target in targets
        if _layer(target) > _layer(module)
    )
    assert upward == []


def test_the_manager_layer_does_not_import_tools_or_the_sdk() -> None:
    below_tools = [module for module in MODULES if _layer(module) < _layer("memory_agent.tools")]
    graph = _graph()
    for module in below_tools:
        source = MODULES[module].read_text(encoding="utf-8")
        assert "claude_agent_sdk" not in source, module
        assert not any(target.startswith("memory_agent.tools") for target in graph[module]), module


def _names_used(module: str) -> set[str]:
    """Every name and attribute a module's code mentions, and every name it imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.rpartition(".")[2] for alias in node.names)
            names.update(alias.name.rpartition(".")[2] for alias in node.names)
    return names


def test_the_storage_engine_is_asked_about_in_store_only() -> None:
    """Engine-specific pieces are one interface with two implementations, chosen in `store/`."""
    asking = sorted(
        module
        for module in MODULES
        if not (module == "memory_agent.store" or module.startswith("memory_agent.store."))
        and "is_postgres" in _names_used(module)
    )
    assert asking == []


def test_the_engine_check_finds_a_use() -> None:
    assert "is_postgres" in _names_used("memory_agent.store.snapshot")


def test_the_layers_above_the_manager_use_its_public_api_only() -> None:
    """No reaching past the manager into its parts (`memory.recall`, `memory.db`, `memory._x`)."""
    parts = {"recall", "db", "core"}

    def is_memory(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id == "memory") or (
            isinstance(node, ast.Attribute) and node.attr == "memory"
        )

    reaching = []
    for module in MODULES:
        if _layer(module) <= _layer("memory_agent.manager"):
            continue
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and is_memory(node.value)
                and (node.attr in parts or node.attr.startswith("_"))
            ):
                reaching.append(f"{module}:{node.lineno} memory.{node.attr}")
    assert reaching == []


@pytest.mark.xfail(
    strict=True,
    reason=(
        "export and import read tables below the manager (portability/ uses memory.database and the "
        "storage layers' row functions), and the agent takes memory.compactor and memory.database; "
        "they need a public snapshot API of the manager first (issue 24, item 3; export is being "
        "changed by another branch this session)."
    ),
)
def test_nothing_above_the_manager_reaches_its_compactor_archival_or_database() -> None:
    banned = {"compactor", "archival", "database"}
    reaching = []
    for module in MODULES:
        if _layer(module) <= _layer("memory_agent.manager"):
            continue
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in banned
                and (
                    (isinstance(node.value, ast.Name) and node.value.id == "memory")
                    or (isinstance(node.value, ast.Attribute) and node.value.attr == "memory")
                )
            ):
                reaching.append(f"{module}:{node.lineno} memory.{node.attr}")
    assert reaching == []
