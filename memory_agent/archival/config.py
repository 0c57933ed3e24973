"""Where archival vectors live: an embedded Chroma directory, or a Chroma server.

Built from `Settings` (CHROMA_HOST, CHROMA_PORT, PERSIST_DIRECTORY) by the manager; nothing here
imports chromadb, so configuring archival memory costs nothing until it is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["VectorConfig", "collection_prefix_for"]

_COLLECTION_PREFIX = "archival_"
_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


@dataclass(frozen=True)
class VectorConfig:
    """Chroma connection settings for archival memory."""

    path: Path
    """Embedded Chroma directory (used when `host` is None), normally <storage_dir>/chroma."""
    host: str | None = None
    """Chroma server host; when set, `chromadb.HttpClient` is used instead of the embedded store."""
    port: int = 8000
    """Chroma server port."""
    collection_prefix: str | None = None
    """Prefix of the per-agent collection names; None derives it from the embedding function's
    name, so that switching models starts fresh collections instead of mixing vector spaces."""

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise ConfigurationError(f"The Chroma port must be a TCP port, got {self.port}.")

    @classmethod
    def from_settings(cls, settings: Settings, storage_dir: Path | None = None) -> VectorConfig:
        """The config a MemoryManager with these settings (and this storage dir) uses."""
        base = Path(storage_dir) if storage_dir is not None else settings.persist_directory
        return cls(path=base / "chroma", host=settings.chroma_host, port=settings.chroma_port)

    @property
    def location(self) -> str:
        """Human-readable place of the vectors, for logs and reports."""
        return f"http://{self.host}:{self.port}" if self.host else str(self.path)


def collection_prefix_for(embedding_function: Any) -> str:
    """A collection-name prefix (safe characters, at most 63) naming the embedding function."""
    name = _embedding_name(embedding_function)
    slug = _UNSAFE.sub("_", name).strip("._-") or "custom"
    return (_COLLECTION_PREFIX + slug)[:63].rstrip("._-")


def _embedding_name(embedding_function: Any) -> str:
    namer = getattr(embedding_function, "name", None)
    if callable(namer):
        try:
            name = namer()
        except Exception:  # a legacy embedding function may not implement name()
            name = None
        if isinstance(name, str) and name:
            return name
    return type(embedding_function).__name__
