"""Export and import of whole agents, to and from files, in either format.

`export_memory` takes the agents' snapshot from the manager (`MemoryManager.snapshot`, one
consistent read, cut to the exporter's clearance) and renders it as the project's JSON or as a
Letta `.af`; `write_export` writes that file atomically (a temporary file renamed
into place), so an interrupted export never leaves a half-written file. `import_file` reads a
file of either format (the format is recognised from its content; `.af` files stored as a JSON
string holding the JSON document are accepted too) and hands its snapshot to
`admin.restore_into`, which writes everything in one transaction (the first imported agent
becomes the storage dir's default if it has none), then the passages' vectors (a failure there
leaves them pending for `reconcile`, never undoes the import). An import needs no MemoryManager:
it creates agents, it does not act as one. Nothing here reads or writes a table.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal

from ..authors import Author
from ..errors import ConfigurationError, ImportFormatError
from ..maintenance.admin import restore_into
from ..manager import MemoryManager
from ..privacy.encryption_key import EncryptionKey
from ..settings import Settings
from ..snapshots import ImportReport, Snapshot
from ..validation import MAX_JSON_DEPTH, check_json, check_path
from .letta_af import is_letta_document, parse_letta
from .letta_export import to_letta
from .project_json import is_project_document, parse_project, to_project
from .sealed import is_sealed, seal, unseal

__all__ = [
    "MAX_IMPORT_BYTES",
    "ExportFormat",
    "decode_document",
    "export_memory",
    "import_file",
    "import_snapshot",
    "load_document",
    "parse_document",
    "write_export",
]

MAX_IMPORT_BYTES = 256 * 2**20
"""The largest file `import` reads (256 MiB): parsing JSON takes several times its size in
memory."""

ExportFormat = Literal["json", "af"]
FORMATS: tuple[str, ...] = ("json", "af")


def export_memory(
    memory: MemoryManager,
    *,
    agent_ids: Sequence[str] | None = None,
    format: ExportFormat = "json",
    allow_secret: bool | None = None,
    max_sensitivity: str | None = None,
) -> dict[str, Any]:
    """The agents' memory (default: the manager's agent) as a document of the given format.

    The manager's agent comes first: an import makes the first agent the default of a storage
    dir that has none, so the default survives a round trip. Secret blocks and passages (and their
    copies: versions, journal entries) are left out unless `allow_secret=True`;
    `max_sensitivity='public'` exports only what may be shared (`snapshots.clearance`).
    """
    if format not in FORMATS:
        raise ConfigurationError(
            f"Unknown export format '{format}'; use one of: {', '.join(FORMATS)}."
        )
    wanted = list(dict.fromkeys(agent_ids or [memory.agent_id]))
    if memory.agent_id in wanted:  # first, so that it is the default again after an import
        wanted.remove(memory.agent_id)
        wanted.insert(0, memory.agent_id)
    snapshot = memory.snapshot(wanted, allow_secret=allow_secret, max_sensitivity=max_sensitivity)
    return (
        to_project(snapshot)
        if format == "json"
        else to_letta(snapshot, model=memory.settings.model_name)
    )


def write_export(
    document: dict[str, Any], path: str | Path, *, encrypt_with: EncryptionKey | None = None
) -> Path:
    """Write the document as JSON to `path` atomically; returns the path written. With
    `encrypt_with` the file is sealed under that key (see `portability.sealed`)."""
    target = Path(path).expanduser()
    data = (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    if encrypt_with is not None:
        data = seal(data, encrypt_with)
    temporary: str | None = None
    try:
        handle, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except OSError as error:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        raise ConfigurationError(
            f"Cannot write the export to {target}: {error.strerror or error}."
        ) from error
    return target


def load_document(path: str | Path, key: EncryptionKey | None = None) -> Any:
    """The JSON document in a file; an unreadable or non-JSON file is an ImportFormatError, an
    encrypted export is opened with `key` (no key or the wrong one: an EncryptionKeyError).

    Only a regular file of at most `MAX_IMPORT_BYTES` is read: a device (/dev/zero) would be read
    until memory runs out, and a FIFO with no writer would block forever. The file is opened
    without blocking and checked through its descriptor, so a name swapped between a check and
    the open cannot slip past."""
    source = check_path("The file to import", Path(path).expanduser())
    try:
        descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise ImportFormatError(f"Cannot read {source}: {error.strerror or error}.") from error
    found = os.fstat(descriptor)
    if not stat.S_ISREG(found.st_mode):
        os.close(descriptor)
        raise ImportFormatError(
            f"{source} is not a regular file (a directory, a device, a FIFO or a socket); "
            "nothing was imported. Import an export file written by memory-agent or Letta."
        )
    with os.fdopen(descriptor, "rb") as stream:
        data = b"" if found.st_size > MAX_IMPORT_BYTES else _read_bounded(stream, found.st_size)
    if found.st_size > MAX_IMPORT_BYTES or len(data) > MAX_IMPORT_BYTES:
        raise ImportFormatError(
            f"{source} is larger than {MAX_IMPORT_BYTES // 2**20} MiB, the most an import reads; "
            "nothing was imported. Split the export (export agents one by one)."
        )
    if is_sealed(data):
        data = unseal(data, key, str(source))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ImportFormatError(
            f"Cannot read {source}: it is not UTF-8 text ({error.reason} at byte {error.start})."
        ) from error
    return decode_document(text, str(source))


def _read_bounded(stream: BinaryIO, expected: int) -> bytes:
    """The file's bytes, at most MAX_IMPORT_BYTES + 1 of them (one more tells it is too large).

    Why not `stream.read(MAX_IMPORT_BYTES + 1)`: Python allocates a buffer of the size asked for,
    and with the heap zero-filled (privacy/heap_zeroing.py) glibc writes all 256 MiB of it, about
    0.2 s of CPU per import. The size `fstat` gave is read at once; a file that grew since is read
    on in steps of at most 1 MiB, up to the limit."""
    parts = [stream.read(expected + 1)]
    size = len(parts[0])
    while size > expected and size <= MAX_IMPORT_BYTES:
        part = stream.read(min(2**20, MAX_IMPORT_BYTES + 1 - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def decode_document(text: str, name: str = "the document") -> Any:
    """Parse JSON, and once more if it is a JSON string holding JSON (double-encoded `.af`)."""
    try:
        document = json.loads(text)
        if isinstance(document, str):
            document = json.loads(document)
    except ValueError as error:
        raise ImportFormatError(f"{name} is not valid JSON: {error}.") from None
    except RecursionError:
        raise ImportFormatError(
            f"{name} is nested too deeply to read (over {MAX_JSON_DEPTH} levels is refused)."
        ) from None
    return document


def parse_document(document: Any, *, default_limit: int) -> Snapshot:
    """The snapshot in a document of either format (recognised from its content).

    The whole document is checked first (valid text, whole numbers SQLite holds, bounded
    nesting), so neither parser meets a value the database would refuse.
    """
    try:
        check_json("the file", document)
    except ConfigurationError as error:
        raise ImportFormatError(str(error)) from None
    if is_project_document(document):
        return parse_project(document)
    if is_letta_document(document):
        return parse_letta(document, default_limit=default_limit)
    raise ImportFormatError(
        "Not an export this memory-agent reads: expected a memory-agent JSON export "
        '(with "format": "memory-agent") or a Letta agent file (with an "agents" list).'
    )


def import_snapshot(
    snapshot: Snapshot,
    storage_dir: str | Path | None = None,
    *,
    agent_id: str | None = None,
    settings: Settings | None = None,
    embedding_function: Any = None,
    author: Author | None = None,
) -> ImportReport:
    """Write a snapshot into a storage dir (created if needed) as new agents; see the module doc.

    `embedding_function` is the one the storage dir's agents use (default: offline MiniLM).
    What the file does not attribute is journalled as `author` (`Author.importer("snapshot")`).
    """
    return restore_into(
        snapshot,
        storage_dir,
        settings=settings,
        agent_id=agent_id,
        embedding_function=embedding_function,
        author=author,
    )


def import_file(
    path: str | Path,
    storage_dir: str | Path | None = None,
    *,
    agent_id: str | None = None,
    settings: Settings | None = None,
    embedding_function: Any = None,
) -> ImportReport:
    """Import a memory-agent JSON export or a Letta `.af` file into a storage dir (journalled as
    `Author.importer(<file name>)` where the file names no author)."""
    settings = settings or Settings.from_env()
    snapshot = parse_document(
        load_document(path, settings.encryption_key), default_limit=settings.default_block_limit
    )
    return import_snapshot(
        snapshot,
        storage_dir,
        agent_id=agent_id,
        settings=settings,
        embedding_function=embedding_function,
        author=Author.importer(Path(path).name),
    )
