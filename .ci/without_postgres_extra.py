"""A pytest plugin (`-p without_postgres_extra`, with .ci on PYTHONPATH): this process behaves as
if the `postgres` extra were not installed.

Why this stands in for a second venv: Python treats a None entry in `sys.modules` as "this module
cannot be imported". `import psycopg` (and of any `psycopg.*`) raises ModuleNotFoundError, and
`importlib.util.find_spec("psycopg")` returns None, exactly as when the package is absent; those
are the two ways code finds the driver (tests/conftest.py asks find_spec, the store imports it).
The plugin loads before any conftest or test module, so a module that imports psycopg at the top
fails collection here as it would in a `.[dev]`-only venv, at no install cost.
"""

from __future__ import annotations

import sys

for _name in ("psycopg", "psycopg_binary", "psycopg_c", "psycopg_pool"):
    sys.modules[_name] = None  # type: ignore[assignment]  # None marks a module as not importable
