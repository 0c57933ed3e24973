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

How matches are ranked is a `PgRanking`; `RANKING` is the shipped one, chosen by
leave-one-conversation-out on the LoCoMo dev conversations (`bench/pg_keyword_locomo.py`) among
64 variants: `ts_rank` or `ts_rank_cd`, normalisation 0/1/2/32, passages holding every query
word first or not, prefix matching or not, bm25's idf weighting or not. Every fold chose an idf
variant, and all three conversations chose `ts_rank`, no normalisation, all words first, idf.
Chosen per fold and scored held out, evidence recall@5/10/20 is 0.581 / 0.655 / 0.726, against 0.547
/ 0.613 / 0.682 for plain `ts_rank` (the ranking shipped before; +0.035 to +0.044, each 95% interval
above 0) and 0.539 / 0.620 / 0.695 for FTS5 bm25 on SQLite. The idf is what helps (without it a word
said twice outweighs a rare one); all-words-first adds 0.001, length normalisation loses 0.03-0.06
(flag 1) or 0.12 and more (flag 2) of the mean recall (LoCoMo's turns are short, so it favours the
shortest), `ts_rank_cd` and prefix matching lose a little.

The idf costs two counts per query (matched and searched passages, each computed once) and one
rank per query word: LoCoMo keyword search, 100 deep, averages 3.3 ms on a quiet machine, and at
100,000 passages of one agent p50 / p95 is 32 / 98 ms (`bench/backends_bench.py`). Messages
(`conversation_search`) keep plain `ts_rank`: the LoCoMo harness measures passages only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .fts import MessageSearch, query_tokens
from .protocol import Connection

__all__ = [
    "RANKING",
    "TEXT_SEARCH_CONFIG",
    "TSVECTOR_MESSAGES",
    "PgRanking",
    "messages_search",
    "passage_search",
    "tsquery_text",
]

TEXT_SEARCH_CONFIG = "english"


@dataclass(frozen=True)
class PgRanking:
    """One way to rank a passage's full-text match; every variant matches the same passages (any
    query word), only their order and scores differ."""

    function: Literal["ts_rank", "ts_rank_cd"] = "ts_rank"
    """`ts_rank` weighs how often the query's words occur; `ts_rank_cd` how close together."""
    normalisation: int = 0
    """PostgreSQL's normalisation flags: 0 none, 1 divide by 1 + log(length), 2 by length,
    32 rank / (rank + 1) (same order, other scores for fusion)."""
    all_words_first: bool = False
    """Passages holding every query word rank above those holding only some."""
    prefix: bool = False
    """Each query word also matches the words it begins ('paint' finds 'painting')."""
    idf: bool = False
    """Each word's rank is weighted by bm25's idf, ln(1 + (N - n + 0.5) / (n + 0.5)), with N the
    searched passages and n those holding the word, counted at query time (no stored
    statistics, so nothing to keep up to date under concurrent writes)."""

    @property
    def label(self) -> str:
        parts = [f"{self.function}/{self.normalisation}"]
        parts += [
            name
            for name, on in (
                ("all-first", self.all_words_first),
                ("prefix", self.prefix),
                ("idf", self.idf),
            )
            if on
        ]
        return " ".join(parts)


RANKING = PgRanking(all_words_first=True, idf=True)


def _lexemes(tokens: list[str], prefix: bool) -> list[str]:
    return [f"'{token}'" + (":*" if prefix else "") for token in tokens]


def tsquery_text(text: str, *, drop_stop_words: bool = False, prefix: bool = False) -> str | None:
    """A `to_tsquery` argument OR-ing the text's word tokens, or None when it holds none."""
    tokens = query_tokens(text, drop_stop_words=drop_stop_words)
    return " | ".join(_lexemes(tokens, prefix)) if tokens else None


def _matching(conn: Connection, query: str, alias: str, column: str, text: str) -> tuple[str, str]:
    """The tsvector expression and the tsquery config for `query` on `alias`: the stored,
    indexed english vector, or for a query of stop words only an on-the-fly 'simple' one."""
    lexemes = conn.execute(
        f"SELECT numnode(to_tsquery('{TEXT_SEARCH_CONFIG}', ?))", (query,)
    ).fetchone()[0]
    if lexemes:
        return f"{alias}.{column}", TEXT_SEARCH_CONFIG
    return (
        f"memory_agent_tsvector('simple', {alias}.{text})",
        "simple",
    )  # any length: see pg_schema p003


def passage_search(
    conn: Connection,
    text: str,
    clause: str,
    params: list[Any],
    limit: int,
    ranking: PgRanking = RANKING,
) -> list[tuple[str, float]]:
    """(passage_id, score) of the `limit` best matches for `text` among rows passing `clause`
    (alias `p`), best first; scores only grow with rank, so fusion can normalise them."""
    tokens = query_tokens(text, drop_stop_words=True)
    if not tokens or limit <= 0:
        return []
    lexemes = _lexemes(tokens, ranking.prefix)
    query = " | ".join(lexemes)
    vector, config = _matching(conn, query, "p", "content_tsv", "content")
    if ranking.idf:
        # One rank per word, each weighted by its idf among the filtered passages. Each word's
        # tsquery is parsed once (CTE `q`), and the counts are computed once (`n`, `d`
        # MATERIALIZED): inline, to_tsquery ran again for every matched row and word, and on a
        # table without fresh statistics the planner re-ran both counts for every matched row,
        # so a query whose words match most passages (a speaker's name) took 0.5 s among 600.
        words = ", ".join(f"to_tsquery('{config}', ?) AS w{i}" for i in range(len(lexemes)))
        terms = " + ".join(
            f"ln(1 + (n.total - d.d{i} + 0.5) / (d.d{i} + 0.5))"
            f" * {ranking.function}(m.v, q.w{i}, {ranking.normalisation})"
            for i in range(len(lexemes))
        )
        counts = ", ".join(
            f"count(*) FILTER (WHERE m.v @@ q.w{i}) AS d{i}" for i in range(len(lexemes))
        )
        sql = (
            f"WITH q AS MATERIALIZED (SELECT to_tsquery('{config}', ?) AS every_word, {words}),"
            f" m AS (SELECT p.passage_id, p.passage_rowid, {vector} AS v FROM passages p"
            f" WHERE {vector} @@ to_tsquery('{config}', ?) AND {clause}),"
            f" n AS MATERIALIZED (SELECT count(*)::float8 AS total FROM passages p WHERE {clause}),"
            f" d AS MATERIALIZED (SELECT {counts} FROM m, q)"
            f" SELECT m.passage_id, {terms} AS rank, m.v @@ q.every_word AS every,"
            " m.passage_rowid FROM m, n, d, q"
        )
        values = [" & ".join(lexemes), *lexemes, query, *params, *params]
    else:
        sql = (
            f"SELECT p.passage_id, {ranking.function}({vector}, q.query, {ranking.normalisation}) "
            "AS rank,"
            f" {vector} @@ to_tsquery('{config}', ?) AS every, p.passage_rowid"
            f" FROM passages p, to_tsquery('{config}', ?) AS q(query)"
            f" WHERE {vector} @@ q.query AND {clause}"
        )
        values = [" & ".join(lexemes), query, *params]
    first = "s.every DESC, " if ranking.all_words_first else ""
    rows = conn.execute(
        f"SELECT * FROM ({sql}) AS s ORDER BY {first}s.rank DESC, s.passage_rowid LIMIT ?",
        (*values, limit),
    ).fetchall()
    return _scored(rows, ranking.all_words_first)


def _scored(rows: list[Any], all_words_first: bool) -> list[tuple[str, float]]:
    """(id, score) in the rows' order; with all words first, the full matches are lifted above
    the best partial one, so the scores keep the order."""
    if not all_words_first:
        return [(row[0], float(row[1])) for row in rows]
    lift = max((float(row[1]) for row in rows), default=0.0) + 1.0
    return [(row[0], float(row[1]) + (lift if row[2] else 0.0)) for row in rows]


def messages_search(
    conn: Connection, query: str, where: str, params: list[Any], limit: int, offset: int
) -> list[Any]:
    """Message rows of `where` (alias `m`) matching `query`, best first, by plain `ts_rank` (the
    LoCoMo harness that chose `RANKING` measures passages, not messages)."""
    vector, config = _matching(conn, query, "m", "text_tsv", "text")
    return conn.execute(
        f"SELECT m.*, ts_rank({vector}, q.query) AS keyword_score"
        f" FROM messages m, to_tsquery('{config}', ?) AS q(query)"
        f" WHERE {vector} @@ q.query AND {where}"
        f" ORDER BY ts_rank({vector}, q.query) DESC, m.message_id DESC"
        " LIMIT ? OFFSET ?",
        (query, *params, limit, offset),
    ).fetchall()


TSVECTOR_MESSAGES = MessageSearch(query=tsquery_text, rows=messages_search)
"""Messages on PostgreSQL: the generated `text_tsv` column and its GIN index, by `ts_rank`."""
