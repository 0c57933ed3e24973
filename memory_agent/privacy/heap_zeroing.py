"""Heap memory zero-filled when allocated and overwritten when freed, for the whole process.

Why: Chroma's index (hnswlib) allocates its whole capacity with `malloc` when it creates a
collection's index and writes all of it to `data_level0.bin` and `length.bin`, used or not.
`malloc` does not clear what it hands out, so the unused part carried whatever the process had
freed there before: decrypted SQLCipher pages, tokenizer and database-driver buffers, that is
memory's own text. Chroma is never given a passage's text, yet fragments of it reached its files
(seen twice in CI with encryption on; tests/integration/test_encryption.py shows it). glibc's
`M_PERTURB` setting makes every allocation from the heap's free lists start as zeros and fills
memory with a fixed byte when it is freed; memory fresh from the kernel is zero anyway.

What it does not cover: a chunk a thread freed into its own small-chunk cache (tcache, up to about
1 KB) is handed back to that thread as it was. Chroma's files are written by its own worker
threads, which only ever hold ids, vectors and filter metadata, so their cache holds nothing else.
Text freed before this was turned on is not overwritten; it is turned on before a store opens.

Only glibc has the setting. Elsewhere `zero_fill_heap` says so (a warning, once) and changes
nothing. The cost, measured on 2 cores: about 5 % more CPU for archival inserts and searches.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from dataclasses import dataclass

__all__ = ["HeapZeroing", "zero_fill_heap"]

logger = logging.getLogger(__name__)

_M_PERTURB = -6  # glibc's malloc.h
_FREED_BYTE = 0xFF  # glibc fills freed memory with this byte and new memory with its complement

_lock = threading.Lock()
_state: HeapZeroing | None = None


@dataclass(frozen=True)
class HeapZeroing:
    """Whether this process's heap is zero-filled, and if not, why."""

    enabled: bool
    detail: str


def zero_fill_heap() -> HeapZeroing:
    """Turn zero-filling on for this process (once; later calls return the first answer)."""
    global _state
    with _lock:
        if _state is None:
            _state = _turn_on()
            if not _state.enabled:
                logger.warning(
                    "heap memory is not zero-filled (%s): Chroma's index files may hold stale "
                    "bytes of this process's memory in their unused capacity "
                    "(docs/encryption.md)",
                    _state.detail,
                )
        return _state


def _turn_on() -> HeapZeroing:
    name = ctypes.util.find_library("c")
    if name is None:
        return HeapZeroing(False, "no C library found")
    try:
        libc = ctypes.CDLL(name)
        version = libc.gnu_get_libc_version
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return HeapZeroing(False, f"{name} is not glibc")
    version.restype = ctypes.c_char_p
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    glibc = version().decode()
    if mallopt(_M_PERTURB, _FREED_BYTE) != 1:
        return HeapZeroing(False, f"glibc {glibc} refused mallopt(M_PERTURB)")
    return HeapZeroing(True, f"glibc {glibc}, M_PERTURB")
