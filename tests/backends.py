"""The backend a test runs on, for tests that build their settings from an explicit mapping."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import pytest

__all__ = ["POSTGRES_SLOW", "OtherEnviron", "backend_environ"]

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
