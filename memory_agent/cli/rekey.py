"""`memory-agent rekey`: a new key for an encrypted store, or encrypting (decrypting) one.

The new key is read from a file (`--new-key-file`), from MEMORY_NEW_ENCRYPTION_KEY, or typed at a
hidden prompt twice; it is never echoed or printed. The current key is the one settings hold
(MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..errors import ConfigurationError
from ..maintenance import admin
from ..privacy.encryption_key import EncryptionKey, key_from_file, parse_key
from .app import load_settings, shared_options, state
from .output import emit, say

__all__ = ["NEW_KEY_ENV", "rekey"]

NEW_KEY_ENV = "MEMORY_NEW_ENCRYPTION_KEY"


def _new_key(new_key_file: Path | None, prompt: bool) -> EncryptionKey | None:
    """The new key from --new-key-file, else MEMORY_NEW_ENCRYPTION_KEY, else a hidden prompt."""
    from_env = os.environ.get(NEW_KEY_ENV, "")
    if new_key_file is not None and from_env:
        raise ConfigurationError(
            f"Both --new-key-file and {NEW_KEY_ENV} are set; give the new key one way."
        )
    if new_key_file is not None:
        return key_from_file(new_key_file, "--new-key-file")
    if from_env:
        return parse_key(from_env, NEW_KEY_ENV)
    if not prompt:
        return None
    typed = click.prompt("New encryption key", hide_input=True, confirmation_prompt=True, err=True)
    return parse_key(str(typed), "The new key")


@click.command()
@shared_options
@click.option(
    "--new-key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"File holding the new key (else {NEW_KEY_ENV}, else a hidden prompt).",
)
@click.option(
    "--encrypt",
    "mode",
    flag_value="encrypt",
    help="Encrypt a plain store: with the new key, or, if none is given, with "
    "MEMORY_ENCRYPTION_KEY.",
)
@click.option(
    "--decrypt",
    "mode",
    flag_value="decrypt",
    help="Write the store back as a plain SQLite file (with the current key set).",
)
def rekey(new_key_file: Path | None, mode: str | None) -> None:
    """Re-encrypt the SQLite store under a new key (or encrypt or decrypt it).

    Stop every agent and command using the storage dir first: the database is rewritten into a new
    file that replaces memory.db. Afterwards set MEMORY_ENCRYPTION_KEY (or the key file) to the new
    key.
    """
    settings = load_settings()
    directory = admin.storage_path(state().storage_dir, settings)
    if mode == "decrypt":
        if new_key_file is not None or os.environ.get(NEW_KEY_ENV):
            raise ConfigurationError("--decrypt takes no new key.")
        old, new = settings.encryption_key, None
        if old is None:
            raise ConfigurationError(
                "--decrypt needs the store's key in MEMORY_ENCRYPTION_KEY or "
                "MEMORY_ENCRYPTION_KEY_FILE."
            )
    elif mode == "encrypt":
        old = None
        new = (
            _new_key(new_key_file, prompt=settings.encryption_key is None)
            or settings.encryption_key
        )
    else:
        old = settings.encryption_key
        if old is None:
            raise ConfigurationError(
                "No current key is set (MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE). "
                "To encrypt a plain store, run 'memory-agent rekey --encrypt'."
            )
        new = _new_key(new_key_file, prompt=True)
    done = admin.reencrypt_storage(directory, old, new, database_url=settings.database_url)
    following = (
        "Unset MEMORY_ENCRYPTION_KEY and MEMORY_ENCRYPTION_KEY_FILE to open it."
        if new is None
        else "Set MEMORY_ENCRYPTION_KEY (or MEMORY_ENCRYPTION_KEY_FILE) to the new key to open it."
    )
    emit(
        {"storage_dir": directory, "done": done},
        lambda: say(f"The store at {directory} was {done}. {following}"),
    )
