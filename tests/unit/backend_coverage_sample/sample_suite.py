"""Tests the backend-coverage rule must judge (tests/unit/test_backend_coverage.py copies this file
into a folder of its own as test_sample.py). Collection runs none of them; the names say the
verdict."""

from __future__ import annotations

import subprocess

import pytest

from memory_agent import MemoryManager


def _open_the_store() -> MemoryManager:
    return MemoryManager(agent_id="sample")


def test_flagged_a_store_fixture(memory: dict[str, str]) -> None:
    assert memory


def test_flagged_through_a_helper_of_its_module() -> None:
    _open_the_store().close()


def test_flagged_a_storage_dir_given_to_the_cli() -> None:
    subprocess.run(["memory-agent", "--storage-dir", "x", "blocks", "list"], check=False)


@pytest.mark.parametrize("number", [1, 2])
def test_flagged_each_parameter(memory: dict[str, str], number: int) -> None:
    assert memory and number


@pytest.mark.sqlite_only(reason="  ")
def test_flagged_a_blank_reason(memory: dict[str, str]) -> None:
    assert memory


@pytest.mark.sqlite_only
def test_flagged_no_reason(memory: dict[str, str]) -> None:
    assert memory


class TestGrouped:
    def test_flagged_a_method(self, memory: dict[str, str]) -> None:
        assert memory

    def test_fine_a_method_without_a_store(self) -> None:
        assert True


@pytest.mark.usefixtures("backend")
def test_fine_on_both_backends(memory: dict[str, str]) -> None:
    assert memory


def test_flagged_the_server_without_the_marker(postgres_url: str) -> None:
    assert postgres_url


@pytest.mark.postgres
def test_fine_on_postgresql(postgres_url: str) -> None:
    _open_the_store().close()


@pytest.mark.sqlite_only(reason="damages the SQLite file itself")
def test_fine_with_a_reason(memory: dict[str, str]) -> None:
    assert memory


def test_fine_names_a_class_without_opening_anything(scratch: object) -> None:
    assert MemoryManager.__name__ == "MemoryManager"
