"""The import paths modules had before they moved into rooms keep working.

Issue 24 grouped the modules that sat loose at the package root into folders named for what
lives there (docs/package-layout.md has the table). Users' code says `import
memory_agent.recall`, `from memory_agent.recall import RecallMemory`, `from memory_agent import
recall` or `mock.patch("memory_agent.recall.x")`; each of these reaches the module's one object
at its new home, so nothing is loaded twice and a patch made through the old path changes what
the library runs. Why a finder rather than a file per old name: twenty alias files would put back
the clutter the move removed. An old path warns (DeprecationWarning, naming the new path, pointed
at the line that used it); it is kept for compatibility.

The table names modules relative to the package, so the move script's rewrite of dotted names
leaves it alone.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    "blocks": "core.blocks",
    "labels": "core.labels",
    "memory_paths": "core.memory_paths",
    "core_memory": "core.core_memory",
    "recall": "conversation.recall",
    "compactor": "conversation.compactor",
    "rendering": "prompt.rendering",
    "turn_context": "prompt.turn_context",
    "reserved_names": "prompt.reserved_names",
    "sensitivity": "privacy.sensitivity",
    "redaction": "privacy.redaction",
    "encryption_key": "privacy.encryption_key",
    "file_modes": "privacy.file_modes",
    "admin": "maintenance.admin",
    "health": "maintenance.health",
    "pg_health": "maintenance.pg_health",
    "anthropic_memory": "integrations.anthropic_memory",
    "session_store": "integrations.session_store",
    "college": "integrations.college",
    "soak": "testing.soak",
}
"""Old module name -> its home now, both relative to the package."""

PACKAGE = __name__.rpartition(".")[0]


def new_path(old: str) -> str | None:
    """`memory_agent.recall[.x]` -> `memory_agent.conversation.recall[.x]`; None if not moved."""
    prefix = f"{PACKAGE}."
    if not old.startswith(prefix):
        return None
    head, _, tail = old[len(prefix) :].partition(".")
    if head not in MOVED:
        return None
    return f"{prefix}{MOVED[head]}" + (f".{tail}" if tail else "")


def _outside_frame() -> int:
    """The stack level of the first frame outside the import machinery, this package's
    `__init__` and this module, so the warning names the user's line. `warnings` itself steps
    over importlib's bootstrap frames without counting them; the others count."""
    here = {__file__, sys.modules[PACKAGE].__file__}
    machinery = os.path.dirname(importlib.__file__)
    level, frame = 1, sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        bootstrap = "importlib" in name and "_bootstrap" in name
        if not (bootstrap or name in here or name.startswith(machinery)):
            break
        level += 0 if bootstrap else 1
        frame = frame.f_back  # type: ignore[assignment]  # None past the outermost frame
    return level


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path is kept for compatibility)",
        DeprecationWarning,
        stacklevel=_outside_frame(),
    )


class OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module path with the module at its new path (the same object)."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if new_path(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = new_path(spec.name)
        assert new is not None  # find_spec answered for moved names only
        _warn(spec.name, new)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamps the alias's spec on the module; the module keeps its own.
        for name, spec in list(self._specs.items()):
            if spec is not None and spec.name == module.__name__:
                module.__spec__ = spec
                del self._specs[name]


def install() -> None:
    """Put the finder first on `sys.meta_path` (once), so an old path never loads a stale file."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())


def old_attribute(name: str) -> ModuleType | None:
    """`memory_agent.recall` as an attribute of the package (`from memory_agent import recall`
    when nothing has imported the old path yet); None when `name` is no old module."""
    if name not in MOVED:
        return None
    return importlib.import_module(f"{PACKAGE}.{name}")
