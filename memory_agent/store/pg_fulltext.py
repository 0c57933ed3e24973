"""Keyword search on PostgreSQL: its own full-text search, in place of FTS5 and bm25.

The database keeps a `tsvector` of each passage's and message's text (a generated column with a
GIN index, see `pg_schema`), so the index can never drift from the text and needs no writer's
help. A query is built from the same word tokens as the FTS5 query (`store.fts.query_tokens`:
any string becomes `\\w+` tokens, stop words dropped for passages), each one quoted as a
tsquery lexeme and joined with `|` (OR), so no user text is ever tsquery syntax. Each token is
normalised by `to_tsquery('english', ...)` exactly as the stored text was (stemmed; a token that
is itself a stop word is dropped by PostgreSQL with no error).

A query made only of stop words ("what is it") would be empty in the english configuration,
while FTS5 keeps such words and still finds something: then the words are matched with the
'simple' configuration (no stemming, no stop words) against a tsvector built on the fly from the
filtered rows, which is slower (no index) but only for that rare kind of query.

Ranking is `ts_rank` (how often and how prominently the query's words occur) without length
normalisation. Unlike bm25 it uses no corpus statistics, so an agent's ranking is its own by
construction; the price is that a rare word does not outweigh a common one. Chosen on the LoCoMo
dev conversations among seven variants (bench/backends_bench.py; chosen in sample, among few
discrete options): evidence recall@5/10/20 0.547 / 0.613 / 0.682 against FTS5 bm25's 0.539 /
0.620 / 0.695; `ts_rank_cd` with normalisation 1 (divide by 1 + log length) gave 0.454 / 0.541 /
0.633, because LoCoMo's turns are short and length normalisation favours the shortest.
"""

from __future__ import annotations

from typing import Any

from .fts import query_tokens

__all__ = ["TEXT_SEARCH_CONFIG", "messages_search", "passage_search", "tsquery_text"]

TEXT_SEARCH_CONFIG = "english"
RANK_FUNCTION = "ts_rank"
RANK_NORMALISATION = 0


def tsquery_text(text: str, *, drop_stop_words: bool = False) -> str | None:
    """A `to_tsquery` argument OR-ing the text's word tokens, or None when it holds none."""
    tokens = query_tokens(text, drop_stop_words=drop_stop_words)
    if not tokens:
        return None
    return " | ".join(f"'{token}'" for token in tokens)


def _matching(conn: Any, query: str, alias: str, column: str, text: str) -> tuple[str, str]:
    """The tsvector expression and the tsquery config for `query` on `alias`: the stored,
    indexed english vector, or for a query of stop words only an on-the-fly 'simple' one."""
    lexemes = conn.execute(f"SELECT numnode(to_tsquery('{TEXT_SEARCH_CONFIG}', ?))", (query,)).fetchone()[0]
    if lexemes:
        return f"{alias}.{column}", TEXT_SEARCH_CONFIG
    return f"memory_agent_tsvector('simple', {alias}.{text})", "simple"  # any length: see pg_schema p003


def passage_search(conn: Any, query: str, clause: str, params: list[Any], limit: int) -> list[tuple[str, float]]:
    """(passage_id, rank) of the `limit` best matches among rows passing `clause` (alias `p`)."""
    vector, config = _matching(conn, query, "p", "content_tsv", "content")
    rows = conn.execute(
        f"SELECT p.passage_id, {RANK_FUNCTION}({vector}, q.query, {RANK_NORMALISATION}) AS rank"
        f" FROM passages p, to_tsquery('{config}', ?) AS q(query)"
        f" WHERE {vector} @@ q.query AND {clause}"
        " ORDER BY rank DESC, p.passage_rowid LIMIT ?",
        (query, *params, limit),
    ).fetchall()
    return [(row[0], float(row[1])) for row in rows]


def messages_search(conn: Any, query: str, where: str, params: list[Any], limit: int, offset: int) -> list[Any]:
    """Message rows of `where` (alias `m`) matching `query`, best first."""
    vector, config = _matching(conn, query, "m", "text_tsv", "text")
    return conn.execute(
        f"SELECT m.* FROM messages m, to_tsquery('{config}', ?) AS q(query)"
        f" WHERE {vector} @@ q.query AND {where}"
        f" ORDER BY {RANK_FUNCTION}({vector}, q.query, {RANK_NORMALISATION}) DESC, m.message_id DESC"
        " LIMIT ? OFFSET ?",
        (query, *params, limit, offset),
    ).fetchall()
