"""`memory-agent ui`: the memory inspector, a local web page over the storage dir.

It prints exactly one line saying where it serves (with the access token when one is needed),
opens the browser unless --no-browser, and serves until Ctrl-C. Like chat, the first use creates
the storage dir and its default agent.
"""

from __future__ import annotations

import sys
import threading
import webbrowser
from pathlib import Path

import click

from ..authors import Author
from ..errors import ConfigurationError
from ..maintenance import admin
from ..privacy.sensitivity import DEFAULT_CLEARANCE
from ..settings import Settings
from .app import load_settings, shared_options, state

__all__ = ["ui"]


@click.command()
@shared_options
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback needs the access token printed at start.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: pick a free one).",
)
@click.option("--read-only", is_flag=True, help="Show memory only: no forms, every write refused.")
@click.option("--no-browser", is_flag=True, help="Print the address without opening a browser.")
@click.option(
    "--token",
    metavar="TOKEN",
    default=None,
    help="Access token to require (default: none on loopback, a new random one elsewhere).",
)
def ui(host: str, port: int, read_only: bool, no_browser: bool, token: str | None) -> None:
    """Open the memory inspector: see, search, correct and roll back memory in a browser."""
    from ..ui.server import ctrl_c_noted

    with ctrl_c_noted() as stop:  # from here, a Ctrl-C is never lost (see ctrl_c_noted)
        _serve_inspector(host, port, read_only, no_browser, token, stop)


def _serve_inspector(
    host: str,
    port: int,
    read_only: bool,
    no_browser: bool,
    token: str | None,
    stop: threading.Event,
) -> None:
    """What `ui` does; `stop` is set by a Ctrl-C meanwhile."""
    from ..ui.app import create_app
    from ..ui.security import GuardPolicy, is_loopback, new_token
    from ..ui.server import bind, serve, serve_line, url_host

    settings = load_settings()
    chosen = state()
    if token is None and not is_loopback(host):
        token = new_token()
    GuardPolicy.make(
        url_host(host, port), token, read_only
    )  # a refused token or host, before anything is made
    try:
        sock = bind(host, port)
    except OSError as error:
        raise ConfigurationError(
            f"Cannot listen on {host}:{port} ({error.strerror or error}); choose another "
            "--port (0 picks a free one) or --host."
        ) from None
    try:
        directory = admin.storage_path(chosen.storage_dir, settings)
        agent_id = _existing_agent(directory, chosen.agent_id or settings.agent_id, settings)
        if agent_id is None:  # a new store: created on first use, like chat
            agent_id = admin.init_storage(directory, chosen.agent_id, settings=settings)[0].agent_id
        bound = url_host(host, sock.getsockname()[1])
        app = create_app(
            lambda: admin.open_agent(directory, agent_id, settings=settings),
            read_only=read_only,
            access_token=token,
            bound_host=bound,
            user=chosen.author or Author.person(),
            clearance=chosen.clearance or DEFAULT_CLEARANCE,
        )
    except BaseException:
        sock.close()
        raise
    line = serve_line(bound, token)
    url = line.split("serving ", 1)[1]

    def announce() -> None:
        click.echo(line)
        sys.stdout.flush()
        if not no_browser:  # in a thread: a browser named in $BROWSER is waited for until it exits
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    try:  # Ctrl-C is how it is meant to stop: noted (`stop`), it ends serve quietly, exit 0
        serve(app, sock, on_started=announce, stop=stop)
    finally:
        sock.close()


def _existing_agent(directory: Path, wanted: str | None, settings: Settings) -> str | None:
    """An agent the store already has (the one named, else its default, else any): the inspector
    shows every agent, so it never makes a new one in a store that has some."""
    if not (directory / "memory.db").exists() and not settings.database_url:
        return None
    with admin.open_database(
        directory,
        create=True,
        database_url=settings.database_url,
        encryption_key=settings.encryption_key,
    ) as db:
        agents = [info.agent_id for info in admin.list_agent_info(db)]
        if wanted is not None:
            return wanted if wanted in agents else None
        return admin.default_agent_id(db) or (agents[0] if agents else None)
