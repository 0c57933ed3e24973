"""The scripted Messages API server: wire format, scripting rules, recording, and the real CLI.

Plain HTTP tests use urllib so they pin the wire format itself; the ``anthropic`` client tests
check that a real client parses what we send; the e2e tests run the real SDK and its bundled CLI.
"""

from __future__ import annotations

import ast
import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memory_agent.testing as testing_pkg
from memory_agent.testing import (
    DUMMY_API_KEY,
    ScriptedMessagesServer,
    error_response,
    message_response,
    text_block,
    text_response,
    tool_use_block,
    tool_use_response,
)
from memory_agent.testing.recorded import RecordedRequest
from memory_agent.testing.responses import ScriptedResponse

# -- helpers ----------------------------------------------------------------------------------


def _post(
    server: ScriptedMessagesServer, path: str, body: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "X-Api-Key": "k",
            "Anthropic-Version": "2023-06-01",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                response.read(),
            )
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def _messages_body(
    text: str = "hello", *, stream: bool = False, model: str = "claude-sonnet-4-5", **extra: Any
) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": text}],
        "stream": stream,
        **extra,
    }


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse an SSE body into (event, data) pairs."""
    events = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as running:
        yield running


# -- public surface ---------------------------------------------------------------------------


def test_public_names_are_pinned() -> None:
    assert sorted(testing_pkg.__all__) == sorted(
        [
            "COMPACTION_MARKERS",
            "DUMMY_API_KEY",
            "CacheUsage",
            "PromptCache",
            "RecordedRequest",
            "RequestKind",
            "ScriptedError",
            "ScriptedMessage",
            "ScriptedMessagesServer",
            "ScriptedResponse",
            "TextBlock",
            "TooManyBreakpointsError",
            "ToolUseBlock",
            "error_response",
            "is_auxiliary_request",
            "is_compaction_request",
            "message_response",
            "text_block",
            "text_response",
            "tool_use_block",
            "tool_use_response",
        ]
    )


HARNESSES = {"soak.py"}
"""Modules of the package that drive the whole agent (the soak harness, a layer above it): they
import the SDK and memory_agent, so the package itself never imports them; a user imports them
by name (`memory_agent.testing.soak`)."""


def test_the_package_never_loads_its_harnesses() -> None:
    init = Path(testing_pkg.__file__)
    loaded = {
        alias.name if isinstance(node, ast.ImportFrom) and not node.module else node.module
        for node in ast.walk(ast.parse(init.read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not {name.removesuffix(".py") for name in HARNESSES} & loaded, loaded


def test_testing_package_imports_only_the_standard_library() -> None:
    """Other packages' tests (compaction) use it, so it must not pull in the SDK or our modules."""
    imported: set[str] = set()
    for path in Path(testing_pkg.__file__).parent.glob("*.py"):
        if path.name in HARNESSES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    # psycopg: PostgresCluster's admin connection imports the optional driver inside the method
    # that opens it, so only a user of a cluster (who opens PostgreSQL stores anyway) loads it;
    # playwright likewise, inside the function that launches a browser for the inspector's tests.
    assert imported <= set(sys.stdlib_module_names) | {"__future__", "psycopg", "playwright"}, (
        imported
    )


# -- lifecycle and env ------------------------------------------------------------------------


def test_url_env_and_lifecycle() -> None:
    server = ScriptedMessagesServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    server.start()
    try:
        assert server.url == f"http://127.0.0.1:{server.port}"
        with pytest.raises(RuntimeError, match="already running"):
            server.start()
        env = server.env(EXTRA="1")
        assert env["ANTHROPIC_BASE_URL"] == server.url
        assert env["ANTHROPIC_API_KEY"] == DUMMY_API_KEY
        assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert env["ANTHROPIC_AUTH_TOKEN"] == ""
        assert env["EXTRA"] == "1"
    finally:
        server.stop()
    assert server.requests == []


# -- non-streaming and streaming wire format ----------------------------------------------------


def test_non_streaming_text_reply_has_api_shape_and_plausible_usage(
    server: ScriptedMessagesServer,
) -> None:
    server.enqueue(text_response("hello there"))
    prompt = "x" * 400
    status, headers, raw = _post(server, "/v1/messages", _messages_body(prompt, system="be brief"))
    body = json.loads(raw)
    assert status == 200 and headers["content-type"] == "application/json"
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["model"] == "claude-sonnet-4-5"
    assert body["content"] == [{"type": "text", "text": "hello there"}]
    assert body["stop_reason"] == "end_turn"
    # ~4 characters per token over system + messages (JSON-encoded).
    assert 100 <= body["usage"]["input_tokens"] <= 130
    assert body["usage"]["output_tokens"] == 3


def test_usage_can_be_overridden(server: ScriptedMessagesServer) -> None:
    server.enqueue(text_response("x", input_tokens=150_000, output_tokens=7))
    _, _, raw = _post(server, "/v1/messages", _messages_body())
    usage = json.loads(raw)["usage"]
    assert usage["input_tokens"] == 150_000 and usage["output_tokens"] == 7


def test_a_responder_answers_what_the_script_does_not_from_the_request() -> None:
    def echo(request: RecordedRequest) -> ScriptedResponse | None:
        return (
            text_response(f"you said: {request.last_user_text}")
            if "haiku" in request.model
            else None
        )

    with ScriptedMessagesServer(responder=echo) as server:
        server.enqueue(text_response("scripted first"), model="haiku")
        replies = [
            json.loads(_post(server, "/v1/messages", _messages_body(text, model=model))[2])
            for text, model in (
                ("one", "claude-haiku-4-5"),
                ("two", "claude-haiku-4-5"),
                ("three", "claude-sonnet-4-5"),
            )
        ]
        texts = [reply["content"][0]["text"] for reply in replies]
        assert texts == ["scripted first", "you said: two", server.default_text]
        assert [r.served_default for r in server.message_requests()] == [False, False, True]


def test_streaming_events_for_text_and_several_tool_uses(server: ScriptedMessagesServer) -> None:
    long_text = "Let me note that down for you, carefully and completely."
    server.enqueue(
        message_response(
            text_block(long_text),
            tool_use_block(
                "mcp__memory__core_memory_append", {"label": "human", "content": "likes tea " * 5}
            ),
            tool_use_block(
                "mcp__memory__archival_memory_insert", {"content": "x"}, id="toolu_fixed"
            ),
        )
    )
    status, headers, raw = _post(server, "/v1/messages", _messages_body(stream=True))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = _events(raw)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == 3 and names.count("content_block_stop") == 3

    text = "".join(
        d["delta"]["text"] for n, d in events if n == "content_block_delta" and d["index"] == 0
    )
    assert text == long_text
    starts = {d["index"]: d["content_block"] for n, d in events if n == "content_block_start"}
    assert (
        starts[1]["type"] == "tool_use"
        and starts[1]["id"].startswith("toolu_")
        and starts[1]["input"] == {}
    )
    assert starts[2]["id"] == "toolu_fixed"
    pieces = [
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["index"] == 1
    ]
    assert len(pieces) > 1, "tool input must arrive in several input_json_delta pieces"
    assert json.loads("".join(pieces)) == {"label": "human", "content": "likes tea " * 5}

    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] > 1
    assert events[0][1]["message"]["usage"]["input_tokens"] == delta["usage"]["input_tokens"]


def test_generated_tool_use_ids_are_unique(server: ScriptedMessagesServer) -> None:
    reply = tool_use_response("t", {})
    server.enqueue(reply, reply)
    ids = [
        json.loads(_post(server, "/v1/messages", _messages_body())[2])["content"][0]["id"]
        for _ in range(2)
    ]
    assert ids[0] != ids[1]


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
        (400, "invalid_request_error"),
    ],
)
def test_error_replies_have_anthropic_error_bodies(
    server: ScriptedMessagesServer, status: int, error_type: str
) -> None:
    server.enqueue(error_response(status, retry_after=2, should_retry=False))
    got, headers, raw = _post(server, "/v1/messages", _messages_body(stream=True))
    body = json.loads(raw)
    assert got == status
    assert (
        body["type"] == "error" and body["error"]["type"] == error_type and body["error"]["message"]
    )
    assert headers["retry-after"] == "2" and headers["x-should-retry"] == "false"
    assert server.requests[0].status == status


def test_error_inside_a_stream(server: ScriptedMessagesServer) -> None:
    server.enqueue(error_response(529, in_stream=True))
    status, _, raw = _post(server, "/v1/messages", _messages_body(stream=True))
    events = _events(raw)
    assert status == 200
    assert [n for n, _ in events] == ["message_start", "error"]
    assert events[1][1]["error"]["type"] == "overloaded_error"


def test_invalid_scripts_are_refused() -> None:
    with pytest.raises(ValueError, match="400-599"):
        error_response(200)
    with pytest.raises(ValueError, match="at least one block"):
        message_response()
    with pytest.raises(TypeError, match="scripted replies"):
        ScriptedMessagesServer().enqueue("hello")  # type: ignore[arg-type]


# -- scripting rules --------------------------------------------------------------------------


def test_fifo_then_default_reply() -> None:
    server = ScriptedMessagesServer(default_text="nothing scripted").start()
    try:
        server.enqueue(text_response("first"), text_response("second"))
        texts = [
            json.loads(_post(server, "/v1/messages", _messages_body())[2])["content"][0]["text"]
            for _ in range(3)
        ]
        assert texts == ["first", "second", "nothing scripted"]
        assert [r.served_default for r in server.requests] == [False, False, True]
        assert server.pending() == []
    finally:
        server.stop()


def test_model_filtered_replies(server: ScriptedMessagesServer) -> None:
    server.enqueue(text_response("turn"))
    server.enqueue(text_response("summary"), model="haiku")

    def ask(model: str) -> str:
        return json.loads(_post(server, "/v1/messages", _messages_body(model=model))[2])["content"][
            0
        ]["text"]

    assert server.pending(model="claude-haiku-4-5") == [
        text_response("summary"),
        text_response("turn"),
    ]
    assert server.pending(model="claude-sonnet-4-5") == [text_response("turn")]
    assert ask("claude-haiku-4-5") == "summary"  # filtered reply first, though enqueued second
    assert ask("claude-haiku-4-5") == "turn"  # then unfiltered replies serve any model
    server.enqueue(text_response("only haiku"), model="HAIKU")
    assert ask("claude-sonnet-4-5") == "OK"  # a sonnet request never takes a haiku reply
    assert server.pending() == [text_response("only haiku")]
    assert [r.model for r in server.message_requests(model="haiku")] == ["claude-haiku-4-5"] * 2


def test_count_tokens_and_unknown_paths_are_recorded(server: ScriptedMessagesServer) -> None:
    server.enqueue(text_response("kept"))
    count_body = {"model": "m", "messages": [{"role": "user", "content": "y" * 80}]}
    status, _, raw = _post(server, "/v1/messages/count_tokens", count_body)
    assert status == 200 and 20 <= json.loads(raw)["input_tokens"] <= 30
    status, _, raw = _post(server, "/v1/nope", {})
    assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(server.url + "/api/hello", timeout=5)
    assert info.value.code == 404
    assert [(r.method, r.path, r.kind) for r in server.requests] == [
        ("POST", "/v1/messages/count_tokens", "count_tokens"),
        ("POST", "/v1/nope", "other"),
        ("GET", "/api/hello", "other"),
    ]
    assert server.message_requests() == []
    assert server.pending() == [text_response("kept")], "none of these may consume the script"


def test_auxiliary_requests_never_consume_the_script(server: ScriptedMessagesServer) -> None:
    server.enqueue(text_response("for the turn"))
    probe = _messages_body("Hi", max_tokens=1)
    assert json.loads(_post(server, "/v1/messages", probe)[2])["content"][0]["text"] == "OK"
    compact = _messages_body(
        "CRITICAL: Respond with TEXT ONLY.\nYour task is to create a detailed summary of the "
        "conversation so far, ..."
    )
    summary = json.loads(_post(server, "/v1/messages", compact)[2])["content"][0]["text"]
    assert "<summary>" in summary and "</summary>" in summary
    turn = json.loads(_post(server, "/v1/messages", _messages_body())[2])["content"][0]["text"]
    assert turn == "for the turn"
    assert [r.kind for r in server.message_requests()] == ["auxiliary", "auxiliary", "turn"]
    assert len(server.turn_requests()) == 1


def test_custom_auxiliary_filter_scripts_everything() -> None:
    with ScriptedMessagesServer(is_auxiliary=lambda request: False) as server:
        server.enqueue(text_response("scripted probe answer"))
        body = json.loads(_post(server, "/v1/messages", _messages_body("Hi", max_tokens=1))[2])
        assert body["content"][0]["text"] == "scripted probe answer"


# -- recording --------------------------------------------------------------------------------


def test_recorded_request_views(server: ScriptedMessagesServer) -> None:
    body = {
        "model": "claude-opus-4",
        "max_tokens": 100,
        "stream": True,
        "system": [
            {"type": "text", "text": "You are a helper."},
            {"type": "text", "text": "<memory_blocks/>"},
        ],
        "tools": [{"name": "mcp__memory__memory_insert", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "remember tea"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "done"},
                    {"type": "text", "text": "and?"},
                ],
            },
        ],
    }
    _post(server, "/v1/messages?beta=true", body)
    (request,) = server.requests
    assert request.path == "/v1/messages" and request.query == "beta=true"
    assert request.headers["x-api-key"] == "k"
    assert request.model == "claude-opus-4" and request.stream is True
    assert request.system_text == "You are a helper.\n\n<memory_blocks/>"
    assert request.tools == ["mcp__memory__memory_insert"]
    assert request.last_user_text == "and?"
    assert request.tool_results == [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]
    assert len(request.messages) == 3 and request.body == body
    assert request.response is not None


def test_concurrent_requests_each_get_one_reply(server: ScriptedMessagesServer) -> None:
    count = 64
    server.enqueue(*(text_response(f"reply {i}") for i in range(count)))
    answers: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        text = json.loads(_post(server, "/v1/messages", _messages_body(stream=False))[2])[
            "content"
        ][0]["text"]
        with lock:
            answers.append(text)

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert sorted(answers) == sorted(f"reply {i}" for i in range(count))
    assert len(server.wait_for_requests(count, kind="turn", timeout=5)) == count


# -- the anthropic client ---------------------------------------------------------------------


@pytest.mark.asyncio
async def test_anthropic_client_non_streaming(server: ScriptedMessagesServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    server.enqueue(tool_use_response("lookup", {"q": "tea"}, text="Checking."))
    async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0) as client:
        message = await client.messages.create(
            model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        counted = await client.messages.count_tokens(
            model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi" * 40}]
        )
    assert message.stop_reason == "tool_use"
    assert message.content[0].text == "Checking."
    assert message.content[1].name == "lookup" and message.content[1].input == {"q": "tea"}
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert counted.input_tokens > 0
    headers = server.requests[0].headers
    assert headers.get("x-api-key") == "k" or headers.get("authorization") == "Bearer k"


@pytest.mark.asyncio
async def test_anthropic_client_streaming(server: ScriptedMessagesServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    server.enqueue(
        message_response("Saving it.", tool_use_block("save", {"items": [1, 2, {"k": "v" * 40}]}))
    )
    async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0) as client:
        async with client.messages.stream(
            model="claude-sonnet-test", max_tokens=50, messages=[{"role": "user", "content": "go"}]
        ) as stream:
            streamed_text = "".join([text async for text in stream.text_stream])
            final = await stream.get_final_message()
    assert streamed_text == "Saving it."
    assert final.stop_reason == "tool_use"
    assert final.content[1].input == {"items": [1, 2, {"k": "v" * 40}]}
    assert final.usage.output_tokens > 1
    assert server.requests[0].stream is True


@pytest.mark.asyncio
async def test_anthropic_client_sees_errors_and_retries(server: ScriptedMessagesServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    server.enqueue(error_response(529))
    async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0) as client:
        with pytest.raises(anthropic.APIStatusError) as info:
            await client.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
    assert info.value.status_code == 529 and info.value.body["error"]["type"] == "overloaded_error"

    server.enqueue(error_response(429, retry_after=0), text_response("after retry"))
    async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=1) as client:
        message = await client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert message.content[0].text == "after retry"
    assert [r.status for r in server.requests] == [529, 429, 200]


# -- the real SDK and CLI -----------------------------------------------------------------------


def _sdk_options(server: ScriptedMessagesServer, tmp_path: Path, **extra: Any) -> Any:
    sdk = pytest.importorskip("claude_agent_sdk")
    env = server.env(CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    return sdk.ClaudeAgentOptions(env=env, cwd=str(tmp_path), **extra)


async def _run_turn(client: Any, prompt: str) -> list[Any]:
    await client.query(prompt)
    return [message async for message in client.receive_response()]


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_real_sdk_text_turn_and_in_process_tool_turn(
    server: ScriptedMessagesServer, tmp_path: Path
) -> None:
    sdk = pytest.importorskip("claude_agent_sdk")
    calls: list[dict[str, Any]] = []

    @sdk.tool(
        "core_memory_append", "Append text to a memory block.", {"label": str, "content": str}
    )
    async def core_memory_append(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"appended to {args['label']}"}]}

    memory_server = sdk.create_sdk_mcp_server("memory", tools=[core_memory_append])
    options = _sdk_options(
        server,
        tmp_path,
        system_prompt="You are a scripted test agent.",
        mcp_servers={"memory": memory_server},
        allowed_tools=["mcp__memory__core_memory_append"],
    )
    server.enqueue(text_response("Hello!"))
    server.enqueue(
        tool_use_response(
            "mcp__memory__core_memory_append", {"label": "human", "content": "likes tea"}
        )
    )
    server.enqueue(text_response("Noted."))

    async with sdk.ClaudeSDKClient(options) as client:
        first = await _run_turn(client, "hi")
        second = await _run_turn(client, "remember that I like tea")

    assert isinstance(first[-1], sdk.ResultMessage) and first[-1].result == "Hello!"
    assert isinstance(second[-1], sdk.ResultMessage) and second[-1].result == "Noted."
    assert calls == [{"label": "human", "content": "likes tea"}]

    turns = server.turn_requests()
    assert len(turns) == 3 and server.pending() == []
    assert all("You are a scripted test agent." in r.system_text for r in turns)
    assert turns[1].last_user_text == "remember that I like tea"
    # The in-process tool reaches the model as mcp__<server>__<tool> (deferred behind ToolSearch
    # by default, so look in the whole request, not only in `tools`).
    assert "mcp__memory__core_memory_append" in turns[0].raw_body.decode()
    (result,) = turns[2].tool_results
    assert "appended to human" in json.dumps(result["content"])


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_cli_housekeeping_does_not_consume_the_script(
    server: ScriptedMessagesServer, tmp_path: Path
) -> None:
    """The CLI's own compaction and its model probe are auxiliary: the script stays for turns."""
    sdk = pytest.importorskip("claude_agent_sdk")
    options = _sdk_options(server, tmp_path, system_prompt="S")
    # Reported usage near the 1M window makes the CLI compact before the next turn.
    server.enqueue(text_response("big", input_tokens=990_000))
    server.enqueue(text_response("after compaction"))
    server.enqueue(text_response("after set_model"))
    async with sdk.ClaudeSDKClient(options) as client:
        await _run_turn(client, "one")
        second = await _run_turn(client, "two")
        await client.set_model("claude-haiku-4-5")  # the CLI validates it with a max_tokens=1 probe
        third = await _run_turn(client, "three")

    assert second[-1].result == "after compaction"
    assert third[-1].result == "after set_model"
    auxiliary = [r for r in server.message_requests() if r.kind == "auxiliary"]
    assert any(testing_pkg.is_compaction_request(r) for r in auxiliary)
    assert any(r.body.get("max_tokens") == 1 for r in auxiliary)
    assert [r.last_user_text.rsplit("\n", 1)[-1] for r in server.turn_requests()] == [
        "one",
        "two",
        "three",
    ]
