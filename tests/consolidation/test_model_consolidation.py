"""The model consolidator against the scripted Messages API server: the model rewrites an over-full
block, merges near-duplicate texts and decides a supersession; any failure falls back to the rules,
with a logged and recorded warning."""

from __future__ import annotations

import json
import logging

import pytest
from consolidation_helpers import HARBOUR, fill_notes

from memory_agent import MemoryManager, ModelConsolidator, Passage
from memory_agent.testing import ScriptedMessagesServer, error_response, text_response

pytestmark = pytest.mark.usefixtures("backend")

REWRITE = "Facts 0-7: the cranes on piers 0 to 7 were serviced."
MERGED = "Harbour master: Ines Duarte."


def _get(memory: MemoryManager, passage_id: str) -> Passage:
    passage = memory.archival_memory_get(passage_id)
    assert passage is not None
    return passage


def _setting(memory: MemoryManager) -> tuple[list[str], str, str]:
    fill_notes(memory)
    harbour = [
        memory.archival_memory_insert(text, tags=[f"h{n}"]) for n, text in enumerate(HARBOUR)
    ]
    lisbon = memory.archival_memory_insert("The user lives in Lisbon.")
    porto = memory.archival_memory_insert("The user moved to Porto.")
    return harbour, lisbon, porto


def test_the_model_rewrites_merges_and_supersedes(
    model_memory: MemoryManager, server: ScriptedMessagesServer
) -> None:
    memory = model_memory
    harbour, lisbon, porto = _setting(memory)
    old_notes = memory.get_block("notes").value
    server.enqueue(
        text_response(json.dumps({"text": REWRITE})),
        text_response(json.dumps({"merged": [MERGED]})),
        text_response('{"contradictions": [1]}'),
        model="haiku",
    )

    report = memory.consolidate()  # a model is configured: 'auto' chooses it

    assert report.status == "completed" and report.warnings == ()
    assert report.consolidator.startswith("model:")
    requests = server.message_requests(model="haiku")
    assert len(requests) == 3
    assert json.dumps(HARBOUR[1]) in requests[1].last_user_text  # stored text travels as JSON
    assert memory.get_block("notes").value == REWRITE
    (snapshot_of_block,) = [
        p for p in memory.archival_memory_list(limit=50) if "from_block" in p.tags
    ]
    assert (
        snapshot_of_block.content == old_notes
        and snapshot_of_block.provenance["rewritten_by_model"] is True
    )
    merged_id = _get(memory, harbour[0]).superseded_by
    assert merged_id is not None and _get(memory, merged_id).content == MERGED
    assert all(_get(memory, passage_id).superseded_by == merged_id for passage_id in harbour)
    merged = _get(memory, merged_id)
    assert set(merged.tags) == {"h0", "h1", "h2"} and merged.provenance["merged_from"] == harbour
    assert _get(memory, lisbon).superseded_by == porto and _get(memory, porto).superseded_by is None
    hits = memory.archival_memory_search("Where does the user live?", limit=5)
    assert lisbon not in {hit.passage.passage_id for hit in hits}
    assert report.counts["passages_superseded"] == 1 and report.counts["passages_merged"] == 3
    assert report.input_tokens and report.output_tokens
    session = memory.get_consolidation(report.session_id or "")
    assert (
        session.input_tokens == report.input_tokens
        and session.output_tokens == report.output_tokens
    )

    memory.rollback_consolidation(report.session_id or "")
    assert memory.get_block("notes").value == old_notes
    assert (
        _get(memory, lisbon).superseded_by is None and memory.archival_memory_get(merged_id) is None
    )
    assert all(_get(memory, passage_id).superseded_by is None for passage_id in harbour)


@pytest.mark.parametrize(
    "failure",
    ["the API fails", "a merge answer that is not JSON", "a rewrite answer that is not the block"],
)
def test_a_failing_model_falls_back_to_the_rules_and_says_so(
    model_memory: MemoryManager,
    server: ScriptedMessagesServer,
    failure: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = model_memory
    harbour, lisbon, _ = _setting(memory)
    if failure == "the API fails":
        server.enqueue(error_response(500), error_response(500), model="haiku")  # max_attempts is 2
    elif failure == "a rewrite answer that is not the block":
        server.enqueue(text_response("OK"), model="haiku")  # must never become the block's text
    else:
        server.enqueue(
            text_response(json.dumps({"text": REWRITE})),
            text_response("I merged them for you."),
            model="haiku",
        )

    with caplog.at_level(logging.WARNING, logger="memory_agent"):
        report = memory.consolidate(
            consolidator=ModelConsolidator(
                memory.compaction_settings, api_key="k", base_url=server.url
            )
        )

    assert report.status == "completed"
    (warning,) = report.warnings
    assert "failed, so the rules decided this run" in warning
    assert any("rules decided" in record.getMessage() for record in caplog.records)
    assert memory.get_consolidation(report.session_id or "").warnings == (warning,)
    # The rules' plan was applied: the block trimmed, not rewritten; merged into the oldest passage.
    notes = memory.get_block("notes").value
    assert notes != REWRITE and len(notes) <= 0.6 * memory.get_block("notes").limit
    assert [_get(memory, passage_id).superseded_by for passage_id in harbour] == [
        None,
        harbour[0],
        harbour[0],
    ]
    assert _get(memory, lisbon).superseded_by is None  # the rules never decide a contradiction
    # Tokens the model used before it failed are counted all the same.
    assert (
        (report.input_tokens or 0) > 0 if failure != "the API fails" else report.input_tokens == 0
    )
