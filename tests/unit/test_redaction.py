"""No output shows a secret: database URLs and DSNs in every form, `.env` lines, bad values of any
variable. Hypothesis builds secrets of distinctive words joined by the characters that break URL
parsing (`#`, `?`, `/`, `@`, `:`, space, `%`, quotes) and puts them where people put them; every
error message, repr, log record and `doctor` output produced from them is checked for each word.

No store is opened: every URL points at a closed port or is refused before a connection."""

from __future__ import annotations

import logging
import socket
import string
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_agent import ConfigurationError, MemoryAgentError, Settings
from memory_agent.cli import cli
from memory_agent.privacy.redaction import describe_value, redact_env_line, redact_url, scrub
from memory_agent.settings import read_env_file
from memory_agent.store.backend import open_store

pytestmark = pytest.mark.sqlite_only(
    reason="no store is opened: every URL is refused before a connection or "
    "points at a closed port, and settings are parsed before any backend"
)

WORD = st.text(string.ascii_letters + string.digits, min_size=4, max_size=8).map(
    lambda tail: "Zq" + tail
)
JOINER = st.sampled_from(
    ["#", "?", "/", "@", ":", " ", "%", "'", '"', "&", "=", "[", "\\", "", "-"]
)
SECRET = st.lists(st.tuples(WORD, JOINER), min_size=1, max_size=3).map(
    lambda pairs: "".join(word + joiner for word, joiner in pairs)
)


def _words(secret: str) -> list[str]:
    """The distinctive words of a generated secret: none may appear in any output."""
    return [word for word in _split(secret) if word.startswith("Zq")]


def _split(text: str) -> list[str]:
    for joiner in "#?/@: %'\"&=[\\-":
        text = text.replace(joiner, "\0")
    return [piece for piece in text.split("\0") if piece]


def _assert_hidden(secret: str, *outputs: str) -> None:
    for output in outputs:
        for word in _words(secret):
            assert word not in output, (secret, output)


@pytest.fixture(scope="module")
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _urls(secret: str, port: int) -> list[str]:
    quoted = secret.replace("\\", "\\\\").replace("'", "\\'")
    return [
        f"postgresql://ada:{secret}@127.0.0.1:{port}/memory",
        f"postgres://ada:{secret}@[::1]:{port}/memory",
        f"postgresql://ada:{secret}@[::1/memory",  # an IPv6 host missing its bracket
        f"postgresql://ada:{secret}@::1]:{port}/memory",
        f"postgresql://127.0.0.1:{port}/memory?sslmode=disable&password={secret}",
        f"postgresql://ada@127.0.0.1:{port}/memory?password={secret}&sslmode=disable",
        f"host=127.0.0.1 port={port} user=ada password={secret}",
        f"host=127.0.0.1 port={port} password='{quoted}' dbname=memory",
        f"mysql://ada:{secret}@db.example.org/memory",
        f"sqlite://ada:{secret}@localhost/memory",
    ]


def _examples(count: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def _refusal(action: object) -> str:
    """The text of the error `action()` raises: it must be one of ours."""
    try:
        action()  # type: ignore[operator]  # a callable
    except MemoryAgentError as error:
        return f"{error!r} {error}"
    raise AssertionError("accepted a value it should refuse")


def test_urls_and_dsns_in_errors_reprs_and_logs(
    tmp_path: Path, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    @_examples(60)
    @given(SECRET)
    def check(secret: str) -> None:
        caplog.clear()
        for url in _urls(secret, closed_port):
            shown = redact_url(url)
            assert "***" in shown, (url, shown)
            settings_ = Settings.from_env(
                {"MEMORY_DATABASE_URL": url, "PERSIST_DIRECTORY": str(tmp_path)}, env_file=None
            )
            error = _refusal(lambda url=url: open_store(tmp_path / "store", url))  # type: ignore[misc]
            _assert_hidden(secret, shown, repr(settings_), str(settings_), error)
        _assert_hidden(secret, *(record.getMessage() for record in caplog.records))

    check()


def test_doctor_and_commands_never_show_the_url_secret(tmp_path: Path, closed_port: int) -> None:
    runner = CliRunner()

    @_examples(15)
    @given(SECRET)
    def check(secret: str) -> None:
        for url in _urls(secret, closed_port):
            for command in (["doctor"], ["--json", "doctor"], ["blocks", "list"]):
                result = runner.invoke(
                    cli,
                    ["--storage-dir", str(tmp_path / "store"), "--database-url", url, *command],
                    catch_exceptions=True,
                )
                assert result.exception is None or isinstance(result.exception, SystemExit), (
                    result.exception
                )
                assert result.exit_code != 0, result.output
                _assert_hidden(secret, result.output, result.stderr)

    check()


BAD_LINES = [
    lambda secret: f"ANTHROPIC_API_KEY {secret}",  # the '=' forgotten
    lambda secret: secret,  # the key pasted alone
    lambda secret: f"={secret}",
    lambda secret: f"export {secret}",
]


def test_env_lines_are_named_by_number_and_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    @_examples(40)
    @given(SECRET.filter(lambda s: "=" not in s and "\n" not in s), st.sampled_from(BAD_LINES))
    def check(secret: str, line: object) -> None:
        text = line(secret)  # type: ignore[operator]  # one of BAD_LINES
        env_file = tmp_path / ".env"
        env_file.write_text(
            f"# settings\nPERSIST_DIRECTORY={tmp_path / 'store'}\n{text}\n", encoding="utf-8"
        )
        error = _refusal(lambda: read_env_file(env_file))
        assert f"{env_file}:3" in error
        from_settings = _refusal(lambda: Settings.from_env({}, env_file=env_file))
        result = runner.invoke(cli, ["blocks", "list"], catch_exceptions=True)
        assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1, result.output
        _assert_hidden(secret, error, from_settings, result.output, result.stderr)

    check()


VARIABLES = [
    "CHROMA_PORT",
    "DEFAULT_BLOCK_LIMIT",
    "MEMORY_HYBRID_SEARCH",
    "MEMORY_FORGET_WAIT_SECONDS",
    "MEMORY_CHARACTER_LIMITS",
    "COMPACTION_ENABLED",
    "COMPACTION_CONTEXT_WINDOW",
    "COMPACTION_WINDOW_PERCENTAGE",
    "COMPACTION_MODE",
    "COMPACTION_TRIGGER_THRESHOLD",
    "COMPACTION_MAX_ATTEMPTS",
]


def test_a_secret_in_the_wrong_variable_is_not_echoed(tmp_path: Path) -> None:
    @_examples(60)
    @given(SECRET, st.sampled_from(VARIABLES))
    def check(secret: str, variable: str) -> None:
        error = _refusal(
            lambda: Settings.from_env(
                {variable: secret, "PERSIST_DIRECTORY": str(tmp_path)}, env_file=None
            )
        )
        assert variable in error, error
        _assert_hidden(secret, error)

    check()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://ada:s3cr#t@db.example:5433/memory",
            "postgresql://ada:***@db.example:5433/memory",
        ),
        (
            "postgresql://ada:p?ss/w rd@[2001:db8::1]:5432/memory",
            "postgresql://ada:***@[2001:db8::1]:5432/memory",
        ),
        ("postgresql://ada:pw@[::1/memory", "postgresql://ada:***@[::1/memory"),
        ("mysql://root:hunter2@localhost/app", "mysql://root:***@localhost/app"),
        (
            "postgresql://db/memory?sslmode=require&password=hunter2&user=x",
            "postgresql://db/memory?sslmode=require&password=***",
        ),
        ("postgresql://db/memory?sslmode=require", "postgresql://db/memory?sslmode=require"),
        ("postgresql://ada@db:5432/memory", "postgresql://ada@db:5432/memory"),
        ("postgresql://ada:hunter2", "postgresql://ada:***"),
        (
            "host=db port=5432 password='a b\\'c' user=ada",
            "host=db port=5432 password=*** user=ada",
        ),
        ("host=db password=two words", "host=db password=*** ***"),
        ("host=db hunter2=oops", "host=db ***"),
        ("sk-ant-api03-abcdef", "<a value of 19 characters>"),
    ],
)
def test_redacted_urls_keep_their_shape(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "hunter2" not in scrub(f"libpq said: {url}", url)


def test_shapes_of_values_and_env_lines() -> None:
    assert describe_value("hunter2") == "a value of 7 characters"
    assert describe_value(" ") == "an empty value" and describe_value(-5) == "-5"
    assert (
        redact_env_line("ANTHROPIC_API_KEY=sk-ant-xyz")
        == "ANTHROPIC_API_KEY=<a value of 10 characters>"
    )
    assert "sk-ant" not in redact_env_line("ANTHROPIC_API_KEY sk-ant-xyz")
    with pytest.raises(ConfigurationError, match="a value of 5 characters"):
        Settings.from_env({"CHROMA_PORT": "eight"}, env_file=None)
