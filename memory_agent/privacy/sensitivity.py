"""Sensitivity levels of blocks and passages, and the rule of who may see them.

A block or passage is `public`, `private` (the default) or `secret`; a caller's clearance is the
highest level it may see. Reads show an item only when its level is at most the clearance, so the
default clearance, `private`, leaves secrets out and `public` keeps only what may be shared. This
module is the only place that knows the levels: everything else asks `parse_level`, `allowed` or
`visible_levels`.

It fails closed: an unknown level (a typo, an imported file from elsewhere) is refused with
`SensitivityError`, never read as some level; a stored value that is not one of the levels is
allowed by no clearance, so a damaged row stays hidden.

The clearance of a call is its explicit argument, else the innermost `with_clearance` of this thread
or task (the tool path sets the agent's), else `private`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from ..errors import SensitivityError, preview

__all__ = [
    "DEFAULT_CLEARANCE",
    "DEFAULT_LEVEL",
    "LEVELS",
    "Sensitivity",
    "allowed",
    "clearance_of",
    "current_clearance",
    "journal_values_allowed",
    "parse_level",
    "visible_levels",
    "with_clearance",
]

Sensitivity = Literal["public", "private", "secret"]
LEVELS: tuple[Sensitivity, ...] = ("public", "private", "secret")
"""Lowest first: each level's clearance sees it and every level before it."""
DEFAULT_LEVEL: Sensitivity = "private"
"""What a new block or passage is when nobody says."""
DEFAULT_CLEARANCE: Sensitivity = "private"
"""What a caller sees when nobody says: public and private, never secret."""

_CLEARANCE: ContextVar[Sensitivity | None] = ContextVar("memory_agent_clearance", default=None)


def parse_level(value: object, what: str = "sensitivity") -> Sensitivity:
    """`value` as a level; SensitivityError naming `what` for anything else (case and spaces are
    not forgiven: 'Secret ' is a mistake worth hearing about, not a guess)."""
    if isinstance(value, str) and value in LEVELS:
        return value
    shown = repr(value[:40]) if isinstance(value, str) else preview(repr(value), 40)
    raise SensitivityError(
        f"{what} must be one of {', '.join(LEVELS)}, got {shown}; nothing was changed."
    )


def allowed(level: object, clearance: Sensitivity) -> bool:
    """Whether an item of `level` may be shown to a caller of `clearance`; an unknown level
    never."""
    if not isinstance(level, str) or level not in LEVELS:
        return False
    return LEVELS.index(level) <= LEVELS.index(parse_level(clearance, "clearance"))


def visible_levels(clearance: Sensitivity) -> tuple[Sensitivity, ...]:
    """The levels a caller of `clearance` sees (for a SQL `IN` list)."""
    return LEVELS[: LEVELS.index(parse_level(clearance, "clearance")) + 1]


def clearance_of(allow_secret: bool | None = None, max_sensitivity: object = None) -> Sensitivity:
    """The clearance a call asks for: `max_sensitivity` (a level) or `allow_secret=True` (secret
    included), else the innermost `with_clearance`, else `private`. Asking for both
    `allow_secret=True` and a lower `max_sensitivity` is refused as a contradiction."""
    if allow_secret is not None and not isinstance(allow_secret, bool):
        raise SensitivityError(
            f"allow_secret must be true or false, got {allow_secret!r}; nothing was changed."
        )
    if max_sensitivity is not None:
        level = parse_level(max_sensitivity, "max_sensitivity")
        if allow_secret and level != "secret":
            raise SensitivityError(
                f"allow_secret=True contradicts max_sensitivity={level!r}; give one of them."
            )
        return level
    if allow_secret is not None:
        return "secret" if allow_secret else DEFAULT_CLEARANCE
    return current_clearance()


def current_clearance() -> Sensitivity:
    """The clearance set by the innermost `with_clearance` of this thread or task, else
    `private`."""
    return _CLEARANCE.get() or DEFAULT_CLEARANCE


def with_clearance(clearance: object) -> AbstractContextManager[Sensitivity]:
    """Make `clearance` the default of every read inside (this thread or task only); nests."""
    return _scoped(parse_level(clearance, "clearance"))


@contextmanager
def _scoped(clearance: Sensitivity) -> Iterator[Sensitivity]:
    token = _CLEARANCE.set(clearance)
    try:
        yield clearance
    finally:
        _CLEARANCE.reset(token)


def journal_values_allowed(
    action: str,
    old_value: str | None,
    new_value: str | None,
    detail: Mapping[str, Any],
    clearance: Sensitivity,
) -> bool:
    """Whether a journal entry's own record of a level lets a caller of `clearance` see its values:
    a level in its detail (a create or delete records the item's), or both sides of a level change.
    The level of a live item the entry is about is the caller's to check as well."""
    level = detail.get("sensitivity")
    if level is not None and not allowed(level, clearance):
        return False
    if "sensitivity" in action:  # set_block_sensitivity, set_passage_sensitivity, restore_...:
        return all(allowed(_level_in(value), clearance) for value in (old_value, new_value))
    return True


def _level_in(value: str | None) -> object:
    """The level a sensitivity journal value holds: a bare level (blocks) or JSON of the column
    (passages)."""
    if value is None or not value.startswith("{"):
        return value
    try:
        decoded = json.loads(value)
    except ValueError:
        return None
    return decoded.get("sensitivity") if isinstance(decoded, dict) else None
