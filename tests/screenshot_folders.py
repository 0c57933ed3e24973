"""Where a run's inspector screenshots went, printed once at the end of the run.

The browser tests' `screenshot_dir` fixture remembers its folder here. Under pytest-xdist each
worker has its own temporary directory and no terminal of its own, so a worker hands its folders
to the controlling process when it finishes (`workeroutput`), and that process prints them
(tests/conftest.py wires the hooks)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

__all__ = ["hand_over", "remember", "summary_lines", "take_over"]

_FOLDERS = pytest.StashKey[list[Path]]()
_OUTPUT_KEY = "inspector_screenshot_folders"


def remember(config: pytest.Config, folder: Path) -> None:
    config.stash.setdefault(_FOLDERS, []).append(folder)


def hand_over(config: pytest.Config) -> None:
    """In a pytest-xdist worker: pass this worker's folders on to the controlling process."""
    output: dict[str, Any] | None = getattr(config, "workeroutput", None)
    if output is not None:
        output[_OUTPUT_KEY] = [str(folder) for folder in config.stash.get(_FOLDERS, [])]


def take_over(config: pytest.Config, worker_output: Mapping[str, Any]) -> None:
    """In the controlling process: the folders a finished worker handed over."""
    for folder in worker_output.get(_OUTPUT_KEY, []):
        remember(config, Path(folder))


def summary_lines(config: pytest.Config) -> list[str]:
    """One line per folder, once (both workers write to $MEMORY_AGENT_SCREENSHOTS if it is set)."""
    folders = dict.fromkeys(config.stash.get(_FOLDERS, []))
    return [
        f"inspector screenshots: {len(sorted(folder.rglob('*.png')))} in {folder}"
        for folder in folders
    ]
