"""Shipped migrations are never edited: each is pinned by a hash of its code, for both lists.

A database that ran a migration never runs it again, so an edit would leave databases built
before and after it with different schemas under the same version. A change to the schema is a
new function at the end of the list (pinned here once it ships). The hash covers the function's
code and SQL, not its docstring, comments or formatting, which may still be corrected.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memory_agent.store.migrations import MIGRATIONS
from memory_agent.store.pg_schema import PG_MIGRATIONS

SHIPPED_SQLITE = (
    ("m001_core_memory", "d891454db40c7409"),
    ("m002_archival", "f0479b6ef634b0d5"),
    ("m003_session_store", "4fb2e3f7de58e66e"),
    ("m004_issue16_on_demand_blocks", "b2cc0de1e125abd0"),
    ("m005_issue14_per_agent_passage_fts", "6f83f1b4c18801a8"),
    ("m006_issue22_passage_lifecycle", "f58d5c64058cc12d"),
    ("m007_issue28_journal_authors", "2d0f8e312d9087fb"),
    ("m008_issue22_consolidation_sessions", "8d4d816b6ba953e8"),
    ("m009_issue25_whole_passage_vectors", "846caac9b7eeae93"),
    ("m010_issue26_sensitivity", "e70a4b56d5f75f51"),
    ("m011_issue26_journal_chain", "199f6863742a6727"),
    ("m012_issue25_index_context", "9c886eb25171b112"),
    ("m013_issue25_message_vectors", "aae1c9066c515fa2"),
    ("m014_issue25_sensitivity_check_without_a_temporary_index", "f0785b4d35da4547"),
    ("m015_issue25_reply_links", "42e97574769a296c"),
)
SHIPPED_POSTGRES = (
    ("p001_schema_of_sqlite_v5", "d9bc1725d77d87ee"),
    ("p002_search_words_as_fts5_splits_them", "79b811d6fc641537"),
    ("p003_keyword_index_of_any_text", "41115e97d00fbd9c"),
    ("p004_passage_lifecycle", "8662ad208f7a5930"),
    ("p005_journal_authors", "1d500118fb42d98d"),
    ("p006_issue22_consolidation_sessions", "4a3b8d7f0d52a3b2"),
    ("p007_whole_passage_vectors", "e24293462839a2ff"),
    ("p008_sensitivity", "51cbf585d962141f"),
    ("p009_issue26_journal_chain", "2ca86bd7fe2fd624"),
    ("p010_index_context", "7b7fe2a6e33ac15b"),
    ("p011_message_vectors", "e9b1313f931d5671"),
    ("p012_reply_links", "c35c99ba641623cc"),
)


def code_hash(function: Callable[..., Any]) -> str:
    """A hash of the function's code: its docstring and decorators left out, its text normalised."""
    node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    assert isinstance(node, ast.FunctionDef)
    node.decorator_list = []
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        node.body = node.body[1:]
    return hashlib.sha256(ast.unparse(node).encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("migrations", "shipped"),
    [(MIGRATIONS, SHIPPED_SQLITE), (PG_MIGRATIONS, SHIPPED_POSTGRES)],
    ids=["sqlite", "postgresql"],
)
def test_shipped_migrations_are_unchanged_and_first(
    migrations: Sequence[Callable[..., Any]], shipped: tuple[tuple[str, str], ...]
) -> None:
    found = [(function.__name__, code_hash(function)) for function in migrations[: len(shipped)]]
    assert found == list(shipped), (
        "A shipped migration was edited, renamed or moved. Restore it and append a new migration "
        "at the end of the list instead."
    )


def _original() -> Callable[..., None]:
    def step(cursor: Any) -> None:
        """Old words."""
        cursor.execute("CREATE TABLE t (a TEXT)")

    return step


def _reworded() -> Callable[..., None]:
    def step(cursor: Any) -> None:
        """New, better words."""
        cursor.execute(
            "CREATE TABLE t (a TEXT)"  # a comment, new line breaks
        )

    return step


def _edited() -> Callable[..., None]:
    def step(cursor: Any) -> None:
        """Old words."""
        cursor.execute("CREATE TABLE t (a TEXT, b TEXT)")

    return step


def test_the_hash_sees_a_change_of_sql_but_not_of_the_docstring() -> None:
    assert code_hash(_original()) == code_hash(_reworded())
    assert code_hash(_original()) != code_hash(_edited())
