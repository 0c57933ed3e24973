"""The second guard of a near-duplicate merge: two texts must state the same particulars.

Sentence embeddings score two different facts that share their wording as near duplicates
("Berth 4 was repainted green" and "Berth 5 was repainted green" score 0.939 with MiniLM, above
some paraphrases of one fact; "before noon" and "after noon", "7am" and "7pm", "20 days" and
"20 weeks" score higher still). Similarity says the texts are about the same thing; this guard
says whether they could be the same fact. The rule is general rather than a list of opposites:
every token that carries a fact must be found in the other text too.

- Numbers with their sign and any letters written onto them ("-18", "7am", "4a", "12kg"); numbers
  and ordinals in words count ("the third floor" is not "the fourth").
- Codes (a word holding a digit or a capital past its first letter: "Hunter2Blue"), compared
  case-sensitively.
- Every other word unless it is a stopword (function words, forms of "be"/"have", "called"...).
  Words are compared case-folded (a sentence-initial capital is no name), with a possessive "'s"
  dropped and small inflections excused ("peanut"/"peanuts", "allergic"/"allergy").
- Polarity: a "not" (or "n't", "never"...) in one text only.

Refusing a merge loses nothing (both passages stay); a wrong merge hides a fact, so the guard errs
towards refusing: a few paraphrases that change a content word ("leaves"/"departs" is excused as
a known variant, "drives"/"car" is not) stay apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Particulars", "particulars", "same_particulars"]

_NUMBER = re.compile(r"(?<![\w.-])(-?)(\d+(?:[.,:/-]\d+)*)([^\W\d_]*)")
_WORD = re.compile(r"(?<![\w'’-])[^\W\d_][\w'’-]*")
_NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "without",
        "cannot",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "doesn't",
        "don't",
        "didn't",
        "won't",
        "can't",
        "hasn't",
        "haven't",
        "hadn't",
        "shouldn't",
        "wouldn't",
        "couldn't",
    }
)
_STOPWORDS = (
    frozenset(
        """a an the this that these those there here it its he she they we you i me him us them
his her hers their theirs our ours my mine your yours who whom whose which what
is are was were be been being am has have had having do does did will would shall should
can could may might must
of to for at in on by with as about than over via per
and or but so also then too just very really
called named name known
""".split()
    )
    | _NEGATIONS
)
"""Words that carry no fact of their own: a text may add or drop them and still say the same.
Relational words (before, after, from, under, left...) and quantifiers (all, some, most) are
deliberately not here: they change what a sentence states."""
_VARIANTS = {
    "depart": "leave",
    "departs": "leave",
    "departed": "leave",
    "leaves": "leave",
    "left": "left",
    "begins": "start",
    "begin": "start",
    "began": "start",
    "starts": "start",
    "started": "start",
}
"""Known paraphrase variants, folded onto one spelling ('left' stays a direction, not 'leave')."""
_NUMBER_WORDS = {
    word: str(value)
    for value, words in enumerate(
        (
            ("zero",),
            ("one", "first", "once"),
            ("two", "second", "twice"),
            ("three", "third"),
            ("four", "fourth"),
            ("five", "fifth"),
            ("six", "sixth"),
            ("seven", "seventh"),
            ("eight", "eighth"),
            ("nine", "ninth"),
            ("ten", "tenth"),
            ("eleven", "eleventh"),
            ("twelve", "twelfth"),
        )
    )
    for word in words
}
"""Numbers and ordinals written out count as numbers ("the third floor" is not "the fourth")."""
_ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})


@dataclass(frozen=True)
class Particulars:
    """What must agree between two texts for them to be one fact."""

    numbers: frozenset[str]
    """Normalised numbers with sign and attached letters ('-18', '7am', '4a')."""
    codes: frozenset[str]
    """Words holding a digit or an inner capital, exactly as written."""
    words: frozenset[str]
    """Content words, case-folded, possessive dropped, known variants folded."""
    names: frozenset[str]
    """The content words written with a capital (to say 'different names' in a refusal)."""
    negated: bool


def particulars(text: str) -> Particulars:
    text = text.replace("’", "'")
    numbers = {_normalise_number(*match) for match in _NUMBER.findall(text)}
    codes: set[str] = set()
    words: set[str] = set()
    names: set[str] = set()
    negated = False
    for match in _WORD.finditer(text):
        word = match.group().strip("'-")
        if not word:
            continue
        folded = word.casefold()
        if folded in _NEGATIONS or folded.endswith("n't"):
            negated = True
            continue
        if any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]):
            codes.add(word)
            continue
        if folded in _NUMBER_WORDS:
            numbers.add(_NUMBER_WORDS[folded])
            continue
        if folded.endswith("'s"):
            folded = folded[:-2]
        folded = _VARIANTS.get(folded, folded)
        if folded in _STOPWORDS:
            continue
        words.add(folded)
        if word[0].isupper():
            names.add(folded)
    return Particulars(
        frozenset(numbers), frozenset(codes), frozenset(words), frozenset(names), negated
    )


def _normalise_number(sign: str, digits: str, suffix: str) -> str:
    """'1,000' and '1000' are one number, '4' and '04' too, '3rd' is '3'; a sign and a unit stay."""
    value = digits.replace(",", "").lstrip("0") or "0"
    suffix = suffix.casefold()
    if suffix in _ORDINAL_SUFFIXES:
        suffix = ""
    return f"{'-' if sign and value != '0' else ''}{value}{suffix}"


def _inflections(first: str, second: str) -> bool:
    """'peanut'/'peanuts', 'allergic'/'allergy', 'studied'/'studies': one word, another ending.

    The shared start must be at least four letters and leave at most two letters of the longer
    word ('weekday'/'weekend' and 'repainted'/'repaired' stay different)."""
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    return shared >= 4 and shared >= max(len(first), len(second)) - 2


def _unmatched(words: frozenset[str], others: frozenset[str]) -> set[str]:
    return {
        word for word in words - others if not any(_inflections(word, other) for other in others)
    }


def same_particulars(first: str, second: str) -> str | None:
    """None when the two texts could state the same fact; otherwise why they cannot."""
    a, b = particulars(first), particulars(second)
    if a.numbers != b.numbers:
        return f"different numbers ({', '.join(sorted(a.numbers ^ b.numbers))})"
    if a.codes != b.codes:
        return f"different codes ({', '.join(sorted(a.codes ^ b.codes))})"
    if a.negated != b.negated:
        return "one is negated"
    only = _unmatched(a.words, b.words) | _unmatched(b.words, a.words)
    names = only & (a.names | b.names)
    if names:
        return f"different names ({', '.join(sorted(names))})"
    if only:
        return f"different words ({', '.join(sorted(only))})"
    return None
