"""Serving the inspector: bind first (so `--port 0` can pick a free port and the Host check knows
it), print the one line that says where, then run uvicorn on the bound socket."""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn
from starlette.applications import Starlette

from .security import split_host_port

__all__ = ["bind", "serve", "serve_line", "url_host"]


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


def serve(
    app: Starlette, sock: socket.socket, *, on_started: Callable[[], None] | None = None
) -> None:
    """Run the app on the bound socket until interrupted (Ctrl-C ends it cleanly)."""
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", server_header=False
    )
    server = uvicorn.Server(config)
    if on_started is not None:
        on_started()
    server.run(sockets=[sock])
