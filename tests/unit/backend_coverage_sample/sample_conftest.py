"""conftest.py of the sample suite: the recording hook as tests/conftest.py has it, and fixtures
that stand for the real ones by name and by what they name (nothing here opens a store)."""

from __future__ import annotations

from pathlib import Path

import backend_coverage
import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only(reason): runs on SQLite alone, with the reason why"
    )
    config.addinivalue_line("markers", "postgres: runs on PostgreSQL")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    backend_coverage.record(config, items)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def postgres_url() -> str:
    return "postgresql://sample"


@pytest.fixture
def memory(tmp_path: Path) -> dict[str, str]:
    return {"PERSIST_DIRECTORY": str(tmp_path)}


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path
