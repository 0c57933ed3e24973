"""Fixtures of the browser tests: the real `memory-agent ui` on a seeded store, headless Chromium,
and a folder for screenshots.

No browser here (Playwright not installed, Chromium missing or not starting) skips these tests with
the reason, or fails them when MEMORY_AGENT_REQUIRE_BROWSER=1 (as .ci/run sets). The server and
the browser are started once per module; each test gets a fresh browser context (own cookies).
Screenshots go to $MEMORY_AGENT_SCREENSHOTS when set, else to a folder under pytest's temporary
directory; the folder is printed at the end of the run (tests/screenshot_folders.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import screenshot_folders
from inspector_seed import Seeded, seed

from memory_agent.testing.browser import REQUIRE_BROWSER, BrowserUnavailable, launch_chromium
from memory_agent.testing.ui_process import UiServer

SCREENSHOTS_VARIABLE = "MEMORY_AGENT_SCREENSHOTS"
_DROPPED_PREFIXES = ("MEMORY_", "COMPACTION_", "CHROMA_", "ANTHROPIC_")
_DROPPED = {
    "PERSIST_DIRECTORY",
    "AGENT_ID",
    "AGENT_INSTANCE_ID",
    "MODEL_NAME",
    "DEFAULT_BLOCK_LIMIT",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder drives a browser: mark it `browser` (-m 'not browser' leaves
    them out)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.browser)


def browser_unavailable(reason: str) -> None:
    """Skip with the reason, or fail where a browser is required."""
    if os.environ.get(REQUIRE_BROWSER):
        pytest.fail(
            f"A browser is required ({REQUIRE_BROWSER} is set) but cannot be driven: {reason}"
        )
    pytest.skip(f"browser tests not run here: {reason}")


def server_environ(home: Path) -> dict[str, str]:
    """The environment of a `memory-agent ui` child: this one without the developer's memory-agent
    settings, with a HOME of its own and no network for telemetry or model downloads."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if name not in _DROPPED and not name.startswith(_DROPPED_PREFIXES)
    }
    return {
        **environ,
        "HOME": str(home),
        "ANONYMIZED_TELEMETRY": "False",
        "HF_HUB_OFFLINE": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium (a Playwright Browser) for the module."""
    try:
        with launch_chromium() as browser:
            yield browser
    except BrowserUnavailable as error:
        browser_unavailable(str(error))


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A page in a fresh browser context: cookies of its own, so each test starts a new UI
    session."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    yield tab
    context.close()


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Seeded]:
    """A storage dir seeded with the inspector's test data (tests/browser/inspector_seed.py)."""
    storage = tmp_path_factory.mktemp("inspector-store")
    return storage, seed({"PERSIST_DIRECTORY": str(storage)})


@pytest.fixture(scope="module")
def start_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., UiServer]]:
    """Start `memory-agent ui` (keyword arguments as UiServer's, `environ` adding variables to the
    clean environment); every one started is stopped at the end of the module, and must have
    exited cleanly."""
    started: list[UiServer] = []
    home = tmp_path_factory.mktemp("ui-home")

    def start(*, environ: Mapping[str, str] | None = None, **arguments: Any) -> UiServer:
        server = UiServer(environ={**server_environ(home), **(environ or {})}, **arguments).start()
        started.append(server)
        return server

    yield start
    for server in started:
        code = server.stop()
        assert code is not None, "memory-agent ui did not stop on SIGINT:\n" + "\n".join(
            server.output[-20:]
        )
        assert "Traceback" not in "\n".join(server.output), (
            "memory-agent ui printed a traceback:\n" + "\n".join(server.output[-40:])
        )


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    """Where the page screenshots go ($MEMORY_AGENT_SCREENSHOTS, else under pytest's tmp path)."""
    named = os.environ.get(SCREENSHOTS_VARIABLE)
    folder = Path(named) if named else tmp_path_factory.mktemp("inspector-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    screenshot_folders.remember(pytestconfig, folder)
    return folder
