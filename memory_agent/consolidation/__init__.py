"""Consolidation: memory that tends itself (merging duplicates, superseding contradicted facts,
counting expired passages, moving a block's overflow into archival memory), one recorded and
reversible session at a time.

Layering: this package sits between the kinds of memory and the manager. It changes memory only
through `MemoryOps`, a protocol of the manager's public operations that `MemoryManager` passes
itself as, so the manager imports this package and never the other way round.
"""

from ..store.consolidation_log import ConsolidationSession
from .engine import run_consolidation, view_of
from .model import ModelConsolidator
from .ops import MemoryOps
from .plan import ArchivedLine, BlockRewrite, MemoryView, PassageMerge, Plan, Supersession
from .protocol import Consolidator, Embed
from .report import ConsolidationReport
from .rollback import rollback_session
from .rules import NEAR_DUPLICATE_THRESHOLD, RulesConsolidator

__all__ = [
    "NEAR_DUPLICATE_THRESHOLD",
    "ArchivedLine",
    "BlockRewrite",
    "ConsolidationReport",
    "ConsolidationSession",
    "Consolidator",
    "Embed",
    "MemoryOps",
    "MemoryView",
    "ModelConsolidator",
    "PassageMerge",
    "Plan",
    "RulesConsolidator",
    "Supersession",
    "rollback_session",
    "run_consolidation",
    "view_of",
]
