"""MemoryAwareAgent: a drop-in `ClaudeSDKClient` with durable, Letta-style memory.

How a turn runs:
1. `query()` settles the session first, doing what the turn planner's plan says
   (`turn_planner.TurnPlanner.before_turn`). If a compaction is due it runs (the cheap model
   writes the summary, old messages leave the context). If the prompt must show changed memory,
   the running CLI process gets the new prompt through a control request (about 20 ms); where
   that is not possible it reconnects, resuming the same SDK session from the SQLite session
   store (about 600 ms). While memory is unchanged the running process is reused, at no cost.
2. With `auto_recall` on, the planner searches memory for the prompt (`TurnPlanner.recall`).
   The prompt is stored, then sent, with the turn's `<turn_context>` (time, memory sizes, and
   what recall found) as its first block.
3. Every message the SDK yields is stored before it is handed to the caller unchanged.
4. After the result, the planner calibrates the token budget with the usage the API reported and
   decides whether the next turn compacts first (`TurnPlanner.after_turn`).

After a compaction the next turn starts a fresh SDK session: the summary is in its system prompt
and the kept messages are seeded into its transcript (`sdk_seams.transcript`), so the model sees
them as real turns and never sees the evicted ones again. The same happens when a session cannot be
resumed (another working directory, an imported conversation). A conversation that would reach the
trigger with the next turn's growth when the agent connects is compacted before the CLI starts, and
every compaction leaves that growth free, so one is enough. Nothing on the way has a size cap: the
system prompt goes to the CLI as a file or a control request, the kept messages through the session
store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    project_key_for_directory,
)
from claude_agent_sdk.types import PermissionMode

from compaction import CompactionOutcome, CompactionSettings, MessageRecord, message_tokens

from ..errors import ConfigurationError
from ..integrations.session_store import SQLiteSessionStore
from ..manager import MemoryManager
from ..prompt.turn_context import (
    RecalledItem,
    render_recalled,
    render_turn_context,
    with_turn_context,
)
from ..sdk_seams import send_system_prompt
from ..sdk_seams.transcript import seed_lines
from ..tools import (
    MEMORY_SERVER_NAME,
    build_memory_server,
    get_tools_definitions,
    memory_tool_names,
)
from ..tools.memory_tool import DEFAULT_TOOL_SET, ToolSet, check_tool_set
from .auto_recall import AutoRecall, AutoRecallSetting, auto_recall_settings
from .background_consolidation import BackgroundConsolidation
from .consolidation_schedule import DEFAULT_CONSOLIDATION, ConsolidationSetting, schedule_from
from .message_indexing import BackgroundIndexing
from .model_errors import raise_for_authentication_failure
from .options import (
    compose_system_text,
    is_preset,
    merge_options,
    user_system_text,
    with_base_prompt,
)
from .prompt_file import PromptFile
from .recorder import message_fields
from .refresh_policy import DEFAULT_PROMPT_REFRESH, PromptRefresh, PromptRefreshPolicy, make_policy
from .session_state import SessionState
from .turn import TurnResult
from .turn_planner import TurnPlan, TurnPlanner

__all__ = ["MemoryAwareAgent", "RefreshMode"]

logger = logging.getLogger(__name__)

RefreshMode = Literal["live", "reconnect"]
"""How a changed memory reaches a running session: a control request, or a new CLI process."""

_SESSION_KEY = "sdk_session_id"


class MemoryAwareAgent:
    """A `ClaudeSDKClient` whose agent remembers: change the class name and keep your code.

    Args:
        options: The SDK options, kept as they are; the memory layer adds to them.
        memory: The memory to use; by default a `MemoryManager` on the configured storage dir.
        agent_id: Which agent of the storage dir this is (default: the memory's agent).
        compaction_settings: Overrides the memory's compaction settings for this agent.
        refresh_mode: "live" (default) hands changed memory to the running CLI process;
            "reconnect" starts a new process that resumes the session instead.
        memory_tools: Which memory tools the model gets: "letta" (the block tools), "anthropic"
            (the `memory` tool on /memories paths) or "both" (default; see `memory_tool.ToolSet`).
        prompt_refresh: When changed memory is rebuilt into the system prompt: "announce"
            (default: the model's own edits wait, since their tool results show them; a change
            it did not make comes with its next message), "deferred" (such a change rebuilds
            the prompt before the next turn) or "live" (every change rebuilds it); or a
            `PromptRefreshPolicy`. See `refresh_policy`.
        clock: The current time, told to the model with each user message (`turn_context`);
            injectable so tests can let hours pass.
        consolidation: When memory is consolidated in the background: "after_compaction"
            (default), "off", or a `ConsolidationSchedule` (every N turns, a chosen consolidator).
            A run never delays a turn; the model sees what it changed on its next turn, as any
            change it did not make (`prompt_refresh`). `disconnect` waits for a running one.
        allow_secret: Whether the model sees this agent's secret blocks (in its system prompt) and
            secret passages (through its tools and automatic recall); default False
            (`memory_agent.privacy.sensitivity`).
        auto_recall: Whether memories relevant to each prompt are found before the turn and sent
            with it, in its `<turn_context>`: False (default), True (the defaults: 2,000 tokens,
            archival and conversation, hybrid) or an `AutoRecallSettings`. See `auto_recall`.
    """

    def __init__(
        self,
        options: ClaudeAgentOptions | None = None,
        *,
        memory: MemoryManager | None = None,
        agent_id: str | None = None,
        compaction_settings: CompactionSettings | None = None,
        refresh_mode: RefreshMode = "live",
        memory_tools: ToolSet = DEFAULT_TOOL_SET,
        prompt_refresh: PromptRefresh | PromptRefreshPolicy = DEFAULT_PROMPT_REFRESH,
        clock: Callable[[], datetime] | None = None,
        consolidation: ConsolidationSetting = DEFAULT_CONSOLIDATION,
        allow_secret: bool = False,
        auto_recall: AutoRecallSetting = False,
    ) -> None:
        if not isinstance(allow_secret, bool):
            raise ConfigurationError(f"allow_secret must be True or False, got {allow_secret!r}.")
        self.allow_secret = allow_secret
        recall_settings = auto_recall_settings(auto_recall)
        self.memory_tools: ToolSet = check_tool_set(memory_tools)
        schedule = schedule_from(consolidation)
        if refresh_mode not in ("live", "reconnect"):
            raise ConfigurationError(
                f"refresh_mode must be 'live' or 'reconnect', got {refresh_mode!r}."
            )
        self.refresh_mode: RefreshMode = refresh_mode
        self.prompt_refresh = make_policy(prompt_refresh)
        self.prompt_refresh.allow_secret = allow_secret
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self.options = options or ClaudeAgentOptions()
        self._owns_memory = memory is None
        self.memory = memory or MemoryManager(
            agent_id=agent_id, compaction_settings=compaction_settings
        )
        self.agent_id = agent_id or self.memory.agent_id
        self.memory.ensure_agent(self.agent_id)
        self.options = with_base_prompt(
            self.options, self.memory.get_base_system_prompt(agent_id=self.agent_id)
        )
        self.compactor = self.memory.compactor_for(
            compaction_settings if memory is not None else None
        )
        self.session_store = SQLiteSessionStore.for_memory(self.memory)
        self._prompt_file = PromptFile()
        self._client: ClaudeSDKClient | None = None
        # What the last API usage covered, for calibrating the token budget after the turn.
        self._last_usage: dict[str, Any] | None = None
        self._last_request_through: int | None = None
        self._last_stored_id: int | None = None
        self.last_compaction: CompactionOutcome | None = None
        self.reconnects = 0
        self.live_refreshes = 0
        # The tool definitions are counted here, where the tools are known, and handed to the
        # manager's count of the request's fixed part (the manager knows nothing of tools).
        self._tools_tokens = self.compactor.count_text(
            json.dumps(get_tools_definitions(), ensure_ascii=False)
        )
        self.planner = TurnPlanner(
            self.memory,
            self.agent_id,
            self.compactor,
            self.prompt_refresh,
            count_fixed=self._request_fixed_tokens,
            auto_recall=(
                AutoRecall(
                    self.memory,
                    self.agent_id,
                    recall_settings,
                    count_text=self.compactor.count_text,
                    allow_secret=allow_secret,
                    clock=self._clock,
                )
                if recall_settings is not None
                else None
            ),
        )
        """What happens before and after each turn, and the state it is decided from."""
        # What the planner recalled for the next user message (sent once, then cleared).
        self._recalled: tuple[tuple[RecalledItem, ...], tuple[str, ...]] = ((), ())
        stored = self.memory.get_agent_state(agent_id=self.agent_id).get(_SESSION_KEY)
        self.state = SessionState.resuming(stored or self.options.resume)
        self.consolidation = BackgroundConsolidation(self.memory, self.agent_id, schedule)
        """The background consolidation: its schedule, the run in progress, the last report."""
        self.message_indexing = BackgroundIndexing(self.memory, self.agent_id)
        """Message vectors written after each turn, off its path (once they are in use)."""

    @property
    def session_id(self) -> str | None:
        """The SDK session this agent continues (None until its first turn, or after a
        compaction)."""
        return self.state.session_id

    # ----- the ClaudeSDKClient surface ----------------------------------------------------

    async def connect(self, prompt: str | AsyncIterable[dict[str, Any]] | None = None) -> None:
        """Start the CLI with memory in the system prompt; a prompt, if given, is sent at once."""
        await self._settle_session()
        if prompt is not None:
            await self.query(prompt)

    async def query(
        self, prompt: str | AsyncIterable[dict[str, Any]], session_id: str = "default"
    ) -> None:
        """Store the prompt and send it, after bringing the session's memory up to date."""
        if not self.state.in_turn:
            await self._settle_session(prompt if isinstance(prompt, str) else None)
        client = self._require_client()
        self.state.turn_started()
        self.planner.turn_started()
        if isinstance(prompt, str):
            self._store_prompt(prompt)
            await client.query(
                self._with_context(
                    {
                        "type": "user",
                        "message": {"role": "user", "content": prompt},
                        "parent_tool_use_id": None,
                    }
                ),
                session_id=session_id,
            )
        else:
            await client.query(self._recorded_stream(prompt), session_id=session_id)

    async def receive_messages(self) -> AsyncIterator[Any]:
        """Every message from the SDK, each stored before it is yielded unchanged."""
        async for message in self._require_client().receive_messages():
            self._record(message)
            yield message

    async def receive_response(self) -> AsyncIterator[Any]:
        """Messages up to and including the turn's `ResultMessage`, each stored first."""
        async for message in self.receive_messages():
            yield message
            if isinstance(message, ResultMessage):
                return

    async def interrupt(self) -> None:
        await self._require_client().interrupt()

    async def set_permission_mode(self, mode: PermissionMode) -> None:
        """Also kept for later reconnects, so a memory refresh does not undo it."""
        self.options.permission_mode = mode
        await self._require_client().set_permission_mode(mode)

    async def set_model(self, model: str | None = None) -> None:
        """Also kept for later reconnects, so a memory refresh does not undo it."""
        self.options.model = model
        await self._require_client().set_model(model)

    async def rewind_files(self, user_message_id: str) -> None:
        await self._require_client().rewind_files(user_message_id)

    async def reconnect_mcp_server(self, server_name: str) -> None:
        await self._require_client().reconnect_mcp_server(server_name)

    async def toggle_mcp_server(self, server_name: str, enabled: bool) -> None:
        await self._require_client().toggle_mcp_server(server_name, enabled)

    async def stop_task(self, task_id: str) -> None:
        await self._require_client().stop_task(task_id)

    async def get_mcp_status(self) -> Any:
        return await self._require_client().get_mcp_status()

    async def get_context_usage(self) -> Any:
        return await self._require_client().get_context_usage()

    async def get_server_info(self) -> dict[str, Any] | None:
        return await self._require_client().get_server_info()

    async def disconnect(self) -> None:
        """Stop the CLI process, and wait for a background consolidation that is running."""
        await self._stop_process()
        await self.consolidation.wait()
        await self.message_indexing.wait()

    async def __aenter__(self) -> MemoryAwareAgent:
        await self.connect()
        return self

    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        try:
            await self._stop_process()
        finally:
            await self.consolidation.aclose()  # before the memory closes: nothing is written after
            await self.message_indexing.aclose()
        self._prompt_file.close()
        await self.compactor.aclose()
        if self._owns_memory:
            self.memory.close()
        return False

    # ----- the main-loop surface ----------------------------------------------------------

    async def process_turn(self, user_message: str) -> TurnResult:
        """Send one message and collect the whole turn (for a main loop).

        Raises `ModelAuthenticationError` when the model API has no credentials or refuses them.
        """
        await self.query(user_message)
        messages = [message async for message in self.receive_response()]
        raise_for_authentication_failure(
            messages
        )  # one clear error, not a stored "Not logged in" answer
        return TurnResult.from_messages(messages)

    async def compact(self, *, force: bool = True) -> CompactionOutcome:
        """The manual trigger: compact now (whatever the budget says, with the default `force`);
        the next turn starts a session without the evicted part. Like a planned compaction it
        leaves the planner's headroom free, so the next turn does not compact again."""
        return await self._compact(force=force, headroom=self.planner.headroom)

    async def _compact(self, *, force: bool, headroom: int) -> CompactionOutcome:
        """Run a compaction that leaves `headroom` tokens free under the target, and hand its
        outcome on: the planner, the background consolidation and the session
        (`_after_compaction`)."""
        outcome = await self.compactor.compact(
            self.agent_id, self._request_fixed_tokens(), force=force, headroom=headroom
        )
        self._after_compaction(outcome)
        return outcome

    # ----- sessions -----------------------------------------------------------------------

    def _require_client(self) -> ClaudeSDKClient:
        if self._client is None:
            raise ConfigurationError(
                "The agent is not connected. Call connect() or use 'async with' first."
            )
        return self._client

    async def _settle_session(self, prompt: str | None = None) -> None:
        """Do what the planner's plan says: compact if due, then reuse the CLI process, give it
        the current memory live, or start a new one with it."""
        plan = self.planner.before_turn(
            prompt,
            connected=self._client is not None,
            can_refresh_live=self.state.can_refresh_live(),
        )
        if plan.compact:
            # Forced: the running budget, calibrated on reported usage, already decided; the
            # engine's own check would re-estimate the messages uncalibrated and could skip.
            await self._compact(force=True, headroom=plan.headroom)
            plan = self.planner.replan(
                connected=self._client is not None, can_refresh_live=self.state.can_refresh_live()
            )
        if plan.rebuild:
            await self._build_prompt(plan)
        if self.planner.auto_recall is not None:
            # Searching embeds the prompt: in a worker thread, as the memory tools run, so other
            # agents sharing the event loop are not stalled.
            plan = await asyncio.to_thread(self.planner.recall, plan)
        self._recalled = (plan.recalled, plan.recall_notes)

    async def _build_prompt(self, plan: TurnPlan) -> None:
        """Give the running process the current memory live, else start a new process with it."""
        refreshed = False
        if self._client is not None and self.state.can_refresh_live():
            refreshed = await self._refresh_live(self._memory_text())
        if refreshed:
            self.live_refreshes += 1
        else:
            await self._stop_process()
            await self._start_process()
        self.state.process_ready()
        self.planner.prompt_built(plan)

    def _request_fixed_tokens(self) -> int:
        """The request outside the conversation: the user's prompt, rendered memory and tools.
        The summary is left out: the budget counts it as the summary."""
        own_prompt = user_system_text(self.options.system_prompt) or ""
        return self.compactor.count_text(own_prompt) + self.memory.memory_tokens(
            agent_id=self.agent_id, tools_tokens=self._tools_tokens
        )

    async def _stop_process(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            self.state.disconnected()
            await client.disconnect()

    async def _start_process(self) -> None:
        """A new CLI process on the current session, or on a new one seeded with the context."""
        resume = self.state.session_id if self._resumable() else await self._seed_new_session()
        client = ClaudeSDKClient(self._session_options(self._memory_text(), resume))
        await client.connect()
        self._client = client
        self.reconnects += 1

    async def _refresh_live(self, memory_text: str) -> bool:
        """Give the running CLI process the new system prompt, keeping process and session.

        Through `sdk_seams.send_system_prompt` (a CLI control request the SDK has no public method
        for): about 20 ms instead of about 600 ms for a new process. Not for presets (their text
        lives in the CLI); when the request is refused, the agent reconnects for the rest of its
        life.
        """
        if self.refresh_mode != "live" or is_preset(self.options.system_prompt):
            return False
        try:
            sent = await send_system_prompt(
                self._require_client(),
                model=self.options.model or self.memory.settings.model_name,
                system_prompt=compose_system_text(self.options.system_prompt, memory_text),
            )
        except Exception as error:  # an older or newer CLI: reconnecting always works
            logger.info("live system prompt refresh refused (%s); reconnecting from now on", error)
            sent = False
        if not sent:
            self.refresh_mode = "reconnect"
        return sent

    def _memory_text(self) -> str:
        """Rendered memory: blocks, metadata and the conversation summary."""
        return self.memory.get_system_prompt_addition(
            agent_id=self.agent_id, allow_secret=self.allow_secret
        )

    def _cwd(self) -> Path:
        return Path(self.options.cwd) if self.options.cwd else Path.cwd()

    def _store(self) -> Any:
        """The SessionStore the CLI's transcripts go to: the user's, else the one in memory's
        database."""
        return (
            self.options.session_store
            if self.options.session_store is not None
            else self.session_store
        )

    def _resumable(self) -> bool:
        """Whether the current session can be resumed from the store, seen from this cwd.

        The SDK keys stored sessions by working directory; a restart elsewhere (or a store that
        lost the transcript) cannot resume, so the conversation continues in a new session seeded
        with every message still in context instead.
        """
        session_id = self.state.session_id
        if not (self.state.session_started and session_id):
            return False
        if self.options.session_store is not None:
            return True
        if self.session_store.has_session(project_key_for_directory(self._cwd()), session_id):
            return True
        self.state.session_lost()
        return False

    async def _seed_new_session(self) -> str | None:
        """Write the in-context messages into the store as a new session's transcript and return
        its id (None, for a fresh session, when there is nothing in context)."""
        messages = self.memory.in_context_messages(agent_id=self.agent_id)
        if not messages:
            self.memory.set_agent_state({_SESSION_KEY: None}, agent_id=self.agent_id)
            self.state.session_seeded(None)
            return None
        session_id = str(uuid.uuid4())
        cwd = self._cwd()
        lines = seed_lines(
            messages,
            session_id=session_id,
            cwd=str(cwd),
            model=self.options.model or self.memory.settings.model_name,
        )
        await self._store().append(
            {"project_key": project_key_for_directory(cwd), "session_id": session_id}, lines
        )
        self.state.session_seeded(session_id)
        self.memory.set_agent_state({_SESSION_KEY: session_id}, agent_id=self.agent_id)
        return session_id

    def _session_options(self, memory_text: str, resume: str | None) -> ClaudeAgentOptions:
        """Options for a new CLI process: resume `resume`, or start a session with a fresh id."""
        new_id = self.state.process_starting(resume)
        prompt_path = self._prompt_file.write(
            compose_system_text(self.options.system_prompt, memory_text)
        )
        return merge_options(
            self.options,
            system_prompt_path=prompt_path,
            memory_server_name=MEMORY_SERVER_NAME,
            memory_server=build_memory_server(
                self.memory,
                self.agent_id,
                tool_set=self.memory_tools,
                allow_secret=self.allow_secret,
            ),
            memory_tools=memory_tool_names(self.memory, tool_set=self.memory_tools),
            resume=resume,
            session_id=new_id,
            session_store=self.session_store,
            model=self.memory.settings.model_name,
        )

    def _after_compaction(self, outcome: CompactionOutcome) -> None:
        """A new summary means a new SDK session that carries the summary and the kept messages."""
        self.last_compaction = outcome
        self.planner.compacted(outcome)
        self.consolidation.compaction_finished(
            outcome.changed
        )  # the one seam: a run, in the background
        if not outcome.changed:
            return
        self.memory.set_agent_state({_SESSION_KEY: None}, agent_id=self.agent_id)
        self.state.compacted()

    # ----- recording ----------------------------------------------------------------------

    def _store_prompt(self, content: Any) -> None:
        stored = self.memory.store_message(
            "user",
            content,
            agent_id=self.agent_id,
            message_type="user",
            turn_id=self.state.turn_id,
            session_id=self.state.recording_session_id,
            token_count=self._estimate("user", content),
        )
        if stored is not None:
            self._last_stored_id = stored.message_id

    async def _recorded_stream(
        self, prompt: AsyncIterable[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        async for message in prompt:
            inner = message.get("message", {})
            if message.get("type") == "user" and isinstance(inner, dict) and "content" in inner:
                self._store_prompt(inner["content"])
                async for sent in self._with_context(message):
                    yield sent
            else:
                yield message

    async def _with_context(self, message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The user message with the turn's context (time, memory sizes, recalled memories) as its
        first block: what changes every turn travels with the turn, so the system prompt stays
        byte-identical."""
        recalled, self._recalled = render_recalled(*self._recalled), ((), ())
        context = render_turn_context(
            self.memory.turn_context(self._clock(), agent_id=self.agent_id), recalled
        )
        changes = self.planner.announcement()
        context = f"{context}\n{changes}" if changes else context
        inner = message["message"]
        yield {
            **message,
            "message": {**inner, "content": with_turn_context(inner["content"], context)},
        }

    def _record(self, message: Any) -> None:
        fields = message_fields(message)
        if fields is None:
            return
        if isinstance(message, AssistantMessage) and message.usage:
            # The usage of the request that produced this message: it carried everything so far.
            self._last_usage = message.usage
            self._last_request_through = self._last_stored_id
        stored = self.memory.store_message(
            fields.role,
            fields.content,
            agent_id=self.agent_id,
            message_type=fields.message_type,
            session_id=fields.session_id or self.state.session_id,
            turn_id=self.state.turn_id,
            sdk_uuid=fields.sdk_uuid,
            metadata=fields.metadata,
            in_context=fields.in_context,
            token_count=self._estimate(fields.role, fields.content) if fields.in_context else None,
        )
        if stored is not None and fields.in_context:
            self._last_stored_id = stored.message_id
        if isinstance(message, ResultMessage):
            self._finish_turn(message)

    def _finish_turn(self, result: ResultMessage) -> None:
        if self.state.turn_finished(result.session_id):
            self.memory.set_agent_state({_SESSION_KEY: result.session_id}, agent_id=self.agent_id)
        self.planner.after_turn(self._last_usage, through_id=self._last_request_through)
        self._last_usage = None
        self.consolidation.turn_finished()
        self.message_indexing.turn_finished()

    def _estimate(self, role: str, content: Any) -> int:
        return message_tokens(
            MessageRecord(id=0, role=role, content=content), self.compactor.counter
        )
