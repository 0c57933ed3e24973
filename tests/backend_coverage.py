"""Which storage tests run on SQLite alone without saying why (issue 17: nothing is skipped on
PostgreSQL without a written reason).

A collected test touches storage when it requests a fixture whose body opens a store, or when its
own body, or a function of its module that it calls, does. Opening a store is recognised by what
every way in has to name (`STORE_OPENERS`): a `MemoryManager`, `MemoryAwareAgent`, session store,
`Database`, `open_store`, an import, a college session, or a storage dir handed over (`storage=`,
`storage_dir=`, `--storage-dir`, PERSIST_DIRECTORY). Such a test must run on both backends (the
`backend` fixture) or on PostgreSQL (marked `postgres`), or carry
`@pytest.mark.sqlite_only(reason=...)` with the reason written out. And a test that asks for the
PostgreSQL server itself (`postgres_url`, `postgres_cluster`) must be marked `postgres`, or
`-m 'not postgres'` would still start it.

tests/conftest.py records the verdicts at collection, before `-m` or `-k` drop anything, and
tests/unit/test_backend_coverage.py asserts there are none; run with `-p backend_coverage`, the
same check prints its verdicts after a `--collect-only` (which is how that test checks a run that
did not collect the whole suite).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

__all__ = [
    "BACKEND_FIXTURES",
    "SERVER_FIXTURES",
    "STORE_OPENERS",
    "TESTS",
    "UNCOVERED",
    "collected_whole_suite",
    "problem_of",
    "pytest_collection_finish",
    "record",
]

TESTS = Path(__file__).resolve().parent

BACKEND_FIXTURES = frozenset({"backend", "module_backend"})
"""A test requesting one of these runs on both backends."""

SERVER_FIXTURES = frozenset(
    {
        "postgres_url",
        "migrated_postgres_url",
        "postgres_template",
        "postgres_template_copies",
        "postgres_cluster",
    }
)
"""A test requesting one of these starts the PostgreSQL server: it must be marked `postgres`."""

STORE_OPENERS = re.compile(
    r"\b(?:MemoryManager|MemoryAwareAgent|SQLiteSessionStore(?:\.open)?|open_store|import_file|import_snapshot"
    r"|CollegeSession\.open)\(|Database\("
    r"|--storage-dir|\bPERSIST_DIRECTORY\b|\bpersist_directory=|\bstorage(?:_dir)?="
)
"""What code that opens a store calls or sets: each way in of the library, CLI and examples (a
name alone, in an annotation or a list of public names, opens nothing)."""

UNCOVERED = pytest.StashKey[dict[str, str]]()
"""config.stash: node id -> why that test counts as a storage test run on SQLite alone."""


def record(config: pytest.Config, items: Iterable[pytest.Item]) -> None:
    """Keep each collected test's verdict in `config.stash[UNCOVERED]` (tests/conftest.py calls
    it)."""
    uncovered = config.stash.setdefault(UNCOVERED, {})
    for item in items:
        problem = problem_of(item)
        if problem:
            uncovered[item.nodeid] = problem


def collected_whole_suite(config: pytest.Config) -> bool:
    """Whether this run collected every test module (its arguments name tests/ or a folder
    above)."""
    invoked_in = config.invocation_params.dir
    paths = [(invoked_in / argument.split("::")[0]).resolve() for argument in config.args]
    return any(TESTS == path or TESTS.is_relative_to(path) for path in paths)


def pytest_collection_finish(session: pytest.Session) -> None:
    """With `-p backend_coverage`: print one line per uncovered storage test."""
    for nodeid, problem in sorted(session.config.stash.get(UNCOVERED, {}).items()):
        print(f"UNCOVERED {nodeid} :: {problem}")


def problem_of(item: pytest.Item) -> str | None:
    """Why `item` is a storage test run on SQLite alone without a written reason, or None."""
    if not isinstance(item, pytest.Function):
        return None
    on_postgres = item.get_closest_marker("postgres") is not None
    if SERVER_FIXTURES & set(item.fixturenames) and not on_postgres:
        return (
            "asks for the PostgreSQL server but is not marked postgres, so -m 'not postgres' would "
            "still "
            "start it: add @pytest.mark.postgres"
        )
    marker = item.get_closest_marker("sqlite_only")
    if marker is not None:
        reason = marker.kwargs.get("reason", marker.args[0] if marker.args else "")
        if isinstance(reason, str) and reason.strip():
            return None
        return "marked sqlite_only without a reason: write why it cannot run on PostgreSQL"
    if on_postgres or BACKEND_FIXTURES & set(item.fixturenames):
        return None
    opened = _opens_a_store(item)
    if opened is None:
        return None
    return (
        f"opens a store ({opened}) on SQLite only: add pytest.mark.usefixtures('backend'), "
        "or @pytest.mark.sqlite_only(reason=...) saying why it cannot run on PostgreSQL"
    )


def _opens_a_store(item: pytest.Function) -> str | None:
    """Where the test opens a store: a fixture it requests, or code its module runs for it."""
    module = Path(str(item.path))
    for name in item.fixturenames:
        source = _fixture_source(module, item.config.rootpath, name)
        if source is not None and STORE_OPENERS.search(source):
            return f"fixture '{name}'"
    own = _definitions(module)
    test_name = (
        f"{item.cls.__name__}.{item.originalname}" if item.cls is not None else item.originalname
    )
    for name in _reached(own, test_name):
        found = STORE_OPENERS.search(own[name].source)
        if found:
            return f"'{found.group(0)}' in {name}"
    return None


def _reached(definitions: dict[str, _Definition], start: str) -> Iterator[str]:
    """`start` and every function of the same module it calls, directly or through another."""
    seen: set[str] = set()
    waiting = [start]
    while waiting:
        name = waiting.pop()
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        yield name
        waiting.extend(definitions[name].calls)


@cache
def _fixture_source(module: Path, root: Path, name: str) -> str | None:
    """The source of fixture `name` as `module` sees it: its own, else the nearest conftest's."""
    for path in [
        module,
        *(folder / "conftest.py" for folder in module.parents if folder.is_relative_to(root)),
    ]:
        definition = _definitions(path).get(name)
        if definition is not None:
            return definition.source
    return None


@dataclass(frozen=True)
class _Definition:
    """One function of a file: its source and the names it calls."""

    source: str
    calls: frozenset[str]


@cache
def _definitions(path: Path) -> dict[str, _Definition]:
    """Module-level functions of `path` (and methods, as 'Class.method'), read once per run."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")  # split once: ast.get_source_segment splits the file on every call
    found: dict[str, _Definition] = {}
    for node in ast.parse(text).body:
        methods = node.body if isinstance(node, ast.ClassDef) else [node]
        prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for function in methods:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls = frozenset(
                    call.func.id
                    for call in ast.walk(function)
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                )
                whole_lines = lines[function.lineno - 1 : function.end_lineno]
                found[prefix + function.name] = _Definition("\n".join(whole_lines), calls)
    return found
