"""The agent wrapper: MemoryAwareAgent and what it returns."""

from .client import MemoryAwareAgent
from .turn import TurnResult

__all__ = ["MemoryAwareAgent", "TurnResult"]
