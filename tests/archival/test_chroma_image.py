"""A new embedded Chroma directory starts from a fresh `chroma.sqlite3` made once per process in a
private directory (archival/chroma_image.py): the store works as one Chroma made itself, nothing
of another store is ever in the copy, and a file that is there is never replaced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_agent.archival import ChromaVectorStore, VectorConfig, VectorRecord, chroma_image
from memory_agent.archival.chroma_image import CHROMA_FILE
from memory_agent.archival.filters import PassageFilter

pytestmark = pytest.mark.sqlite_only(
    reason="Chroma's own files in a storage dir; no SQL store is opened"
)

SECRET_ID = "ada-secret-passage-id"


@pytest.fixture(autouse=True)
def nothing_made(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, bool]]:
    """Each test starts as a new process does (no fresh file made yet); what was put, recorded."""
    monkeypatch.setattr(chroma_image, "_made", False)
    monkeypatch.setattr(chroma_image, "_image", None)
    put: list[tuple[Path, bool]] = []
    put_whole = chroma_image.put_whole

    def recorded(path: Path, data: bytes) -> bool:
        put.append((path, put_whole(path, data)))
        return put[-1][1]

    monkeypatch.setattr(chroma_image, "put_whole", recorded)
    return put


def _store(directory: Path, agent: str, ids: list[str]) -> ChromaVectorStore:
    store = ChromaVectorStore(VectorConfig(path=directory), "image_test")
    rows = np.random.default_rng(len(ids)).normal(size=(len(ids), 8))
    store.upsert(
        [VectorRecord(pid, agent, list(row), (), 1_700_000_000.0) for pid, row in zip(ids, rows)]
    )
    return store


def test_new_directories_start_from_the_fresh_file_and_work_as_any_other(
    tmp_path: Path, nothing_made: list[tuple[Path, bool]]
) -> None:
    ids = [f"p{n}" for n in range(6)]
    first = _store(tmp_path / "first", "ada", ids)
    first.close()
    second = _store(tmp_path / "second", "bo", ids)
    assert nothing_made == [
        (tmp_path / "first" / CHROMA_FILE, True),
        (tmp_path / "second" / CHROMA_FILE, True),
    ]
    nearest = second.query([1.0] * 8, PassageFilter("bo"), 3)
    assert len(nearest) == 3
    second.close()
    again = ChromaVectorStore(VectorConfig(path=tmp_path / "second"), "image_test")
    assert again.ids("bo") == set(ids) and again.ids("ada") == set()
    assert [m.passage_id for m in again.query([1.0] * 8, PassageFilter("bo"), 3)] == [
        m.passage_id for m in nearest
    ]
    again.close()
    kept = chroma_image._image
    assert kept is not None and chroma_image.only_bookkeeping(kept)


def test_nothing_of_a_store_reaches_the_copy_even_deleted(tmp_path: Path) -> None:
    """A collection made and dropped leaves its ids in the file's free pages: the copy is never
    made from a directory a store (or another process) uses."""
    used = _store(tmp_path / "used", "ada", [SECRET_ID])
    used.drop_collections()
    used.close()
    assert SECRET_ID.encode() in (tmp_path / "used" / CHROMA_FILE).read_bytes()
    _store(tmp_path / "new", "bo", ["p0"]).close()
    kept = chroma_image._image
    assert kept is not None and SECRET_ID.encode() not in kept
    assert SECRET_ID.encode() not in (tmp_path / "new" / CHROMA_FILE).read_bytes()


def test_a_file_holding_a_collection_is_not_bookkeeping(tmp_path: Path) -> None:
    _store(tmp_path / "used", "ada", ["p0"]).close()
    assert not chroma_image.only_bookkeeping((tmp_path / "used" / CHROMA_FILE).read_bytes())
    assert not chroma_image.only_bookkeeping(b"not a database at all")


def test_a_file_or_a_leftover_log_that_is_there_is_never_replaced(
    tmp_path: Path, nothing_made: list[tuple[Path, bool]]
) -> None:
    _store(tmp_path / "first", "ada", ["p0"]).close()  # the fresh file made, as a process does
    nothing_made.clear()

    def never(scratch: Path) -> None:
        raise AssertionError("the fresh file is made once per process")

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / CHROMA_FILE).write_bytes(b"")
    assert not chroma_image.place_fresh_file(theirs, never)
    assert (theirs / CHROMA_FILE).read_bytes() == b"" and nothing_made == []
    for leftover in ("-journal", "-wal"):  # SQLite would replay it into a new file
        beside = tmp_path / f"beside{leftover}"
        beside.mkdir()
        (beside / f"{CHROMA_FILE}{leftover}").write_bytes(b"another file's log")
        assert not chroma_image.place_fresh_file(beside, never)
        assert not (beside / CHROMA_FILE).exists()
    new = tmp_path / "new"
    new.mkdir()
    assert chroma_image.place_fresh_file(new, never)
    assert (new / CHROMA_FILE).read_bytes() == chroma_image._image
    assert sorted(p.name for p in new.iterdir()) == [CHROMA_FILE]  # no second name anywhere
    assert (new / CHROMA_FILE).stat().st_nlink == 1
