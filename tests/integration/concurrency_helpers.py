"""Running a test's workers as threads, each with its own name, and seeing their failures."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

__all__ = ["run_in_threads"]


def run_in_threads(work: Callable[[str], None], names: Sequence[str], timeout: float = 120) -> None:
    """Run `work(name)` in one thread per name, all at once; re-raise the first failure (an
    assertion in a thread would otherwise only be printed, and the test pass)."""
    failures: list[BaseException] = []

    def guarded(name: str) -> None:
        try:
            work(name)
        except BaseException as error:  # noqa: BLE001 - re-raised in the calling thread below
            failures.append(error)

    threads = [threading.Thread(target=guarded, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), (
        f"workers still running after {timeout} s"
    )
    if failures:
        raise failures[0]
