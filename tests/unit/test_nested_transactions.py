"""A nested write joins the outer transaction as a savepoint, on both backends: when the inner
block raises, only its own writes are undone and the outer block's writes still commit."""

from __future__ import annotations

import pytest

from memory_agent import MemoryManager
from memory_agent.store.meta import read_meta, write_meta


class _Refused(Exception):
    pass


@pytest.mark.usefixtures("backend")
def test_a_failed_inner_write_undoes_only_itself(memory: MemoryManager) -> None:
    with memory.database.transaction() as conn:
        write_meta(conn, "outer", "kept")
        with pytest.raises(_Refused), memory.database.transaction() as inner:
            write_meta(inner, "inner", "undone")
            raise _Refused
        with memory.database.transaction() as again:  # the savepoint name can be used again
            write_meta(again, "second", "kept too")
    with memory.database.reading() as conn:
        assert read_meta(conn, "outer") == "kept"
        assert read_meta(conn, "second") == "kept too"
        assert read_meta(conn, "inner") is None


@pytest.mark.usefixtures("backend")
def test_a_failed_outer_block_undoes_its_committed_savepoints_too(memory: MemoryManager) -> None:
    with pytest.raises(_Refused), memory.database.transaction() as conn:
        with memory.database.transaction() as inner:
            write_meta(inner, "inner", "gone")
        write_meta(conn, "outer", "gone")
        raise _Refused
    with memory.database.reading() as conn:
        assert read_meta(conn, "inner") is None and read_meta(conn, "outer") is None
