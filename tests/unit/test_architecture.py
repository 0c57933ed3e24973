"""The dependency direction of the code, read from its import statements (see ARCHITECTURE.md).

Two rules: no import cycle among the modules of memory_agent and compaction, and every import
points to the same layer or one below. Every import statement counts: at the top of a module,
under TYPE_CHECKING, and inside a function (deferred: it runs when called, but still makes the
module depend on its target). A third rule keeps the storage engine a matter of `store/`: no
module above it asks `is_postgres`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import memory_agent

ROOT = Path(memory_agent.__file__).resolve().parent.parent
PACKAGES = ("memory_agent", "compaction")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("compaction",),
    (
        "memory_agent._old_paths",
        "memory_agent.errors",
        "memory_agent.validation",
        "memory_agent.core",
        "memory_agent.core.labels",
        "memory_agent.core.memory_paths",
        "memory_agent.core.blocks",
        "memory_agent.authors",
        "memory_agent.settings",
        "memory_agent.prompt",
        "memory_agent.prompt.rendering",
        "memory_agent.prompt.turn_context",
        "memory_agent.prompt.recall_guard",
        "memory_agent.prompt.reserved_names",
        "memory_agent.testing",
        "memory_agent.privacy",
        "memory_agent.privacy.redaction",
        "memory_agent.privacy.file_modes",
        "memory_agent.privacy.sensitivity",
        "memory_agent.privacy.encryption_key",
        "memory_agent.conversation",
        "memory_agent.conversation.time_phrases",
    ),
    ("memory_agent.store",),
    (
        "memory_agent.core.core_memory",
        "memory_agent.conversation.recall",
        "memory_agent.archival",
        "memory_agent.conversation.message_vectors",
        "memory_agent.conversation.conversation_search",
        "memory_agent.conversation.compactor",
        "memory_agent.maintenance",
        "memory_agent.maintenance.health",
        "memory_agent.maintenance.pg_health",
    ),
    ("memory_agent.consolidation", "memory_agent.forgetting", "memory_agent.snapshots"),
    ("memory_agent.manager", "memory_agent.maintenance.admin"),
    (
        "memory_agent.tools",
        "memory_agent.integrations",
        "memory_agent.integrations.anthropic_memory",
        "memory_agent.sdk_seams",
    ),
    (
        "memory_agent.agent",
        "memory_agent.integrations.session_store",
        "memory_agent.integrations.college",
        "memory_agent.portability",
    ),
    ("memory_agent.cli", "memory_agent.testing.soak", "memory_agent.ui"),
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


@functools.cache
def _parsed(module: str) -> ast.Module:
    """The module's syntax tree, parsed once for all the tests here (they walk every module)."""
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _imports(module: str, path: Path, source: str | None = None) -> Iterator[tuple[str, bool]]:
    """(imported module, deferred) for every import statement of the module (of `source`, when
    given, read as the text of that module)."""
    tree = _parsed(module) if source is None else ast.parse(source)
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


@functools.cache
def _module_imports(module: str) -> tuple[tuple[str, bool], ...]:
    """`_imports` of a module's own text, found once for all the tests here."""
    return tuple(_imports(module, MODULES[module]))


def _graph(*, deferred: bool = True) -> dict[str, set[str]]:
    return {
        module: {
            target for target, is_deferred in _module_imports(module) if deferred or not is_deferred
        }
        for module in MODULES
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
    assert "memory_agent.store.protocol" in graph["memory_agent.manager"]
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
    for node in ast.walk(_parsed(module)):
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
    assert "is_postgres" in _names_used("memory_agent.store.dialect")


def test_within_store_the_engine_is_picked_by_by_engine_only() -> None:
    """Each engine-specific piece is an interface with two implementations: `by_engine` picks
    one, and no module of `store/` branches on `is_postgres` itself (see store.dialect)."""
    asking = sorted(
        module
        for module in MODULES
        if module.startswith("memory_agent.store.")
        and module != "memory_agent.store.dialect"
        and "is_postgres" in _names_used(module)
    )
    assert asking == []


SQLITE_TYPES = {"Connection", "Cursor", "Row"}
SQLITE_TYPING_EXCEPTIONS: dict[str, str] = {}
"""Packages still allowed to annotate with sqlite3's types, each with the reason."""


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    """Every annotation of a module: arguments, returns, annotated assignments, `cast` targets."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
            yield from (arg.annotation for arg in every if arg.annotation is not None)
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "cast"
            and node.args
        ):
            yield node.args[0]


def _sqlite_typing(module: str, source: str | None = None) -> list[str]:
    """Where `module` types something as sqlite3's (an annotation, or sqlite3 imported for it)."""
    tree = _parsed(module) if source is None else ast.parse(source)
    found: list[str] = []
    in_annotations: set[int] = set()
    for annotation in _annotations(tree):
        for node in ast.walk(annotation):
            in_annotations.add(id(node))
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "sqlite3"
                and node.attr in SQLITE_TYPES
            ):
                found.append(f"{module}:{node.lineno} sqlite3.{node.attr}")
            elif isinstance(node, ast.Constant) and "sqlite3." in str(node.value):
                found.append(f"{module}:{node.lineno} {node.value!r}")
    imports_sqlite3 = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "sqlite3":
            typing_names = {alias.name for alias in node.names} & SQLITE_TYPES
            found += [f"{module}:{node.lineno} from sqlite3 import {n}" for n in typing_names]
        elif isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names):
            imports_sqlite3 = True
    uses = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "sqlite3" and id(node) not in in_annotations
    ]
    if imports_sqlite3 and not uses:
        found.append(f"{module}: imports sqlite3 only to annotate with it")
    return found


def test_only_store_types_connections_as_sqlite3() -> None:
    """Writers and readers are typed with `store.protocol` (either engine), never sqlite3's types:
    only `store/` knows the engine (and the named exceptions, each with its reason)."""
    typed = [
        place
        for module in MODULES
        if module.startswith("memory_agent.")
        and not module.startswith("memory_agent.store.")
        and not any(
            module == package or module.startswith(package + ".")
            for package in SQLITE_TYPING_EXCEPTIONS
        )
        for place in _sqlite_typing(module)
    ]
    assert typed == []


def test_the_sqlite3_typing_check_finds_a_use() -> None:
    """The check sees what it should: migrations (SQLite's own) annotate with sqlite3 for good;
    an argument, a return, a variable, a cast and an import kept only for them are all seen."""
    assert any("sqlite3.Connection" in p for p in _sqlite_typing("memory_agent.store.migrations"))
    source = (
        "import sqlite3\n"
        "from sqlite3 import Row\n"
        "def f(conn: sqlite3.Connection, *rows: 'sqlite3.Row') -> sqlite3.Cursor:\n"
        "    seen: sqlite3.Row | None = cast(sqlite3.Row, None)\n"
    )
    found = _sqlite_typing("memory_agent.conversation.recall", source)
    assert len(found) == 7 and found[-1].endswith("imports sqlite3 only to annotate with it")
    used = "import sqlite3\nerror = sqlite3.Error\n"
    assert _sqlite_typing("memory_agent.conversation.recall", used) == []


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
        for node in ast.walk(_parsed(module)):
            if (
                isinstance(node, ast.Attribute)
                and is_memory(node.value)
                and (node.attr in parts or node.attr.startswith("_"))
            ):
                reaching.append(f"{module}:{node.lineno} memory.{node.attr}")
    assert reaching == []


OWN_TABLES_IN_THE_DATABASE = {"memory_agent.integrations.session_store": {"database"}}
"""The SDK session store keeps tables of its own (the SDK's transcripts) in the storage dir's
database and shares the manager's connection to it (`SQLiteSessionStore.for_memory`); it reads
and writes no table of memory's. Nothing else above the manager takes the database."""


def test_nothing_above_the_manager_reaches_its_compactor_archival_or_database() -> None:
    banned = {"compactor", "archival", "database"}
    reaching = []
    for module in MODULES:
        if _layer(module) <= _layer("memory_agent.manager"):
            continue
        allowed = OWN_TABLES_IN_THE_DATABASE.get(module, set())
        for node in ast.walk(_parsed(module)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in banned - allowed
                and (
                    (isinstance(node.value, ast.Name) and node.value.id == "memory")
                    or (isinstance(node.value, ast.Attribute) and node.value.attr == "memory")
                )
            ):
                reaching.append(f"{module}:{node.lineno} memory.{node.attr}")
    assert reaching == []


STORAGE_INTERNALS = (
    "memory_agent.store",
    "memory_agent.core.core_memory",
    "memory_agent.conversation.recall",
    "memory_agent.archival",
    "memory_agent.conversation.compactor",
    "memory_agent.maintenance.health",
    "memory_agent.maintenance.pg_health",
    "memory_agent.consolidation",
    "memory_agent.forgetting",
)
"""The storage layers and the kinds of memory: the manager's parts, reached only through it."""


def _reaches_storage(target: str) -> bool:
    return any(target == name or target.startswith(name + ".") for name in STORAGE_INTERNALS)


def test_export_and_import_go_through_the_manager_only() -> None:
    """portability/ turns snapshots into files and back; the tables are read and written by the
    manager's snapshot API (`MemoryManager.snapshot`, `restore`, `admin.restore_into`)."""
    reaching = sorted(
        (module, target)
        for module, targets in _graph().items()
        if module.startswith("memory_agent.portability")
        for target in targets
        if _reaches_storage(target)
    )
    assert reaching == []


def test_the_snapshot_ban_sees_a_storage_import() -> None:
    assert _reaches_storage("memory_agent.store.database")
    assert _reaches_storage("memory_agent.archival.passages")
    assert not _reaches_storage("memory_agent.snapshots.records")
    source = "from ..store.database import utc_now\n"
    module = "memory_agent.portability.files"
    assert any(_reaches_storage(t) for t, _ in _imports(module, MODULES[module], source))
