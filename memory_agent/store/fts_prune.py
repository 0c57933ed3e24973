"""The head of an OR-ed FTS5 keyword query without scoring every row of its very common words.

FTS5 computes bm25 for every row matching any word of an OR query, so a query naming a person
who comes up in 30,000 of 100,000 passages scores all 30,000 to return the best 50 (p95 30 ms
of CPU at 100,000 passages in `bench/archival_scale.py`). A word that common weighs little in
bm25, though: idf = ln((N - n + 0.5) / (n + 0.5)), and one word adds at most (k1 + 1) * idf =
2.2 * idf to a row's score however often the row holds it.

So when some query words are that common (see MARGIN) and others are not, the head
is read as two cheaper queries: rows holding a rare word and a common one ("(rare) AND (common)"),
and rows holding a rare word only ("(rare) NOT (common)"). FTS5 walks the common words' lists
to intersect them but scores only the rows it returns, and bm25 sums the same per-word terms
whatever the query's shape, so each row's score is the one the plain OR query gives it (up to
the last bits: the terms are added in the split query's word order, so rows whose scores agree to
the last bits may come out in another order; measured on LoCoMo, docs/search-latency.md). Rows
holding only common words are left out, which is exact when the head's last score beats the most
such a row could score (2.2 * the common words' idf, with N bounded from above); otherwise, or
when fewer rows than asked for come back, the caller runs the plain query. The result is the
plain query's head either way, in the same order.

Word frequencies come from an `fts5vocab` table over the agent's index (a TEMP table of this
connection, made on first use), looked up by the words' stems, which a TEMP FTS5 table with the
same tokenizer computes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .protocol import Connection, Row

__all__ = ["MARGINS", "pruned_head"]

MARGINS: tuple[float, ...] = (2.0, 0.8)
"""A word is skipped (scored only where a rarer query word also is) while the most the skipped
words can add to a row, 2.2 * their summed idf, stays within a margin of the idf of the commonest
word kept. A row holding one kept word once scores about that idf (more when shorter), so the head
usually beats the bound and the check passes. Each margin is tried in turn, the boldest first
(it skips more, so its split queries are cheaper), until one head proves exact.

Measured at 100,000 passages: a fixed cut at 3,000 rows skipped words as informative as the kept
ones and failed the check for most queries; 0.5 skipped almost none (a name in 31% of rows next to
a verb in 4%), 0.8 and 1.0 the same queries. With the shallower head of `archival.keyword` and 200
queries, (2.0, 0.8) proves 154 heads exact at depth 10 against 26 for 0.8 alone, and the keyword
leg's CPU time p95 falls from 14.9 to 10.6 ms (11.0 at depth 50); 3.0 alone proves more but fails
more expensively (p95 up), (2.5, 1.0) and (2.0, 1.2, 0.8) measure the same as (2.0, 0.8)."""
_K1_PLUS_1 = 2.2  # FTS5's bm25 k1 = 1.2
_STEMS = "temp.memory_agent_stems"
_STEM_TERMS = "temp.memory_agent_stem_terms"


def pruned_head(
    conn: Connection, table: str, tokenizer: str, tokens: Sequence[str], depth: int
) -> list[Row] | None:
    """The best `depth` (rowid, bm25) rows of the OR query of `tokens`, or None when the caller
    must run that query itself (no common word, no rare one, or exactness not shown)."""
    if depth <= 0:
        return None
    frequencies = _row_counts(conn, table, tokenizer, tokens)
    rows_at_most = _rows_at_most(conn, table)
    tried: list[list[str]] = []
    for margin in MARGINS:
        common = _skippable(tokens, frequencies, rows_at_most, margin)
        if not common or common in tried:
            continue
        tried.append(common)
        head = _split_head(conn, table, tokens, common, depth)
        if head is None:
            continue
        bound = sum(_K1_PLUS_1 * _idf(rows_at_most, frequencies[token]) for token in common)
        if -float(head[-1][1]) > bound:
            return head
    return None


def _split_head(
    conn: Connection, table: str, tokens: Sequence[str], common: list[str], depth: int
) -> list[Row] | None:
    """The best `depth` rows holding a word not in `common`, scored as the OR query scores them
    (None when fewer come back: rows of common words only might then be needed)."""
    rare = [token for token in tokens if token not in common]
    if not rare:
        return None
    rare_words, common_words = _any_of(rare), _any_of(common)
    rows: list[Row] = []
    for match in (f"({rare_words}) AND ({common_words})", f"({rare_words}) NOT ({common_words})"):
        rows += conn.execute(
            f"SELECT rowid, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ? ORDER BY "
            "rank, "
            "rowid LIMIT ?",
            (match, depth),
        ).fetchall()
    if len(rows) < depth:
        return None
    rows.sort(key=lambda row: (row[1], row[0]))
    return rows[:depth]


def _skippable(
    tokens: Sequence[str], frequencies: dict[str, int], rows: int, margin: float
) -> list[str]:
    """The commonest words whose whole possible share of a score is small beside the rarer words'
    idf (see MARGIN). A word of unknown frequency is never skipped and, like a word no row holds,
    sets no floor: a word that matches nothing adds nothing to any score, so it must not make every
    other word look skippable (with it as the floor, a query such as "when did Alex go to Seville"
    skipped "seville" too, and the pruned head then came back short)."""
    known = sorted((t for t in tokens if frequencies.get(t, 0) > 0), key=lambda t: -frequencies[t])
    idf = {token: _idf(rows, frequencies[token]) for token in known}
    skipped: list[str] = []
    for token in known:
        kept = [t for t in known if t not in skipped and t != token]
        if not kept:
            break
        kept_floor = min(idf[t] for t in kept)
        if _K1_PLUS_1 * (sum(idf[t] for t in skipped) + idf[token]) > margin * kept_floor:
            break
        skipped.append(token)
    return skipped


def _any_of(tokens: Sequence[str]) -> str:
    return " OR ".join(f'"{token}"' for token in tokens)


def _idf(rows: int, holding: int) -> float:
    """FTS5's idf (never below 1e-6); it grows with `rows`, so an upper bound of rows bounds it."""
    return max(math.log((rows - holding + 0.5) / (holding + 0.5)), 1e-6)


def _rows_at_most(conn: Connection, table: str) -> int:
    """An upper bound of the index's row count in one b-tree step: its largest rowid."""
    return int(conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}_docsize").fetchone()[0])


def _row_counts(
    conn: Connection, table: str, tokenizer: str, tokens: Sequence[str]
) -> dict[str, int]:
    """How many rows of the index hold each token (by its stem); tokens the tokenizer does not
    turn into exactly one term are left out (the caller treats them as rare)."""
    vocab = f"temp.{table}_vocab"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, {table}, 'row')"
    )
    counts: dict[str, int] = {}
    for token, stem in _stems(conn, tokenizer, tokens).items():
        row = conn.execute(f"SELECT doc FROM {vocab} WHERE term = ?", (stem,)).fetchone()
        counts[token] = 0 if row is None else int(row[0])
    return counts


def _stems(conn: Connection, tokenizer: str, tokens: Sequence[str]) -> dict[str, str]:
    """Each token's term as the index's tokenizer makes it (a TEMP FTS5 table does the work)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_STEMS} USING fts5(word, tokenize='{tokenizer}')"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_STEM_TERMS} USING fts5vocab(temp, "
        "memory_agent_stems,"
        " 'instance')"
    )
    conn.executemany(
        f"INSERT INTO {_STEMS} (rowid, word) VALUES (?, ?)", list(enumerate(tokens, start=1))
    )
    try:
        terms: dict[int, list[str]] = {}
        for doc, term in conn.execute(f"SELECT doc, term FROM {_STEM_TERMS}"):
            terms.setdefault(int(doc), []).append(str(term))
    finally:
        conn.execute(f"DELETE FROM {_STEMS}")
    return {
        token: terms[number][0]
        for number, token in enumerate(tokens, start=1)
        if len(terms.get(number, [])) == 1
    }
