"""store.fts: quoting stays safe; stop words can be dropped, but never down to nothing."""

from __future__ import annotations

from memory_agent.store.fts import MAX_QUERY_TOKENS, STOP_WORDS, fts_query, query_tokens


def test_default_keeps_every_word_as_before() -> None:
    assert fts_query("What did Alice say?") == '"what" OR "did" OR "alice" OR "say"'


def test_stop_words_are_dropped_on_request() -> None:
    assert (
        fts_query("What did Alice say about the trip?", drop_stop_words=True)
        == '"alice" OR "say" OR "trip"'
    )


def test_a_query_of_stop_words_only_keeps_them() -> None:
    assert query_tokens("what is it", drop_stop_words=True) == ["what", "is", "it"]


def test_tokens_are_distinct_and_capped() -> None:
    assert query_tokens("a A a b") == ["a", "b"]
    assert len(query_tokens(" ".join(f"w{n}" for n in range(500)))) == MAX_QUERY_TOKENS


def test_no_words_means_no_query() -> None:
    assert fts_query("🎉 !!! ...") is None
    assert fts_query('" OR "', drop_stop_words=True) == '"or"'


def test_stop_words_are_lower_case_function_words() -> None:
    assert {"the", "what", "did", "and"} <= STOP_WORDS
    assert not {"alice", "paris", "coffee", "job"} & STOP_WORDS
    assert all(word == word.lower() for word in STOP_WORDS)
