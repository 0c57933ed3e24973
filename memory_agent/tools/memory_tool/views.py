"""The texts of Anthropic's memory tool: file views, directory views and edit results.

Pure functions over text, shaped exactly as the `anthropic` package's local-filesystem memory tool
(`BetaLocalFilesystemMemoryTool`, anthropic 2.12) shapes them, because Claude models are trained
on that tool: line numbers right-aligned in six columns and a tab, directory listings two levels
deep with sizes, the same sentences for every success and every refusal it has a sentence for.
Failures raise `MemoryToolError`, whose message is the text the model gets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...core.memory_paths import format_size
from ...errors import MemoryToolError, preview

__all__ = [
    "LINE_NUMBER_WIDTH",
    "MAX_VIEW_LINES",
    "directory_view",
    "file_view",
    "insert_lines",
    "replace_once",
]

MAX_VIEW_LINES = 999_999
"""The most lines `view` shows of a file; a longer one is refused, as Anthropic's tool refuses
it."""

LINE_NUMBER_WIDTH = len(str(MAX_VIEW_LINES))
"""Width of a line number: the tool's 999,999-line maximum has six digits."""

_MAX_DEPTH = 2


def _numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(
        f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}"
        for number, line in enumerate(lines, first)
    )


def file_view(path: str, content: str, view_range: Sequence[int] | None) -> str:
    """A file with line numbers; `view_range` [first, last] (1-based, last -1 = to the end).

    A file of more than `MAX_VIEW_LINES` lines is refused whatever the range (counted before
    anything is split)."""
    if content.count("\n") >= MAX_VIEW_LINES:
        raise MemoryToolError(
            f"File {path} exceeds maximum line limit of {MAX_VIEW_LINES:,} lines.", path
        )
    lines = content.split("\n")
    first = 1
    if view_range and len(view_range) == 2:
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines, first = lines[start:end], start + 1
    return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, first)


@dataclass
class _Directory:
    files: dict[str, int] = field(default_factory=dict)
    directories: dict[str, _Directory] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(self.files.values()) + sum(d.size for d in self.directories.values())


def _tree(files: Mapping[str, int]) -> _Directory:
    root = _Directory()
    for relative, size in files.items():
        *parents, name = relative.split("/")
        node = root
        for part in parents:
            node = node.directories.setdefault(part, _Directory())
        node.files[name] = size
    return root


def _entries(node: _Directory, prefix: str, depth: int) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for name in sorted(set(node.files) | set(node.directories)):
        if name.startswith("."):
            continue
        relative = f"{prefix}/{name}" if prefix else name
        if name in node.files:
            found.append((node.files[name], relative))
        if name in node.directories:
            child = node.directories[name]
            found.append((child.size, relative + "/"))
            if depth < _MAX_DEPTH:
                found.extend(_entries(child, relative, depth + 1))
    return found


def directory_view(path: str, files: Mapping[str, int]) -> str:
    """A directory listing two levels deep, hidden names left out, each line `size<TAB>path`.

    `files` maps each file's path relative to the directory to its size in bytes. A directory's
    size is the total of the files under it (a filesystem would show its inode size instead).
    """
    root = _tree(files)
    lines = [f"{format_size(root.size)}\t{path}"]
    lines += [f"{format_size(size)}\t{path}/{relative}" for size, relative in _entries(root, "", 1)]
    header = (
        f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    )
    return header + "\n" + "\n".join(lines)


ECHO_LIMIT = 200
"""Most characters of `old_str` an error quotes back (the model sent the rest; it need not read
it again)."""
LINES_LISTED = 50
"""Most line numbers a "multiple occurrences" error lists."""


def replace_once(path: str, content: str, old: str, new: str) -> tuple[str, str]:
    """Replace `old`, which must occur exactly once: the new content, and the result text
    (a snippet of the changed place with line numbers).

    Linear in the size of the block whatever `old` is (an empty `old_str` occurs between every
    two characters: the occurrences are walked once, counting newlines as the walk goes)."""
    first = content.find(old)
    if first == -1:
        raise MemoryToolError(
            f"No replacement was performed, old_str `{preview(old, ECHO_LIMIT)}` did not appear "
            f"verbatim in {path}.",
            path,
        )
    if (content.find(old, first + len(old)) != -1) if old else bool(content):
        raise MemoryToolError(
            "No replacement was performed. Multiple occurrences of old_str "
            f"`{preview(old, ECHO_LIMIT)}` in lines: "
            f"{_occurrence_lines(content, old)}. Please ensure it is unique",
            path,
        )
    changed_line = content.count("\n", 0, first)
    replaced = content[:first] + new + content[first + len(old) :]
    new_lines = replaced.split("\n")
    start, stop = max(0, changed_line - 2), min(len(new_lines), changed_line + 3)
    snippet = _numbered(new_lines[start:stop], start + 1)
    return replaced, (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n" + snippet
    )


def _occurrence_lines(content: str, old: str) -> str:
    """The numbers of the lines where `old` starts, each once, at most `LINES_LISTED` of them."""
    lines: list[int] = []
    line, counted, position = 1, 0, content.find(old)
    while position != -1 and len(lines) <= LINES_LISTED:
        line += content.count("\n", counted, position)
        counted = position
        if not lines or lines[-1] != line:
            lines.append(line)
        if old:  # occurrences that do not overlap, as str.count counts them
            position = content.find(old, position + len(old))
        else:  # "" occurs at every position: one per line is enough
            next_line = content.find("\n", position)
            position = -1 if next_line == -1 else next_line + 1
    shown = ", ".join(map(str, lines[:LINES_LISTED]))
    return shown + (", ..." if len(lines) > LINES_LISTED else "")


def insert_lines(path: str, content: str, line: int, text: str) -> str:
    """The content with `text` inserted after line `line` (0 = at the top); always ends in a
    newline."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    if line < 0 or line > len(lines):
        raise MemoryToolError(
            f"Invalid `insert_line` parameter: {line}. It should be within the range [0, "
            f"{len(lines)}].",
            path,
        )
    lines.insert(line, text.rstrip("\n"))
    inserted = "\n".join(lines)
    return inserted if inserted.endswith("\n") else inserted + "\n"
