"""The kill -9 campaign of bench/archival_kill_campaign.py, as a slow test: nothing acknowledged
is lost or duplicated, and any store a kill leaves unreadable is repaired: with the rows in SQLite
and on a PostgreSQL server (the `backend` fixture)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "archival_kill_campaign.py"


@pytest.mark.slow
def test_sigkill_campaign_on_insert_many_loses_and_duplicates_nothing(
    tmp_path: Path, backend: str
) -> None:
    spec = importlib.util.spec_from_file_location("archival_kill_campaign", BENCH)
    assert spec is not None and spec.loader is not None
    campaign = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = campaign
    spec.loader.exec_module(campaign)
    tally = campaign.campaign(
        kills=10,
        passages=2000,
        batch=100,
        seed=5,
        storage=tmp_path / "store",
        embedding="hash384",
        database_url=os.environ.get("MEMORY_DATABASE_URL"),
    )
    assert tally.kills >= 5
    assert len(tally.acknowledged) == 2000
    assert not tally.lost and not tally.duplicated
