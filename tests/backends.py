"""The backend a test runs on, for tests that build their settings from an explicit mapping."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

__all__ = ["OtherEnviron", "backend_environ"]

OtherEnviron = Callable[[Mapping[str, str]], dict[str, str]]
"""The `other_store_environ` fixture: settings' environment for a test's second storage dir."""


def backend_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` plus MEMORY_DATABASE_URL when the `backend` fixture chose PostgreSQL."""
    url = os.environ.get("MEMORY_DATABASE_URL")
    return {**environ, "MEMORY_DATABASE_URL": url} if url else dict(environ)
