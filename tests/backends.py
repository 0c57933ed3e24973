"""The backend a test runs on, for tests that build their settings from an explicit mapping."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

__all__ = [
    "MODULE_BACKENDS",
    "POSTGRES_SLOW",
    "TEST_ENCRYPTION",
    "TEST_ENCRYPTION_KEY",
    "OtherEnviron",
    "backend_environ",
    "module_store_environ",
]

TEST_ENCRYPTION = "MEMORY_AGENT_TEST_ENCRYPTION"
"""Set to 1 to run every `backend` test's SQLite run on an encrypted store (docs/encryption.md)."""
TEST_ENCRYPTION_KEY = "test-suite-encryption-key"

OtherEnviron = Callable[[Mapping[str, str]], dict[str, str]]
"""The `other_store_environ` fixture: settings' environment for a test's second storage dir."""


def backend_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` plus MEMORY_DATABASE_URL when the `backend` fixture chose PostgreSQL, or plus
    MEMORY_ENCRYPTION_KEY when it chose an encrypted SQLite store
    (MEMORY_AGENT_TEST_ENCRYPTION=1)."""
    url = os.environ.get("MEMORY_DATABASE_URL")
    if url:
        return {**environ, "MEMORY_DATABASE_URL": url}
    key = os.environ.get("MEMORY_ENCRYPTION_KEY")
    if key and "MEMORY_ENCRYPTION_KEY" not in environ:
        return {**environ, "MEMORY_ENCRYPTION_KEY": key}
    return dict(environ)


POSTGRES_SLOW = pytest.mark.parametrize(
    "backend",
    ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])],
    indirect=True,
)
"""Run on both backends, the PostgreSQL run under `slow` (for a test too long to run twice in the
default suite, whose PostgreSQL run a shorter test stands in for)."""


MODULE_BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""Params of the `module_backend` fixture (tests/conftest.py)."""


@contextlib.contextmanager
def module_store_environ(
    backend: str, request: pytest.FixtureRequest, folder: Path
) -> Iterator[dict[str, str]]:
    """Settings' environment of one store kept for a whole module on `backend`, as the `backend`
    fixture would make it for one test: on PostgreSQL a copy of the migrated template (dropped at
    the end), on SQLite `folder` (encrypted under MEMORY_AGENT_TEST_ENCRYPTION=1).

    Why: for a module of many cases that each only read or are refused and must change nothing,
    a store per case was most of the module's time (a database copied and dropped per test on
    PostgreSQL). The environment is given explicitly: the autouse isolated_environment fixture
    clears MEMORY_DATABASE_URL before every test."""
    environ = {"PERSIST_DIRECTORY": str(folder)}
    if backend != "postgres":
        if os.environ.get(TEST_ENCRYPTION) == "1":
            environ["MEMORY_ENCRYPTION_KEY"] = TEST_ENCRYPTION_KEY
        yield environ
        return
    copies = request.getfixturevalue("postgres_template_copies")
    url = copies.take()
    try:
        yield {**environ, "MEMORY_DATABASE_URL": url}
    finally:
        copies.release(url)
