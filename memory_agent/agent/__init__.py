"""The agent wrapper: MemoryAwareAgent and what it returns."""

from .auto_recall import AutoRecallSettings, RecallReport
from .client import MemoryAwareAgent
from .consolidation_schedule import ConsolidationSchedule
from .model_errors import raise_for_authentication_failure
from .turn import TurnResult

__all__ = [
    "AutoRecallSettings",
    "ConsolidationSchedule",
    "MemoryAwareAgent",
    "RecallReport",
    "TurnResult",
    "raise_for_authentication_failure",
]
