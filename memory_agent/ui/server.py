"""Serving the inspector: bind first (so `--port 0` can pick a free port and the Host check knows
it), run uvicorn on the bound socket, and print the one line that says where once it serves."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette

from .security import split_host_port

__all__ = ["bind", "ctrl_c_noted", "serve", "serve_line", "url_host"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one the system picks)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def url_host(host: str, port: int) -> str:
    """`host:port` as a URL and a Host header write it (IPv6 in brackets)."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def serve_line(bound_host: str, token: str | None) -> str:
    """The line `memory-agent ui` prints: where to open the inspector (with its token when one is
    needed)."""
    split_host_port(bound_host)
    suffix = f"?token={token}" if token else ""
    return f"memory-agent ui: serving http://{bound_host}/{suffix}"


@contextmanager
def ctrl_c_noted() -> Iterator[threading.Event]:
    """While open, Ctrl-C only sets the event it yields; the previous handler comes back after.

    Why: Python's default handler raises KeyboardInterrupt wherever the main thread is, and one
    raised inside a garbage collector's callback is printed and dropped, so a Ctrl-C while the
    inspector started could be lost and it served on. uvicorn installs its own flag-setting
    handler while it runs; this one covers the time before and after."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop  # only the main thread receives signals
        return
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


class _AnnouncingServer(uvicorn.Server):
    """A uvicorn server that calls `on_started` once it serves, unless a Ctrl-C came first.

    By then uvicorn's own Ctrl-C handler is in place, which only sets a flag."""

    def __init__(
        self, config: uvicorn.Config, on_started: Callable[[], None] | None, stop: threading.Event
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._stop = stop

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self._stop.is_set():  # a Ctrl-C before uvicorn's handler was in place
            self.should_exit = True
        if self.started and not self.should_exit and self._on_started is not None:
            self._on_started()


def serve(
    app: Starlette,
    sock: socket.socket,
    *,
    on_started: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Run the app on the bound socket until interrupted (Ctrl-C ends it cleanly); `on_started`
    runs once it serves. `stop` is set by a Ctrl-C noted before (`ctrl_c_noted`): then it serves
    nothing."""
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", server_header=False
    )
    _AnnouncingServer(config, on_started, stop or threading.Event()).run(sockets=[sock])
