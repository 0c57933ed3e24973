"""`memory-agent consolidate` and `memory-agent consolidations list|show|rollback`."""

from __future__ import annotations

import click

from ..consolidation import ConsolidationReport, ConsolidationSession
from .app import open_memory, shared_options
from .output import console, emit, make_table, say, timestamp

__all__ = ["consolidate", "consolidations"]


@click.command()
@shared_options
@click.option(
    "--dry-run", is_flag=True, help="Plan and report, write nothing (no session is recorded)."
)
@click.option(
    "--rules-only",
    is_flag=True,
    help="Use the rules consolidator (no model) even when a model is configured.",
)
def consolidate(dry_run: bool, rules_only: bool) -> None:
    """Tidy the agent's memory now: merge duplicate passages, supersede contradicted ones, count
    expired ones, move over-full blocks' overflow into archival memory.

    Uses the compaction model when ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set (falling back to
    the rules, with a warning, if it fails), else the rules. Every change is journalled under the
    session's id; 'memory-agent consolidations rollback ID' undoes it. Exits with status 1 if the
    run failed (recorded as failed, with the reason).
    """
    with open_memory(create=not dry_run) as memory:
        report = memory.consolidate(consolidator="rules" if rules_only else "auto", dry_run=dry_run)
    emit(report.as_dict(), lambda: _print_report(report))
    if report.status == "failed":
        raise click.ClickException(
            f"Consolidation failed (recorded as {report.session_id}): {report.failure}"
        )


def _print_report(report: ConsolidationReport) -> None:
    name = "Dry run" if report.dry_run else f"Consolidation {report.session_id}"
    say(f"{name} ({report.consolidator}): {report.summary}")
    for change in report.changes:
        say(f"  {change}")
    for item in report.retry_later:
        say(f"  retry later: {item}", style="yellow")
    for warning in report.warnings:
        say(f"  warning: {warning}", style="yellow")


@click.group()
def consolidations() -> None:
    """List, show and roll back consolidation sessions."""


@consolidations.command("list")
@shared_options
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many, newest first.",
)
def list_sessions(limit: int) -> None:
    """The agent's consolidation sessions, newest first (the last success and failure included)."""
    with open_memory() as memory:
        sessions = memory.list_consolidations(limit=limit)
    rows = [
        (s.session_id, timestamp(s.started_at), s.status, s.consolidator, s.summary)
        for s in sessions
    ]
    emit(
        [s.as_dict() for s in sessions],
        lambda: (
            console().print(
                make_table(("session", "started", "status", "consolidator", "summary"), rows)
            )
            if sessions
            else say("No consolidation sessions yet.")
        ),
    )


@consolidations.command("show")
@shared_options
@click.argument("session_id")
def show_session(session_id: str) -> None:
    """One session: what it did, its warnings and why it failed."""
    with open_memory() as memory:
        session = memory.get_consolidation(session_id)
    emit(session.as_dict(), lambda: _print_session(session))


def _print_session(session: ConsolidationSession) -> None:
    say(
        f"Session {session.session_id} of agent {session.agent_id}: {session.status} "
        f"({session.consolidator})"
    )
    say(
        f"  started {timestamp(session.started_at)}, finished "
        f"{timestamp(session.finished_at) if session.finished_at else '-'}"
        + (f", rolled back {timestamp(session.rolled_back_at)}" if session.rolled_back_at else "")
    )
    say(
        "  "
        + ", ".join(f"{name.replace('_', ' ')} {count}" for name, count in session.counts.items())
    )
    if session.input_tokens is not None:
        say(f"  model tokens: {session.input_tokens} in, {session.output_tokens} out")
    say(f"  summary: {session.summary}")
    if session.failure:
        say(f"  failure: {session.failure}", style="red")
    for warning in session.warnings:
        say(f"  warning: {warning}", style="yellow")


@consolidations.command("rollback")
@shared_options
@click.argument("session_id")
def rollback_session(session_id: str) -> None:
    """Undo a session: every block and passage it changed goes back, or (when a later edit touched
    one of them) nothing changes and the command says which."""
    with open_memory() as memory:
        session = memory.rollback_consolidation(session_id)
    emit(session.as_dict(), lambda: say(f"Rolled back {session.session_id}: {session.summary}"))
