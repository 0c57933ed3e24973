"""The composed system prompt, handed to the CLI as a file rather than a command-line argument.

The SDK passes a string or custom system prompt to the CLI as one argument, and Linux refuses
any single argument over 128 KiB (`MAX_ARG_STRLEN`): memory, a summary or large blocks would
stop the CLI from starting ("Argument list too long"). A file has no such limit, and the CLI
reads it (`--system-prompt-file`, or `--append-system-prompt-file` after a preset) when it
starts. The file lives in a private temporary directory (mode 0700) for as long as the agent
holds a CLI process, and is removed when the agent closes, or, for an agent never closed, when
it is garbage-collected or its process exits normally. The prompt holds memory's text (blocks,
recalled passages), so it must not outlive the agent in the temporary directory: the test suite
found about a hundred such folders left by programs that ended without closing their agents.
A process killed outright (SIGKILL) still leaves its folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

from ..privacy.file_modes import PRIVATE_FILE

__all__ = ["PromptFile"]


class PromptFile:
    """One agent's system prompt file, rewritten before each new CLI process starts."""

    def __init__(self) -> None:
        self._directory: Path | None = None
        self._removal: weakref.finalize | None = None

    @property
    def path(self) -> Path:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="memory-agent-prompt-"))
            # runs once: at close(), when this object is collected, or at interpreter exit
            self._removal = weakref.finalize(
                self, shutil.rmtree, self._directory, ignore_errors=True
            )
        return self._directory / "system-prompt.md"

    def write(self, text: str) -> Path:
        """Replace the file's text atomically (a starting CLI never reads half a prompt)."""
        target = self.path
        partial = target.with_suffix(".partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(partial, target)
        return target

    def close(self) -> None:
        """Remove the file and its directory; a later `write` makes a new one."""
        if self._removal is not None:
            self._removal()
            self._removal = None
        self._directory = None
