"""The process heap is zero-filled once a store is opened (privacy/heap_zeroing.py): memory that
held text and was freed comes back as zeros, so no library writes it to disk."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

import pytest

from memory_agent.privacy.heap_zeroing import zero_fill_heap

GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="only glibc can be told to zero-fill its heap")
@pytest.mark.parametrize("size", [2_048, 65_536, 400_000])
def test_freed_memory_comes_back_as_zeros(size: int) -> None:
    state = zero_fill_heap()
    assert state.enabled, state.detail
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    for _ in range(20):
        used = libc.malloc(size)
        ctypes.memset(used, 0xAB, size)
        libc.free(used)
        again = libc.malloc(size)
        try:
            assert ctypes.string_at(again, size).count(0) == size
        finally:
            libc.free(again)


def test_the_answer_is_given_once_and_never_changes() -> None:
    first = zero_fill_heap()
    assert zero_fill_heap() is first
    assert first.detail  # says which allocator, or why not
