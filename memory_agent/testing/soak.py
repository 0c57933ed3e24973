"""A long conversation through `MemoryAwareAgent`, for soak tests and the soak benchmark.

Real length, real parts: the real SDK and CLI against the scripted Messages API server, real
SQLite (or a PostgreSQL server, `SoakConfig.database_url`), the default 200,000-token window
unless told otherwise. The conversation mixes short
chat, pasted logs of 10-20 kB and calls of a tool (an in-process MCP server the user brings)
whose results are logs of 8-16 kB. It can be reopened in the middle: in the same working
directory, in another one, or in a new storage dir after `memory-agent export` / `import`.

Everything a soak must show is collected in `SoakResult`: per-turn latency and whether a turn
compacted or restarted, every main-model request's size (the server's token count, which is also
the usage the agent calibrates on), the compactions, process RSS and open descriptors, and
the stable-prefix share of consecutive requests (how much of a request repeats the previous one
verbatim, which is what a prompt cache can reuse).

It lives beside `memory_agent.testing` rather than in it, because that package stays
standard-library only (other packages' tests use it); this module drives the whole agent.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    create_sdk_mcp_server,
    tool,
)

from ..agent import MemoryAwareAgent
from ..agent.refresh_policy import (
    DEFAULT_MAX_STALE_TURNS,
    DEFAULT_PROMPT_REFRESH,
    PromptRefresh,
    PromptRefreshPolicy,
)
from ..errors import ConfigurationError
from ..manager import MemoryManager
from ..settings import Settings
from .prompt_cache import CacheUsage, without_cache_control
from .recorded import RecordedRequest
from .responses import text_response, tool_use_response
from .scripted_server import ScriptedMessagesServer

__all__ = [
    "MAIN_MODEL",
    "CompactionCheck",
    "Restart",
    "SoakConfig",
    "SoakResult",
    "TurnRecord",
    "carried_chars",
    "pasted_log",
    "run_plain_soak",
    "run_soak",
    "stable_prefix_share",
    "summary_lines",
]

MAIN_MODEL = "claude-sonnet-4-5"
"""The agent's model in a soak; the server scripts replies for it only, so the summariser
(another model) never takes a scripted turn reply."""

LOG_TOOL = "mcp__logs__read_log"
SHARED_LABEL = "project"
"""The block shared with another agent when `SoakConfig.shared_edit_every` is set."""
Restart = Literal["same-cwd", "other-cwd", "import"]
TurnKind = Literal["chat", "paste", "tool", "edit", "recall"]


def pasted_log(rng: random.Random, size: int) -> str:
    """About `size` characters of service log: the kind of text users paste."""
    levels = ("INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR")
    paths = ("/api/v1/items", "/api/v1/orders", "/healthz", "/api/v2/search", "/login")
    lines: list[str] = []
    total = 0
    while total < size:
        line = (
            f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z {rng.choice(levels)} "
            f"worker-{rng.randint(1, 16)} req={rng.getrandbits(48):012x} "
            f"{rng.choice(paths)}/{rng.randint(1, 99999)} "
            f"status={rng.choice((200, 200, 201, 404, 500))} "
            f"took={rng.randint(1, 2500)}ms"
        )
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


@dataclass(frozen=True)
class SoakConfig:
    """What to run.

    Attributes:
        turns: Turns in the conversation (each answered by the scripted model).
        storage_dir: Where the first storage dir goes (an import moves to a sibling dir).
        project_dir: The agent's working directory; `other_dir` is used after "other-cwd".
        restarts: Turn numbers before which the agent is closed and reopened, and how.
        paste_every: Every n-th turn pastes 10-20 kB (0: never).
        tool_every: Every n-th turn calls the log tool, whose result is 8-16 kB (0: never).
        edit_every: Every n-th turn the model edits its memory (`core_memory_append`), so the
            next request carries a new system prompt (0: never).
        context_window: The compaction window in tokens (default: the settings' default).
        seed: Makes the conversation reproducible.
        shared_edit_every: Before every n-th turn another agent of the storage dir appends to
            the shared block `SHARED_LABEL`, which the soak agent has joined (0: never).
        prompt_refresh: The agent's system-prompt refresh policy (`refresh_policy`).
        max_stale_turns: The deferred policy's limit of turns on a prompt lagging own edits.
        database_url: A PostgreSQL database to store in (default: SQLite in the storage dir).
        import_database_url: On PostgreSQL, the database an "import" restart imports into: another
            one, as the exporting database already holds the agent (required for that restart).
    """

    turns: int
    storage_dir: Path
    project_dir: Path
    other_dir: Path
    restarts: dict[int, Restart] = field(default_factory=dict)
    paste_every: int = 3
    tool_every: int = 5
    edit_every: int = 50
    context_window: int | None = None
    seed: int = 7
    shared_edit_every: int = 0
    prompt_refresh: PromptRefresh = DEFAULT_PROMPT_REFRESH
    max_stale_turns: int = DEFAULT_MAX_STALE_TURNS
    database_url: str | None = field(default=None, repr=False)
    import_database_url: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (
            self.database_url
            and "import" in self.restarts.values()
            and not self.import_database_url
        ):
            raise ConfigurationError(
                "An 'import' restart on PostgreSQL imports into another database: set "
                "import_database_url (bench: --import-database-url), or leave that restart out."
            )


@dataclass(frozen=True)
class TurnRecord:
    number: int
    kind: TurnKind
    seconds: float
    compacted: bool
    restarted: bool
    answer: str
    is_error: bool


@dataclass
class CompactionCheck:
    """The first request after a compaction, against the bounds it must keep."""

    turn: int
    request_tokens: int
    floor_tokens: int
    kept_first_present: bool
    evicted_last_absent: bool


@dataclass
class SoakResult:
    """What a soak saw. Requests are measured as they come and then dropped (a thousand turns
    of 500 kB requests would not fit in memory); `last_request` is kept for end checks."""

    config: SoakConfig
    turns: list[TurnRecord] = field(default_factory=list)
    request_tokens: list[int] = field(default_factory=list)
    request_turns: list[int] = field(default_factory=list)
    carried_chars: list[int] = field(default_factory=list)
    prefix_shares: list[float] = field(default_factory=list)
    prefix_shares_after_edit: list[float] = field(default_factory=list)
    compactions: list[CompactionCheck] = field(default_factory=list)
    trigger_tokens: int = 0
    rss_kb: list[tuple[int, int]] = field(default_factory=list)
    fds: list[tuple[int, int]] = field(default_factory=list)
    first_text: str = ""
    first_text_recalled: bool = False
    last_request: RecordedRequest | None = None
    final_storage_dir: Path | None = None
    final_database_url: str | None = field(default=None, repr=False)
    """The PostgreSQL database the soak ended in (None on SQLite): with `final_storage_dir`,
    where its agent's memory is."""
    agent_id: str = "soak"
    cache_usage: list[CacheUsage] = field(default_factory=list)
    """How the server billed each main-model request's input (cache read / write / uncached)."""
    prompt_rebuilds: int = 0
    """System prompts built by the agent (CLI processes started plus live refreshes)."""

    def reopen_requests(self) -> list[tuple[int, int, bool]]:
        """(turn, tokens, compacted) of the first request after each reopening of the agent."""
        firsts: dict[int, int] = {}
        for turn, tokens in zip(self.request_turns, self.request_tokens):
            firsts.setdefault(turn, tokens)
        return [
            (t.number, firsts[t.number], t.compacted)
            for t in self.turns
            if t.restarted and t.number in firsts
        ]

    def latencies(self) -> list[float]:
        """Seconds per turn, leaving out turns that compacted or reopened the agent."""
        return [t.seconds for t in self.turns if not (t.compacted or t.restarted)]


def stable_prefix_share(previous: dict[str, Any], current: dict[str, Any]) -> float:
    """Share of `previous` (by characters of its tools, system and messages, the prompt cache's
    order) that `current` repeats verbatim from its start: equal tools and system, then the
    leading equal messages.
    1.0 means the new request is the previous one plus new messages, so a prompt cache of the
    previous request is reused whole. `cache_control` markers are ignored (the CLI moves them to
    the newest message on purpose)."""
    parts_now = _request_parts(current)
    parts_before = _request_parts(previous)
    total = sum(len(part) for part in parts_before) or 1
    same = 0
    for now, before in zip(parts_now, parts_before):
        if now != before:
            break
        same += len(now)
    return same / total


def _request_parts(body: dict[str, Any]) -> list[str]:
    def canonical(value: Any) -> str:
        return json.dumps(without_cache_control(value), sort_keys=True, ensure_ascii=False)

    # The prompt cache's own order: tools, then system, then messages.
    return [
        canonical(body.get("tools")),
        canonical(body.get("system")),
        *(canonical(message) for message in body.get("messages") or []),
    ]


def _rss_kb() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


class _Conversation:
    """Turn plans, the log tool and the scripted replies of one soak."""

    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.first_text = f"My sailing boat is called Petrel-{config.seed} and she is blue."

        @tool("read_log", "Read the newest lines of a service log.", {"chars": int})
        async def read_log(arguments: dict[str, Any]) -> dict[str, Any]:
            chars = int(arguments.get("chars", 8000))
            return {"content": [{"type": "text", "text": pasted_log(self.rng, chars)}]}

        self.server = create_sdk_mcp_server("logs", tools=[read_log])

    def kind(self, number: int) -> TurnKind:
        if number == 0:
            return "chat"
        if self.config.edit_every and number % self.config.edit_every == 0:
            return "edit"
        if self.config.tool_every and number % self.config.tool_every == 0:
            return "tool"
        if self.config.paste_every and number % self.config.paste_every == 0:
            return "paste"
        return "chat"

    def prompt(self, number: int, kind: TurnKind) -> str:
        if number == 0:
            return self.first_text
        if kind == "paste":
            size = self.rng.randint(10_000, 20_000)
            return (
                f"Turn {number}: here is the log from the failing "
                f"run:\n{pasted_log(self.rng, size)}"
            )
        if kind == "edit":
            return f"Turn {number}: please remember that deploy {number} went out on a Tuesday."
        if kind == "recall":
            return f"Turn {number}: what did I say my boat is called, at the very start?"
        if kind == "tool":
            return f"Turn {number}: please read the latest service log and tell me what failed."
        return (
            f"Turn {number}: a short question about the deployment, number "
            f"{self.rng.randint(1, 10**6)}."
        )

    def script(self, server: ScriptedMessagesServer, number: int, kind: TurnKind) -> None:
        if kind == "recall":
            server.enqueue(
                # The code word is found by its letters: keyword mode keeps the soak about length
                # (a search by meaning would start embedding every later turn's pasted logs).
                tool_use_response(
                    "mcp__memory__conversation_search",
                    {"query": f"Petrel-{self.config.seed}", "mode": "keyword"},
                ),
                model=MAIN_MODEL,
            )
        if kind == "edit":
            server.enqueue(
                tool_use_response(
                    "mcp__memory__core_memory_append",
                    {"label": "human", "content": f"Deploy {number}: Tuesday."},
                ),
                model=MAIN_MODEL,
            )
        if kind == "tool":
            server.enqueue(
                tool_use_response(LOG_TOOL, {"chars": self.rng.randint(8_000, 16_000)}),
                model=MAIN_MODEL,
            )
        server.enqueue(text_response(f"Answer {number}: understood."), model=MAIN_MODEL)


async def run_soak(
    server: ScriptedMessagesServer, config: SoakConfig, *, progress: Any = None
) -> SoakResult:
    """Run the conversation; `progress(turn_record)` is called after every turn if given.

    The last turn asks the model to search the conversation for the first turn's text (with
    `conversation_search`); `first_text_recalled` says whether the tool found it.
    """
    conversation = _Conversation(config)
    result = SoakResult(config=config, first_text=conversation.first_text)
    storage, cwd, database_url = config.storage_dir, config.project_dir, config.database_url
    agent: MemoryAwareAgent | None = None
    memory: MemoryManager | None = None
    previous: RecordedRequest | None = None
    server.take_requests()
    result.rss_kb.append((0, _rss_kb()))
    result.fds.append((0, _open_fds()))
    try:
        for number in range(config.turns):
            restarted = number in config.restarts
            summaries_at_open: int | None = None
            if restarted or agent is None:
                if agent is not None and memory is not None:
                    result.prompt_rebuilds += agent.reconnects + agent.live_refreshes
                    await agent.__aexit__(None, None, None)
                    memory.close()
                    if config.restarts[number] == "other-cwd":
                        cwd = config.other_dir if cwd == config.project_dir else config.project_dir
                    elif config.restarts[number] == "import":
                        storage, database_url = _export_and_import(
                            storage, database_url, config.import_database_url, result.agent_id
                        )
                memory, agent, summaries_at_open = await _open_agent(
                    server, config, conversation, storage, database_url, cwd, result
                )
            assert memory is not None and agent is not None
            if config.shared_edit_every and number and number % config.shared_edit_every == 0:
                _colleague_edit(memory.settings, number)
            kind: TurnKind = (
                "recall" if number == config.turns - 1 and number > 0 else conversation.kind(number)
            )
            prompt = conversation.prompt(number, kind)
            conversation.script(server, number, kind)
            summaries_before = (
                len(memory.list_summaries(agent_id=result.agent_id))
                if summaries_at_open is None
                else summaries_at_open  # a compaction on connecting is this turn's
            )
            began = time.perf_counter()
            turn = await agent.process_turn(prompt)
            seconds = time.perf_counter() - began
            summaries = memory.list_summaries(agent_id=result.agent_id)
            compacted = len(summaries) > summaries_before
            requests = [
                r
                for r in server.take_requests()
                if r.kind in ("turn", "auxiliary") and MAIN_MODEL in r.model
            ]
            if compacted and requests:
                result.compactions.append(
                    _check_compaction(memory, result.agent_id, number, requests[0], summaries[-1])
                )
            breaks_session = compacted or (restarted and number > 0)
            for index, request in enumerate(requests):
                if request.cache_usage is not None:
                    result.cache_usage.append(request.cache_usage)
                result.request_tokens.append(request.input_tokens)
                result.request_turns.append(number)
                result.carried_chars.append(carried_chars(request))
                if previous is not None and not (index == 0 and breaks_session):
                    share = stable_prefix_share(previous.body, request.body)
                    changed = without_cache_control(
                        previous.body.get("system")
                    ) != without_cache_control(request.body.get("system"))
                    (result.prefix_shares_after_edit if changed else result.prefix_shares).append(
                        share
                    )
                previous = request
            if kind == "recall" and requests:
                result.first_text_recalled = conversation.first_text in json.dumps(
                    requests[-1].tool_results, ensure_ascii=False
                )
            record = TurnRecord(
                number, kind, seconds, compacted, restarted and number > 0, turn.text, turn.is_error
            )
            result.turns.append(record)
            if number % 100 == 99:
                result.rss_kb.append((number + 1, _rss_kb()))
                result.fds.append((number + 1, _open_fds()))
            if progress is not None:
                progress(record)
        result.trigger_tokens = memory.compaction_settings.trigger_tokens if memory else 0
    finally:
        if agent is not None and memory is not None:
            result.prompt_rebuilds += agent.reconnects + agent.live_refreshes
            await agent.__aexit__(None, None, None)
            memory.close()
    result.last_request = previous
    result.rss_kb.append((config.turns, _rss_kb()))
    result.fds.append((config.turns, _open_fds()))
    result.final_storage_dir = storage
    result.final_database_url = database_url
    return result


def _check_compaction(
    memory: MemoryManager, agent_id: str, turn: int, request: RecordedRequest, summary: Any
) -> CompactionCheck:
    """The request right after a compaction carries the kept messages and none of the evicted."""
    kept = memory.in_context_messages(agent_id=agent_id)
    sent = json.dumps(request.messages, ensure_ascii=False)
    first_kept = next((m.text for m in kept if m.message_type == "user" and m.text), "")
    evicted = [
        m
        for m in memory.all_messages(agent_id=agent_id)
        if m.message_type == "user"
        and m.text
        and summary.last_message_id is not None
        and m.message_id <= summary.last_message_id
    ]
    # What the first request of this turn must carry: the kept messages from before the turn,
    # and the turn's prompt (its tool results and answer came after that request).
    prompt = next((m for m in reversed(kept) if m.message_type == "user"), None)
    before = [m for m in kept if prompt is None or m.turn_id != prompt.turn_id]
    floor = (sum(len(m.text) for m in before) + (len(prompt.text) if prompt else 0)) // 4
    return CompactionCheck(
        turn=turn,
        request_tokens=request.input_tokens,
        floor_tokens=floor,
        kept_first_present=bool(first_kept)
        and json.dumps(first_kept, ensure_ascii=False)[1:-1] in sent,
        evicted_last_absent=not evicted
        or json.dumps(evicted[-1].text, ensure_ascii=False)[1:-1] not in sent,
    )


def _colleague_edit(settings: Settings, number: int) -> None:
    """Another agent of the storage dir appends to the shared block (as another process would)."""
    with MemoryManager(agent_id="colleague", settings=settings) as colleague:
        colleague.join_shared_block(SHARED_LABEL)
        colleague.core_memory_append(
            SHARED_LABEL, f"Colleague, before turn {number}: release {number} is staged."
        )


def _options(
    server: ScriptedMessagesServer, conversation: _Conversation, cwd: Path
) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        env=server.env(),
        system_prompt="You are a patient site-reliability assistant.",
        tools=[],
        cwd=str(cwd),
        model=MAIN_MODEL,
        mcp_servers={"logs": conversation.server},
        allowed_tools=[LOG_TOOL],
    )


async def _open_agent(
    server: ScriptedMessagesServer,
    config: SoakConfig,
    conversation: _Conversation,
    storage: Path,
    database_url: str | None,
    cwd: Path,
    result: SoakResult,
) -> tuple[MemoryManager, MemoryAwareAgent, int]:
    """The agent opened and connected, and its summaries counted before it connected (connecting
    compacts a history that needs it before the first turn)."""
    environment = {
        "PERSIST_DIRECTORY": str(storage),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "test-key",
        "MODEL_NAME": MAIN_MODEL,
    }
    if database_url:
        environment["MEMORY_DATABASE_URL"] = database_url
    if config.context_window:
        environment["COMPACTION_CONTEXT_WINDOW"] = str(config.context_window)
    settings = Settings.from_env(environment, env_file=None)
    memory = MemoryManager(agent_id=result.agent_id, settings=settings)
    if config.shared_edit_every:
        memory.join_shared_block(SHARED_LABEL, value="Release notes shared by the on-call team.")
    policy = PromptRefreshPolicy(config.prompt_refresh, max_stale_turns=config.max_stale_turns)
    agent = MemoryAwareAgent(
        _options(server, conversation, cwd), memory=memory, prompt_refresh=policy
    )
    summaries = len(memory.list_summaries(agent_id=result.agent_id))
    await agent.__aenter__()
    return memory, agent, summaries


async def run_plain_soak(server: ScriptedMessagesServer, config: SoakConfig) -> SoakResult:
    """The same conversation through a plain `ClaudeSDKClient`: no memory layer, no memory tool
    calls (an edit turn is answered in text), the CLI's own context handling. The baseline the
    memory layer's cost is measured against; only requests and their bills are collected."""
    conversation = _Conversation(config)
    result = SoakResult(config=config, first_text=conversation.first_text)
    server.take_requests()
    async with ClaudeSDKClient(_options(server, conversation, config.project_dir)) as client:
        for number in range(config.turns):
            kind = conversation.kind(number)
            conversation.script(server, number, "chat" if kind == "edit" else kind)
            began = time.perf_counter()
            await client.query(conversation.prompt(number, kind))
            answer, is_error = "", False
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    answer, is_error = message.result or "", message.is_error
            result.turns.append(
                TurnRecord(
                    number, kind, time.perf_counter() - began, False, False, answer, is_error
                )
            )
            for request in server.take_requests():
                if request.kind in ("turn", "auxiliary") and MAIN_MODEL in request.model:
                    result.request_tokens.append(request.input_tokens)
                    if request.cache_usage is not None:
                        result.cache_usage.append(request.cache_usage)
    result.prompt_rebuilds = 1
    return result


def _export_and_import(
    storage: Path, database_url: str | None, target_database_url: str | None, agent_id: str
) -> tuple[Path, str | None]:
    """`memory-agent export` the agent, then `memory-agent import` it into a new storage dir (on
    PostgreSQL, into `target_database_url`), by the command line itself, in a child process, as a
    user would run it. Returns the new storage dir and database URL."""
    target = storage.parent / f"{storage.name}-imported"
    exported = storage.parent / f"{storage.name}-export.json"
    target_url = target_database_url if database_url else None
    command = [sys.executable, "-c", "from memory_agent.cli import main; main()"]
    # The backend is said on each command line, never inherited from this process's environment.
    environment = {
        name: value for name, value in os.environ.items() if name != "MEMORY_DATABASE_URL"
    }
    for directory, url, arguments in (
        (storage, database_url, ["--agent", agent_id, "export", "-o", str(exported)]),
        (target, target_url, ["import", str(exported)]),
    ):
        backend = ["--database-url", url] if url else []
        done = subprocess.run(
            [*command, "--storage-dir", str(directory), *backend, *arguments],
            capture_output=True,
            text=True,
            check=False,
            env=environment,
        )
        if done.returncode:
            raise RuntimeError(f"memory-agent {' '.join(arguments)} failed: {done.stderr.strip()}")
    return target, target_url


def summary_lines(result: SoakResult) -> Sequence[str]:
    """The figures of a soak, one per line (the bench prints them; a test may log them)."""
    tokens = result.request_tokens
    quiet = result.latencies()
    first, last = quiet[:100], quiet[-100:]
    shares = result.prefix_shares

    def median(values: Sequence[float]) -> float:
        return sorted(values)[len(values) // 2] if values else float("nan")

    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else float("nan")

    largest = max(tokens, default=0)
    return [
        (
            f"turns {len(result.turns)} ({sum(t.kind == 'paste' for t in result.turns)} pastes of "
            "10-20 kB, "
            f"{sum(t.kind == 'tool' for t in result.turns)} tool calls with 8-16 kB results), "
            "answered "
            f"{sum(bool(t.answer) and not t.is_error for t in result.turns)}; restarts "
            f"{dict(result.config.restarts)}"
        ),
        f"compactions {len(result.compactions)} at turns {[c.turn for c in result.compactions]}",
        (
            f"max request {largest:,} tokens vs trigger {result.trigger_tokens:,} "
            f"({largest / max(result.trigger_tokens, 1):.3f}); {len(tokens)} requests; largest "
            "conversation "
            f"carried {max(result.carried_chars, default=0) / 1024:,.0f} KiB"
        ),
        "first request after each compaction: "
        + ", ".join(
            f"{c.request_tokens:,} (floor {c.floor_tokens:,})" for c in result.compactions[:8]
        )
        + (" ..." if len(result.compactions) > 8 else ""),
        "first request after each reopening: "
        + (
            ", ".join(
                f"turn {turn}: {tokens:,} tokens "
                f"({'compacted first' if compacted else 'no compaction'})"
                for turn, tokens, compacted in result.reopen_requests()
            )
            or "none"
        )
        + f" (trigger {result.trigger_tokens:,})",
        (
            f"latency of non-compacting turns (ms): first {len(first)} median "
            f"{median(first) * 1000:.0f} "
            f"mean {mean(first) * 1000:.0f}; last {len(last)} median {median(last) * 1000:.0f} "
            f"mean {mean(last) * 1000:.0f}; last/first means {mean(last) / mean(first):.2f}"
        ),
        f"RSS {result.rss_kb[0][1] / 1024:.0f} MB at start, "
        + ", ".join(f"{kb / 1024:.0f} MB after {turn}" for turn, kb in result.rss_kb[1:]),
        f"open fds {result.fds[0][1]} at start, {result.fds[-1][1]} at end (max "
        f"{max(f for _, f in result.fds)})",
        (
            f"stable-prefix share of consecutive requests (share of the previous request repeated "
            f"verbatim): median {median(shares):.3f}, mean {mean(shares):.3f}, "
            f"1.0 in {sum(s >= 0.9999 for s in shares)}/{len(shares)} pairs; after a memory edit "
            "(new "
            f"system prompt): {len(result.prefix_shares_after_edit)} pairs, median "
            f"{median(result.prefix_shares_after_edit):.3f} (the tool definitions only)"
        ),
        f"first turn's text found by conversation_search at the end: {result.first_text_recalled}",
    ]


def carried_chars(request: RecordedRequest) -> int:
    """Characters of the conversation a request carried (its messages, as JSON)."""
    return len(json.dumps(request.messages, ensure_ascii=False))
