"""The agent wrapper: MemoryAwareAgent and what it returns."""

from .client import MemoryAwareAgent
from .consolidation_schedule import ConsolidationSchedule
from .model_errors import raise_for_authentication_failure
from .turn import TurnResult

__all__ = [
    "ConsolidationSchedule",
    "MemoryAwareAgent",
    "TurnResult",
    "raise_for_authentication_failure",
]
