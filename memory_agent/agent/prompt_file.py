"""The composed system prompt, handed to the CLI as a file rather than a command-line argument.

The SDK passes a string or custom system prompt to the CLI as one argument, and Linux refuses
any single argument over 128 KiB (`MAX_ARG_STRLEN`): memory, a summary or large blocks would
stop the CLI from starting ("Argument list too long"). A file has no such limit, and the CLI
reads it (`--system-prompt-file`, or `--append-system-prompt-file` after a preset) when it
starts. The file lives in a private temporary directory (mode 0700) for as long as the agent
holds a CLI process, and is removed when the agent closes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..privacy.file_modes import PRIVATE_FILE

__all__ = ["PromptFile"]


class PromptFile:
    """One agent's system prompt file, rewritten before each new CLI process starts."""

    def __init__(self) -> None:
        self._directory: Path | None = None

    @property
    def path(self) -> Path:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="memory-agent-prompt-"))
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
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
