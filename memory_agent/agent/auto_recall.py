"""Automatic recall: memories relevant to the user's message, found before the turn, sent with it.

Without it the model sees only what is in its context window and must think of calling
`archival_memory_search` or `conversation_search` itself. With `MemoryAwareAgent(auto_recall=...)`
the turn planner asks `AutoRecall.recall(prompt)` before each turn: a search of archival memory
(hybrid by default, the agent's sensitivity clearance applied inside the query, access counts
left alone) and of the stored conversation (messages no longer in the context window only), for
the user's prompt. The best hits, taken in turn from each source by rank (scores of different
searches are not comparable), go into the turn's `<turn_context>` while the rendered section
stays within the token budget, counted with the agent's own token counter. Each item is escaped
and governed (`recall_guard`), and attributed (source, id, role, date).

A search that fails (a vector store down, a database error) costs that source only: the turn
goes on with what the other source found, or with nothing, and the failure is logged as a
warning, recorded in the agent's state (`auto_recall_warning`) and told to the model in the
section (so it knows to search itself). A hybrid search that fell back to keywords says so too.

Conversation search goes through `_search_conversation`: `MemoryManager.search_messages` in the
settings' mode (hybrid by default, see docs/conversation-search.md).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from ..errors import ConfigurationError
from ..manager import MemoryManager
from ..prompt.turn_context import RecalledItem, render_recalled, render_recalled_item

__all__ = [
    "AutoRecall",
    "AutoRecallSetting",
    "AutoRecallSettings",
    "RecallReport",
    "auto_recall_settings",
]

logger = logging.getLogger(__name__)

RecallSource = Literal["archival", "conversation"]
RecallMode = Literal["hybrid", "keyword", "vector"]
SOURCES: tuple[RecallSource, ...] = ("archival", "conversation")
MODES: tuple[RecallMode, ...] = ("hybrid", "keyword", "vector")
WARNING_STATE_KEY = "auto_recall_warning"
"""The agent-state key holding the last recall failure (time and words)."""
MAX_QUERY_CHARS = 2_000
"""A pasted document is searched by its beginning: longer queries cost time, not recall."""
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class AutoRecallSettings:
    """How automatic recall chooses what goes into a turn (`MemoryAwareAgent(auto_recall=...)`)."""

    token_budget: int = 2_000
    """Tokens the whole `<recalled_memories>` section may take, tags and notes included."""
    max_items: int = 20
    """At most this many memories per turn."""
    sources: tuple[RecallSource, ...] = SOURCES
    """Where to search: "archival" (passages) and/or "conversation" (stored messages)."""
    min_score: float | None = None
    """Drop hits whose search score is below this (the scale is the search mode's own: a hybrid
    score is a rank fusion, a keyword one -bm25); None keeps every hit within the budget."""
    mode: RecallMode = "hybrid"
    """The search mode of both archival and conversation search."""
    max_item_tokens: int = 400
    """A longer memory is shortened to about this many tokens (marked with an ellipsis)."""
    candidates: int = 20
    """Hits asked of each source before the budget chooses among them."""

    def __post_init__(self) -> None:
        _positive("token_budget", self.token_budget, minimum=200)
        _positive("max_items", self.max_items)
        _positive("max_item_tokens", self.max_item_tokens, minimum=20)
        _positive("candidates", self.candidates)
        if not isinstance(self.sources, tuple) or not self.sources:
            raise ConfigurationError(
                f"auto-recall sources must be a non-empty tuple of {SOURCES}, got {self.sources!r}."
            )
        unknown = [source for source in self.sources if source not in SOURCES]
        if unknown or len(set(self.sources)) != len(self.sources):
            raise ConfigurationError(
                f"auto-recall sources must be distinct names from {SOURCES}, got {self.sources!r}."
            )
        if self.mode not in MODES:
            raise ConfigurationError(f"auto-recall mode must be one of {MODES}, got {self.mode!r}.")
        if self.min_score is not None and (
            isinstance(self.min_score, bool) or not isinstance(self.min_score, (int, float))
        ):
            raise ConfigurationError(
                f"auto-recall min_score must be a number or None, got {self.min_score!r}."
            )


AutoRecallSetting = bool | AutoRecallSettings
"""`MemoryAwareAgent(auto_recall=...)`: False (off), True (the defaults) or settings."""


def auto_recall_settings(value: AutoRecallSetting) -> AutoRecallSettings | None:
    """The settings an `auto_recall=` argument stands for (None: off)."""
    if value is False:
        return None
    if value is True:
        return AutoRecallSettings()
    if isinstance(value, AutoRecallSettings):
        return value
    raise ConfigurationError(
        f"auto_recall must be True, False or an AutoRecallSettings, got {value!r}."
    )


def _positive(name: str, value: object, *, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(
            f"auto-recall {name} must be a whole number of at least {minimum}, got {value!r}."
        )


@dataclass(frozen=True)
class RecallReport:
    """What recall did for one turn: what it chose, its cost, and what went wrong."""

    items: tuple[RecalledItem, ...] = ()
    notes: tuple[str, ...] = ()
    """Failures and fallbacks, also told to the model in the section."""
    tokens: int = 0
    """Tokens of the rendered section (0 when nothing is sent)."""
    seconds: float = 0.0
    """Time the searches and the selection took."""
    candidates: int = 0
    """Hits considered before the budget chose."""
    section: str = field(default="", repr=False)
    """The `<recalled_memories>` text as sent."""


@dataclass(frozen=True)
class _Candidate:
    item: RecalledItem
    key: str
    """Normalised text, so the same words found in both sources are sent once."""


class AutoRecall:
    """One agent's automatic recall: searches, budget, selection (see the module doc)."""

    def __init__(
        self,
        memory: MemoryManager,
        agent_id: str,
        settings: AutoRecallSettings,
        *,
        count_text: Callable[[str], int],
        allow_secret: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.memory = memory
        self.agent_id = agent_id
        self.settings = settings
        self.allow_secret = allow_secret
        self._count = count_text
        self._clock = clock or (lambda: datetime.now(timezone.utc))

    def recall(self, prompt: str) -> RecallReport:
        """The memories to send with `prompt`, within the budget. Never raises for a search."""
        started = time.perf_counter()
        query = prompt[:MAX_QUERY_CHARS]
        if not _WORD.search(query):
            return RecallReport(seconds=time.perf_counter() - started)
        notes: list[str] = []
        ranked: list[list[_Candidate]] = []
        for source in self.settings.sources:
            search = self._archival if source == "archival" else self._conversation
            try:
                ranked.append(search(query, notes))
            except Exception as error:  # a failed search costs its source only, and says so
                notes.append(
                    f"{source} search failed ({type(error).__name__}); nothing was recalled from"
                    f" it this turn: search it yourself if it matters"
                )
                logger.warning(
                    "auto-recall of agent %s: %s search failed; the turn goes on without it",
                    self.agent_id,
                    source,
                    exc_info=True,
                )
        candidates = list(_interleave(ranked))
        items, section, tokens = self._select(candidates, notes)
        if notes:
            self._record_warning(notes)
        return RecallReport(
            items=tuple(items),
            notes=tuple(notes),
            tokens=tokens,
            seconds=time.perf_counter() - started,
            candidates=len(candidates),
            section=section,
        )

    # ----- the sources --------------------------------------------------------------------

    def _archival(self, query: str, notes: list[str]) -> list[_Candidate]:
        hits = self.memory.archival_memory_search(
            query,
            limit=self.settings.candidates,
            mode=self.settings.mode,
            agent_id=self.agent_id,
            allow_secret=self.allow_secret,
            count_access=False,
        )
        if any(hit.degraded for hit in hits):
            notes.append(
                "archival search fell back to keywords only (the vector index failed;"
                " `memory-agent doctor` says why)"
            )
            logger.warning(
                "auto-recall of agent %s: archival %s search fell back to keywords",
                self.agent_id,
                self.settings.mode,
            )
        return [
            self._candidate("archival", hit.passage_id, hit.passage.created_at, hit.content)
            for hit in hits
            if self._scores_enough(hit.score)
        ]

    def _conversation(self, query: str, notes: list[str]) -> list[_Candidate]:
        found = _search_conversation(
            self.memory,
            query,
            agent_id=self.agent_id,
            limit=self.settings.candidates,
            mode=self.settings.mode,
        )
        chosen = []
        for message, score in found:
            if message.in_context or not message.text.strip():
                continue  # the model already sees it, or there are no words to show
            if score is not None and not self._scores_enough(score):
                continue
            chosen.append(
                self._candidate(
                    "conversation",
                    str(message.message_id),
                    message.created_at,
                    message.text,
                    role=message.role,
                )
            )
        return chosen

    def _scores_enough(self, score: float) -> bool:
        return self.settings.min_score is None or score >= self.settings.min_score

    def _candidate(
        self, source: str, item_id: str, created_at: str, text: str, *, role: str | None = None
    ) -> _Candidate:
        shortened = self._shorten(text.strip())
        item = RecalledItem(
            source=source, item_id=item_id, created_at=created_at, text=shortened, role=role
        )
        return _Candidate(item=item, key=" ".join(text.casefold().split()))

    def _shorten(self, text: str) -> str:
        """`text` cut at a word boundary to about `max_item_tokens`, marked with an ellipsis."""
        limit = self.settings.max_item_tokens
        tokens = self._count(text)
        while tokens > limit and len(text) > 1:
            keep = max(1, int(len(text) * limit / tokens * 0.9))
            cut = text[:keep]
            text = (cut.rsplit(None, 1)[0] if " " in cut.strip() else cut).rstrip() + " …"
            tokens = self._count(text)
        return text

    # ----- the budget ---------------------------------------------------------------------

    def _select(
        self, candidates: Iterable[_Candidate], notes: Sequence[str]
    ) -> tuple[list[RecalledItem], str, int]:
        """The candidates, best first, that fit the budget: an item too large to fit is passed
        over for a smaller one after it. The section is rendered and counted in full at the end,
        and shortened from its last item should the sum of parts have undercounted it."""
        budget = self.settings.token_budget
        frame = self._count(render_recalled([_EMPTY_ITEM], notes)) - self._count(
            render_recalled_item(_EMPTY_ITEM)
        )
        items: list[RecalledItem] = []
        seen: set[str] = set()
        used = frame
        for candidate in candidates:
            if len(items) >= self.settings.max_items:
                break
            if candidate.key in seen:
                continue
            cost = self._count(render_recalled_item(candidate.item)) + 1  # and its line break
            if used + cost > budget:
                continue
            seen.add(candidate.key)
            items.append(candidate.item)
            used += cost
        while True:
            section = render_recalled(items, notes)
            tokens = self._count(section) if section else 0
            if tokens <= budget or not items:
                break
            items.pop()
        if tokens > budget:  # the notes alone do not fit: send nothing rather than overrun
            return [], "", 0
        return items, section, tokens

    def _record_warning(self, notes: Sequence[str]) -> None:
        """Keep the last failure in the agent's state, where `memory-agent` and people can see
        it; a store that cannot take it either is only logged (the turn still goes on)."""
        try:
            self.memory.set_agent_state(
                {
                    WARNING_STATE_KEY: {
                        "at": self._clock().astimezone(timezone.utc).isoformat(),
                        "notes": list(notes),
                    }
                },
                agent_id=self.agent_id,
            )
        except Exception:
            logger.warning(
                "auto-recall of agent %s: could not record its warning",
                self.agent_id,
                exc_info=True,
            )


_EMPTY_ITEM = RecalledItem(source="archival", item_id="", created_at="", text="")


def _interleave(ranked: Sequence[Sequence[_Candidate]]) -> Iterable[_Candidate]:
    """Each source's first hit, then each one's second, and so on."""
    depth = max((len(hits) for hits in ranked), default=0)
    for rank in range(depth):
        for hits in ranked:
            if rank < len(hits):
                yield hits[rank]


def _search_conversation(
    memory: MemoryManager, query: str, *, agent_id: str, limit: int, mode: RecallMode
) -> list[tuple[Any, float | None]]:
    """Stored user and assistant messages matching `query`, best first (conversation search
    ranks without exposing a score, so none is given)."""
    results = memory.search_messages(
        query, agent_id=agent_id, roles=("user", "assistant"), limit=limit, mode=mode
    )
    return [(message, None) for message in results]
