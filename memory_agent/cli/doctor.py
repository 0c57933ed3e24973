"""`memory-agent doctor`: check a storage dir end to end and repair what can be repaired."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..archival import ArchivalMemory, VectorConfig
from ..archival.rebuild import move_aside, rebuild_vectors, reembed_truncated
from ..archival.reconcile import Progress as ProgressCallback
from ..conversation.message_vectors import MessageVectors, chroma_message_store
from ..maintenance import admin, health, pg_health
from ..settings import Settings
from ..store.database import DATABASE_FILENAME, VECTORS_DIRNAME, Database
from ..store.journal_chain import ChainReport
from ..store.pg_schema import PG_SCHEMA_VERSION
from ..store.postgres import PostgresDatabase
from ..store.protocol import Store
from .app import load_settings, shared_options, state
from .output import console, emit, make_table, say

__all__ = ["doctor"]

_MARKS = {"ok": "ok", "warn": "WARN", "fail": "FAIL"}


@click.command()
@shared_options
@click.option(
    "--repair",
    is_flag=True,
    help="Rebuild what the database is the truth for: failing full-text indexes (on PostgreSQL "
    "also "
    "missing or drifted indexes, stale tsvectors, tag rows), and a damaged vector store (moved "
    "aside to a backup, every passage re-embedded), and loose file modes (made owner-only).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Compare every vector id with the database, not only the counts; on PostgreSQL check "
    "every "
    "row's full-text vector and words, and run amcheck's parent check (it blocks writes "
    "meanwhile).",
)
def doctor(repair: bool, full: bool) -> None:
    """Check the storage dir: SQLite or the PostgreSQL server, indexes, and the vector store
    (reconciled).

    Every failed check says what --repair will do. Exits with status 1 when a check fails.
    """
    settings = load_settings()
    directory = admin.storage_path(state().storage_dir, settings)
    modes = health.check_file_modes(
        directory, repair
    )  # first: opening Chroma below tightens its files
    chain: list[ChainReport] = []
    if settings.database_url:
        checks = _postgres_checks(directory, settings, repair, full, chain) + modes
        _report(directory, checks, chain)
        if not all(check.ok for check in checks):
            click.get_current_context().exit(1)
        return
    path = directory / DATABASE_FILENAME
    if health.is_orphaned(path) and repair:
        _start_empty_database(path, settings)
    if not path.is_file() and not health.is_orphaned(path):
        # raises the "no storage here" error
        admin.open_database(directory, encryption_key=settings.encryption_key).close()
    checks = health.check_sqlite(path, settings.encryption_key)
    if all(check.ok for check in checks):
        with admin.open_database(directory, encryption_key=settings.encryption_key) as db:
            checks += _fts_checks(db, repair)
            checks += _chain_check(db, chain)
            checks += health.check_consolidations(db)
            checks.append(health.check_scrub(db, repair, settings.forget_wait_seconds))
            if admin.list_agent_info(db):
                checks += _archival_checks(
                    db, VectorConfig.from_settings(settings, directory), repair, full
                )
    checks += modes
    _report(directory, checks, chain)
    if not all(check.ok for check in checks):
        click.get_current_context().exit(1)


def _chain_check(db: Store, chain: list[ChainReport]) -> list[health.Check]:
    check, report = health.check_journal_chain(db)
    chain.append(report)
    return [check]


def _postgres_checks(
    directory: Path, settings: Settings, repair: bool, full: bool, chain: list[ChainReport]
) -> list[health.Check]:
    """The server, its schema, indexes and references (see `pg_health`), then the vector store."""
    url = str(settings.database_url)
    checks, version = pg_health.check_server(url)
    migratable = repair and version is not None and version < PG_SCHEMA_VERSION
    if not all(check.ok for check in checks) and not migratable:
        return checks  # unreachable, or a schema this release must not touch or has not migrated
    with admin.open_database(directory, database_url=url) as db:  # migrates an older schema forward
        store = cast(PostgresDatabase, db)
        if version is not None and version < PG_SCHEMA_VERSION:
            checks[-1] = health.Check(
                "schema version", "ok", f"migrated from version {version} to {PG_SCHEMA_VERSION}"
            )
        checks += pg_health.examine(store, repair=repair, full=full)
        checks += _chain_check(db, chain)
        checks += health.check_consolidations(db)
        checks.append(health.check_scrub(db, repair, settings.forget_wait_seconds))
        if admin.list_agent_info(db):
            checks += _archival_checks(
                db, VectorConfig.from_settings(settings, directory), repair, full
            )
    return checks


def _start_empty_database(path: Path, settings: Settings) -> None:
    """The repair of a database lost beside its vectors: vectors aside to a backup, a new empty
    store."""
    backup = move_aside(path.parent / VECTORS_DIRNAME)
    if path.exists():
        path.unlink()  # 0 bytes: nothing to keep
    Database(path, encryption_key=settings.encryption_key).close()
    say(f"Moved the vectors of the lost database to {backup}; started an empty database at {path}.")


def _archival_checks(
    db: Store, config: VectorConfig, repair: bool, full: bool
) -> list[health.Check]:
    # Its own ArchivalMemory, not the manager's: that one reconciles silently when opened,
    # and the doctor is to report what it found, then repair it in view.
    archival = ArchivalMemory(db, config)
    try:
        checks = _passage_checks(archival, repair, full)
        # After the passages: a rebuild moved the vectors aside, and messages' go with them.
        messages = MessageVectors(
            db, lambda: archival.index, lambda: chroma_message_store(archival.index)
        )
        try:
            checks.append(health.check_message_vectors(messages, repair, full=full))
        finally:
            close = getattr(messages.store, "close", None) if messages.is_open else None
            if callable(close):
                close()
        return checks
    finally:
        archival.close()


def _passage_checks(archival: ArchivalMemory, repair: bool, full: bool) -> list[health.Check]:
    """Passages' vectors: checked and reconciled; with `repair`, re-embedded whole or rebuilt."""
    with _progress_bar() as progress:
        checks = health.check_archival(archival, progress, full=full)
    if repair and all(check.ok for check in checks) and checks[-1].status == "warn":
        with _progress_bar() as progress:
            whole = reembed_truncated(archival, progress)
        detail = f"re-embedded {whole.embedded} passages whole; {whole.still_pending} still pending"
        if whole.errors:
            detail += "; errors: " + "; ".join(whole.errors[:2])
        return [
            *checks[:-1],
            health.Check("whole passages embedded", "ok" if whole.ok else "fail", detail),
        ]
    if not repair or all(check.ok for check in checks):
        return checks
    with _progress_bar() as progress:
        rebuilt = rebuild_vectors(archival, progress)
    kept = (
        f"the old store is kept at {rebuilt.backup}"
        if rebuilt.backup
        else (f"dropped {rebuilt.dropped_collections} collection(s) on the server")
    )
    status: health.CheckStatus = "ok" if rebuilt.reconcile.ok else "fail"
    detail = (
        f"re-embedded {rebuilt.reconcile.embedded} passages into a new store; {kept}; "
        f"{rebuilt.reconcile.still_pending} still pending"
    )
    if rebuilt.reconcile.errors:
        detail += "; errors: " + "; ".join(rebuilt.reconcile.errors[:2])
    kept_checks = (
        c for c in checks if c.ok and c.name != "whole passages embedded"
    )  # the rebuild embeds whole
    return [*kept_checks, health.Check("vector store rebuild", status, detail)]


def _fts_checks(db: Store, repair: bool) -> list[health.Check]:
    checks = health.check_fts(db)
    broken = tuple(
        table for table, check in zip(health.FTS_TABLES, checks, strict=True) if not check.ok
    )
    if not (repair and broken):
        return checks
    return [c for c in checks if c.ok] + health.rebuild_fts(db, broken) + health.check_fts(db)


@contextmanager
def _progress_bar() -> Iterator[ProgressCallback]:
    """A rich progress bar (on stderr) fed by reconcile's (done, total) callback."""
    with Progress(
        TextColumn("writing vectors"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("vectors", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _report(directory: Path, checks: list[health.Check], chain: list[ChainReport]) -> None:
    failed = [c for c in checks if not c.ok]

    def render() -> None:
        rows = [(_MARKS[c.status], c.name, c.detail) for c in checks]
        console().print(make_table(("", "check", "detail"), rows, title=f"doctor: {directory}"))
        say(
            "All checks passed." if not failed else f"{len(failed)} check(s) failed.",
            style="green" if not failed else "red",
        )

    found: dict[str, object] = {"storage_dir": directory, "ok": not failed, "checks": checks}
    if chain:
        found["journal_chain"] = {
            "ok": chain[0].ok,
            "entries": chain[0].entries,
            "forgotten": chain[0].forgotten,
            "first_broken_entry": chain[0].first_broken,
            "reason": chain[0].reason or None,
        }
    emit(found, render)
