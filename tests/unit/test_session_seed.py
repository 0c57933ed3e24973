"""The seeded conversation is always one the Messages API accepts (roles, tool pairs)."""

from __future__ import annotations

from memory_agent.conversation.recall import StoredMessage
from memory_agent.sdk_seams.transcript import (
    SEED_OPENING,
    normal_conversation,
    seed_lines,
    seed_messages,
    transcript_conversation,
)


def stored(number: int, role: str, content, *, reply: str | None = None) -> StoredMessage:
    text = content if isinstance(content, str) else ""
    return StoredMessage(
        message_id=number,
        agent_id="a",
        role=role,
        message_type=role,
        content=content,
        text=text,
        created_at="",
        metadata={"message_id": reply} if reply else {},
    )


def test_split_replies_are_merged_and_tool_pairs_kept() -> None:
    messages = [
        stored(1, "user", "read the log"),
        stored(2, "assistant", [{"type": "text", "text": "Reading."}], reply="msg_1"),
        stored(
            3,
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "read_log", "input": {}}],
            reply="msg_1",
        ),
        stored(4, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "LOG"}]),
        stored(5, "assistant", [{"type": "text", "text": "Done."}], reply="msg_2"),
    ]
    seeded = seed_messages(messages)
    assert [m["role"] for m in seeded] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in seeded[1]["content"]] == ["text", "tool_use"]
    assert seeded[2]["content"][0]["type"] == "tool_result"


def test_orphan_tool_blocks_become_text_and_the_conversation_starts_with_the_user() -> None:
    messages = [
        stored(
            1,
            "assistant",
            [{"type": "tool_use", "id": "gone", "name": "search", "input": {"q": "x"}}],
        ),
        stored(2, "tool", "a tool row from an import"),
        stored(
            3,
            "user",
            [{"type": "tool_result", "tool_use_id": "elsewhere", "content": "old result"}],
        ),
    ]
    seeded = seed_messages(messages)
    assert seeded[0] == {"role": "user", "content": SEED_OPENING}
    assert seeded[1]["content"][0]["type"] == "text" and "search" in seeded[1]["content"][0]["text"]
    assert seeded[2]["content"] == "[tool] a tool row from an import"
    assert seeded[3]["content"][0] == {"type": "text", "text": "[tool result: old result]"}


def test_lines_form_one_chain_in_the_new_session() -> None:
    lines = seed_lines(
        [stored(1, "user", "hi"), stored(2, "assistant", "hello")], session_id="s", cwd="/w"
    )
    assert [line["parentUuid"] for line in lines] == [None, lines[0]["uuid"]]
    assert {line["sessionId"] for line in lines} == {"s"}
    assert lines[1]["message"]["content"] == [{"type": "text", "text": "hello"}]


def _cli_line(kind: str, content, *, reply: str | None = None, sidechain: bool = False) -> dict:
    message = {"role": kind, "content": content}
    if reply:
        message["id"] = reply
    return {"type": kind, "isSidechain": sidechain, "message": message, "uuid": f"u-{id(content)}"}


def test_a_transcript_reads_back_as_the_conversation_recall_holds() -> None:
    messages = [
        stored(1, "user", "read the log"),
        stored(2, "assistant", [{"type": "text", "text": "Reading."}], reply="msg_1"),
        stored(
            3,
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "read_log", "input": {}}],
            reply="msg_1",
        ),
        stored(4, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "LOG"}]),
    ]
    context = {"type": "text", "text": "<turn_context>\nCurrent time: now\n</turn_context>"}
    cli_lines = [
        {"type": "queue-operation", "operation": "enqueue"},
        _cli_line("user", [context, {"type": "text", "text": "read the log"}]),
        {"type": "attachment", "attachment": {"type": "skill_listing"}},
        _cli_line("assistant", [{"type": "text", "text": "Reading."}], reply="msg_1"),
        _cli_line("user", [{"type": "text", "text": "a subagent's prompt"}], sidechain=True),
        _cli_line(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "read_log", "input": {}}],
            reply="msg_1",
        ),
        _cli_line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "LOG"}]),
    ]
    recalled = normal_conversation(seed_messages(messages))
    assert normal_conversation(transcript_conversation(cli_lines)) == recalled
    # Seeded lines read back as what they were seeded from.
    seeded = seed_lines(messages, session_id="s", cwd="/tmp")
    assert normal_conversation(transcript_conversation(seeded)) == recalled
    # A turn missing from either copy, or a changed word, is a disagreement.
    assert normal_conversation(transcript_conversation(cli_lines[:-1])) != recalled
    changed = [*cli_lines[:-1], _cli_line("user", [{"type": "text", "text": "other"}])]
    assert normal_conversation(transcript_conversation(changed)) != recalled
