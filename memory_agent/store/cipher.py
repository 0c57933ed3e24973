"""SQLCipher under the SQLite store: an encrypted memory.db that the code above sees as sqlite3.

Why a wrapper: `sqlcipher3` (the `encryption` extra, wheels `sqlcipher3-binary`) is a copy of the
stdlib module built against SQLCipher, with its own exception classes. The store and the layers
above catch `sqlite3.Error` (busy, damage, integrity, disk full) and read `sqlite_errorcode`, so
`CipherConnection` hands out the same calls and raises the stdlib classes, with the same codes,
for every failure of a statement, a fetch or a commit. Nothing above `store/` knows which engine
is underneath. One difference remains: the driver reports SQLite's primary result codes where the
stdlib reports extended ones (19 for 1555); `storage_error` compares primary codes only.
sqlcipher3-binary 0.6 bundles SQLite 3.51 (SQLCipher 4.12) with FTS5 and JSON built in.

Opening checks the key before anything is written: the file's first 16 bytes say whether it is a
plain SQLite file (the format's magic string) or not (SQLCipher puts the random salt there), and
with a key the connection's first read, of the schema, says whether the key is the right one
(tried first on an immutable connection when a -wal exists, see `_probe_immutable`). A mismatch
is one `EncryptionKeyError`, and the file, its -wal and -shm are left byte for byte as they were.
The slow key derivation runs once per process and file (SQLCipher would run it for every
connection): the key is derived here for the salt the file starts with and given to SQLCipher raw.

Re-encryption (a new key, encrypting a plain store, decrypting) writes a complete copy with
`sqlcipher_export` into a new file beside memory.db, syncs it and renames it over the old one:
every page is rewritten under the new key, a crash leaves either the old or the new file, and a
process that still has the old file open is refused its next write (`Database._check_identity`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, cast
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError, EncryptionKeyError, StorageError
from ..privacy.encryption_key import KEY_ENV, KEY_FILE_ENV, EncryptionKey
from ..privacy.file_modes import private_file
from .whole_file import fsync_path

__all__ = [
    "EXTRA",
    "CipherConnection",
    "StoreKind",
    "connect",
    "forget_derived_keys",
    "reencrypt",
    "sqlcipher",
    "store_kind",
    "verify_key",
]

EXTRA = "memory-agent[encryption]"
SQLITE_MAGIC = b"SQLite format 3\x00"
_NAMES = (
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
)

BUSY_WAIT_S = 2.0
"""How long re-encryption waits for other connections to finish with the log before refusing."""

SALT_BYTES = 16
"""SQLCipher keeps its random key-derivation salt in the first bytes of an encrypted file."""

KDF_ITERATIONS = 256_000
"""SQLCipher 4's default PBKDF2-HMAC-SHA512 work factor, which the cached derivation repeats."""

_RAW_KEY = re.compile(r"[xX]'(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{96})'")
"""A passphrase of this form is taken by SQLCipher as a raw key, so it is never derived here."""

StoreKind = Literal["absent", "plain", "encrypted"]
"""'absent' (no file or 0 bytes: a new store), 'plain' (an SQLite file) or 'encrypted'."""


def sqlcipher() -> ModuleType:
    """The sqlcipher3 module; a ConfigurationError naming the extra when it is not installed."""
    try:
        from sqlcipher3 import dbapi2
    except ImportError:
        raise ConfigurationError(
            f"{KEY_ENV} is set, so the store is to be encrypted, but the SQLCipher driver is not "
            "installed. "
            f"Install the extra: pip install '{EXTRA}' (or unset {KEY_ENV} / {KEY_FILE_ENV})."
        ) from None
    return cast(ModuleType, dbapi2)


def _as_sqlite3(error: BaseException) -> BaseException:
    """The stdlib sqlite3 exception matching a sqlcipher3 one (same class name, message and codes);
    anything else unchanged."""
    module = type(error).__module__
    if not module.startswith("sqlcipher3"):
        return error
    for name in (type(error).__name__, *(base.__name__ for base in type(error).__mro__)):
        if name in _NAMES:
            translated: BaseException = getattr(sqlite3, name)(*error.args)
            for attribute in ("sqlite_errorcode", "sqlite_errorname"):
                if hasattr(error, attribute):
                    setattr(translated, attribute, getattr(error, attribute))
            return translated
    return error


class _Translating:
    """Runs a call of the sqlcipher3 object, raising sqlite3's exception for its failures."""

    @staticmethod
    def _call(function: Any, *args: Any) -> Any:
        try:
            return function(*args)
        except Exception as error:
            translated = _as_sqlite3(error)
            if translated is error:
                raise
            raise translated from None


class CipherCursor(_Translating):
    """A cursor of an encrypted store: fetches and iteration raise sqlite3's exceptions."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    @property
    def lastrowid(self) -> int | None:
        return cast("int | None", self._cursor.lastrowid)

    @property
    def description(self) -> Any:
        return self._cursor.description

    def execute(self, sql: str, params: Any = ()) -> CipherCursor:
        self._call(self._cursor.execute, sql, params)
        return self

    def executemany(self, sql: str, rows: Iterable[Any]) -> CipherCursor:
        self._call(self._cursor.executemany, sql, rows)
        return self

    def fetchone(self) -> Any:
        return self._call(self._cursor.fetchone)

    def fetchmany(self, size: int | None = None) -> list[Any]:
        if size is None:
            return cast("list[Any]", self._call(self._cursor.fetchmany))
        return cast("list[Any]", self._call(self._cursor.fetchmany, size))

    def fetchall(self) -> list[Any]:
        return cast("list[Any]", self._call(self._cursor.fetchall))

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        return self._call(next, self._cursor)

    def close(self) -> None:
        self._cursor.close()


class CipherConnection(_Translating):
    """`sqlite3.Connection`'s calls on a SQLCipher connection (see the module's docstring)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def execute(self, sql: str, params: Any = ()) -> CipherCursor:
        return CipherCursor(self._call(self._raw.execute, sql, params))

    def executemany(self, sql: str, rows: Iterable[Any]) -> CipherCursor:
        return CipherCursor(self._call(self._raw.executemany, sql, rows))

    def executescript(self, script: str) -> CipherCursor:
        return CipherCursor(self._call(self._raw.executescript, script))

    def cursor(self) -> CipherCursor:
        return CipherCursor(self._call(self._raw.cursor))

    def commit(self) -> None:
        self._call(self._raw.commit)

    def rollback(self) -> None:
        self._call(self._raw.rollback)

    def close(self) -> None:
        self._call(self._raw.close)

    def interrupt(self) -> None:
        self._raw.interrupt()

    def create_function(self, name: str, arity: int, function: Any, **options: Any) -> None:
        self._call(lambda: self._raw.create_function(name, arity, function, **options))

    @property
    def in_transaction(self) -> bool:
        return bool(self._raw.in_transaction)

    @property
    def total_changes(self) -> int:
        return int(self._raw.total_changes)

    @property
    def row_factory(self) -> Any:
        return self._raw.row_factory

    @row_factory.setter
    def row_factory(self, factory: Any) -> None:
        # sqlite3.Row cannot wrap sqlcipher3's cursors: the driver's own Row reads the same way.
        self._raw.row_factory = sqlcipher().Row if factory is sqlite3.Row else factory

    def __enter__(self) -> CipherConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def store_kind(path: Path) -> StoreKind:
    """What the file at `path` is, from its first bytes alone (nothing is opened or written)."""
    return _head(path)[0]


def _head(path: Path) -> tuple[StoreKind, bytes]:
    """What the file at `path` is, and its first bytes: SQLite's magic string in a plain file,
    SQLCipher's salt in an encrypted one (both 16 bytes long)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return "absent", b""
    except OSError:
        return "plain", b""  # unreadable: SQLite's own open names the problem in the usual words
    if not head:
        return "absent", head
    return ("plain" if head == SQLITE_MAGIC else "encrypted"), head


def _quoted(key: EncryptionKey) -> str:
    """The key as an SQL string literal for PRAGMA key (pragmas take no bound parameters)."""
    return "'" + key.reveal().replace("'", "''") + "'"


@functools.lru_cache(maxsize=8)
def _derived_key(key: EncryptionKey, salt: bytes) -> bytes:
    """The key SQLCipher derives from the passphrase `key` for a file with `salt`, kept per process.

    Why: the derivation is made slow on purpose (about 120 ms of CPU here), and SQLCipher repeats
    it for every connection, while one command opens two to four of them to the same file. Kept
    in memory beside the passphrase it comes from, it gives nothing the passphrase does not."""
    return hashlib.pbkdf2_hmac("sha512", key.reveal().encode(), salt, KDF_ITERATIONS, 32)


def _salts_to_try(key: EncryptionKey, file: Path) -> list[bytes | None]:
    """How to key a connection to `file`, best first: a salt is the raw key derived here for the
    salt the file starts with (when it is already encrypted), None the passphrase, which SQLCipher
    derives itself. The second is for a file whose salt changed after it was read (re-encrypted
    by another process), or that had none then."""
    if _RAW_KEY.fullmatch(key.reveal()):
        return [None]
    kind, salt = _head(file)
    return [salt, None] if kind == "encrypted" and len(salt) == SALT_BYTES else [None]


def _keyed(raw: Any, key: EncryptionKey, salt: bytes | None) -> None:
    """Give `raw` the key: raw for `salt`, else the passphrase. The key's text is in no local
    variable once this returns or raises, so no traceback that records locals can show it."""
    # SQLCipher logs a failed page decryption to stderr; a wrong key is our error to report.
    raw.execute("PRAGMA cipher_log_level = NONE")
    literal = (
        _quoted(key) if salt is None else f"\"x'{_derived_key(key, salt).hex()}{salt.hex()}'\""
    )
    try:
        raw.execute(f"PRAGMA key = {literal}")
    finally:
        del literal


def _open_keyed(
    open_raw: Callable[[], Any], key: EncryptionKey, file: Path, shown: Path | str
) -> Any:
    """A connection from `open_raw`, keyed and its key proven by a read (see `_salts_to_try`);
    EncryptionKeyError when no way of giving the key opens the file."""
    *first, last = _salts_to_try(key, file)
    for salt in first:
        try:
            raw = _keyed_and_proven(open_raw(), key, salt, shown)
        except EncryptionKeyError:
            continue  # the file's salt changed since it was read; SQLCipher derives the key itself
        if store_kind(file) == "encrypted":
            return raw
        raw.close()  # the file went in between: a new one must get a salt of its own, not this
    return _keyed_and_proven(open_raw(), key, last, shown)


def _keyed_and_proven(raw: Any, key: EncryptionKey, salt: bytes | None, shown: Path | str) -> Any:
    """`raw` keyed (see `_keyed`) and the key proven by one read, or closed."""
    try:
        _keyed(raw, key, salt)
        _check_key(raw, shown)
    except BaseException:
        raw.close()
        raise
    return raw


def _file_of(path: Path | str, uri: bool) -> Path:
    """The file a connection string names (a `file:` URI when `uri`)."""
    return Path(unquote(urlsplit(str(path)).path)) if uri else Path(path)


def connect(
    path: Path | str, key: EncryptionKey, *, timeout: float, uri: bool = False
) -> sqlite3.Connection:
    """An open, keyed connection to the encrypted database at `path` (a file URI when `uri`), typed
    as the sqlite3.Connection it behaves as."""
    module = sqlcipher()

    def open_raw() -> Any:
        return module.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=timeout, uri=uri
        )

    try:
        raw = _open_keyed(open_raw, key, _file_of(path, uri), path)
    except EncryptionKeyError:
        raise
    except Exception as error:
        raise _as_sqlite3(error) from None
    return cast(sqlite3.Connection, CipherConnection(raw))


def verify_key(path: Path, key: EncryptionKey | None) -> None:
    """Refuse, before anything is opened, a choice of key that cannot fit the file at `path`.

    Read from the file's first bytes alone: a new store (no file, or an empty one) fits any
    choice; a plain file fits no key; an encrypted one needs a key. Whether the key is the right
    one is checked by `connect`, with its first read."""
    kind = store_kind(path)
    if kind == "plain" and key is not None:
        raise EncryptionKeyError(
            f"{path} is not encrypted, but {KEY_ENV} (or {KEY_FILE_ENV}) is set; nothing was "
            "opened "
            "or "
            "changed. Unset the key to use the store as it is, or encrypt it first with "
            "'memory-agent rekey --encrypt' (see docs/encryption.md)."
        )
    if kind == "encrypted" and key is None and _looks_encrypted(path):
        raise EncryptionKeyError(
            f"{path} is encrypted (or is not a SQLite file at all), and no key is set; nothing was "
            "opened "
            f"or changed. Set {KEY_ENV} or {KEY_FILE_ENV} to the store's key."
        )
    # A file that is not page-sized is damage, which SQLite's own open reports in its usual words.
    if kind == "encrypted" and key is not None and _sidecars(Path(path))[0].exists():
        _probe_immutable(Path(path), key)


def _probe_immutable(path: Path, key: EncryptionKey) -> None:
    """Check the key without touching a live log: SQLite opens an existing -wal whatever the key
    and marks its read in the -shm before page 1 fails to decrypt, so with a -wal beside the file
    the key is first tried on a connection that reads the main file alone (`immutable=1`: no
    locks, no log). Only when a -wal exists; its key derivation is the one the store's connection
    then reuses (`_derived_key`)."""
    uri = f"{path.resolve().as_uri()}?immutable=1"
    try:
        raw = _open_keyed(
            lambda: sqlcipher().connect(uri, uri=True, check_same_thread=False), key, path, path
        )
    except EncryptionKeyError:
        raise
    except Exception as error:
        raise _as_sqlite3(error) from None
    raw.close()


def _check_key(raw: Any, path: Path | str) -> None:
    """Prove the key by one read of the schema, before anything else runs on the connection: a
    wrong key fails to decrypt the first page, and as the header saying 'WAL' cannot be read, no
    -wal or -shm file is created or read; nothing is written."""
    try:
        raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except Exception as error:
        if "not a database" in str(error) or "encrypted" in str(error):
            raw.close()
            raise EncryptionKeyError(
                f"The key set in {KEY_ENV} (or {KEY_FILE_ENV}) does not open {path}: it is the "
                "wrong key, or "
                "the file is damaged. Nothing was opened or changed. Set the key this store was "
                "encrypted "
                "with."
            ) from None
        raise


def _looks_encrypted(path: Path) -> bool:
    """Whether a file that is not plain SQLite looks like SQLCipher's: whole pages (at least 1 KiB)
    whose first page is random bytes throughout. A plain file whose header was overwritten keeps
    SQLite's page of zeros and schema text after the damage, a few dozen distinct byte values
    against about 256 in 4 KiB of ciphertext, and is left to SQLite to report as damaged."""
    size = path.stat().st_size
    if size < 1024 or size % 1024:
        return False
    with open(path, "rb") as handle:
        first = handle.read(4096)[len(SQLITE_MAGIC) :]
    return len(set(first)) >= min(200, len(first) // 8)


def reencrypt(path: Path, old: EncryptionKey | None, new: EncryptionKey | None) -> None:
    """Rewrite the database at `path` under `new` (None: plain), read with `old` (None: plain).

    No other process may use the store meanwhile: the WAL is checkpointed and truncated first,
    and a checkpoint another connection blocks is refused. One connection then holds the write
    lock for the whole operation, while a second copies every row into a new file beside
    memory.db (`sqlcipher_export`), which is synced and renamed over memory.db; the old -wal and
    -shm files are removed, so no frame written under the old key survives beside the new file."""
    if old is None and new is None:
        raise ConfigurationError("Nothing to do: the store is plain and no new key was given.")
    verify_key(path, old)
    if store_kind(path) == "absent":
        raise StorageError(f"No memory-agent database at {path}; there is nothing to re-encrypt.")
    target = path.with_name(f"{path.name}.rekey-tmp")
    for leftover in (target, *_sidecars(target), target.with_name(target.name + "-journal")):
        leftover.unlink(missing_ok=True)
    holder = _raw_connection(path, old, timeout=BUSY_WAIT_S)
    copier = None
    try:
        busy = holder.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy is not None and busy[0]:
            raise StorageError(
                f"{path} is in use by another process (its log could not be emptied); nothing "
                "was changed. Stop every agent and command using this storage dir, then try again."
            )
        holder.execute("BEGIN IMMEDIATE")  # no writer can change the store while it is copied
        private_file(target)
        copier = _raw_connection(path, old)
        target_sql = "'" + str(target).replace("'", "''") + "'"
        literal = "''" if new is None else _quoted(new)
        try:
            copier.execute(f"ATTACH DATABASE {target_sql} AS rekeyed KEY {literal}")
        finally:
            del literal  # kept out of the frame a failure's traceback records (see `_keyed`)
        copier.execute("SELECT sqlcipher_export('rekeyed')")
        version = copier.execute("PRAGMA main.user_version").fetchone()[0]
        copier.execute(f"PRAGMA rekeyed.user_version = {int(version)}")
        copier.execute("DETACH DATABASE rekeyed")
        copier.close()
        copier = None
        fsync_path(target)
        os.replace(target, path)
        fsync_path(path.parent)
        holder.execute("ROLLBACK")
    except Exception as error:
        target.unlink(missing_ok=True)
        if isinstance(error, (StorageError, EncryptionKeyError, ConfigurationError)):
            raise
        translated = _as_sqlite3(error)
        raise StorageError(
            f"Re-encrypting {path} failed ({type(translated).__name__}: {translated}); the "
            "store was left as it was."
        ) from None
    finally:
        if copier is not None:
            copier.close()
        holder.close()
        forget_derived_keys()  # the old key's derivation is of no use any more
    for sidecar in _sidecars(path):
        sidecar.unlink(missing_ok=True)


def forget_derived_keys() -> None:
    """Drop every key this process derived (see `_derived_key`): after a re-encryption, and where
    a process's first open is to be measured again."""
    _derived_key.cache_clear()


def _raw_connection(path: Path, key: EncryptionKey | None, timeout: float = 10.0) -> Any:
    """A bare sqlcipher3 connection (keyed when `key` is given): re-encryption needs its
    `sqlcipher_export`, which the stdlib's SQLite does not have, for plain stores too."""

    def open_raw() -> Any:
        return sqlcipher().connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=timeout
        )

    return open_raw() if key is None else _open_keyed(open_raw, key, path, path)


def _sidecars(path: Path) -> Sequence[Path]:
    return (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
