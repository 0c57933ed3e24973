"""Anthropic's memory-tool commands (`memory_20250818`) over one agent's blocks.

`MemoryFiles` runs `view`, `create`, `str_replace`, `insert`, `delete` and `rename` on the
`/memories` paths of one agent (`memory_paths` holds the mapping: a file is a block, a directory a
label prefix). Every command is built from `MemoryManager`'s own operations, so the rules of every
write hold here too: block limits, read-only blocks (for the model), sharing (one agent's paths
reach only the blocks attached to it), stale-write refusal (`str_replace` and `insert` are refused
when another agent changed the block since this one last saw it; `view` counts as seeing it),
history, undo and the journal. A command that touches several blocks (deleting or renaming a
directory) is one transaction: all of it happens, or none.

Results and refusals are the texts of Anthropic's local-filesystem memory tool (`views`), so the
model meets what it was trained on; refusals the filesystem has no sentence for (a read-only block,
a limit, an unsafe path, a file named like one of the prompt's own sections, see `reserved_names`)
carry our own message. Every refusal is a `MemoryAgentError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ...core.blocks import Block
from ...core.labels import validate_label
from ...core.memory_paths import (
    MEMORY_ROOT,
    MemoryPath,
    default_in_prompt,
    memory_path,
    parse_memory_path,
    path_preview,
)
from ...errors import InvalidLabelError, MemoryToolError, ReadOnlyBlockError
from ...prompt.reserved_names import is_section_name, reserved_name
from .views import directory_view, file_view, insert_lines, replace_once

if TYPE_CHECKING:
    from ...manager import MemoryManager

__all__ = ["COMMANDS", "MemoryFiles"]

COMMANDS: dict[str, tuple[str, ...]] = {
    "view": ("path",),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}
"""Each command and the arguments it needs (`view` also takes an optional `view_range`)."""


def _missing(path: str) -> MemoryToolError:
    return MemoryToolError(f"The path {path} does not exist. Please provide a valid path.", path)


class MemoryFiles:
    """The memory tool's commands for one agent of a `MemoryManager`."""

    def __init__(self, memory: MemoryManager, agent_id: str | None = None) -> None:
        self.memory = memory
        self.agent_id = agent_id or memory.agent_id

    # ----- dispatch -----------------------------------------------------------------------

    def run(self, arguments: Mapping[str, Any]) -> str:
        """Run one tool call (`{"command": "view", "path": ...}`); arguments other commands take
        are ignored, as Anthropic's tool ignores them."""
        if not isinstance(arguments, Mapping):
            raise MemoryToolError("The memory tool takes an object of arguments with a 'command'.")
        command = arguments.get("command")
        if not isinstance(command, str) or command not in COMMANDS:
            raise MemoryToolError(
                f"Unknown memory command {path_preview(command)}. "
                f"Use one of: {', '.join(COMMANDS)}."
            )
        values: dict[str, Any] = {name: arguments.get(name) for name in COMMANDS[command]}
        for name, value in values.items():
            if value is None:
                raise MemoryToolError(f"The {command} command needs '{name}'.")
            _check_type(command, name, value)
        if command == "view":
            return self.view(values["path"], _view_range(arguments.get("view_range")))
        method: Callable[..., str] = getattr(self, command)
        return method(**values)

    # ----- the commands -------------------------------------------------------------------

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        """A file with line numbers, or a directory two levels deep with sizes."""
        target = parse_memory_path(path)
        sizes = self._sizes()
        if target.label in sizes:
            block = self.memory.view_block(target.label, agent_id=self.agent_id)
            return file_view(path, block.value, view_range)
        if not self._is_directory(target, sizes):
            raise _missing(path)
        cut = len(target.label) + 1 if target.label else 0
        return directory_view(
            path,
            {label[cut:]: size for label, size in sizes.items() if _under(label, target.label)},
        )

    def create(self, path: str, file_text: str) -> str:
        """A new file: an on-demand block, or one in the prompt under `system/` (see
        `memory_paths.default_in_prompt`); refused where the path exists."""
        target = parse_memory_path(path)
        with self._transaction():
            sizes = self._sizes()
            if target.is_root or target.label in sizes or self._is_directory(target, sizes):
                raise MemoryToolError(f"File {path} already exists", path)
            self._refuse_file_parent(path, target.label, sizes)
            _refuse_section_name(f"create {path}", target.label)
            self.memory.create_block(
                target.label,
                file_text,
                agent_id=self.agent_id,
                in_prompt=default_in_prompt(target.label),
            )
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace text that occurs exactly once; the result shows the changed lines."""
        target = self._existing_file(path)
        result: list[str] = []

        def compute(block: Block) -> str:
            replaced, text = replace_once(path, block.value, old_str, new_str)
            result.append(text)
            return replaced

        self.memory.edit_block(
            target.label, compute, action="memory_str_replace", agent_id=self.agent_id
        )
        return result[0]

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """Insert text after line `insert_line` (0 = at the top)."""
        target = self._existing_file(path)
        self.memory.edit_block(
            target.label,
            lambda b: insert_lines(path, b.value, insert_line, insert_text),
            action="memory_insert_line",
            agent_id=self.agent_id,
        )
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        """Delete a file, or a directory with everything under it (one transaction).

        A shared block is only detached from this agent; it is deleted once no agent has it.
        """
        target = parse_memory_path(path)
        if target.is_root:
            raise MemoryToolError(f"Cannot delete the {MEMORY_ROOT} directory itself", path)
        with self._transaction():
            sizes = self._sizes()
            if target.label in sizes:
                doomed = [target.label]
            elif self._is_directory(target, sizes):
                doomed = [label for label in sizes if _under(label, target.label)]
            else:
                raise MemoryToolError(f"The path {path} does not exist", path)
            for label in doomed:
                if self.memory.get_block(label, agent_id=self.agent_id).read_only:
                    raise ReadOnlyBlockError(label)
            for label in doomed:
                self.memory.delete_block(label, agent_id=self.agent_id)
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        """Move a file or a directory (one transaction); refused onto an existing path."""
        old, new = parse_memory_path(old_path), parse_memory_path(new_path)
        if old.is_root:
            raise MemoryToolError(f"Cannot rename the {MEMORY_ROOT} directory itself", old_path)
        with self._transaction():
            sizes = self._sizes()
            if new.is_root or new.label in sizes or self._is_directory(new, sizes):
                raise MemoryToolError(f"The destination {new_path} already exists", new_path)
            if old.label in sizes:
                moves = {old.label: new.label}
            elif self._is_directory(old, sizes):
                if _under(new.label, old.label):
                    raise MemoryToolError(
                        f"Cannot move {old_path} into itself ({new_path}).", new_path
                    )
                moves = {
                    label: new.label + label[len(old.label) :]
                    for label in sizes
                    if _under(label, old.label)
                }
            else:
                raise MemoryToolError(f"The path {old_path} does not exist", old_path)
            self._refuse_file_parent(
                new_path, new.label, [label for label in sizes if label not in moves]
            )
            targets = {label: _moved_label(moved, new_path) for label, moved in moves.items()}
            for moved in targets.values():
                _refuse_section_name(f"rename {old_path} to {new_path}", moved)
            for label, moved in targets.items():
                self.memory.rename_block(label, moved, agent_id=self.agent_id)
        return f"Successfully renamed {old_path} to {new_path}"

    # ----- helpers ------------------------------------------------------------------------

    def _transaction(self) -> AbstractContextManager[Any]:
        return self.memory.atomic()

    def _sizes(self) -> dict[str, int]:
        """The agent's labels and their sizes: the tree every command looks paths up in."""
        return self.memory.block_sizes(agent_id=self.agent_id)

    @staticmethod
    def _is_directory(target: MemoryPath, labels: Iterable[str]) -> bool:
        return target.is_root or any(_under(label, target.label) for label in labels)

    def _existing_file(self, path: str) -> MemoryPath:
        target = parse_memory_path(path)
        sizes = self._sizes()
        if target.label in sizes:
            return target
        if self._is_directory(target, sizes):
            raise MemoryToolError(f"The path {path} is not a file.", path)
        raise _missing(path)

    @staticmethod
    def _refuse_file_parent(path: str, label: str, labels: Iterable[str]) -> None:
        """A file cannot also be a directory: refuse a path below an existing file."""
        parts, existing = label.split("/"), set(labels)
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in existing:
                raise MemoryToolError(
                    f"Cannot write {path}: {memory_path(parent)} is a file, not a directory.", path
                )


def _under(label: str, directory: str) -> bool:
    """Whether `label` lies inside the directory with this label prefix ("" is the root)."""
    return not directory or label.startswith(directory + "/")


def _refuse_section_name(action: str, label: str) -> None:
    """A file named like a section of the prompt would read as that section (`reserved_names`)."""
    if is_section_name(label):
        raise MemoryToolError(
            f"Cannot {action}: {memory_path(label)} is named like the <{reserved_name(label)}> "
            "section that "
            "memory-agent itself writes into your prompt. Choose another name.",
            label,
        )


def _moved_label(label: str, new_path: str) -> str:
    """A label after a directory move, which may outgrow the label rule."""
    try:
        return validate_label(label)
    except InvalidLabelError as error:
        raise MemoryToolError(
            f"Cannot rename to {new_path}: {memory_path(label)} would be too long or "
            "too deep for a memory path. Choose a shorter destination.",
            new_path,
        ) from error


def _check_type(command: str, name: str, value: object) -> None:
    if name == "insert_line":
        if not isinstance(value, int) or isinstance(value, bool):
            raise MemoryToolError(f"The {command} command's 'insert_line' must be an integer.")
        return
    if not isinstance(value, str):
        raise MemoryToolError(f"The {command} command's '{name}' must be a string.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryToolError(
            f"The {command} command's '{name}' is not valid Unicode text "
            "(it holds a lone surrogate)."
        ) from None


def _view_range(value: object) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise MemoryToolError(
            "The view command's 'view_range' must be a list of two integers, "
            "[first line, last line] (-1 as the last means to the end)."
        )
    return value
