"""Helpers of the inspector's HTTP tests (a module of its own: every test folder has a
`conftest`)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from backends import backend_environ
from starlette.testclient import TestClient

from memory_agent import MemoryManager, Settings
from memory_agent.authors import Author
from memory_agent.store.backend import open_store
from memory_agent.store.snapshot import Snapshot, store_snapshot
from memory_agent.ui import create_app

BOUND = "127.0.0.1:8765"
BASE_URL = f"http://{BOUND}"
UI_USER = Author.person("inspector-tester")
BLOCK_HOSTILE = "</textarea><script>tag</script>"


def settings_for(directory: Path) -> Settings:
    return Settings.from_env(backend_environ({"PERSIST_DIRECTORY": str(directory)}), env_file=None)


def snapshot(memory: MemoryManager) -> Snapshot:
    """Every row of the store, read through a second connection (see store/snapshot.py)."""
    db = open_store(memory.storage_dir, memory.settings.database_url)
    try:
        return store_snapshot(db)
    finally:
        db.close()


def client_for(memory: Any, **options: Any) -> TestClient:
    options.setdefault("bound_host", BOUND)
    options.setdefault("user", UI_USER)
    base = options.pop("base_url", f"http://{options['bound_host']}")
    raise_errors = options.pop("raise_server_exceptions", True)
    return TestClient(
        create_app(memory, **options),
        base_url=base,
        follow_redirects=False,
        raise_server_exceptions=raise_errors,
    )


def data_page(text: str) -> str | None:
    found = re.search(r'<main id="page" data-page="([a-z]*)">', text)
    return found.group(1) if found else None


def error_line(text: str) -> str:
    found = re.findall(r'<p class="error">(.*?)</p>', text, re.S)
    assert len(found) == 1, text
    return html.unescape(found[0])


def flash_line(text: str) -> str:
    found = re.findall(r'<p class="flash">(.*?)</p>', text, re.S)
    assert len(found) == 1, text
    return html.unescape(found[0])


def csrf_token(client: TestClient, path: str = "/agents/ada/blocks/persona") -> str:
    """The session's CSRF token, as a page's forms carry it (the GET also sets the session
    cookie)."""
    response = client.get(path)
    found = re.search(r'name="csrf_token" value="([^"]*)"', response.text)
    assert found, f"no form on {path}"
    return found.group(1)


def textarea_value(text: str) -> str:
    """What a browser shows in the edit textarea (HTML drops one newline right after the tag)."""
    found = re.search(r"<textarea[^>]*>\n?(.*?)</textarea>", text, re.S)
    assert found, text
    return html.unescape(found.group(1))
