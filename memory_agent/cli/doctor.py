"""`memory-agent doctor`: check a storage dir end to end and repair what can be repaired."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import admin, health
from ..archival import ArchivalMemory, VectorConfig
from ..archival.reconcile import Progress as ProgressCallback
from ..store.database import Database
from .app import load_settings, shared_options, state
from .output import console, emit, make_table, say

__all__ = ["doctor"]

_MARKS = {"ok": "ok", "warn": "WARN", "fail": "FAIL"}


@click.command()
@shared_options
@click.option("--repair", is_flag=True, help="Rebuild full-text indexes that fail their check.")
@click.option("--full", is_flag=True, help="Compare every vector id with SQLite, not only the counts.")
def doctor(repair: bool, full: bool) -> None:
    """Check the storage dir: SQLite, full-text indexes, and the vector store (reconciled).

    Exits with status 1 when a check fails.
    """
    settings = load_settings()
    directory = admin.storage_path(state().storage_dir, settings)
    with admin.open_database(directory) as db:
        checks = health.check_sqlite(db) + _fts_checks(db, repair)
        agent_ids = [info.agent_id for info in admin.list_agent_info(db)]
        if agent_ids:
            # Its own ArchivalMemory, not the manager's: that one reconciles silently when opened,
            # and the doctor is to report what it found, then repair it in view.
            archival = ArchivalMemory(db, VectorConfig.from_settings(settings, directory))
            with _progress_bar() as progress:
                checks += health.check_archival(archival, progress, full=full)
    _report(directory, checks)
    if not all(check.ok for check in checks):
        click.get_current_context().exit(1)


def _fts_checks(db: Database, repair: bool) -> list[health.Check]:
    checks = health.check_fts(db)
    broken = tuple(table for table, check in zip(health.FTS_TABLES, checks, strict=True) if not check.ok)
    if not (repair and broken):
        return checks
    return [c for c in checks if c.ok] + health.rebuild_fts(db, broken) + health.check_fts(db)


@contextmanager
def _progress_bar() -> Iterator[ProgressCallback]:
    """A rich progress bar (on stderr) fed by reconcile's (done, total) callback."""
    with Progress(TextColumn("writing vectors"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("vectors", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _report(directory: Path, checks: list[health.Check]) -> None:
    failed = [c for c in checks if not c.ok]

    def render() -> None:
        rows = [(_MARKS[c.status], c.name, c.detail) for c in checks]
        console().print(make_table(("", "check", "detail"), rows, title=f"doctor: {directory}"))
        say("All checks passed." if not failed else f"{len(failed)} check(s) failed.",
            style="green" if not failed else "red")

    emit({"storage_dir": directory, "ok": not failed, "checks": checks}, render)
