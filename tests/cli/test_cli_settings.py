"""Where settings come from, and what a bad one looks like.

The library reads the process environment only; the CLI (and the examples) also read `./.env`.
Every configuration error, compaction's included, is one line from the CLI, and the API key
never appears in it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent import ConfigurationError, MemoryManager, Settings

Invoke = Callable[..., Result]

SECRET = "sk-ant-test-secret-0123456789"

pytestmark = pytest.mark.usefixtures("backend")


def test_the_library_ignores_a_stray_env_file_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text(
        "DEFAULT_BLOCK_LIMIT=abc\nAGENT_ID=from-dotenv\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERSIST_DIRECTORY", str(tmp_path / "store"))
    settings = Settings.from_env()
    assert settings.agent_id is None and settings.default_block_limit == 5000
    with MemoryManager() as memory:
        assert memory.agent_id != "from-dotenv"


def test_a_named_env_file_is_read_under_the_environment(tmp_path: Path) -> None:
    env_file = tmp_path / "settings.env"
    env_file.write_text("AGENT_ID=from-file\nMODEL_NAME=from-file\n", encoding="utf-8")
    settings = Settings.from_env({"MODEL_NAME": "from-environment"}, env_file=str(env_file))
    assert (settings.agent_id, settings.model_name) == ("from-file", "from-environment")
    assert Settings.from_env({}, env_file=tmp_path / "missing.env").agent_id is None


def test_the_cli_reads_the_env_file_of_its_working_directory(
    initialised: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / ".env").write_text("MEMORY_CHARACTER_LIMITS=notes=123\n", encoding="utf-8")
    monkeypatch.chdir(workdir)
    assert initialised("blocks", "create", "notes").exit_code == 0
    shown = initialised("blocks", "show", "notes")
    assert shown.exit_code == 0 and "/123" in shown.output.replace(" ", ""), shown.output


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("COMPACTION_CLIP_CHARS", "abc", "COMPACTION_CLIP_CHARS"),
        ("COMPACTION_TRIGGER_THRESHOLD", "2", "COMPACTION_TRIGGER_THRESHOLD"),
        ("DEFAULT_BLOCK_LIMIT", "abc", "DEFAULT_BLOCK_LIMIT"),
        ("CHROMA_PORT", "99999", "CHROMA_PORT"),
        ("MEMORY_HYBRID_SEARCH", "maybe", "MEMORY_HYBRID_SEARCH"),
        ("MEMORY_FORGET_WAIT_SECONDS", "soon", "MEMORY_FORGET_WAIT_SECONDS"),
        ("MEMORY_FORGET_WAIT_SECONDS", "nan", "MEMORY_FORGET_WAIT_SECONDS"),
        ("MEMORY_FORGET_WAIT_SECONDS", "-1", "MEMORY_FORGET_WAIT_SECONDS"),
    ],
)
def test_every_configuration_error_is_one_line_without_the_key(
    run: Invoke, variable: str, value: str, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = run("blocks", "list", env={variable: value, "ANTHROPIC_API_KEY": SECRET})
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and named in lines[0], result.stderr
    assert "unexpectedly" not in lines[0]
    assert SECRET not in result.output + result.stderr + caplog.text


def test_compaction_errors_are_configuration_errors_of_the_library(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="COMPACTION_CLIP_CHARS"):
        Settings.from_env({"COMPACTION_CLIP_CHARS": "abc", "ANTHROPIC_API_KEY": SECRET})
    settings = Settings.from_env({"ANTHROPIC_API_KEY": SECRET, "PERSIST_DIRECTORY": str(tmp_path)})
    assert SECRET not in repr(settings) and SECRET not in str(settings)


def test_the_forget_wait_is_read_in_seconds(tmp_path: Path) -> None:
    base = {"PERSIST_DIRECTORY": str(tmp_path)}
    assert Settings.from_env(base).forget_wait_seconds == 5.0
    waited = Settings.from_env({**base, "MEMORY_FORGET_WAIT_SECONDS": "0.25"})
    assert waited.forget_wait_seconds == 0.25
