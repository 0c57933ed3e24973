"""The modules that moved into rooms (issue 24) are still reached by their old import paths.

Each old path must give the very object at the new path (not a copy: a copy would let a patch
through the old path miss the code the library runs), warn once with the new path, and leave
the module's own name and spec alone. The table in `memory_agent._old_paths` is the one the move
script (tools/move_rooms.py) moves by; the two must agree, and no moved module may be left at the
package root.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType
from unittest import mock

import pytest

import memory_agent
from memory_agent import _old_paths

PACKAGE_DIR = Path(memory_agent.__file__).resolve().parent
REPO = PACKAGE_DIR.parent
OLD_NAMES = sorted(_old_paths.MOVED)


def _forget(old: str) -> None:
    """Drop an old path's cached entries so the next import goes through the finder again."""
    sys.modules.pop(f"memory_agent.{old}", None)
    memory_agent.__dict__.pop(old, None)


def _new(old: str) -> ModuleType:
    return importlib.import_module(f"memory_agent.{_old_paths.MOVED[old]}")


def test_every_moved_module_lives_in_its_room_and_nowhere_else() -> None:
    for old, new in _old_paths.MOVED.items():
        assert not (PACKAGE_DIR / f"{old}.py").exists(), f"{old}.py is still at the root"
        assert (PACKAGE_DIR / (new.replace(".", "/") + ".py")).is_file(), new
        assert importlib.util.find_spec(f"memory_agent.{new}") is not None, new


def test_the_table_is_the_move_scripts_table() -> None:
    spec = importlib.util.spec_from_file_location("move_rooms", REPO / "tools" / "move_rooms.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.MOVES == _old_paths.MOVED


@pytest.mark.parametrize("old", OLD_NAMES)
def test_an_old_import_path_gives_the_same_module_and_warns(old: str) -> None:
    new = _new(old)
    _forget(old)
    with pytest.warns(DeprecationWarning, match=rf"memory_agent\.{old} moved to") as caught:
        module = importlib.import_module(f"memory_agent.{old}")
    assert module is new
    assert sys.modules[f"memory_agent.{old}"] is new
    assert new.__name__ == f"memory_agent.{_old_paths.MOVED[old]}"
    assert new.__spec__ is not None and new.__spec__.name == new.__name__
    assert f"memory_agent.{_old_paths.MOVED[old]}" in str(caught[0].message)


@pytest.mark.parametrize("old", OLD_NAMES)
def test_from_the_package_import_an_old_name(old: str) -> None:
    new = _new(old)
    _forget(old)
    with pytest.warns(DeprecationWarning) as caught:
        exec(f"from memory_agent import {old} as found", namespace := {})
    assert namespace["found"] is new
    assert caught[0].filename == __file__ or caught[0].filename == "<string>"


def test_old_paths_give_the_same_classes_and_functions() -> None:
    pairs = {
        ("recall", "RecallMemory"): "conversation.recall",
        ("core_memory", "CoreMemory"): "core.core_memory",
        ("redaction", "redact_url"): "privacy.redaction",
        ("session_store", "SQLiteSessionStore"): "integrations.session_store",
    }
    for (old, name), new in pairs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            namespace: dict[str, object] = {}
            exec(f"from memory_agent.{old} import {name} as found", namespace)
        assert namespace["found"] is getattr(importlib.import_module(f"memory_agent.{new}"), name)


def test_the_warning_points_at_the_line_that_used_the_old_path() -> None:
    _forget("labels")
    with pytest.warns(DeprecationWarning) as caught:
        import memory_agent.labels  # noqa: F401
    assert caught[0].filename == __file__


def test_a_patch_through_an_old_path_changes_what_the_library_runs() -> None:
    from memory_agent.core import labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with mock.patch("memory_agent.labels.validate_label", return_value="patched"):
            assert labels.validate_label("anything") == "patched"
    assert labels.validate_label("human") == "human"


def test_names_that_never_were_modules_still_fail() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("memory_agent.no_such_module")
    with pytest.raises(AttributeError):
        memory_agent.no_such_module  # noqa: B018


def test_a_fresh_process_imports_an_old_path_without_loading_a_module_twice() -> None:
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import memory_agent.conversation.recall as new\n"
        "try:\n"
        "    import memory_agent.recall\n"
        "except DeprecationWarning as warning:\n"
        "    print('warned:', warning)\n"
        "warnings.simplefilter('ignore')\n"
        "import memory_agent.recall as old\n"
        "assert old is new, (old, new)\n"
        "import memory_agent.soak as soak\n"
        "assert soak.__name__ == 'memory_agent.testing.soak', soak.__name__\n"
        "names = [m for m in sys.modules if m.endswith('.recall')]\n"
        "print(sorted(names))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "warned: memory_agent.recall moved to memory_agent.conversation.recall" in done.stdout
    assert "['memory_agent.conversation.recall', 'memory_agent.recall']" in done.stdout
