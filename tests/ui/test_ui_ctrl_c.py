"""A Ctrl-C while the inspector starts is noted, never raised where it could be lost, and stops it
before it serves (the timing-dependent case, a real process, is in test_ui_cli.py)."""

from __future__ import annotations

import os
import signal

import pytest
from starlette.applications import Starlette

from memory_agent.ui.server import bind, ctrl_c_noted, serve


def test_a_ctrl_c_inside_is_only_noted_and_the_previous_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    with ctrl_c_noted() as stop:
        os.kill(os.getpid(), signal.SIGINT)  # handled on the main thread's next bytecode
        assert stop.wait(timeout=5)
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt), ctrl_c_noted():
        raise KeyboardInterrupt  # the context does not swallow what the code inside raises


def test_a_ctrl_c_noted_before_serving_serves_nothing_and_announces_nothing() -> None:
    announced: list[bool] = []
    sock = bind("127.0.0.1", 0)
    try:
        with ctrl_c_noted() as stop:
            os.kill(os.getpid(), signal.SIGINT)
            assert stop.wait(timeout=5)
            serve(Starlette(), sock, on_started=lambda: announced.append(True), stop=stop)
    finally:
        sock.close()
    assert announced == []  # returned without announcing, and without waiting for another Ctrl-C
