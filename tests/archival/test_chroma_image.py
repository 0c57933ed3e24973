"""A new embedded Chroma directory starts from the fresh `chroma.sqlite3` this process kept
(archival/chroma_image.py): the store works as one Chroma made itself, a file that is there is
never replaced, and a file holding anything but Chroma's bookkeeping is never kept."""

from __future__ import annotations

import stat
from pathlib import Path

import numpy as np
import pytest

from memory_agent.archival import ChromaVectorStore, VectorConfig, VectorRecord, chroma_image
from memory_agent.archival.chroma_image import CHROMA_FILE
from memory_agent.archival.filters import PassageFilter

pytestmark = pytest.mark.sqlite_only(
    reason="Chroma's own files in a storage dir; no SQL store is opened"
)


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new process does: no fresh file kept yet."""
    monkeypatch.setattr(chroma_image, "_image", None)


def _store(directory: Path, agent: str = "ada", count: int = 6) -> ChromaVectorStore:
    store = ChromaVectorStore(VectorConfig(path=directory), "image_test")
    rows = np.random.default_rng(len(str(directory))).normal(size=(count, 8))
    store.upsert(
        [VectorRecord(f"p{n}", agent, list(row), (), 1_700_000_000.0) for n, row in enumerate(rows)]
    )
    return store


def test_the_second_new_directory_starts_from_the_first_ones_fresh_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put: list[tuple[Path, bool]] = []
    put_whole = chroma_image.put_whole

    def recorded(path: Path, data: bytes) -> bool:
        put.append((path, put_whole(path, data)))
        return put[-1][1]

    monkeypatch.setattr(chroma_image, "put_whole", recorded)
    first = _store(tmp_path / "first")
    first.close()
    kept = chroma_image._image
    assert kept is not None and chroma_image.only_bookkeeping(kept)
    assert put == []  # nothing kept before the first: Chroma made that one itself
    second = _store(tmp_path / "second", agent="bo")
    assert put == [(tmp_path / "second" / CHROMA_FILE, True)]
    assert second.ids("bo") == {f"p{n}" for n in range(6)}
    nearest = second.query([1.0] * 8, PassageFilter("bo"), 3)
    assert len(nearest) == 3
    second.close()
    placed = tmp_path / "second" / CHROMA_FILE
    assert stat.S_IMODE(placed.stat().st_mode) & 0o077 == 0
    again = ChromaVectorStore(VectorConfig(path=tmp_path / "second"), "image_test")
    assert again.ids("bo") == {f"p{n}" for n in range(6)} and again.ids("ada") == set()
    assert [m.passage_id for m in again.query([1.0] * 8, PassageFilter("bo"), 3)] == [
        m.passage_id for m in nearest
    ]
    again.close()
    # Nothing of one store reached the other: the first's collection is not in the second.
    assert not chroma_image.only_bookkeeping(placed.read_bytes())  # the second's own rows now
    assert chroma_image._image == kept


def test_a_file_holding_a_collection_is_never_kept(tmp_path: Path) -> None:
    store = _store(tmp_path / "used")
    store.close()
    used = (tmp_path / "used" / CHROMA_FILE).read_bytes()
    assert not chroma_image.only_bookkeeping(used)
    chroma_image._image = None
    chroma_image.remember_fresh_file(tmp_path / "used")
    assert chroma_image._image is None
    assert not chroma_image.only_bookkeeping(b"not a database at all")


def test_a_file_that_is_there_is_never_replaced(tmp_path: Path) -> None:
    _store(tmp_path / "first").close()
    assert chroma_image._image is not None
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / CHROMA_FILE).write_bytes(b"")
    assert not chroma_image.place_fresh_file(theirs)
    assert (theirs / CHROMA_FILE).read_bytes() == b""
    new = tmp_path / "new"
    new.mkdir()
    assert chroma_image.place_fresh_file(new)
    assert (new / CHROMA_FILE).read_bytes() == chroma_image._image
    assert sorted(p.name for p in new.iterdir()) == [CHROMA_FILE]  # no staged copy left
