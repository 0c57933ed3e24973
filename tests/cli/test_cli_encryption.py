"""`memory-agent rekey` and `export --encrypt`: keys never echoed, wrong keys refused changing
nothing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_agent.portability.sealed import MAGIC

Run = Callable[..., Result]
ErrorOf = Callable[[Result], str]
pytest.importorskip(
    "sqlcipher3", reason="the encryption extra is not installed (pip install -e '.[encryption]')"
)

KEY = "first passphrase 123"
NEW = "second passphrase 456"
MARKER = "QQMARKER-8842"

SQLITE_ONLY = pytest.mark.sqlite_only(
    reason="rekey rewrites the SQLite file; PostgreSQL encrypts at rest itself"
)


@pytest.fixture(autouse=True)
def no_suite_key(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests choose their keys (the suite's encrypted mode, MEMORY_AGENT_TEST_ENCRYPTION=1,
    sets one for every `backend` test, once that fixture has run)."""
    if "backend" in request.fixturenames:
        request.getfixturevalue("backend")
    monkeypatch.delenv("MEMORY_ENCRYPTION_KEY", raising=False)


def hashes(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def encrypted(run: Run) -> Run:
    """A storage dir encrypted with KEY, agent 'ada' holding the marker in a block and a passage."""
    env = {"MEMORY_ENCRYPTION_KEY": KEY}
    assert run("--agent", "ada", "init", env=env).exit_code == 0
    assert run("blocks", "append", "human", f"code {MARKER}", env=env).exit_code == 0
    assert run("remember", f"a passage about {MARKER}", env=env).exit_code == 0
    return run


@SQLITE_ONLY
def test_rekey_takes_the_new_key_from_a_prompt_a_file_or_the_environment_and_never_echoes_it(
    encrypted: Run, storage: Path, tmp_path: Path, error_of: ErrorOf
) -> None:
    run = encrypted
    typed = run("rekey", input=f"{NEW}\n{NEW}\n", env={"MEMORY_ENCRYPTION_KEY": KEY})
    assert typed.exit_code == 0, typed.output
    assert "rekeyed" in typed.stdout and NEW not in typed.output and KEY not in typed.output
    assert "does not open" in error_of(
        run("blocks", "show", "human", env={"MEMORY_ENCRYPTION_KEY": KEY})
    )
    key_file = tmp_path / "third.key"
    key_file.write_text("third passphrase 789\n", encoding="utf-8")
    by_file = run("rekey", "--new-key-file", str(key_file), env={"MEMORY_ENCRYPTION_KEY": NEW})
    assert by_file.exit_code == 0 and "third passphrase" not in by_file.output
    by_env = run(
        "rekey", env={"MEMORY_ENCRYPTION_KEY_FILE": str(key_file), "MEMORY_NEW_ENCRYPTION_KEY": KEY}
    )
    assert by_env.exit_code == 0 and KEY not in by_env.output
    shown = run("blocks", "show", "human", env={"MEMORY_ENCRYPTION_KEY": KEY})
    assert shown.exit_code == 0 and MARKER in shown.stdout
    assert not any(MARKER.encode() in p.read_bytes() for p in storage.rglob("*") if p.is_file())


@SQLITE_ONLY
def test_rekey_encrypts_a_plain_store_and_refuses_what_it_cannot_do(
    run: Run, storage: Path, error_of: ErrorOf
) -> None:
    assert run("--agent", "ada", "init").exit_code == 0
    assert run("blocks", "append", "human", f"code {MARKER}").exit_code == 0
    before = hashes(storage)
    assert "rekey --encrypt" in error_of(
        run("blocks", "show", "human", env={"MEMORY_ENCRYPTION_KEY": KEY})
    )
    assert "No current key" in error_of(run("rekey", input=f"{NEW}\n{NEW}\n"))
    mismatch = run("rekey", "--encrypt", input=f"{NEW}\n{KEY}\n{NEW}\n{NEW}\n")
    assert mismatch.exit_code == 0 and NEW not in mismatch.output and KEY not in mismatch.output
    assert hashes(storage) != before
    assert MARKER in run("blocks", "show", "human", env={"MEMORY_ENCRYPTION_KEY": NEW}).stdout
    assert "does not open" in error_of(
        run("rekey", "--decrypt", env={"MEMORY_ENCRYPTION_KEY": KEY})
    )
    decrypted = run("rekey", "--decrypt", env={"MEMORY_ENCRYPTION_KEY": NEW})
    assert decrypted.exit_code == 0 and "decrypted" in decrypted.stdout
    assert MARKER in run("blocks", "show", "human").stdout


@SQLITE_ONLY
def test_doctor_checks_an_encrypted_store_with_its_key(encrypted: Run, error_of: ErrorOf) -> None:
    report = encrypted("doctor", env={"MEMORY_ENCRYPTION_KEY": KEY})
    assert report.exit_code == 0, report.output
    assert "All checks passed" in report.stdout
    keyless = encrypted("doctor")
    assert keyless.exit_code == 1 and "no key is set" in " ".join(keyless.stdout.split())


@pytest.mark.usefixtures("backend")
def test_an_encrypted_export_round_trips_and_holds_no_readable_text(
    run: Run, tmp_path: Path, error_of: ErrorOf
) -> None:
    """On PostgreSQL too: the key seals the export file whatever the store is."""
    env = {"MEMORY_ENCRYPTION_KEY": KEY}
    assert run("--agent", "ada", "init", env=env).exit_code == 0
    assert run("blocks", "append", "human", f"code {MARKER}", env=env).exit_code == 0
    exported = tmp_path / "ada.sealed"
    result = run("export", "--encrypt", "-o", str(exported), env=env)
    assert result.exit_code == 0, result.output
    data = exported.read_bytes()
    assert data.startswith(MAGIC) and MARKER.encode() not in data and b"human" not in data
    other = tmp_path / "other"
    assert "no key is set" in error_of(run("import", str(exported), storage_dir=other))
    assert "does not open" in error_of(
        run("import", str(exported), storage_dir=other, env={"MEMORY_ENCRYPTION_KEY": NEW})
    )
    assert not other.exists()
    imported = run("import", str(exported), storage_dir=other, env=env)
    assert imported.exit_code == 0, imported.output
    shown = json.loads(run("--json", "blocks", "show", "human", storage_dir=other, env=env).stdout)
    assert MARKER in json.dumps(shown)


@pytest.mark.usefixtures("backend")
def test_export_encrypt_needs_a_key_and_a_file(run: Run, tmp_path: Path, error_of: ErrorOf) -> None:
    assert run("--agent", "ada", "init").exit_code == 0
    assert "needs a key" in error_of(run("export", "--encrypt", "-o", str(tmp_path / "x")))
    assert "--output" in error_of(run("export", "--encrypt", env={"MEMORY_ENCRYPTION_KEY": KEY}))
    assert not (tmp_path / "x").exists()


@SQLITE_ONLY
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=400),
    flip=st.integers(min_value=0, max_value=10_000),
    # An environment variable cannot hold NUL or a lone surrogate (the OS, or os.environ's UTF-8
    # encoding, refuses it before memory-agent runs).
    key=st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=0, max_size=40),
)
def test_a_changed_or_cut_encrypted_export_is_refused_with_the_projects_errors_creating_nothing(
    sealed_export: Path, run: Run, tmp_path: Path, cut: int, flip: int, key: str
) -> None:
    data = bytearray(sealed_export.read_bytes())
    if cut:
        data = data[: max(len(MAGIC), len(data) - cut)]
    else:
        data[flip % len(data)] ^= 0x01
    hostile = tmp_path / "hostile.sealed"
    hostile.write_bytes(bytes(data))
    target = tmp_path / "hostile-target"
    env = {"MEMORY_ENCRYPTION_KEY": key} if key else {}
    result = run("import", str(hostile), storage_dir=target, env=env)
    assert result.exit_code == 1, f"a changed file was imported: {result.output}"
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.output
    assert not target.exists()


@pytest.fixture
def sealed_export(run: Run, tmp_path: Path) -> Path:
    env = {"MEMORY_ENCRYPTION_KEY": KEY}
    assert run("--agent", "ada", "init", env=env).exit_code == 0
    path = tmp_path / "good.sealed"
    assert run("export", "--encrypt", "-o", str(path), env=env).exit_code == 0
    return path
