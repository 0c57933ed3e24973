"""Shared fixtures: every test gets its own HOME and a clean memory-agent environment."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import backend_coverage
import pytest
import screenshot_folders
from backends import (
    MODULE_BACKENDS,
    TEST_ENCRYPTION,
    TEST_ENCRYPTION_KEY,
    backend_environ,
    module_store_environ,
)
from warm_interpreter import WarmInterpreter

from memory_agent import MemoryManager, Settings
from memory_agent.testing.chroma_server import ChromaServer, ChromaUnavailable
from memory_agent.testing.postgres_cluster import (
    PostgresCluster,
    PostgresUnavailable,
    TemplateCopies,
)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

_OUR_VARIABLES = (
    "PERSIST_DIRECTORY",
    "AGENT_ID",
    "AGENT_INSTANCE_ID",
    "MODEL_NAME",
    "DEFAULT_BLOCK_LIMIT",
    "MEMORY_CHARACTER_LIMITS",
    "MEMORY_SHARED_BLOCKS",
    "MEMORY_HYBRID_SEARCH",
    "MEMORY_FORGET_WAIT_SECONDS",
    "MEMORY_PERSONA",
    "MEMORY_HUMAN",
    "CHROMA_HOST",
    "CHROMA_PORT",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "MEMORY_DATABASE_URL",
    "MEMORY_ENCRYPTION_KEY",
    "MEMORY_ENCRYPTION_KEY_FILE",
)
REQUIRE_POSTGRES = "MEMORY_AGENT_REQUIRE_POSTGRES"
"""Set (as .ci/run does) to make a PostgreSQL server that cannot start a failure, not a skip."""


TEST_TMPDIR = "MEMORY_AGENT_TEST_TMPDIR"
"""Where the suite keeps its files: unset means a folder in /dev/shm (memory) when it has room,
`disk` means the system's temporary dir, any other value is that folder."""


CLI_JIT_SETTING = "BUN_JSC_useDFGJIT"
"""The SDK's bundled CLI is a Bun program; "0" turns off the JavaScript engine's second
optimising tier (DFG) in every CLI the suite starts. Why: the suite starts about 200 of them, and
most live for one or a few turns, too short for that tier's compiling to pay back. Measured on
2 quiet cores, one start and one turn against the scripted server (8 alternating runs each, CPU
of the CLI process): 0.658 s median with the tier, 0.582 s without; 20 turns in one process:
1.396 s against 1.315 s. The CLI does the same thing either way (the engine's interpreter and
first compiler run every line), only its CPU differs. A value already set is kept."""


def pytest_configure(config: pytest.Config) -> None:
    """The suite's files go to memory (tmpfs) unless told otherwise, and the CLI's JIT is set
    for short runs (CLI_JIT_SETTING).

    Why: most tests write real SQLite files, and each commit waits for the disk's fsync. On the
    project's 2-core CI machine the disk made tests/unit/test_college_isolation.py take 73 s of
    wall time against 39 s in /dev/shm (load 6-8). tmpfs honours every file operation SQLite and
    Chroma use except that fsync returns at once; no test depends on surviving a power cut (the
    crash tests kill processes, whose writes the kernel keeps either way). Set before any worker
    or child process starts, so pytest-xdist workers, benchmarks and CLI runs inherit it."""
    del config
    os.environ.setdefault(CLI_JIT_SETTING, "0")
    chosen = os.environ.get(TEST_TMPDIR, "")
    if chosen == "disk":
        return
    folder = Path(chosen) if chosen else _memory_folder()
    if folder is None:
        return
    if not chosen:  # a folder the user names keeps its own mode
        folder.mkdir(exist_ok=True)
        folder.chmod(0o711)  # others may pass through, not list: the PostgreSQL server's own user
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def _memory_folder() -> Path | None:
    """A folder of this user's in /dev/shm, if /dev/shm exists with 4 GB free."""
    shm = Path("/dev/shm")
    try:
        if not shm.is_dir() or shutil.disk_usage(shm).free < 4 * 1024**3:
            return None
    except OSError:
        return None
    return shm / f"memory-agent-tests-{os.getuid()}"


def pytest_report_header() -> str:
    """The SDK version every run was made with (the seams in memory_agent.sdk_seams depend on
    it)."""
    from memory_agent.sdk_seams import sdk_version

    return f"claude-agent-sdk {sdk_version()}"


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads the developer's HOME, ~/.memory_agent, exported settings or terminal size."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in [*_OUR_VARIABLES, *(n for n in os.environ if n.startswith("COMPACTION_"))]:
        monkeypatch.delenv(name, raising=False)
    # A terminal size the run inherits (pytest-xdist workers get COLUMNS=80) would narrow the
    # CLI's tables; a test that wants a width sets one itself.
    for name in ("COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(scope="session")
def warm_interpreter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmInterpreter]:
    """One interpreter per worker that imported the SDK, Chroma and onnxruntime once; the bench
    scripts' quick runs and the examples run in children forked from it (warm_interpreter.py)."""
    root = Path(__file__).resolve().parents[1]
    interpreter = WarmInterpreter(
        {**os.environ, "PYTHONPATH": str(root)}, tmp_path_factory.mktemp("warm-home")
    )
    yield interpreter
    interpreter.close()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL server for the whole run (see
    memory_agent.testing.postgres_cluster)."""
    try:
        if importlib.util.find_spec("psycopg") is None:
            raise PostgresUnavailable("psycopg is not installed (pip install -e '.[postgres]')")
        cluster = PostgresCluster().start()
    except PostgresUnavailable as error:
        if os.environ.get(REQUIRE_POSTGRES):
            pytest.fail(
                f"PostgreSQL is required ({REQUIRE_POSTGRES} is set) but cannot start: {error}"
            )
        pytest.skip(f"PostgreSQL backend not tested here: {error}")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def postgres_template(
    postgres_cluster: PostgresCluster, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A database migrated once per run to the current schema and frozen: each `backend` test on
    PostgreSQL gets a copy of it (cheaper than migrating an empty one every time). Only the schema
    is in it, no agent and no row, so a copy is what a store is after its first open."""
    from memory_agent.store.postgres import PostgresDatabase

    url = postgres_cluster.database_url("template")
    PostgresDatabase(url, tmp_path_factory.mktemp("template")).close()
    return postgres_cluster.freeze_as_template(url)


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """A fresh empty database on the session's PostgreSQL server, dropped afterwards: for tests of
    what the first open of an empty database does (migrations, first use, 'run init first')."""
    url = postgres_cluster.database_url()
    yield url
    postgres_cluster.drop(url)


@pytest.fixture(scope="session")
def postgres_template_copies(
    postgres_cluster: PostgresCluster, postgres_template: str
) -> Iterator[TemplateCopies]:
    """Copies of the template made ahead by a thread while tests run: a test on PostgreSQL does not
    wait for CREATE DATABASE (its DROP comes with a batch in a later teardown: TemplateCopies)."""
    copies = postgres_cluster.copies_ahead(postgres_template)
    yield copies
    copies.close()


@pytest.fixture
def migrated_postgres_url(postgres_template_copies: TemplateCopies) -> Iterator[str]:
    """A fresh database of its own at the current schema (a copy of the template), dropped
    afterwards."""
    url = postgres_template_copies.take()
    yield url
    postgres_template_copies.release(url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per backend: PostgreSQL through MEMORY_DATABASE_URL (a fresh database,
    already at the current schema; `@pytest.mark.empty_database` gives an empty one instead, for
    tests of the first open), which every MemoryManager, Settings.from_env() and CLI process of the
    test then uses."""
    if request.param == "postgres":
        empty = request.node.get_closest_marker("empty_database") is not None
        url = request.getfixturevalue("postgres_url" if empty else "migrated_postgres_url")
        monkeypatch.setenv("MEMORY_DATABASE_URL", url)
    elif os.environ.get(TEST_ENCRYPTION) == "1":
        monkeypatch.setenv("MEMORY_ENCRYPTION_KEY", TEST_ENCRYPTION_KEY)
    return str(request.param)


@pytest.fixture(scope="module", params=MODULE_BACKENDS)
def module_backend(request: pytest.FixtureRequest) -> str:
    """Like `backend`, once per module instead of once per test: for a module's many cases that
    only read, or are refused and assert that nothing changed, and can share one store
    (`module_store`) instead of a store each (on PostgreSQL a database copied and dropped per
    case)."""
    return str(request.param)


@pytest.fixture(scope="module")
def module_store(
    module_backend: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """Settings' environment of the module's store on `module_backend` (PERSIST_DIRECTORY, and
    MEMORY_DATABASE_URL on PostgreSQL): pass it to Settings.from_env, since the environment itself
    is cleared before every test."""
    folder = tmp_path_factory.mktemp("module-store")
    with module_store_environ(module_backend, request, folder) as environ:
        yield environ


@pytest.fixture
def other_store_environ(
    request: pytest.FixtureRequest,
) -> Callable[[Mapping[str, str]], dict[str, str]]:
    """Settings' environment for a second storage dir of the test: on PostgreSQL another deployment
    is another database (made once per test), on SQLite the directory alone says where."""
    made: list[str] = []

    def environ(base: Mapping[str, str]) -> dict[str, str]:
        if not os.environ.get("MEMORY_DATABASE_URL"):
            return dict(base)
        if not made:
            made.append(request.getfixturevalue("postgres_cluster").database_url("other"))
        return {**base, "MEMORY_DATABASE_URL": made[0]}

    return environ


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A real Chroma server (`chroma run`) for this test, its data under tmp_path."""
    try:
        with ChromaServer(tmp_path / "chroma-server") as server:
            yield server
    except ChromaUnavailable as error:
        pytest.skip(f"no Chroma server here: {error}")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path / "store")}), env_file=None
    )


@pytest.fixture
def memory(settings: Settings) -> MemoryManager:
    manager = MemoryManager(agent_id="agent-a", settings=settings)
    yield manager
    manager.close()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared test data not found at {SHARED_DATA} (clone with ../shared beside it)")
    return SHARED_DATA


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Note each storage test that runs on SQLite alone without a written reason, before -m and -k
    deselect any (tests/unit/test_backend_coverage.py fails on them; see
    tests/backend_coverage.py)."""
    backend_coverage.record(config, items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    screenshot_folders.hand_over(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A pytest-xdist worker finished (an xdist hook; without xdist it is never called)."""
    screenshot_folders.take_over(node.config, getattr(node, "workeroutput", {}))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in screenshot_folders.summary_lines(config):
        terminalreporter.write_line(line)
