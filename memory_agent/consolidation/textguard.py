"""The second guard of a near-duplicate merge: two texts must state the same particulars.

Sentence embeddings score two different facts that share their wording as near duplicates
("Berth 4 was repainted green" and "Berth 5 was repainted green" score 0.939 with MiniLM, above
some paraphrases of one fact). Similarity says the texts are about the same thing; this guard
says whether they could be the same fact: the same numbers (dates, times, ordinals and numbers in
words included), the same names (capitalised words; a common word capitalised because it starts a
sentence, or capitalised in one text and written in lower case in the other, is not a name) and
the same polarity (a "not" in one only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Particulars", "particulars", "same_particulars"]

_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without",
                        "cannot", "isn't", "aren't", "wasn't", "weren't", "doesn't", "don't", "didn't",
                        "won't", "can't", "hasn't", "haven't", "hadn't", "shouldn't", "wouldn't", "couldn't"})

_COMMON_OPENERS = frozenset("""a an the this that these those there here it its he she they we you his her their our
my your some any every each all many most few one after before when while since until if as at in on of for from to
by with about also and but or so then now today yesterday tomorrow later recently currently""".split())
"""Words that are capitalised at the start of a sentence without being names."""
_NUMBER_WORDS = {word: str(value) for value, words in enumerate((
    ("zero",), ("one", "first", "once"), ("two", "second", "twice"), ("three", "third"), ("four", "fourth"),
    ("five", "fifth"), ("six", "sixth"), ("seven", "seventh"), ("eight", "eighth"), ("nine", "ninth"),
    ("ten", "tenth"), ("eleven", "eleventh"), ("twelve", "twelfth"))) for word in words}
"""Numbers and ordinals written out count as numbers ("the third floor" is not "the fourth")."""


@dataclass(frozen=True)
class Particulars:
    """What must agree between two texts for them to be one fact."""

    numbers: frozenset[str]
    names: frozenset[str]
    """Capitalised words, case-folded."""
    plain_words: frozenset[str]
    """Words written in lower case, case-folded (to excuse sentence-initial capitals)."""
    negated: bool


def particulars(text: str) -> Particulars:
    numbers = {_normalise_number(match) for match in _NUMBER.findall(text)}
    names: set[str] = set()
    plain: set[str] = set()
    negated = False
    for match in _WORD.finditer(text):
        word = match.group()
        folded = word.casefold().replace("’", "'")
        if folded in _NEGATIONS or folded.endswith("n't"):
            negated = True
        if folded in _NUMBER_WORDS:
            numbers.add(_NUMBER_WORDS[folded])
        if not word[0].isupper():
            plain.add(folded)
        elif not (_starts_sentence(text, match.start()) and folded in _COMMON_OPENERS) and folded != "i":
            names.add(folded)
    return Particulars(frozenset(numbers), frozenset(names), frozenset(plain), negated)


def _starts_sentence(text: str, position: int) -> bool:
    before = text[:position].rstrip()
    return not before or before[-1] in ".!?:;\n-•*\"'(["


def _normalise_number(text: str) -> str:
    """'1,000' and '1000' are one number; '4' and '04' too."""
    digits = text.replace(",", "")
    return digits.lstrip("0") or "0"


def same_particulars(first: str, second: str) -> str | None:
    """None when the two texts could state the same fact; otherwise why they cannot."""
    a, b = particulars(first), particulars(second)
    if a.numbers != b.numbers:
        return f"different numbers ({', '.join(sorted(a.numbers ^ b.numbers))})"
    if a.negated != b.negated:
        return "one is negated"
    only_a = {name for name in a.names - b.names if name not in b.plain_words}
    only_b = {name for name in b.names - a.names if name not in a.plain_words}
    if only_a or only_b:
        return f"different names ({', '.join(sorted(only_a | only_b))})"
    return None
