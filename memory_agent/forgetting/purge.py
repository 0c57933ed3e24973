"""Forget for real: a passage, a message, a block or a whole agent, and every copy the store holds.

What goes, for each kind (docs/forget-and-tamper-evidence.md says it for users):
- the item's rows, and its chain of linked memories: for a passage, the passages it superseded
  (older versions of the same fact, transitively) and the agent's passages whose text or
  ranking-only context contains its text (a consolidation merge); for a message, the passages
  whose provenance names it or whose text or context quotes it; for a block,
  the passages consolidation moved out of it (provenance names the block) and their chains;
- journal entries about any of them, or holding their text, are redacted in place
  (`store.journal.redact`: values, detail, label and salt erased; the hash chain still verifies);
- copies of the text elsewhere (tool results in messages, summaries, other blocks and their
  versions, the SDK session mirror) are replaced by `[forgotten]`;
- summaries a forgotten message reached are marked in the same transaction, then written again
  without it (see `resummarize`);
- vectors, and Chroma's own log and files (`ChromaVectorStore.forget`);
- finally the freed bytes (`store.scrub`).
The journal keeps one entry per forget: its kind, the id, who and when, and counts; no content.

A text shorter than `MIN_COPY_CHARS` is not looked for as a copy (it would match unrelated rows);
the item and the entries about it still go.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..archival import passage_table
from ..archival.embeddings import forget_cached_vectors
from ..archival.passages import Passage
from ..authors import Author
from ..conversation import recall
from ..conversation.message_vectors import message_vector_id
from ..core import core_memory
from ..core.labels import validate_label
from ..errors import AgentNotFoundError, ArchivalError, BlockNotFoundError, MessageNotFoundError
from ..store import journal, passage_fts, scrub
from ..store.database import utc_now
from ..store.meta import read_meta
from ..store.protocol import Connection, Store
from . import session_mirror
from .resummarize import PENDING_SUMMARY, SummaryRewrite

__all__ = ["MIN_COPY_CHARS", "ForgetReport", "Forgetting"]

MIN_COPY_CHARS = 16
VectorForget = Callable[[str, list[str], bool], list[str]]
"""(agent_id, passage_ids, whole_agent) -> warnings: removes vectors (see
ChromaVectorStore.forget)."""


@dataclass(frozen=True)
class ForgetReport:
    """What one forget removed (counts only: it never repeats what was forgotten) and its
    warnings."""

    kind: str
    target: str
    agent_id: str
    passages: int = 0
    messages: int = 0
    blocks: int = 0
    block_versions: int = 0
    journal_entries_redacted: int = 0
    copies_redacted: int = 0
    session_rows: int = 0
    summaries_rewritten: int = 0
    summariser: str | None = None
    seconds: float = 0.0
    warnings: tuple[str, ...] = field(default_factory=tuple)
    complete: bool = True
    """False: the rows are gone, but bytes of them may still be readable in the database's files
    (on PostgreSQL, older transactions were still open; the warnings name them and say how to
    finish: 'memory-agent doctor --repair')."""


@dataclass
class _Found:
    passages: list[Passage] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, value: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


class Forgetting:
    """Forgetting over one store: the database, a way to remove vectors, the summariser to use."""

    def __init__(
        self,
        db: Store,
        *,
        author: Callable[[], Author | None],
        vectors: Callable[[], VectorForget | None],
        rewrite: SummaryRewrite,
        message_vectors: Callable[[], VectorForget | None] = lambda: None,
        scrub_wait_s: float = 0.0,
    ) -> None:
        """`vectors` removes passages' vectors, `message_vectors` messages' (conversation
        search); `scrub_wait_s` is how long the scrub waits for older transactions
        (`store.scrub`)."""
        self._db = db
        self._author = author
        self._vectors = vectors
        self._rewrite = rewrite
        self._message_vectors = message_vectors
        self._scrub_wait_s = scrub_wait_s

    # ----- the four kinds ------------------------------------------------------------------

    def passage(self, agent_id: str, passage_id: str) -> ForgetReport:
        started = time.perf_counter()
        found = _Found()
        with self._db.transaction() as conn:
            passage = passage_table.fetch_one(conn, agent_id, passage_id)
            if passage is None:
                raise ArchivalError(
                    f"Agent '{agent_id}' has no archival passage '{passage_id}'; nothing was "
                    "forgotten. Search or list archival memory for the exact id."
                )
            _collect_passages(conn, agent_id, [passage], found)
            self._forget_found(conn, agent_id, found, targets=[])
            self._record(conn, agent_id, "passage", passage_id, found)
        return self._finish("passage", passage_id, agent_id, found, started, {agent_id})

    def message(self, agent_id: str, message_id: int) -> ForgetReport:
        started = time.perf_counter()
        found = _Found()
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT * FROM messages WHERE agent_id = ? AND message_id = ?",
                (agent_id, message_id),
            ).fetchone()
            if row is None:
                raise MessageNotFoundError(message_id)
            affected = recall.summaries_from(conn, agent_id, message_id)
            gone = recall.purge_message_rows(conn, agent_id, [message_id])
            found.add("messages", len(gone))
            found.texts += [m.text for m in gone]
            if row["sdk_uuid"]:
                found.add("session_rows", session_mirror.purge_entries(conn, [row["sdk_uuid"]]))
            derived = [
                p for p in _agent_passages(conn, agent_id) if message_id in _provenance_messages(p)
            ]
            for (
                text
            ) in found.texts:  # a passage indexed with this turn as its context is a copy of it
                if len(text.strip()) >= MIN_COPY_CHARS:
                    derived += passage_table.rows_holding(conn, agent_id, text)
            _collect_passages(conn, agent_id, derived, found)
            for summary in affected:
                recall.rewrite_summary_row(
                    conn, summary.summary_id, PENDING_SUMMARY, model=None, is_fallback=True
                )
            targets = [("message", str(message_id))] + [
                ("summary", str(s.summary_id)) for s in affected
            ]
            self._forget_found(conn, agent_id, found, targets=targets)
            self._record(conn, agent_id, "message", str(message_id), found)
        report = self._finish("message", str(message_id), agent_id, found, started, set())
        report = self._without_message_vectors(report, agent_id, [message_id], whole_agent=False)
        if not affected:
            return report
        outcome = self._rewrite(agent_id, [s.summary_id for s in affected])
        return _replace(
            report,
            summaries_rewritten=outcome.rewritten,
            summariser=outcome.summariser,
            warnings=report.warnings + outcome.warnings,
        )

    def block(self, agent_id: str, label: str) -> ForgetReport:
        started = time.perf_counter()
        label = validate_label(label)
        found = _Found()
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT block_id FROM agent_blocks WHERE agent_id = ? AND label = ?",
                (agent_id, label),
            ).fetchone()
            if row is None:
                if (
                    conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
                    is None
                ):
                    raise AgentNotFoundError(agent_id)
                block_ids = _deleted_blocks(conn, agent_id, label)
                if not block_ids:
                    raise BlockNotFoundError(label, agent_id)
            else:
                block_ids = [row[0]]
            holders: set[str] = set()
            for block_id in block_ids:
                found.texts += core_memory.block_texts(conn, block_id) + _journalled_values(
                    conn, block_id
                )
                agents, versions = core_memory.purge_block_rows(conn, block_id)
                holders.update(agents)
                found.add("blocks", 1)
                found.add("block_versions", versions)
                for holder in agents or [agent_id]:
                    moved = [
                        p for p in _agent_passages(conn, holder) if _from_block(p, block_id, label)
                    ]
                    _collect_passages(conn, holder, moved, found)
            self._forget_found(
                conn,
                agent_id,
                found,
                targets=[("block", block_id) for block_id in block_ids],
                holders=holders,
            )
            self._record(conn, agent_id, "block", block_ids[0], found)
        return self._finish(
            "block", label, agent_id, found, started, {p.agent_id for p in found.passages}
        )

    def agent(self, agent_id: str) -> ForgetReport:
        """Everything held under the agent's id. A block other agents still hold is only detached
        from it (it is theirs too); copies of its text in other agents' memory are not looked
        for."""
        started = time.perf_counter()
        found = _Found()
        with self._db.transaction() as conn:
            if (
                conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
                is None
            ):
                raise AgentNotFoundError(agent_id)
            targets: list[tuple[str, str]] = [("agent", agent_id)]
            for (block_id,) in conn.execute(
                "SELECT block_id FROM agent_blocks WHERE agent_id = ? ORDER BY block_id",
                (agent_id,),
            ).fetchall():
                shared = conn.execute(
                    "SELECT 1 FROM agent_blocks WHERE block_id = ? AND agent_id != ? LIMIT 1",
                    (block_id, agent_id),
                ).fetchone()
                if shared is None:
                    _, versions = core_memory.purge_block_rows(conn, block_id)
                    found.add("blocks", 1)
                    found.add("block_versions", versions)
                    targets.append(("block", block_id))
            sessions = [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT session_id FROM messages WHERE agent_id = ? AND session_id IS "
                    "NOT NULL"
                    " ORDER BY session_id",
                    (agent_id,),
                ).fetchall()
            ]
            found.add("session_rows", session_mirror.purge_sessions(conn, sessions))
            found.add(
                "messages",
                int(
                    conn.execute(
                        "SELECT COUNT(*) FROM messages WHERE agent_id = ?", (agent_id,)
                    ).fetchone()[0]
                ),
            )
            passages = _agent_passages(conn, agent_id)
            found.passages += passages
            found.add("passages", len(passages))
            passage_fts.drop_agent_index(conn, agent_id)
            core_memory.purge_agent_row(conn, agent_id)
            entries = journal.entries_about(conn, agent_id=agent_id, targets=targets)
            found.add("journal_entries_redacted", journal.redact(conn, sorted(entries)))
            self._record(conn, agent_id, "agent", agent_id, found)
            default = read_meta(conn, "default_agent_id")
        report = self._finish("agent", agent_id, agent_id, found, started, set(), whole_agent=True)
        report = self._without_message_vectors(report, agent_id, [], whole_agent=True)
        if default == agent_id:
            warning = (
                "the storage dir's default agent was this one; the next open without an agent id "
                "creates it again, empty"
            )
            report = _replace(report, warnings=(*report.warnings, warning))
        return report

    # ----- shared steps --------------------------------------------------------------------

    def _forget_found(
        self,
        conn: Connection,
        agent_id: str,
        found: _Found,
        targets: list[tuple[str, str]],
        holders: Iterable[str] = (),
    ) -> None:
        """Delete the collected passages, redact copies of every collected text and the journal, in
        the memory of the agents that held them (the agent, a shared block's `holders`), never in
        another agent's: an agent must not erase what it knows someone else holds by forgetting
        it."""
        ids = [p.passage_id for p in found.passages]
        agents = sorted({agent_id, *holders, *(p.agent_id for p in found.passages)})
        found.add("passages", passage_table.purge_rows(conn, ids))
        texts = _copy_texts(found.texts + [p.content for p in found.passages])
        copies = sum(recall.redact_text(conn, texts, agent) for agent in agents)
        found.add("copies_redacted", copies + core_memory.redact_text(conn, texts, agents))
        found.add("session_rows", session_mirror.redact_text(conn, texts, agents))
        entries = journal.entries_about(
            conn,
            targets=[*targets, *(("passage", i) for i in ids)],
            texts=texts,
            text_agents=agents,
        )
        found.add("journal_entries_redacted", journal.redact(conn, sorted(entries)))

    def _record(
        self, conn: Connection, agent_id: str, kind: str, target: str, found: _Found
    ) -> None:
        journal.record(
            conn,
            agent_id=agent_id,
            action="forget",
            target_type=kind,
            target_id=target,
            created_at=utc_now(),
            detail=dict(sorted(found.counts.items())),
            author=self._author(),
        )

    def _without_message_vectors(
        self, report: ForgetReport, agent_id: str, message_ids: list[int], *, whole_agent: bool
    ) -> ForgetReport:
        """After the commit: the forgotten messages' vectors (all the agent's with
        `whole_agent`)."""
        try:
            forget = self._message_vectors()
            if forget is None:
                return report
            warnings = forget(agent_id, [message_vector_id(m) for m in message_ids], whole_agent)
        except Exception as error:  # noqa: BLE001 - the rows are gone; say what is left
            warnings = [
                f"the message vectors of agent '{agent_id}' could not be removed ({error}); run "
                "'memory-agent doctor --repair'"
            ]
        return _replace(report, warnings=report.warnings + tuple(warnings)) if warnings else report

    def _finish(
        self,
        kind: str,
        target: str,
        agent_id: str,
        found: _Found,
        started: float,
        vector_agents: set[str],
        *,
        whole_agent: bool = False,
    ) -> ForgetReport:
        """After the commit: vectors (Chroma's files too, and those this process keeps for
        reuse), then the database's freed bytes."""
        forget_cached_vectors()
        warnings: list[str] = []
        by_agent: dict[str, list[str]] = {}
        for passage in found.passages:
            by_agent.setdefault(passage.agent_id, []).append(passage.passage_id)
        if whole_agent or by_agent:
            forget_vectors = self._vectors()
            if forget_vectors is not None:
                for owner in sorted(
                    vector_agents | set(by_agent) | ({agent_id} if whole_agent else set())
                ):
                    try:
                        warnings += forget_vectors(owner, by_agent.get(owner, []), whole_agent)
                    except Exception as error:  # noqa: BLE001 - the rows are gone; say what is left
                        warnings.append(
                            f"the vectors of agent '{owner}' could not be removed ({error}); run "
                            "'memory-agent forget --purge' again or 'memory-agent doctor --repair'"
                        )
        scrubbed = scrub.scrub(self._db, wait_s=self._scrub_wait_s)
        warnings += scrubbed.warnings
        counts = found.counts
        return ForgetReport(
            kind=kind,
            target=target,
            agent_id=agent_id,
            passages=counts.get("passages", 0),
            messages=counts.get("messages", 0),
            blocks=counts.get("blocks", 0),
            block_versions=counts.get("block_versions", 0),
            journal_entries_redacted=counts.get("journal_entries_redacted", 0),
            copies_redacted=counts.get("copies_redacted", 0),
            session_rows=counts.get("session_rows", 0),
            seconds=time.perf_counter() - started,
            warnings=tuple(warnings),
            complete=scrubbed.complete,
        )


def _replace(report: ForgetReport, **changes: Any) -> ForgetReport:
    return replace(report, **changes)


def _copy_texts(texts: Iterable[str]) -> list[str]:
    """The texts worth looking for as copies, longest first (a long text before its own parts)."""
    return sorted({t for t in texts if len(t.strip()) >= MIN_COPY_CHARS}, key=len, reverse=True)


def _agent_passages(conn: Connection, agent_id: str) -> list[Passage]:
    return passage_table.agent_rows(conn, agent_id)


def _deleted_blocks(conn: Connection, agent_id: str, label: str) -> list[str]:
    """The blocks this agent deleted under `label` that no agent holds any more: the journal keeps
    their values (for undo), so they are still there to forget."""
    rows = conn.execute(
        "SELECT DISTINCT target_id FROM journal WHERE forgotten = 0 AND agent_id = ?"
        " AND action = 'delete_block' AND label = ? ORDER BY target_id",
        (agent_id, label),
    ).fetchall()
    return [
        row[0]
        for row in rows
        if conn.execute(
            "SELECT 1 FROM agent_blocks WHERE block_id = ? LIMIT 1", (row[0],)
        ).fetchone()
        is None
    ]


def _journalled_values(conn: Connection, block_id: str) -> list[str]:
    """The values the journal holds about the block (a deleted block's last value lives only
    there)."""
    rows = conn.execute(
        "SELECT old_value, new_value FROM journal WHERE forgotten = 0 AND target_type = 'block'"
        " AND target_id = ?",
        (block_id,),
    ).fetchall()
    return [value for row in rows for value in row if isinstance(value, str)]


def _from_block(passage: Passage, block_id: str, label: str) -> bool:
    """Whether the passage came out of the block (consolidation, memory_rethink's reasoning): by its
    id, which survives a rename, or by the label older passages carry."""
    return (
        passage.provenance.get("block_id") == block_id or passage.provenance.get("block") == label
    )


def _provenance_messages(passage: Passage) -> set[int]:
    messages = passage.provenance.get("messages")
    return {m for m in messages if isinstance(m, int)} if isinstance(messages, list) else set()


def _collect_passages(conn: Connection, agent_id: str, start: list[Passage], found: _Found) -> None:
    """The passages and their chain: what each superseded (transitively) and the agent's passages
    holding its text."""
    seen = {p.passage_id for p in found.passages}
    queue = [p for p in start if p.passage_id not in seen]
    while queue:
        passage = queue.pop()
        if passage.passage_id in seen:
            continue
        seen.add(passage.passage_id)
        found.passages.append(passage)
        linked = passage_table.superseded_by_rows(conn, passage.passage_id)
        if len(passage.content.strip()) >= MIN_COPY_CHARS:
            linked += passage_table.rows_holding(conn, agent_id, passage.content)
        queue += [p for p in linked if p.passage_id not in seen]
