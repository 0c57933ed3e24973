"""Each table has one row writer: the function whose SQL inserts into it. The live paths and
import (`snapshots.tables`) call the same writers, so a schema change is made in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memory_agent

PACKAGE = Path(memory_agent.__file__).resolve().parent
INSERT = re.compile(r"INSERT\s+(?:OR\s+\w+\s+)?INTO\s+(\w+)", re.IGNORECASE)

# Schema code writes tables while building or rebuilding them (keyword indexes from their views,
# on PostgreSQL `doctor --repair`'s tag rows from the passages' own tags column): that is the
# schema's business, not a second writer of rows.
SCHEMA_MODULES = {
    "store/migrations.py",
    "maintenance/health.py",
    "store/passage_fts.py",
    "maintenance/pg_health.py",
}


def _insert_sites() -> dict[str, set[str]]:
    """table -> {'module:function'} of every string literal that inserts into it."""
    sites: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = path.relative_to(PACKAGE).as_posix()
        if module in SCHEMA_MODULES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for table in INSERT.findall(node.value):
                        sites.setdefault(table, set()).add(f"{module}:{function.name}")
    return sites


def test_every_table_has_one_row_writer() -> None:
    sites = _insert_sites()
    assert {
        "agents",
        "blocks",
        "agent_blocks",
        "block_history",
        "messages",
        "summaries",
        "passages",
        "passage_tags",
        "journal",
        "meta",
    } <= set(sites)
    shared = {table: sorted(where) for table, where in sites.items() if len(where) > 1}
    assert shared == {}


def test_import_writes_through_the_live_writers() -> None:
    source = (PACKAGE / "snapshots" / "tables.py").read_text(encoding="utf-8")
    assert not INSERT.search(source)
    for writer in (
        "insert_agent_row",
        "insert_block_row",
        "insert_attachment_row",
        "insert_version_row",
        "insert_message_row",
        "insert_summary_row",
        "passage_table.insert_row",
        "journal.record",
        "write_state",
    ):
        assert writer in source, writer
