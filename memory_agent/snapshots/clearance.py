"""What an export may carry: the snapshot cut to the exporter's clearance
(`memory_agent.privacy.sensitivity`).

An export leaves the storage dir, so it follows the same rule as every read: secret blocks and
passages are left out unless the exporter allows them, and a public-only export keeps only what
may be shared. Left out with an item is every copy of it the snapshot holds: a block's attachments
and saved versions, a passage's journal entries, and the journal entries of a hidden block (its
edits hold its text). An item the journal ever records above the clearance (a deleted secret, one
made secret after its first values were written) has its whole history left out. A kept passage
that a hidden one superseded keeps its place without the link.

Conversation messages and summaries have no level: they are exported as they are.
"""

from __future__ import annotations

import dataclasses

from ..privacy.sensitivity import Sensitivity, allowed, journal_values_allowed
from .records import JournalRecord, Snapshot

__all__ = ["within_clearance"]


def within_clearance(snapshot: Snapshot, clearance: Sensitivity) -> Snapshot:
    """The snapshot without the blocks and passages above `clearance` and what copies them."""
    hidden_blocks = {b.block_id for b in snapshot.blocks if not allowed(b.sensitivity, clearance)}
    hidden_passages = {
        p.passage_id for p in snapshot.passages if not allowed(p.sensitivity, clearance)
    }
    # A deleted item's level lives only in the journal: an item it ever records above the clearance
    # keeps its whole history out (a live item now allowed stays in the export, only its past goes).
    unsaid_blocks, unsaid_passages = set(hidden_blocks), set(hidden_passages)
    for entry in snapshot.journal:
        if entry.target_id is not None and not _journal_allowed(entry, set(), set(), clearance):
            if entry.target_type == "block":
                unsaid_blocks.add(entry.target_id)
            elif entry.target_type == "passage":
                unsaid_passages.add(entry.target_id)
    if not unsaid_blocks and not unsaid_passages and clearance == "secret":
        return snapshot
    passages = [
        p if p.superseded_by not in hidden_passages else dataclasses.replace(p, superseded_by=None)
        for p in snapshot.passages
        if p.passage_id not in hidden_passages
    ]
    return dataclasses.replace(
        snapshot,
        blocks=[b for b in snapshot.blocks if b.block_id not in hidden_blocks],
        block_history=[v for v in snapshot.block_history if v.block_id not in hidden_blocks],
        attachments=[a for a in snapshot.attachments if a.block_id not in hidden_blocks],
        passages=passages,
        journal=[
            entry
            for entry in snapshot.journal
            if _journal_allowed(entry, unsaid_blocks, unsaid_passages, clearance)
        ],
    )


def _journal_allowed(
    entry: JournalRecord, hidden_blocks: set[str], hidden_passages: set[str], clearance: Sensitivity
) -> bool:
    """An entry about a hidden item is left out; so is one recording a level above the clearance
    (the delete of a secret block or passage no longer in the snapshot keeps its level in
    `detail`)."""
    if entry.target_type == "block" and entry.target_id in hidden_blocks:
        return False
    if entry.target_type == "passage" and entry.target_id in hidden_passages:
        return False
    detail = entry.detail if isinstance(entry.detail, dict) else {}
    return journal_values_allowed(entry.action, entry.old_value, entry.new_value, detail, clearance)
