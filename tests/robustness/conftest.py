"""Fixtures for hostile-input and broken-environment tests."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from robustness_helpers import database_state


@pytest.fixture
def state_of() -> Callable[[Path], str]:
    """The fingerprint of a database file (every row of every table)."""
    return database_state
