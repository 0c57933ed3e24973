"""Memory paths: how `/memories/...` paths of Anthropic's memory tool map onto block labels.

The mapping is one rule, both ways:

- the block labelled `project/notes.md` is the file `/memories/project/notes.md`;
- a directory is a label prefix: `/memories/project` exists while any attached block's label
  starts with `project/`; `/memories` itself always exists and holds every attached block;
- a path names a block only through the agent's own attachments, so one agent's paths never
  reach another agent's blocks, except shared blocks attached to it.

A path the model sends is checked here before anything is looked up: it must be `/memories` or
start with `/memories/`, and the rest must be a valid label (`labels.validate_label`: segments of
`A-Z a-z 0-9 _ - .`, at most 16 segments and 100 characters). `.` and `..` segments are resolved
as Anthropic's filesystem tool resolves them (`/memories/a/../b` is `/memories/b`; `/memories/.`
and `/memories/sub/..` are `/memories` itself, which cannot be deleted or renamed), and a path
whose `..` climbs above `/memories` is refused. On top of that rule, and with its own message for
each, a path is refused for a `%` (percent-encoded text is never decoded, so `%2e%2e` cannot turn
into `..`), a backslash, a NUL or other control character, and for a length past
`MAX_PATH_LENGTH`. Empty segments (`/memories//a`, a trailing `/`) are dropped, as a filesystem
would. Refused paths raise `MemoryToolError` and nothing is read.

Whether a block is always in the prompt is a flag of the block; `default_in_prompt` is the rule a
block created through the memory tool starts with (Letta Code's: `system/` is always in context,
and so are the two classic blocks `persona` and `human`; everything else is on demand).
"""

from __future__ import annotations

import re

from ..errors import InvalidLabelError, MemoryToolError
from .labels import MAX_LABEL_LENGTH, validate_label

__all__ = [
    "MAX_PATH_LENGTH",
    "MEMORY_ROOT",
    "MemoryPath",
    "default_in_prompt",
    "format_size",
    "memory_path",
    "parse_memory_path",
    "path_preview",
]

MEMORY_ROOT = "/memories"
"""The root every memory-tool path starts with (the tool's own convention)."""

MAX_PATH_LENGTH = len(MEMORY_ROOT) + 1 + MAX_LABEL_LENGTH
"""The longest path that can name a block: the root, a `/` and the longest label."""

_ALWAYS_IN_PROMPT = frozenset({"persona", "human"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def memory_path(label: str) -> str:
    """The memory-tool path of a block label (`project/notes.md` ->
    `/memories/project/notes.md`)."""
    return f"{MEMORY_ROOT}/{label}"


def default_in_prompt(label: str) -> bool:
    """Whether a block the model creates with the memory tool starts out in the prompt."""
    return label in _ALWAYS_IN_PROMPT or label == "system" or label.startswith("system/")


def format_size(size: int) -> str:
    """A byte count as Anthropic's memory tool prints it in a directory view (`0B`, `12B`,
    `1.5K`)."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / (1024**index)
    return (
        f"{int(scaled)}{units[index]}" if scaled == int(scaled) else f"{scaled:.1f}{units[index]}"
    )


def path_preview(path: object, limit: int = 80) -> str:
    """A path fit to echo in an error: control characters escaped, long ones cut."""
    text = path if isinstance(path, str) else repr(path)
    text = _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class MemoryPath:
    """A checked memory path: `label` is the block label it names, "" for `/memories` itself."""

    __slots__ = ("given", "label")

    def __init__(self, given: str, label: str) -> None:
        self.given = given
        self.label = label

    @property
    def is_root(self) -> bool:
        return self.label == ""

    def __repr__(self) -> str:
        return f"MemoryPath({self.given!r} -> {self.label!r})"


def _resolved_segments(path: str, shown: str) -> list[str]:
    """The path's segments after `/memories`, with `.` and `..` resolved as a filesystem resolves
    them (nothing here is a symlink, so resolving the text is exact); climbing above the root is
    refused."""
    resolved: list[str] = []
    for segment in path[len(MEMORY_ROOT) :].split("/"):
        if segment in ("", "."):
            continue
        if segment != "..":
            resolved.append(segment)
        elif resolved:
            resolved.pop()
        else:
            raise MemoryToolError(
                f"Path {shown} would escape {MEMORY_ROOT} directory: its '..' climbs above "
                f"{MEMORY_ROOT}; name the file under {MEMORY_ROOT}/.",
                path,
            )
    return resolved


def parse_memory_path(path: object) -> MemoryPath:
    """Check a path the model sent and find the label it names; refuses anything unsafe."""
    if not isinstance(path, str) or not path:
        raise MemoryToolError(
            f"Path must start with {MEMORY_ROOT}, got: {path_preview(path)}", path
        )
    shown = path_preview(path)
    if len(path) > MAX_PATH_LENGTH:
        raise MemoryToolError(
            f"Path {shown} is {len(path)} characters long; a memory path has at most "
            f"{MAX_PATH_LENGTH} (at most {MAX_LABEL_LENGTH} after {MEMORY_ROOT}/). Use a shorter "
            "name.",
            path,
        )
    if _CONTROL.search(path):
        raise MemoryToolError(
            f"Path {shown} contains a control character (such as NUL or a newline); "
            "memory paths are plain names.",
            path,
        )
    if path != MEMORY_ROOT and not path.startswith(MEMORY_ROOT + "/"):
        raise MemoryToolError(f"Path must start with {MEMORY_ROOT}, got: {shown}", path)
    segments = _resolved_segments(path, shown)
    if "%" in path or "\\" in path:
        raise MemoryToolError(
            f"Path {shown} contains '%' or '\\': memory paths are never decoded or "
            "translated; write the path plainly with '/' between its parts.",
            path,
        )
    if not segments:
        return MemoryPath(path, "")
    try:
        label = validate_label("/".join(segments))
    except InvalidLabelError:
        raise MemoryToolError(
            f"Path {shown} is not a valid memory path. After {MEMORY_ROOT}/ each part holds 1-64 "
            "letters, digits, '_', '-' or '.' (no spaces), with at most 16 parts and "
            f"{MAX_LABEL_LENGTH} characters, e.g. {MEMORY_ROOT}/project/notes.md.",
            path,
        ) from None
    return MemoryPath(path, label)
