"""The real SDK and CLI mirror a session into our SessionStore (memory.db, or the PostgreSQL
database of MEMORY_DATABASE_URL), and a second client resumes it from there."""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    Message,
    ResultMessage,
    SessionKey,
    project_key_for_directory,
)

from memory_agent.integrations.session_store import SQLiteSessionStore
from memory_agent.testing import ScriptedMessagesServer, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris."
EDITED_ANSWER = "The capital of France is Paris (as remembered in the store)."
FOLLOW_UP = "What did I just ask you?"


async def _turn(client: ClaudeSDKClient, prompt: str) -> ResultMessage:
    await client.query(prompt)
    messages: list[Message] = [message async for message in client.receive_response()]
    result = messages[-1]
    assert isinstance(result, ResultMessage), messages
    assert not result.is_error, result
    return result


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    """Every text a request carried, in conversation order."""
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        texts += [
            b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
        ]
    return texts


def _assistant_text(entry: dict[str, Any]) -> str:
    content = entry.get("message", {}).get("content") or []
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


async def test_a_session_mirrored_into_the_store_resumes_in_another_process(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage_dir = tmp_path / "store"
    database_url = os.environ.get(
        "MEMORY_DATABASE_URL"
    )  # set by the `backend` fixture on PostgreSQL
    first_config = tmp_path / "config-first"

    with ScriptedMessagesServer() as server:
        server.enqueue(text_response(ANSWER), text_response("You asked for the capital of France."))

        # First "process": its own connection and its own CLI config dir.
        with (
            SQLiteSessionStore.open(storage_dir, database_url) as store,
            SQLiteSessionStore.open(storage_dir, database_url) as observer,
        ):
            options = ClaudeAgentOptions(
                session_store=store,
                env=server.env(CLAUDE_CONFIG_DIR=str(first_config)),
                cwd=str(project),
                max_turns=1,
            )
            async with ClaudeSDKClient(options) as client:
                result = await _turn(client, QUESTION)
                # The SDK flushes the mirror before it yields the result: another connection
                # already sees the whole turn while the client is still connected.
                key: SessionKey = {
                    "project_key": project_key_for_directory(project),
                    "session_id": result.session_id,
                }
                entries = await observer.load(key)

        assert entries is not None
        users = [e for e in entries if e.get("type") == "user"]
        assistants = [e for e in entries if e.get("type") == "assistant"]
        assert [u["message"]["content"] for u in users] == [QUESTION]
        assert [_assistant_text(a) for a in assistants] == [ANSWER]

        # Only the store can supply the transcript now.
        shutil.rmtree(first_config)

        # Rewrite the stored answer through the uuid idempotency key (last write wins), so the
        # resumed request can only carry this text if it came from the store.
        edited = copy.deepcopy(assistants[0])
        edited["message"]["content"] = [{"type": "text", "text": EDITED_ANSWER}]

        # Second "process": a new connection, a fresh config dir, resume by session id.
        with SQLiteSessionStore.open(storage_dir, database_url) as store:
            await store.append(key, [edited])
            options = ClaudeAgentOptions(
                session_store=store,
                env=server.env(CLAUDE_CONFIG_DIR=str(tmp_path / "config-second")),
                cwd=str(project),
                resume=result.session_id,
                max_turns=1,
            )
            async with ClaudeSDKClient(options) as client:
                resumed = await _turn(client, FOLLOW_UP)
            after = await store.load(key)
            [summary] = await store.list_session_summaries(key["project_key"])

    # The model's next request carried the earlier exchange, as stored, before the new prompt.
    requests = [
        r for r in server.message_requests() if r.kind == "turn" and FOLLOW_UP in _texts(r.messages)
    ]
    assert requests, server.requests
    texts = _texts(requests[0].messages)
    assert ANSWER not in texts
    assert texts.index(QUESTION) < texts.index(EDITED_ANSWER) < texts.index(FOLLOW_UP)

    # The resumed turn keeps the session id and is mirrored onto the same transcript.
    assert resumed.session_id == result.session_id
    assert after is not None and len(after) > len(entries)
    assert after[: len(entries)] == [edited if e is assistants[0] else e for e in entries]
    assert [e["message"]["content"] for e in after if e.get("type") == "user"][-1] == FOLLOW_UP
    assert summary["data"]["first_prompt"] == QUESTION
