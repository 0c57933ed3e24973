"""Summaries written again without a forgotten message.

Each rolling summary is written from the one before and the messages it covered, so a forgotten
message may be repeated in the summary that covered it and in every later one. Forgetting marks
them all `PENDING_SUMMARY` in its own transaction (so the text is gone at once, even if what
follows fails), then writes each again, oldest first, from the rewritten summary before it and
its remaining messages: with the compactor's summariser when a model is configured, else (or when
the model fails) with the rules' stand-in (`compaction.truncation_summary`), which is logged as a
warning, returned in the report and recorded as a fallback summary (`is_fallback`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from compaction import MessageRecord, Summarizer, truncation_summary

from ..conversation import recall
from ..conversation.compactor import to_record
from ..store.protocol import Store

__all__ = ["PENDING_SUMMARY", "Resummarizer", "RewriteOutcome", "SummaryRewrite"]

logger = logging.getLogger(__name__)

PENDING_SUMMARY = "[This summary is being written again after something was forgotten.]"


@dataclass(frozen=True)
class RewriteOutcome:
    rewritten: int
    summariser: str  # "model" or "rules"
    warnings: tuple[str, ...] = ()


SummaryRewrite = Callable[[str, list[int]], RewriteOutcome]


class Resummarizer:
    """Writes marked summaries again; `summarizer` None means no model is configured (the rules)."""

    def __init__(self, db: Store, summarizer: Summarizer | None, clip_chars: int) -> None:
        self._db = db
        self._summarizer = summarizer
        self._clip = clip_chars

    def __call__(self, agent_id: str, summary_ids: list[int]) -> RewriteOutcome:
        wanted = set(summary_ids)
        with self._db.reading() as conn:
            summaries = recall.summary_rows(conn, agent_id)
            ranges = {
                s.summary_id: [
                    to_record(m)
                    for m in recall.messages_between(
                        conn, agent_id, s.first_message_id, s.last_message_id
                    )
                ]
                for s in summaries
                if s.summary_id in wanted
            }
        before = [s for s in summaries if s.summary_id < min(wanted, default=0)]
        previous = before[-1].summary if before else None
        todo = [s for s in summaries if s.summary_id in wanted]
        texts, used, warnings = _run(
            self._write_all(previous, [(s.summary_id, ranges[s.summary_id]) for s in todo])
        )
        with self._db.transaction() as conn:
            for summary_id, (text, model, fallback) in texts.items():
                recall.rewrite_summary_row(
                    conn, summary_id, text, model=model, is_fallback=fallback
                )
        for warning in warnings:
            logger.warning("forget: %s", warning)
        return RewriteOutcome(len(texts), used, tuple(warnings))

    async def _write_all(
        self, previous: str | None, todo: Sequence[tuple[int, list[MessageRecord]]]
    ) -> tuple[dict[int, tuple[str, str | None, bool]], str, list[str]]:
        summarizer = self._summarizer
        warnings: list[str] = []
        if summarizer is None and todo:
            warnings.append(
                "no model is configured, so the summaries that held the forgotten message were "
                "written again by the rules (a truncation stand-in, marked as a fallback summary)"
            )
        texts: dict[int, tuple[str, str | None, bool]] = {}
        try:
            for summary_id, records in todo:
                text: str | None = None
                if summarizer is not None:
                    try:
                        text = await summarizer.summarize(previous, records)
                        texts[summary_id] = (text, summarizer.model, False)
                    except Exception as error:  # noqa: BLE001 - any model failure falls back, and says so
                        warnings.append(
                            f"the summariser failed ({str(error).splitlines()[0][:200]}); the "
                            "summaries were written again by the rules (marked as fallback "
                            "summaries)"
                        )
                        summarizer, text = None, None
                if text is None:
                    text = truncation_summary(previous, records, self._clip)
                    texts[summary_id] = (text, None, True)
                previous = text
        finally:
            close = getattr(self._summarizer, "aclose", None)
            if close is not None:
                await close()
        return texts, "model" if summarizer is not None else "rules", warnings


def _run(coroutine: Any) -> Any:
    """Run a coroutine to the end from sync code, in a thread of its own if a loop is running
    here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
