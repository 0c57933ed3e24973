"""When a `MemoryAwareAgent` consolidates its memory: the `consolidation=` setting, checked once.

Three choices: "off", "after_compaction" (the default: a compaction is the moment the
conversation shed old turns, and the memory blocks have grown with them) or a
`ConsolidationSchedule` (every N turns, after compactions, with a chosen consolidator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_CONSOLIDATION",
    "ConsolidationSchedule",
    "ConsolidationSetting",
    "schedule_from",
]

DEFAULT_CONSOLIDATION: Literal["after_compaction"] = "after_compaction"


@dataclass(frozen=True)
class ConsolidationSchedule:
    """When the agent runs a background consolidation, and with which consolidator.

    Args:
        every_turns: Run after every N-th finished turn of this agent object (None: never by count).
        after_compaction: Run after each compaction that changed the context. Unset, it is on
            unless `every_turns` is given (so `ConsolidationSchedule(every_turns=20)` means just
            that).
        consolidator: A `Consolidator` (rules or model); None lets `MemoryManager.consolidate`
            choose its default.
    """

    every_turns: int | None = None
    after_compaction: bool | None = None
    consolidator: Any = None

    def __post_init__(self) -> None:
        turns = self.every_turns
        if turns is not None and (
            isinstance(turns, bool) or not isinstance(turns, int) or turns < 1
        ):
            raise ConfigurationError(
                f"ConsolidationSchedule.every_turns must be a whole number of 1 or more "
                f"(or None), got {turns!r}."
            )
        if self.after_compaction is not None and not isinstance(self.after_compaction, bool):
            raise ConfigurationError(
                f"ConsolidationSchedule.after_compaction must be True, False or None, "
                f"got {self.after_compaction!r}."
            )
        consolidator = self.consolidator
        if consolidator is not None and not (
            hasattr(consolidator, "plan") and hasattr(consolidator, "name")
        ):
            raise ConfigurationError(
                f"ConsolidationSchedule.consolidator must be a Consolidator (RulesConsolidator, "
                "ModelConsolidator or your own with `name` and `plan`), got "
                f"{type(consolidator).__name__}."
            )

    @property
    def on_compaction(self) -> bool:
        """Whether a compaction that changed the context starts a run."""
        return (
            self.after_compaction if self.after_compaction is not None else self.every_turns is None
        )

    @property
    def enabled(self) -> bool:
        return self.on_compaction or self.every_turns is not None


ConsolidationSetting = Literal["off", "after_compaction"] | ConsolidationSchedule
"""What `MemoryAwareAgent(consolidation=...)` takes."""


def schedule_from(setting: Any) -> ConsolidationSchedule:
    """The schedule a `consolidation=` value means; anything else is a `ConfigurationError`."""
    if isinstance(setting, ConsolidationSchedule):
        return setting
    if setting == "off":
        return ConsolidationSchedule(after_compaction=False)
    if setting == "after_compaction":
        return ConsolidationSchedule(after_compaction=True)
    raise ConfigurationError(
        "consolidation must be 'off', 'after_compaction' or a "
        "ConsolidationSchedule(every_turns=N, "
        f"consolidator=...), got {setting!r}."
    )
