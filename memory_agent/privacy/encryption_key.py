"""The key that encrypts a store at rest, held so that no output can show it.

Why a class of its own rather than a `str`: a key passed around as text ends up in a repr, an
f-string, a log record or an exception's arguments sooner or later. `EncryptionKey` prints as
`EncryptionKey(***)` whatever is done with it (repr, str, format, pickling is refused), and the
text is reached only through `reveal()`, which the two places that hand it to a cipher call.

Where it comes from (read once into `Settings`): `MEMORY_ENCRYPTION_KEY` (the passphrase itself)
or `MEMORY_ENCRYPTION_KEY_FILE` (a file holding it; one trailing newline is dropped, so
`echo secret > keyfile` works). Setting both is refused: which one wins would be a guess.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

from ..errors import ConfigurationError

__all__ = [
    "KEY_ENV",
    "KEY_FILE_ENV",
    "MIN_KEY_LENGTH",
    "EncryptionKey",
    "key_from_environ",
    "key_from_file",
    "parse_key",
]

KEY_ENV = "MEMORY_ENCRYPTION_KEY"
KEY_FILE_ENV = "MEMORY_ENCRYPTION_KEY_FILE"
MIN_KEY_LENGTH = 8
"""A shorter passphrase is refused: SQLCipher's key derivation slows guessing, it does not make a
four-letter word safe."""
MAX_KEY_LENGTH = 4096


class EncryptionKey:
    """A passphrase that never shows itself; compare with `==`, read with `reveal()`."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def reveal(self) -> str:
        """The passphrase, for the cipher that needs it (never for output)."""
        return self._text

    def __repr__(self) -> str:
        return "EncryptionKey(***)"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EncryptionKey) and other._text == self._text

    def __hash__(self) -> int:
        return hash((EncryptionKey, self._text))

    def __copy__(self) -> EncryptionKey:
        return self  # immutable: a copy (of Settings, say) may share it

    def __deepcopy__(self, memo: dict[int, object]) -> EncryptionKey:
        return self

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "An EncryptionKey is not pickled: it would write the key to wherever the pickle goes."
        )


def parse_key(text: str, source: str) -> EncryptionKey:
    """A key from its text, checked; `source` names where it came from in the error (never the
    text)."""
    if not isinstance(text, str):
        raise ConfigurationError(f"{source} must be text, got {type(text).__name__}.")
    if "\x00" in text:
        raise ConfigurationError(
            f"{source} contains a NUL character; use a passphrase of printable text."
        )
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        raise ConfigurationError(
            f"{source} is not valid Unicode text; use a passphrase of valid UTF-8."
        )
    if len(text) < MIN_KEY_LENGTH:
        raise ConfigurationError(
            f"{source} is too short ({len(text)} characters); use a passphrase of at least "
            f"{MIN_KEY_LENGTH} "
            "characters (a long random one: 'openssl rand -base64 32')."
        )
    if len(text) > MAX_KEY_LENGTH:
        raise ConfigurationError(
            f"{source} is longer than {MAX_KEY_LENGTH} characters; use a shorter passphrase."
        )
    if text != text.strip():
        raise ConfigurationError(
            f"{source} starts or ends with white space, which is easy to lose when the key is "
            "typed "
            "again; "
            "remove it (a key file may end with one newline)."
        )
    return EncryptionKey(text)


def key_from_file(path: Path, source: str = KEY_FILE_ENV) -> EncryptionKey:
    """The key held in a file (one trailing newline dropped); errors name the file, not its
    content."""
    try:
        descriptor = os.open(Path(path).expanduser(), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise ConfigurationError(
            f"{source} names {path}, which cannot be read ({reason}). "
            "Point it at a readable file holding the passphrase."
        ) from None
    with os.fdopen(descriptor, "rb") as stream:
        # A device or FIFO would be read forever (or block): only a regular file of key size is
        # read.
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ConfigurationError(
                f"{source} names {path}, which is not a regular file; point it at a "
                "file holding the passphrase."
            )
        raw = stream.read(MAX_KEY_LENGTH * 4 + 3)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(f"The key file {path} ({source}) is not UTF-8 text.") from None
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    return parse_key(text, f"The key file {path} ({source})")


def key_from_environ(env: Mapping[str, str]) -> EncryptionKey | None:
    """The key MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE gives; None when neither is
    set."""
    text = env.get(KEY_ENV, "")
    file = env.get(KEY_FILE_ENV, "").strip()
    if text and file:
        raise ConfigurationError(
            f"Both {KEY_ENV} and {KEY_FILE_ENV} are set; set only one of them."
        )
    if file:
        return key_from_file(Path(file))
    if text:
        return parse_key(text, KEY_ENV)
    return None
