"""Clipping summaries and rendering evicted messages as a transcript for the summariser."""

from __future__ import annotations

from compaction import MessageRecord, clip_text, render_transcript, summary_request_text
from compaction.transcript import tail_text


def test_short_text_is_not_clipped() -> None:
    assert clip_text("short", 10) == "short"


def test_clipping_respects_the_limit_and_prefers_a_word_break() -> None:
    text = "The user prefers tea over coffee and lives in Lisbon since March."

    clipped = clip_text(text, 40)

    assert len(clipped) <= 40
    assert clipped.endswith("…")
    assert clipped == "The user prefers tea over coffee and…"


def test_clipping_a_text_without_spaces_cuts_hard() -> None:
    clipped = clip_text("x" * 5000, 2000)

    assert len(clipped) == 2000 and clipped.endswith("…")


def test_tail_keeps_the_end() -> None:
    assert tail_text("abcdefghij", 5) == "…ghij"
    assert tail_text("abc", 5) == "abc"
    assert tail_text("first line\nsecond line\nthird", 22) == "…second line\nthird"


def test_the_transcript_shows_roles_text_and_tool_traffic() -> None:
    messages = [
        MessageRecord(1, "user", "Find the train to Porto."),
        MessageRecord(
            2,
            "assistant",
            [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "Porto"}},
            ],
        ),
        MessageRecord(
            3,
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "09:15"}],
                }
            ],
        ),
        MessageRecord(4, "assistant", [{"type": "mystery", "x": 1}]),
    ]

    transcript = render_transcript(messages)

    assert "USER:\nFind the train to Porto." in transcript
    assert '[calls tool search with {"q": "Porto"}]' in transcript
    assert "[tool result]\n09:15" in transcript
    assert "[mystery]" in transcript


def test_an_over_long_message_keeps_its_start_and_end() -> None:
    message = MessageRecord(1, "user", "START " + "x" * 10_000 + " END")

    rendered = render_transcript([message], max_message_chars=100)

    assert "START" in rendered and "END" in rendered and "characters omitted" in rendered
    assert len(rendered) < 300


def test_the_request_carries_the_earlier_summary_and_the_limit() -> None:
    text = summary_request_text(
        "Alice likes tea.", [MessageRecord(1, "user", "hi")], limit_chars=2000
    )

    assert "<earlier_summary>\nAlice likes tea.\n</earlier_summary>" in text
    assert "USER:\nhi" in text
    assert "at most 2000 characters" in text
