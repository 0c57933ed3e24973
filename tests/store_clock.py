"""A store clock the test moves: for tests of what happens when a passage expires.

Every expiry check in the store reads the time through `store.utc_now()`. Holding that clock at an
instant and moving it on replaces sleeping through a short time to live, which a loaded machine
(two pytest-xdist workers, other suites beside them) can use up before the test has inserted and
superseded its passages; the test then failed for the load, not for the code.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo

import pytest

from memory_agent.store import database

__all__ = ["StoreClock"]


class StoreClock:
    """Holds `store.utc_now()` at `instant` (the real time when made) until the test ends."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.instant = datetime.now(timezone.utc)
        clock = self

        class Held(datetime):
            @classmethod
            def now(cls, tz: tzinfo | None = None) -> Held:
                return cls.fromtimestamp(clock.instant.timestamp(), tz)

        monkeypatch.setattr(database, "datetime", Held)

    def advance(self, seconds: float) -> None:
        self.instant += timedelta(seconds=seconds)
