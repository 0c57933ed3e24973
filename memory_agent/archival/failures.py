"""A vector-side failure in words that name the next step.

Vector failures never fail a write (the passage stays pending and keyword search finds it), so
they surface as warnings and report lines; what the reader needs from those is what to do. A
vector store whose own database is damaged fails deep inside Chroma's Rust bindings with texts
such as "'RustBindingsAPI' object has no attribute 'bindings'", which say nothing to a person:
those are recognised here and answered with the repair that helps.
"""

from __future__ import annotations

__all__ = ["is_damaged_store", "vector_failure_text"]

_DAMAGE_SIGNS = (
    "not a database",
    "malformed",
    "disk image",
    "RustBindingsAPI",
    "has no attribute 'bindings'",
    "file is encrypted",
    "(code: 26)",
    "(code: 11)",
)
_DETAIL_LIMIT = 200


def is_damaged_store(error: BaseException) -> bool:
    """Whether the failure says the vector store's own files are damaged (not merely
    unreachable)."""
    text = f"{type(error).__name__}: {error}"
    return any(sign in text for sign in _DAMAGE_SIGNS)


def vector_failure_text(error: BaseException) -> str:
    """One line: what failed on the vector side, then what to do about it."""
    if is_damaged_store(error):
        return (
            "the vector store is damaged or is not a Chroma store (its chroma.sqlite3 cannot be "
            "read); run "
            "'memory-agent doctor --repair' to move it aside and re-embed every passage from "
            "memory.db"
        )
    lines = str(error).strip().splitlines()
    detail = (lines[0] if lines else "")[:_DETAIL_LIMIT]
    return (
        f"{type(error).__name__}: {detail}; 'memory-agent doctor' retries (it names the cause if "
        "the "
        "failure persists)"
    )
