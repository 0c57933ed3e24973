"""The encryption key: read once into Settings, never shown (repr, str, format, errors, logs,
pickle)."""

from __future__ import annotations

import copy
import logging
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_agent import EncryptionKey, Settings
from memory_agent.errors import ConfigurationError
from memory_agent.privacy.encryption_key import MIN_KEY_LENGTH, key_from_environ, parse_key

SECRET = "s3cret-passphrase-do-not-show"


def test_the_key_comes_from_the_variable_or_a_file(tmp_path: Path) -> None:
    assert Settings.from_env({}).encryption_key is None
    assert Settings.from_env({"MEMORY_ENCRYPTION_KEY": SECRET}).encryption_key == EncryptionKey(
        SECRET
    )
    key_file = tmp_path / "key"
    key_file.write_text(SECRET + "\n", encoding="utf-8")
    from_file = Settings.from_env({"MEMORY_ENCRYPTION_KEY_FILE": str(key_file)}).encryption_key
    assert from_file is not None and from_file.reveal() == SECRET
    key_file.write_bytes(SECRET.encode() + b"\r\n")
    assert key_from_environ({"MEMORY_ENCRYPTION_KEY_FILE": str(key_file)}) == EncryptionKey(SECRET)


@pytest.mark.parametrize(
    "environ, words",
    [
        ({"MEMORY_ENCRYPTION_KEY": SECRET, "MEMORY_ENCRYPTION_KEY_FILE": "/x"}, "Both"),
        ({"MEMORY_ENCRYPTION_KEY": "q7#Zp"}, "too short"),
        ({"MEMORY_ENCRYPTION_KEY": f" {SECRET}"}, "white space"),
        ({"MEMORY_ENCRYPTION_KEY": f"{SECRET}\x00x"}, "NUL"),
        ({"MEMORY_ENCRYPTION_KEY_FILE": "/no/such/key/file"}, "cannot be read"),
        ({"MEMORY_ENCRYPTION_KEY_FILE": "/dev/zero"}, "not a regular file"),
    ],
)
def test_a_bad_key_is_a_configuration_error_that_does_not_quote_it(
    environ: dict[str, str], words: str
) -> None:
    with pytest.raises(ConfigurationError, match=words) as raised:
        Settings.from_env(environ)
    for value in environ.values():
        if not value.startswith("/"):
            assert value.strip("\x00 ") not in str(raised.value)


def test_a_key_file_that_is_not_text_names_the_file_not_its_bytes(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_bytes(b"\xff\xfe" + SECRET.encode())
    with pytest.raises(ConfigurationError, match="not UTF-8") as raised:
        Settings.from_env({"MEMORY_ENCRYPTION_KEY_FILE": str(key_file)})
    assert SECRET not in str(raised.value)


def test_no_output_shows_the_key(caplog: pytest.LogCaptureFixture) -> None:
    configured = Settings.from_env({"MEMORY_ENCRYPTION_KEY": SECRET})
    key = configured.encryption_key
    assert key is not None
    shown = [
        repr(configured),
        str(configured),
        repr(key),
        str(key),
        f"{key}",
        f"{key!r}",
        format(key, ""),
        repr([key]),
        repr({"k": key}),
    ]
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("memory_agent").info("settings %s key %r", configured, key)
    assert all(SECRET not in text for text in shown + [caplog.text])
    assert "encryption_key='***'" in repr(configured)
    assert copy.deepcopy(configured).encryption_key == key and copy.copy(key) is key
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(key)
    with pytest.raises(TypeError):
        pickle.dumps(configured)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_key_or_a_configuration_error_never_shown(text: str) -> None:
    try:
        key = parse_key(text, "MEMORY_ENCRYPTION_KEY")
    except ConfigurationError as error:
        assert len(text) < MIN_KEY_LENGTH or text not in str(error)
        return
    assert key.reveal() == text
    assert text not in repr(key) or text in "EncryptionKey(***)"
