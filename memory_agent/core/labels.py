"""Block labels: the one rule for what a label may be, shared by every way in.

A label is a plain name (`human`, `persona`) or a path of such names joined by `/`
(`system/human/family`), as current Letta (Letta Code's memory filesystem) writes them:

- each segment holds 1-64 of the characters `A-Z a-z 0-9 _ - .`, and is neither `.` nor `..`;
- at most 16 segments and 100 characters in all (a rewrite's reason is archived with the label
  as a tag, and tags hold 100 characters);
- the normal form has no empty segment: leading, trailing and repeated `/` are dropped
  (`/note_directory` is the label `note_directory`, `system//references/x` is
  `system/references/x`; Letta writes both), so every spelling of a path names one block; nothing
  else is rewritten, and a label of slashes only is refused.

The rule keeps labels safe wherever they travel: no character that could open or close an XML
tag, quote an attribute, start a shell option of its own (`-` alone is still a valid segment, but
every CLI argument is passed as a value), or climb out of a directory. The API, the model's tools,
the CLI, rendering and import/export all call `validate_label`, so the rule lives here only.
"""

from __future__ import annotations

import re

from ..errors import InvalidLabelError

__all__ = [
    "MAX_LABEL_LENGTH",
    "MAX_LABEL_SEGMENTS",
    "MAX_SEGMENT_LENGTH",
    "is_path_label",
    "label_segments",
    "validate_label",
]

MAX_SEGMENT_LENGTH = 64
MAX_LABEL_SEGMENTS = 16
MAX_LABEL_LENGTH = 100

_SEGMENT = re.compile(rf"[A-Za-z0-9_.\-]{{1,{MAX_SEGMENT_LENGTH}}}")


def validate_label(label: object) -> str:
    """The label in its normal form (empty segments dropped); refuses anything else."""
    if not isinstance(label, str):
        raise InvalidLabelError(str(label))
    segments = [segment for segment in label.split("/") if segment]
    normal = "/".join(segments)
    if (
        not normal
        or len(normal) > MAX_LABEL_LENGTH
        or len(segments) > MAX_LABEL_SEGMENTS
        or not all(_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments)
    ):
        raise InvalidLabelError(label)
    return normal


def is_path_label(label: str) -> bool:
    """Whether a (valid) label has more than one segment."""
    return "/" in label


def label_segments(label: str) -> list[str]:
    """The segments of a label, after normalising it (`/a/b` -> `['a', 'b']`)."""
    return validate_label(label).split("/")
