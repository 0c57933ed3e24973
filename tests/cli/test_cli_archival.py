"""`remember`, `recall`, `forget`, `passages`, and passages through export/import.

These use the real offline embedding model and embedded Chroma, so they are kept few.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent import MemoryManager

Run = Callable[..., Result]
ErrorOf = Callable[[Result], str]

pytestmark = pytest.mark.usefixtures("backend")


def _remember(run: Run, text: str, *tags: str) -> str:
    args = [arg for tag in tags for arg in ("--tag", tag)]
    result = run("--json", "remember", text, *args)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["id"])


def test_remember_recall_forget(
    initialised: Run, error_of: ErrorOf, open_store: Callable[[str], MemoryManager]
) -> None:
    run = initialised
    boat = _remember(run, "Ada's boat is a blue sloop called Petrel", "boats")
    _remember(run, "Ada's sister lives in Lisbon and teaches piano", "family")
    listed = run("recall", "which boat does Ada sail", "--limit", "2")
    assert listed.exit_code == 0, listed.output
    assert "Petrel" in listed.stdout and "score" in listed.stdout and boat in listed.stdout
    hits = json.loads(run("--json", "recall", "sailing boat", "--mode", "vector").stdout)
    assert (
        hits[0]["id"] == boat and hits[0]["score"] > 0 and hits[0]["vector_similarity"] is not None
    )
    keyword = json.loads(run("--json", "recall", "Lisbon", "--mode", "keyword").stdout)
    assert [h["content"] for h in keyword] == ["Ada's sister lives in Lisbon and teaches piano"]
    tagged = json.loads(
        run("--json", "recall", "Ada", "--tag", "boats", "--mode", "keyword").stdout
    )
    assert [h["id"] for h in tagged] == [boat]
    assert len(json.loads(run("--json", "passages").stdout)) == 2
    assert run("forget", boat).exit_code == 0
    assert json.loads(run("--json", "recall", "Petrel", "--mode", "keyword").stdout) == []
    with open_store("ada") as memory:
        entry = memory.journal(agent_id="ada", limit=1)[0]
        assert (entry.action, entry.target_id, entry.old_value) == (
            "delete_passage",
            boat,
            "Ada's boat is a blue sloop called Petrel",
        )
    assert "no archival passage" in error_of(run("forget", boat))
    assert "Nothing found." in run("recall", "zeppelin", "--mode", "keyword").stdout


def test_remember_with_context_is_found_by_it_and_never_shows_it(initialised: Run) -> None:
    run = initialised
    result = run(
        "--json", "remember", "Yes, twice!", "--context", "Have you been to the Grand Canyon?"
    )
    assert result.exit_code == 0, result.output
    passage_id = json.loads(result.stdout)["id"]
    hits = json.loads(run("--json", "recall", "Canyon", "--mode", "keyword").stdout)
    assert [h["id"] for h in hits] == [passage_id] and hits[0]["content"] == "Yes, twice!"
    assert "Grand" not in run("recall", "Canyon", "--mode", "keyword").stdout.replace("Canyon", "")
    assert "Grand" not in json.dumps(hits) and "Grand" not in run("--json", "passages").stdout


def test_passages_survive_export_and_import(
    initialised: Run, storage: Path, tmp_path: Path
) -> None:
    run = initialised
    first = _remember(run, "The launch is on the fifth of May", "plans")
    _remember(run, "Ada prefers tea to coffee")
    exported = tmp_path / "ada.json"
    assert run("export", "-o", str(exported)).exit_code == 0
    target = tmp_path / "copy"
    imported = run("import", str(exported), storage_dir=target)
    assert imported.exit_code == 0 and "2 passages" in imported.stdout, imported.output
    original = json.loads(run("--json", "passages").stdout)
    copied = json.loads(run("--json", "passages", storage_dir=target).stdout)
    assert [(p["id"], p["content"], p["tags"], p["created_at"]) for p in copied] == [
        (p["id"], p["content"], p["tags"], p["created_at"]) for p in original
    ]
    assert {p["vector_state"] for p in copied} == {"indexed"}  # vectors were written on import
    hits = json.loads(
        run("--json", "recall", "when is the launch", "--storage-dir", str(target)).stdout
    )
    assert hits[0]["id"] == first


def test_remember_says_why_a_passage_was_not_embedded(initialised: Run) -> None:
    """Chroma unreachable: the passage is kept (keyword search finds it) and stderr says why."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    down = {"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(closed_port)}
    result = initialised("remember", "The Petrel is moored in Lisbon.", env=down)
    assert result.exit_code == 0, result.output
    assert "Remembered as passage-" in result.stdout
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("Warning: not embedded yet"), result.stderr
    found = json.loads(
        initialised("--json", "recall", "Petrel", "--mode", "keyword", env=down).stdout
    )
    assert [hit["vector_state"] for hit in found] == ["pending"]
    # Once Chroma is back (here: the embedded one), the next command embeds it.
    again = json.loads(initialised("--json", "recall", "Petrel", "--mode", "keyword").stdout)
    assert [hit["vector_state"] for hit in again] == ["indexed"]


def test_recall_explain_prints_the_signals_and_superseded_passages_on_request(
    initialised: Run, open_store: Callable[[str], MemoryManager]
) -> None:
    run = initialised
    old = _remember(run, "Ada lives in Lisbon")
    new = _remember(run, "Ada moved from Lisbon to Porto")
    with open_store("ada") as memory:
        memory.supersede_passage(old, new)
    shown = run("recall", "Ada Lisbon", "--explain")
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert "why: keyword #1" in text and "hybrid score" in text and old not in text
    hits = json.loads(
        run(
            "--json",
            "recall",
            "Ada Lisbon",
            "--explain",
            "--include-superseded",
            "--mode",
            "scored",
        ).stdout
    )
    assert {hit["id"] for hit in hits} == {old, new}
    superseded = next(hit for hit in hits if hit["id"] == old)
    assert superseded["superseded_by"] == new
    why = superseded["explanation"]
    assert (
        why["mode"] == "scored"
        and why["keyword_rank"] is not None
        and why["vector_similarity"] is not None
    )
    assert set(why) >= {"recency", "importance", "access_count", "fused", "score"}
    wide = run("recall", "Ada Lisbon", "--include-superseded")
    assert f"superseded by {new}" in " ".join(wide.stdout.split())  # the terminal may wrap the line
