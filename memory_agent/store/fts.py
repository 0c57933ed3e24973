"""Turning any user text into a safe FTS5 query.

User text never reaches MATCH as syntax: it is split into word tokens, each quoted as an FTS5
string, so quotes, `AND`/`OR`/`NEAR`, `*`, `:` and column filters are just words. Tokens are
joined with OR and ranked by bm25, so a long question still finds passages sharing some words.

Stop words can be dropped (`drop_stop_words=True`): in an OR query a word like "the" or "did"
matches nearly every row, which adds no ranking signal (bm25 gives it almost no weight) but makes
FTS5 score every one of those rows, so dropping them keeps long questions fast. A query made only
of stop words keeps them, so "what is it" still finds something.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .protocol import Connection

__all__ = [
    "FTS5_MESSAGES",
    "MAX_QUERY_TOKENS",
    "STOP_WORDS",
    "MessageSearch",
    "fts_query",
    "query_tokens",
]

MAX_QUERY_TOKENS = 64
_TOKEN = re.compile(r"\w+", re.UNICODE)

# English function words: articles, pronouns, auxiliaries, prepositions, conjunctions, question
# words and contraction fragments. Content words (even common ones) are kept on purpose.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could d did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just ll m me might more most must my myself no nor not now of off on once only or other our
    ours ourselves out over own re s same shall she should so some such t than that the their
    theirs them themselves then there these they this those through to too under until up upon us
    ve very was we were what when where which while who whom whose why will with would you your
    yours yourself yourselves
    """.split()
)


def query_tokens(text: str, *, drop_stop_words: bool = False) -> list[str]:
    """Distinct lower-cased word tokens, in order, at most MAX_QUERY_TOKENS of them.

    With `drop_stop_words`, stop words are left out unless nothing else remains.
    """
    tokens = list(dict.fromkeys(_TOKEN.findall(text.lower())))
    if drop_stop_words:
        tokens = [token for token in tokens if token not in STOP_WORDS] or tokens
    return tokens[:MAX_QUERY_TOKENS]


def fts_query(text: str, *, drop_stop_words: bool = False) -> str | None:
    """An FTS5 MATCH expression for `text`, or None when it holds no searchable word."""
    tokens = query_tokens(text, drop_stop_words=drop_stop_words)
    if not tokens:
        return None
    return " OR ".join(f'"{token}"' for token in tokens)


def messages_search(
    conn: Connection, match: str, where: str, params: list[Any], limit: int, offset: int
) -> list[Any]:
    """Message rows of `where` (alias `m`) matching the FTS5 expression `match`, best bm25 first
    (`pg_fulltext.messages_search` is PostgreSQL's), each with its `keyword_score` (higher is
    better) for fusion with vector search."""
    return conn.execute(
        "SELECT m.*, -bm25(messages_fts) AS keyword_score"
        " FROM messages_fts f JOIN messages m ON m.message_id = f.rowid"
        f" WHERE messages_fts MATCH ? AND {where}"
        " ORDER BY bm25(messages_fts), m.message_id DESC LIMIT ? OFFSET ?",
        (match, *params, limit, offset),
    ).fetchall()


@dataclass(frozen=True)
class MessageSearch:
    """Keyword search of messages on one engine (FTS5 here, `pg_fulltext.TSVECTOR_MESSAGES` on
    PostgreSQL); `store.dialect.by_engine` picks one for a connection."""

    query: Callable[[str], str | None]
    """The engine's query for a user's text, or None when it holds no searchable word."""
    rows: Callable[[Connection, str, str, list[Any], int, int], list[Any]]
    """(conn, query, where, params, limit, offset): message rows of `where` (alias `m`) matching
    the query, best first."""


FTS5_MESSAGES = MessageSearch(query=fts_query, rows=messages_search)
"""Messages on SQLite: the `messages_fts` FTS5 table, ranked by bm25."""
