"""Encrypted export files: an export sealed with AES-256-GCM under a key derived from a passphrase.

Why this construction: AES-GCM (the `cryptography` package, `encryption` extra) is authenticated,
so a wrong key and a file changed by even one bit are both refused rather than read as garbage;
the key is derived from the passphrase with scrypt and a random salt per file, so the same
passphrase never gives the same key twice and guessing costs memory as well as time.

Layout (all of it authenticated; everything before the ciphertext is the associated data):

    MAGIC (8 bytes) | log2(n) | r | p (1 byte each) | salt (16) | nonce (12) | ciphertext + tag (16)

An import recognises the magic bytes and opens the file with the key from settings; the scrypt
parameters a file may ask for are bounded, so a hostile file cannot make import allocate
gigabytes before the tag is even checked.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigurationError, EncryptionKeyError, ImportFormatError
from ..privacy.encryption_key import KEY_ENV, KEY_FILE_ENV, EncryptionKey

__all__ = ["MAGIC", "is_sealed", "seal", "unseal"]

MAGIC = b"MASEAL1\x00"
LOG2_N = 15
R = 8
P = 1
MAX_LOG2_N = 20
MAX_R = 16
MAX_P = 4
SALT_BYTES = 16
NONCE_BYTES = 12
TAG_BYTES = 16
HEADER_BYTES = len(MAGIC) + 3 + SALT_BYTES + NONCE_BYTES


def _primitives() -> tuple[Any, Any]:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
    except ImportError:
        raise ConfigurationError(
            "Encrypted exports need the 'cryptography' package: pip install "
            "'memory-agent[encryption]'."
        ) from None
    return AESGCM, Scrypt


def is_sealed(data: bytes) -> bool:
    """Whether the bytes are an encrypted export (by their magic bytes)."""
    return data.startswith(MAGIC)


def _derive(key: EncryptionKey, salt: bytes, log2_n: int, r: int, p: int) -> bytes:
    _, scrypt = _primitives()
    derived: bytes = scrypt(salt=salt, length=32, n=2**log2_n, r=r, p=p).derive(
        key.reveal().encode("utf-8")
    )
    return derived


def seal(plain: bytes, key: EncryptionKey) -> bytes:
    """The encrypted export of `plain` under `key` (see the module's docstring for the layout)."""
    aesgcm, _ = _primitives()
    salt, nonce = os.urandom(SALT_BYTES), os.urandom(NONCE_BYTES)
    header = MAGIC + bytes((LOG2_N, R, P)) + salt + nonce
    sealed: bytes = aesgcm(_derive(key, salt, LOG2_N, R, P)).encrypt(nonce, plain, header)
    return header + sealed


def unseal(data: bytes, key: EncryptionKey | None, name: str = "the file") -> bytes:
    """The plain export inside an encrypted one; one clear error for no key, a wrong key or a
    damaged file (GCM cannot tell the last two apart, and says so)."""
    if not is_sealed(data):
        raise ImportFormatError(f"{name} is not an encrypted memory-agent export.")
    if len(data) < HEADER_BYTES + TAG_BYTES:
        raise ImportFormatError(
            f"{name} is an encrypted export cut short ({len(data)} bytes); nothing was "
            "imported. Export it again."
        )
    log2_n, r, p = data[len(MAGIC)], data[len(MAGIC) + 1], data[len(MAGIC) + 2]
    if not (10 <= log2_n <= MAX_LOG2_N and 1 <= r <= MAX_R and 1 <= p <= MAX_P):
        raise ImportFormatError(
            f"{name} asks for key-derivation settings this version does not accept; nothing "
            "was imported. Export it again with this version."
        )
    if key is None:
        raise EncryptionKeyError(
            f"{name} is an encrypted export and no key is set; nothing was imported. Set {KEY_ENV} "
            "or "
            f"{KEY_FILE_ENV} to the key it was exported with."
        )
    start = len(MAGIC) + 3
    salt = data[start : start + SALT_BYTES]
    nonce = data[start + SALT_BYTES : HEADER_BYTES]
    aesgcm, _ = _primitives()
    from cryptography.exceptions import InvalidTag

    try:
        plain: bytes = aesgcm(_derive(key, salt, log2_n, r, p)).decrypt(
            nonce, data[HEADER_BYTES:], data[:HEADER_BYTES]
        )
    except InvalidTag:
        raise EncryptionKeyError(
            f"The key set in {KEY_ENV} (or {KEY_FILE_ENV}) does not open {name}: it is the wrong "
            "key, or the "
            "file was changed or damaged after export. Nothing was imported. Set the key it was "
            "exported "
            "with."
        ) from None
    return plain
