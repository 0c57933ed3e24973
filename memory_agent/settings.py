"""Settings: every environment variable memory-agent reads, read once into one typed object.

`Settings.from_env()` merges a `.env` file (if present) under the process environment, so an
exported variable always wins over the file. Nothing is read at import time; the object is built
when a MemoryManager, agent or CLI command starts, and validated before any database is opened.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from compaction import CompactionSettings, CompactionSettingsError

from .errors import ConfigurationError
from .privacy.encryption_key import EncryptionKey, key_from_environ
from .privacy.redaction import MASK, describe_value, redact_env_line, redact_url
from .validation import check_path

__all__ = ["DEFAULT_BLOCK_LIMIT", "DEFAULT_HUMAN", "DEFAULT_PERSONA", "Settings", "read_env_file"]

DEFAULT_BLOCK_LIMIT = 5000
DEFAULT_PERSONA = "I am a helpful assistant with a persistent memory. I keep it accurate and tidy."
DEFAULT_HUMAN = "Nothing is known about the user yet."


@dataclass(frozen=True)
class Settings:
    """Configuration of memory-agent; see `.env.example` for each variable."""

    persist_directory: Path = field(default_factory=lambda: Path.home() / ".memory_agent")
    """Storage dir holding memory.db and the embedded Chroma data (PERSIST_DIRECTORY)."""
    database_url: str | None = field(default=None, repr=False)
    """A PostgreSQL server for agents on many hosts, e.g. postgresql://user:pw@host/db
    (MEMORY_DATABASE_URL); unset keeps SQLite in the storage dir. Never shown by repr."""
    agent_id: str | None = None
    """Agent to open; when unset a generated id is stored and reused (AGENT_ID)."""
    agent_instance_id: str | None = None
    """Prefix for multi-agent sessions such as the Agent College (AGENT_INSTANCE_ID)."""
    model_name: str | None = None
    """Main model for the agent; None keeps the SDK's default (MODEL_NAME)."""
    default_block_limit: int = DEFAULT_BLOCK_LIMIT
    """Character limit of a new block when none is given (DEFAULT_BLOCK_LIMIT)."""
    memory_character_limits: Mapping[str, int] = field(default_factory=dict)
    """Per-label limits, e.g. 'persona=2000,human=3000' (MEMORY_CHARACTER_LIMITS)."""
    memory_shared_blocks: tuple[str, ...] = ()
    """Labels created as shared blocks by default (MEMORY_SHARED_BLOCKS, comma separated)."""
    memory_hybrid_search: bool = True
    """Default archival search mode: hybrid when true, keyword only when false."""
    archival_rerank_model: str | None = None
    """Cheap model that reorders the top hybrid hits (ARCHIVAL_RERANK_MODEL); unset: no rerank."""
    default_persona: str = DEFAULT_PERSONA
    """Initial value of a new agent's persona block (MEMORY_PERSONA)."""
    default_human: str = DEFAULT_HUMAN
    """Initial value of a new agent's human block (MEMORY_HUMAN)."""
    chroma_host: str | None = None
    """Chroma server host; unset means embedded Chroma under the storage dir (CHROMA_HOST)."""
    chroma_port: int = 8000
    """Chroma server port (CHROMA_PORT)."""
    anthropic_api_key: str | None = field(default=None, repr=False)
    """API key for the summariser and the CLI chat (ANTHROPIC_API_KEY); never shown by repr."""
    anthropic_base_url: str | None = None
    """Messages API base URL, e.g. a local scripted server (ANTHROPIC_BASE_URL)."""
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    """Compaction settings (COMPACTION_*)."""
    forget_wait_seconds: float = 5.0
    """How long a forget on PostgreSQL waits for transactions older than it to end before it
    rewrites the tables (MEMORY_FORGET_WAIT_SECONDS): their snapshots keep the forgotten rows'
    bytes in the table files. If they are still open, the forget says so (see
    docs/forget-and-tamper-evidence.md)."""
    encryption_key: EncryptionKey | None = field(default=None, repr=False)
    """Encrypts the SQLite store at rest and keeps text out of the vector store
    (MEMORY_ENCRYPTION_KEY, or MEMORY_ENCRYPTION_KEY_FILE naming a file holding it); see
    docs/encryption.md. Never shown by repr."""

    def __post_init__(self) -> None:
        check_path("PERSIST_DIRECTORY (the storage dir)", self.persist_directory)
        if self.default_block_limit <= 0:
            raise ConfigurationError(
                f"DEFAULT_BLOCK_LIMIT must be a positive number of characters, "
                f"got {self.default_block_limit}."
            )
        for limit in self.memory_character_limits.values():
            if limit <= 0:
                raise ConfigurationError(
                    f"MEMORY_CHARACTER_LIMITS gives a label the limit {limit}; "
                    "limits must be positive."
                )
        if not 0 <= self.forget_wait_seconds <= 3600:
            raise ConfigurationError(
                "MEMORY_FORGET_WAIT_SECONDS must be between 0 and 3600 seconds; the value "
                "given is outside that."
            )
        if not 0 < self.chroma_port < 65536:
            raise ConfigurationError(f"CHROMA_PORT must be a TCP port, got {self.chroma_port}.")

    def __repr__(self) -> str:
        """The dataclass repr, with the API key shown only as set or not and the database URL by its
        shape (see `redaction`): reprs end up in logs."""
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        key = repr(MASK) if self.anthropic_api_key else "None"
        url = repr(redact_url(self.database_url)) if self.database_url else "None"
        encryption = repr(MASK) if self.encryption_key else "None"
        return (
            f"{type(self).__name__}({shown}, database_url={url}, anthropic_api_key={key}, "
            f"encryption_key={encryption})"
        )

    def block_limit_for(self, label: str) -> int:
        """The limit a new block with this label gets when the caller names none."""
        return self.memory_character_limits.get(label, self.default_block_limit)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        env_file: str | Path | None = None,
    ) -> Settings:
        """Build settings from `environ` (default: the process environment) over `env_file`.

        The library reads the environment only: a `.env` file is read when the caller names one
        (the CLI and the examples name `./.env`; a missing file is skipped), so a stray `.env` in
        whatever directory a program runs in cannot change it.
        """
        values: dict[str, str] = {}
        if env_file is not None and Path(env_file).is_file():
            values.update(read_env_file(Path(env_file)))
        values.update(os.environ if environ is None else environ)
        return cls._from_mapping(values)

    @classmethod
    def _from_mapping(cls, env: Mapping[str, str]) -> Settings:
        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        kwargs: dict[str, object] = {
            "database_url": text("MEMORY_DATABASE_URL"),
            "agent_id": text("AGENT_ID"),
            "agent_instance_id": text("AGENT_INSTANCE_ID"),
            "model_name": text("MODEL_NAME"),
            "chroma_host": text("CHROMA_HOST"),
            "archival_rerank_model": text("ARCHIVAL_RERANK_MODEL"),
            "anthropic_api_key": text("ANTHROPIC_API_KEY"),
            "anthropic_base_url": text("ANTHROPIC_BASE_URL"),
            "memory_character_limits": _parse_limits(text("MEMORY_CHARACTER_LIMITS")),
            "memory_shared_blocks": _parse_list(text("MEMORY_SHARED_BLOCKS")),
            "compaction": _compaction_settings(env),
            "encryption_key": key_from_environ(env),
        }
        if (directory := text("PERSIST_DIRECTORY")) is not None:
            kwargs["persist_directory"] = Path(directory).expanduser()
        if (limit := text("DEFAULT_BLOCK_LIMIT")) is not None:
            kwargs["default_block_limit"] = _parse_int("DEFAULT_BLOCK_LIMIT", limit)
        if (port := text("CHROMA_PORT")) is not None:
            kwargs["chroma_port"] = _parse_int("CHROMA_PORT", port)
        if (wait := text("MEMORY_FORGET_WAIT_SECONDS")) is not None:
            kwargs["forget_wait_seconds"] = _parse_float("MEMORY_FORGET_WAIT_SECONDS", wait)
        if (hybrid := text("MEMORY_HYBRID_SEARCH")) is not None:
            kwargs["memory_hybrid_search"] = _parse_bool("MEMORY_HYBRID_SEARCH", hybrid)
        if (persona := text("MEMORY_PERSONA")) is not None:
            kwargs["default_persona"] = persona
        if (human := text("MEMORY_HUMAN")) is not None:
            kwargs["default_human"] = human
        return cls(**kwargs)  # type: ignore[arg-type]  # each value was parsed for its field's type


def _compaction_settings(env: Mapping[str, str]) -> CompactionSettings:
    """COMPACTION_* settings; their errors become ConfigurationErrors like every other setting's
    (the compaction package does not know this project's error hierarchy)."""
    try:
        return CompactionSettings.from_env(env)
    except (
        CompactionSettingsError
    ) as error:  # its text echoes the value: say it by its shape instead
        source = error.variable or f"CompactionSettings.{error.field}"
        raise ConfigurationError(
            f"{source} cannot be {describe_value(error.value)}: it must be {error.allowed}."
        ) from None


def read_env_file(path: Path) -> dict[str, str]:
    """Parse KEY=VALUE lines of a .env file; '#' comments and blank lines are skipped. A bad line is
    named by its number and shape, never echoed (it may be a secret pasted without its key)."""
    values: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :]
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError(
                f"{path}:{number}: expected KEY=VALUE, got {redact_env_line(raw)}; nothing was "
                "read. Put the variable's name and '=' in front of its value."
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def _parse_int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(
            f"{name} must be a whole number, got {describe_value(value)} that is not one."
        ) from None


def _parse_float(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ConfigurationError(
            f"{name} must be a number of seconds, got {describe_value(value)} that is not one."
        )
    return number


def _parse_bool(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigurationError(
        f"{name} must be true or false (or 1/0, yes/no, on/off), got {describe_value(value)}."
    )


def _parse_list(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _parse_limits(value: str | None) -> dict[str, int]:
    """'persona=2000,human=3000' -> {'persona': 2000, 'human': 3000}."""
    limits: dict[str, int] = {}
    for item in _parse_list(value):
        label, sep, number = item.partition("=")
        if not sep:
            raise ConfigurationError(
                "MEMORY_CHARACTER_LIMITS entries look like label=limit, got "
                f"{describe_value(item)} "
                "without '='."
            )
        limits[label.strip()] = _parse_int(
            f"MEMORY_CHARACTER_LIMITS entry {len(limits) + 1}", number
        )
    return limits
