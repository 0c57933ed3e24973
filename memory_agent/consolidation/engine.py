"""One consolidation run: read, plan, apply, record.

The run inserts its session row (`running`) first, asks the consolidator for a plan on a view of
memory, then applies each change in its own short transaction, acting as the session's author
(`Author.consolidator(session_id)`), so the journal says which session made every change and
rollback can find them. Nothing is held open while a model thinks.

A block is written only if it is still at the version the consolidator read (the expected-version
check of `core_memory`); a block edited meanwhile is left alone and reported as "retry later". A
run that fails is recorded as failed with the reason, and a warning is logged.

A dry run plans and reports, and writes nothing: no change and no session row.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..archival import Passage, lifecycle
from ..archival.passages import passage_from_row
from ..authors import Author, acting_as
from ..core.blocks import BlockVersion
from ..errors import BlockError, MemoryAgentError, StaleBlockError
from ..privacy.sensitivity import DEFAULT_CLEARANCE, LEVELS, allowed, parse_level
from ..store import consolidation_log, journal
from ..store.consolidation_log import (
    COUNT_FIELDS,
    SESSION_FINISHED,
    SESSION_STARTED,
    SESSION_TARGET,
)
from ..store.database import utc_now
from .ops import MemoryOps
from .plan import BlockRewrite, MemoryView, PassageMerge, Plan, Supersession
from .protocol import Consolidator, Embed
from .report import ConsolidationReport

__all__ = ["ARCHIVED_TAG", "run_consolidation", "view_of"]

logger = logging.getLogger(__name__)

ARCHIVED_TAG = "from_block"
"""Tag of a passage that consolidation moved out of a block (its provenance names the block)."""
BLOCK_ACTION = "consolidate_block"


def view_of(ops: MemoryOps, agent_id: str) -> MemoryView:
    """The agent's blocks and passages as one consolidation reads them: up to the default clearance
    (`memory_agent.privacy.sensitivity`), so secret ones are left as they are."""
    now = utc_now()
    live: list[Passage] = []
    expired: list[Passage] = []
    with ops.database.reading() as conn:
        rows = conn.execute(
            "SELECT * FROM passages WHERE agent_id = ? ORDER BY passage_rowid", (agent_id,)
        ).fetchall()
    for passage in map(passage_from_row, rows):
        if passage.superseded_by is not None or not allowed(passage.sensitivity, DEFAULT_CLEARANCE):
            # a secret passage is never shown to a consolidator (nor merged into a laxer one)
            continue
        (expired if passage.expires_at is not None and passage.expires_at <= now else live).append(
            passage
        )
    live.sort(key=lambda p: (p.created_at, p.passage_id))
    return MemoryView(
        agent_id, tuple(ops.list_blocks(agent_id=agent_id)), tuple(live), tuple(expired), now
    )


def _embedder(ops: MemoryOps, view: MemoryView) -> Embed:
    """Embeds texts, using the vectors already stored for the view's passages (reading them is far
    cheaper than embedding thousands of passages on every run) and embedding only the rest."""
    index = ops.archival.index
    indexed = [p for p in view.passages if p.vector_state == "indexed"]
    stored = (
        index.stored_embeddings(view.agent_id, [p.passage_id for p in indexed]) if indexed else {}
    )
    by_text: dict[str, Sequence[float]] = {
        p.content: stored[p.passage_id] for p in indexed if p.passage_id in stored
    }

    def embed(texts: Sequence[str]) -> list[Sequence[float]]:
        missing = [text for text in dict.fromkeys(texts) if text not in by_text]
        if missing:
            by_text.update(zip(missing, index.embed_documents(missing), strict=True))
        return [by_text[text] for text in texts]

    return embed


@dataclass
class _Outcome:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_FIELDS, 0))
    changes: list[str] = field(default_factory=list)
    retry_later: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def run_consolidation(
    ops: MemoryOps, agent_id: str, consolidator: Consolidator, *, dry_run: bool = False
) -> ConsolidationReport:
    """Run `consolidator` over the agent's memory (see the module docstring)."""
    session_id = None if dry_run else f"consolidation-{uuid.uuid4().hex[:16]}"
    if session_id is not None:
        with ops.database.transaction() as conn:
            now = utc_now()
            consolidation_log.insert_session_row(conn, session_id, agent_id, consolidator.name, now)
            journal.record(
                conn,
                author=Author.consolidator(session_id),
                agent_id=agent_id,
                action=SESSION_STARTED,
                target_type=SESSION_TARGET,
                target_id=session_id,
                created_at=now,
            )
    outcome = _Outcome()
    plan = Plan()
    try:
        view = view_of(ops, agent_id)
        plan = await consolidator.plan(view, _embedder(ops, view))
        outcome.warnings.extend(plan.warnings)
        for warning in plan.warnings:
            logger.warning("consolidation of agent %s: %s", agent_id, warning)
        outcome.counts["blocks_analysed"] = plan.blocks_analysed
        outcome.counts["passages_expired"] = len(plan.expired)
        if session_id is None:
            _describe(plan, outcome)
        else:
            with acting_as(Author.consolidator(session_id)):
                _apply(ops, agent_id, plan, outcome)
    except Exception as error:  # recorded and reported, never silent
        reason = (
            str(error)
            if isinstance(error, MemoryAgentError)
            else f"{type(error).__name__}: {error}"
        )
        reason = " ".join(reason.split())
        logger.warning("consolidation of agent %s failed: %s", agent_id, reason, exc_info=True)
        return _finish(ops, session_id, agent_id, consolidator, plan, outcome, failure=reason)
    except (asyncio.CancelledError, KeyboardInterrupt) as interrupted:
        # A background run cancelled with its task: recorded as failed (not left 'running'), then
        # re-raised.
        reason = f"interrupted ({type(interrupted).__name__}) before it finished"
        logger.warning("consolidation of agent %s %s", agent_id, reason)
        try:
            _finish(ops, session_id, agent_id, consolidator, plan, outcome, failure=reason)
        except Exception:  # the interruption is what the caller must see
            logger.warning(
                "could not record the interrupted consolidation %s", session_id, exc_info=True
            )
        raise
    return _finish(ops, session_id, agent_id, consolidator, plan, outcome, failure=None)


def _finish(
    ops: MemoryOps,
    session_id: str | None,
    agent_id: str,
    consolidator: Consolidator,
    plan: Plan,
    outcome: _Outcome,
    *,
    failure: str | None,
) -> ConsolidationReport:
    status = "failed" if failure else ("dry_run" if session_id is None else "completed")
    summary = _summary(outcome, failure, dry_run=session_id is None)
    if session_id is not None:
        with ops.database.transaction() as conn:
            consolidation_log.finish_row(
                conn,
                session_id,
                status="failed" if failure else "completed",
                finished_at=utc_now(),
                counts=outcome.counts,
                input_tokens=plan.input_tokens,
                output_tokens=plan.output_tokens,
                summary=summary,
                failure=failure,
                warnings=outcome.warnings + outcome.retry_later,
            )
            journal.record(
                conn,
                author=Author.consolidator(session_id),
                agent_id=agent_id,
                action=SESSION_FINISHED,
                target_type=SESSION_TARGET,
                target_id=session_id,
                created_at=utc_now(),
            )
    return ConsolidationReport(
        session_id=session_id,
        agent_id=agent_id,
        consolidator=consolidator.name,
        status=status,
        dry_run=session_id is None,
        counts=dict(outcome.counts),
        summary=summary,
        changes=tuple(outcome.changes),
        retry_later=tuple(outcome.retry_later),
        warnings=tuple(outcome.warnings),
        failure=failure,
        input_tokens=plan.input_tokens,
        output_tokens=plan.output_tokens,
    )


def _summary(outcome: _Outcome, failure: str | None, *, dry_run: bool) -> str:
    counts = outcome.counts
    text = (
        f"{counts['blocks_changed']} of {counts['blocks_analysed']} blocks changed, "
        f"{counts['passages_archived']} passages archived from blocks, {counts['passages_merged']} "
        "merged, "
        f"{counts['passages_superseded']} superseded, {counts['passages_expired']} expired"
    )
    if dry_run:
        text = f"dry run, nothing written; planned: {text}"
    if outcome.retry_later:
        text += f"; {len(outcome.retry_later)} to retry later"
    if failure:
        text = f"failed: {failure}"
    return text


def _describe(plan: Plan, outcome: _Outcome) -> None:
    """A dry run's report: the plan's changes, counted as if made."""
    for rewrite in plan.rewrites:
        _count_rewrite(rewrite, outcome)
    for merge in plan.merges:
        _count_merge(merge, outcome)
    for supersession in plan.supersessions:
        _count_supersession(supersession, outcome)


def _apply(ops: MemoryOps, agent_id: str, plan: Plan, outcome: _Outcome) -> None:
    for rewrite in plan.rewrites:
        try:
            _apply_rewrite(ops, agent_id, rewrite)
        except StaleBlockError:
            outcome.retry_later.append(
                f"block '{rewrite.label}' changed after it was read (now past version "
                f"{rewrite.expected_version}); retry later"
            )
            continue
        except BlockError as error:
            outcome.warnings.append(f"block '{rewrite.label}' left as it was: {error}")
            continue
        _count_rewrite(rewrite, outcome)
    # Each check and its change share one transaction, so nothing can change the passages between.
    for merge in plan.merges:
        with ops.atomic():
            missing = _not_live(ops, agent_id, (merge.survivor_id, *merge.merged_ids))
            if missing is None:
                _apply_merge(ops, agent_id, merge)
        if missing:
            outcome.retry_later.append(
                f"merge into {merge.survivor_id} skipped: {missing}; retry later"
            )
        else:
            _count_merge(merge, outcome)
    for supersession in plan.supersessions:
        with ops.atomic():
            missing = _not_live(ops, agent_id, (supersession.old_id, supersession.new_id))
            if missing is None:
                ops.supersede_passage(supersession.old_id, supersession.new_id, agent_id=agent_id)
        if missing:
            outcome.retry_later.append(
                f"supersession of {supersession.old_id} skipped: {missing}; retry later"
            )
        else:
            _count_supersession(supersession, outcome)


def _count_rewrite(rewrite: BlockRewrite, outcome: _Outcome) -> None:
    outcome.counts["blocks_changed"] += 1
    outcome.counts["passages_archived"] += len(rewrite.archived)
    what = "rewritten by the model" if rewrite.how == "model_rewrite" else "trimmed"
    outcome.changes.append(
        f"block '{rewrite.label}' {what} to {len(rewrite.new_value)} characters, "
        f"{len(rewrite.archived)} passage(s) archived from it"
    )


def _count_merge(merge: PassageMerge, outcome: _Outcome) -> None:
    merged = len(merge.merged_ids) + (1 if merge.merged_text is not None else 0)
    outcome.counts["passages_merged"] += merged
    into = "a new merged passage" if merge.merged_text is not None else merge.survivor_id
    outcome.changes.append(f"{', '.join(merge.merged_ids)} merged into {into} ({merge.reason})")


def _count_supersession(supersession: Supersession, outcome: _Outcome) -> None:
    outcome.counts["passages_superseded"] += 1
    outcome.changes.append(
        f"{supersession.old_id} superseded by {supersession.new_id} ({supersession.reason})"
    )


def _apply_rewrite(ops: MemoryOps, agent_id: str, rewrite: BlockRewrite) -> None:
    """The block's new value and the passages that take its old text, in one transaction: a
    stale block refuses before any passage is written."""
    history = (
        ops.block_history(rewrite.label, agent_id=agent_id)
        if rewrite.how == "archive_overflow"
        else []
    )
    with ops.atomic():
        ops.edit_block(
            rewrite.label,
            lambda _block: rewrite.new_value,
            action=BLOCK_ACTION,
            expected_version=rewrite.expected_version,
            agent_id=agent_id,
        )
        for line in rewrite.archived:
            provenance = {**line.provenance, **_line_source(ops, agent_id, line.content, history)}
            ops.archival_memory_insert(
                line.content, [ARCHIVED_TAG], None, agent_id=agent_id, provenance=provenance
            )


def _line_source(
    ops: MemoryOps, agent_id: str, line: str, history: list[BlockVersion]
) -> dict[str, Any]:
    """Where a line of a block came from: the version that wrote it (the start of the newest run of
    versions holding it), who wrote it, and, when its author was the agent's model, the messages of
    that turn (the user message before the edit and what followed it up to the edit)."""
    written: BlockVersion | None = None
    for version in reversed(history):
        if line not in version.value:
            break
        written = version
    if written is None:
        return {}
    source: dict[str, Any] = {
        "written_in_version": written.version,
        "written_at": written.created_at,
    }
    if written.author_kind is not None:
        source["written_by"] = f"{written.author_kind}:{written.author}"
    if written.author_kind == "model":
        prompt = ops.search_messages(
            "", agent_id=agent_id, roles=["user"], end_date=written.created_at, limit=1
        )
        if prompt:
            turn = ops.search_messages(
                "",
                agent_id=agent_id,
                start_date=prompt[0].created_at,
                end_date=written.created_at,
                limit=50,
            )
            source["messages"] = sorted(message.message_id for message in turn)
    return source


def _not_live(ops: MemoryOps, agent_id: str, passage_ids: tuple[str, ...]) -> str | None:
    """Why these passages can no longer take part (deleted or superseded since they were read)."""
    for passage_id in passage_ids:
        passage = ops.archival_memory_get(passage_id, agent_id=agent_id)
        if passage is None:
            return f"{passage_id} was deleted"
        if passage.superseded_by is not None:
            return f"{passage_id} was superseded by {passage.superseded_by}"
    return None


def _apply_merge(ops: MemoryOps, agent_id: str, merge: PassageMerge) -> None:
    passages = [
        ops.archival_memory_get(pid, agent_id=agent_id)
        for pid in (merge.survivor_id, *merge.merged_ids)
    ]
    group = [p for p in passages if p is not None]
    tags = _union_tags(group)
    metadata = _union_metadata(group)
    expires_at = _latest_expiry(group)
    with ops.atomic():
        if merge.merged_text is None:
            survivor = group[0]
            ops.update_passage(
                survivor.passage_id,
                tags=tags,
                metadata=metadata,
                provenance=_union_provenance(survivor, group[1:]),
                agent_id=agent_id,
            )
            losers = group[1:]
            survivor_id = survivor.passage_id
        else:
            provenance = _union_provenance(None, group)
            survivor_id = ops.archival_memory_insert(
                merge.merged_text,
                tags,
                metadata,
                agent_id=agent_id,
                provenance=provenance,
                expires_at=expires_at,
            )
            losers = [p for p in group if p.passage_id != survivor_id]
        with ops.database.transaction() as conn:
            lifecycle.change_columns(
                conn,
                agent_id,
                survivor_id,
                "extend_passage_expiry",
                {"expires_at": expires_at},
                utc_now(),
                None,
            )
            # The merged fact is as sensitive as its most sensitive part (a private note merged
            # into a public one makes it private).
            lifecycle.change_columns(
                conn,
                agent_id,
                survivor_id,
                "set_passage_sensitivity",
                {"sensitivity": _strictest(group)},
                utc_now(),
                None,
            )
        for loser in losers:
            ops.supersede_passage(loser.passage_id, survivor_id, agent_id=agent_id)


def _strictest(group: list[Passage]) -> str:
    """The most sensitive level among the merged passages."""
    return max((p.sensitivity for p in group), key=lambda level: LEVELS.index(parse_level(level)))


def _latest_expiry(group: list[Passage]) -> str | None:
    """The survivor lives as long as the longest-lived member: forever if any is permanent."""
    expiries = [passage.expires_at for passage in group]
    if any(expiry is None for expiry in expiries):
        return None
    return max(expiry for expiry in expiries if expiry is not None)


def _union_tags(group: list[Passage]) -> list[str]:
    seen: dict[str, None] = {}
    for passage in group:
        for tag in passage.tags:
            seen.setdefault(tag, None)
    return list(seen)


def _union_metadata(group: list[Passage]) -> dict[str, Any]:
    """Every key of every passage; where two disagree the survivor's (first) value is kept."""
    merged: dict[str, Any] = {}
    for passage in reversed(group):
        merged.update(passage.metadata)
    return merged


def _union_provenance(survivor: Passage | None, merged: list[Passage]) -> dict[str, Any]:
    """The survivor's provenance, with the merged passages' ids in `merged_from` and their
    messages joined to its own."""
    provenance: dict[str, Any] = dict(survivor.provenance) if survivor is not None else {}
    merged_from = list(provenance.get("merged_from") or [])
    messages = list(provenance.get("messages") or [])
    for passage in merged:
        merged_from.append(passage.passage_id)
        merged_from.extend(
            item for item in passage.provenance.get("merged_from") or [] if item not in merged_from
        )
        messages.extend(
            item for item in passage.provenance.get("messages") or [] if item not in messages
        )
        for key in ("block", "block_id"):
            if key not in provenance and passage.provenance.get(key) is not None:
                provenance[key] = passage.provenance[key]
    provenance["merged_from"] = merged_from
    if messages:
        provenance["messages"] = messages
    return provenance
