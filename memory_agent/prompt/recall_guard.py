"""Stored text made safe to show the model as recalled data, never as part of the prompt.

Automatic recall (`agent/auto_recall.py`) puts passages and old messages into a user message,
inside `<turn_context>`. That text was written by a user, a model or an import, so it may hold
anything: a tag that would close `<turn_context>` and open a forged section, a line that reads
as a turn of the conversation ("Human: ..."), or an order ("ignore previous instructions").
Two steps keep it data:

- `escape_recalled` escapes `&`, `<` and `>` (so no tag the prompt uses, nor any other, can
  be opened or closed: the full list is `reserved_names.RESERVED_NAMES`, the block labels and
  the CLI's `<system-reminder>`; escaping every angle bracket covers them all, spellings with
  spaces, case or attributes included) and backslash-escapes a line that would start a markdown
  heading (the markdown prompt layout's sections are headings).
- `neutralise_instructions` (the governor) replaces each line that reads as an instruction to
  the model or as a role's turn with a fixed notice saying a line was withheld. It errs on the
  side of withholding: a recalled memory is a reminder, and the model can still search for the
  full text with its tools, where the text arrives as a tool result.
"""

from __future__ import annotations

import re
import unicodedata

from .rendering import escape_markdown, escape_text

__all__ = [
    "WITHHELD_LINE",
    "escape_recalled",
    "is_instruction_like",
    "neutralise_instructions",
    "safe_recalled_text",
]

WITHHELD_LINE = "[a line that read as an instruction was withheld]"
"""What replaces an instruction-like line in recalled text."""

_ROLE_PREFIX = re.compile(
    r"^\W{0,4}(human|user|assistant|system|developer|ai|claude|h|a)\s*[:>]",
    re.IGNORECASE,
)
_CHAT_MARKUP = re.compile(
    r"(\[/?inst\]|<\|?im_(start|end)\|?>|\|im_(start|end)\||<<\s*/?sys\s*>>"
    r"|###\s*(instruction|system|response))",
    re.IGNORECASE,
)
_VERBS = r"(ignore|disregard|forget|override|overrule|bypass|skip|drop|abandon)"
_TARGETS = (
    r"(instruction|instructions|prompt|prompts|rules|guidelines|directions|directives|messages"
    r"|context|orders|commands|constraints|system)"
)
_ORDERS = (
    re.compile(rf"\b{_VERBS}\b.{{0,40}}\b{_TARGETS}\b", re.IGNORECASE),
    re.compile(r"\b(you are now|you're now|from now on|act as|pretend (to be|you are))\b", re.I),
    re.compile(r"\b(new|updated|real|actual|hidden|secret) (instructions?|system prompt)\b", re.I),
    re.compile(r"\bsystem prompt\b", re.IGNORECASE),
    re.compile(r"\b(do not|don't) (tell|inform|let) (the )?(user|human)\b", re.IGNORECASE),
    re.compile(r"\b(respond|reply|answer) only with\b", re.IGNORECASE),
)
_LINE_BREAK = re.compile(r"(\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029])")
"""Every line boundary of `str.splitlines`, kept when splitting so the text keeps its shape."""


def is_instruction_like(line: str) -> bool:
    """Whether a line reads as a role's turn, chat markup, or an order to the model: read as a
    model may read it, with compatibility forms folded (full-width letters) and invisible
    format characters (zero-width spaces and joiners) removed."""
    folded = unicodedata.normalize("NFKC", line)
    stripped = "".join(c for c in folded if unicodedata.category(c) != "Cf").strip()
    if not stripped:
        return False
    if _ROLE_PREFIX.match(stripped) or _CHAT_MARKUP.search(stripped):
        return True
    return any(pattern.search(stripped) for pattern in _ORDERS)


def neutralise_instructions(text: str) -> str:
    """`text` with every instruction-like line replaced by `WITHHELD_LINE` (the governor)."""
    parts = _LINE_BREAK.split(text)
    return "".join(
        WITHHELD_LINE if index % 2 == 0 and is_instruction_like(part) else part
        for index, part in enumerate(parts)
    )


_LOOK_ALIKES = str.maketrans({"\uff1c": "&#xff1c;", "\uff1e": "&#xff1e;", "\ufe64": "&#xfe64;"})
"""Full-width and small angle brackets a reader may take for `<` and `>`."""


def escape_recalled(text: str) -> str:
    """Escape tags (and their look-alikes) and markdown headings, so the text can open or close
    no section."""
    return escape_markdown(escape_text(text).translate(_LOOK_ALIKES))


def safe_recalled_text(text: str) -> str:
    """Recalled text ready to show: the governor first (it reads the text as written), then the
    escaping. Line breaks become `\\n`: a recalled item is shown as plain lines."""
    governed = neutralise_instructions(text)
    lines = _LINE_BREAK.split(governed)
    return "\n".join(escape_recalled(line) for index, line in enumerate(lines) if index % 2 == 0)
