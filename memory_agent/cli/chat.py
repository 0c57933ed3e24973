"""`memory-agent chat`: an interactive main loop on `MemoryAwareAgent.process_turn`.

One SDK session for the whole chat; memory (blocks, messages, summaries) is stored as the
conversation goes, so a later chat, or any other command, sees it. The agent gets its memory tools
and no built-in tools (no shell, no file access): it is a conversation with memory, nothing more.
The first chat creates the storage dir and the agent (as `init` would) and says so; with
`--offline-demo` the model is the bundled scripted one (see `offline_demo`), so no key is needed.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click
from rich.text import Text

from ..manager import MemoryManager
from ..settings import Settings
from .app import load_settings, one_line, open_memory, shared_options
from .output import console, print_block

if TYPE_CHECKING:
    from ..agent import MemoryAwareAgent, TurnResult

__all__ = ["chat"]

HELP = """Commands:
  /memory  show the agent's memory blocks
  /help    show this help
  /quit    leave (so do /exit and Ctrl-D)
Anything else is sent to the agent."""


@click.command()
@shared_options
@click.option("--system-prompt", help="Your own system prompt; the memory is appended to it.")
@click.option("--model", help="Model for the agent (default: MODEL_NAME, else the SDK's default).")
@click.option(
    "--offline-demo",
    is_flag=True,
    help="No key needed: a scripted local model shows the memory tools at work "
    "(agent 'offline-demo' unless --agent is given).",
)
def chat(system_prompt: str | None, model: str | None, offline_demo: bool) -> None:
    """Chat with the agent; its memory persists. Type /help for the commands.

    Needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible server), except with
    --offline-demo. The first chat creates the storage dir and the agent.
    """
    settings = load_settings()
    if not offline_demo and not (settings.anthropic_api_key or settings.anthropic_base_url):
        raise click.ClickException(
            "chat needs a model: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible "
            "server), in the environment or in .env; or try 'memory-agent chat --offline-demo'."
        )
    # The SDK loads in about a second; only this command needs it.
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKError

    from ..agent import MemoryAwareAgent

    with (
        _open_or_create(settings, offline_demo) as memory,
        _model_env(settings, memory, offline_demo) as env,
    ):
        options = ClaudeAgentOptions(system_prompt=system_prompt, model=model, tools=[], env=env)
        try:
            asyncio.run(_main_loop(MemoryAwareAgent(options, memory=memory)))
        except ClaudeSDKError as error:
            raise click.ClickException(one_line(f"The agent stopped: {error}")) from None


@contextmanager
def _open_or_create(settings: Settings, offline_demo: bool) -> Iterator[MemoryManager]:
    """The chosen agent, created with its storage dir on first use (as `init` would). The offline
    demo uses its own agent unless --agent names one, and never makes it the storage dir's
    default, so its memories never mix with yours."""
    fallback = None
    if offline_demo:
        from .offline_demo import DEMO_AGENT_ID

        fallback = DEMO_AGENT_ID
    with open_memory(create=True, agent_id=fallback, make_default=not offline_demo) as memory:
        yield memory


@contextmanager
def _model_env(
    settings: Settings, memory: MemoryManager, offline_demo: bool
) -> Iterator[dict[str, str]]:
    """Where the agent's CLI finds its model: the scripted demo model, or the configured API
    (credentials read from .env reach the SDK's CLI too: it only inherits the environment)."""
    if offline_demo:
        from .offline_demo import scripted_model

        with scripted_model(memory) as env:
            yield env
        return
    pairs = (
        ("ANTHROPIC_API_KEY", settings.anthropic_api_key),
        ("ANTHROPIC_BASE_URL", settings.anthropic_base_url),
    )
    yield {name: value for name, value in pairs if value}


async def _main_loop(agent: MemoryAwareAgent) -> None:
    out = console()
    out.print(
        Text(
            f"Chatting as agent '{agent.agent_id}'. /help for commands, /quit to leave.",
            style="dim",
        )
    )
    # The CLI process starts with the first message, not before the first prompt: the prompt
    # comes a CLI start (about half a second) sooner, and a chat that only reads /memory or
    # /help, or is left at once, never starts one.
    connected = False
    try:
        while (line := _read_line()) is not None:
            text = line.strip()
            if text in ("/quit", "/exit"):
                break
            if text == "/help":
                out.print(Text(HELP))
            elif text == "/memory":
                _show_memory(agent.memory, agent.agent_id)
            elif text.startswith("/"):
                out.print(
                    Text(f"Unknown command {text}; /help lists the commands.", style="yellow")
                )
            elif text:
                if not connected:
                    await agent.connect()
                    connected = True
                _print_turn(await agent.process_turn(text))
    finally:
        await agent.__aexit__(None, None, None)


def _read_line() -> str | None:
    """The user's next line; None at end of input (Ctrl-D) or Ctrl-C, after ending the prompt's
    line so that the shell's prompt starts on a line of its own.

    asyncio.run replaces the SIGINT handler with one that only cancels the main task, which a
    blocking read never notices; while waiting for the line, Ctrl-C raises KeyboardInterrupt again.
    """
    with _interruptible():
        try:
            descriptor = _stdin_descriptor()
            if (
                descriptor is None
            ):  # not a real file (a test runner's stream): no signal can be missed
                return str(click.prompt("you", prompt_suffix="> ", default="", show_default=False))
            click.echo("you> ", nl=False)
            _wait_for_input(descriptor)
            return str(click.prompt("", prompt_suffix="", default="", show_default=False))
        except (click.Abort, EOFError, KeyboardInterrupt):
            click.echo()
            return None


@contextmanager
def _interruptible() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stdin_descriptor() -> int | None:
    try:
        return sys.stdin.fileno()
    except (
        AttributeError,
        OSError,
        ValueError,
    ):  # io.UnsupportedOperation is an OSError and a ValueError
        return None


def _wait_for_input(descriptor: int) -> None:
    """Wait until the line (or end of input) can be read, or Ctrl-C. A signal may be delivered to
    any thread of the process (the SDK's and anyio's threads too), and then a read in this thread
    is never interrupted; the wakeup descriptor ends the wait whichever thread received it, and
    the SIGINT handler then runs here, raising KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        return
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    previous = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    try:
        poller = select.poll()
        poller.register(descriptor, select.POLLIN | select.POLLHUP)
        poller.register(wake_read, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if wake_read in ready:
                os.read(
                    wake_read, 64
                )  # a signal arrived; its handler runs before the next line here
            if descriptor in ready:
                return
    finally:
        signal.set_wakeup_fd(previous)
        os.close(wake_read)
        os.close(wake_write)


def _show_memory(memory: MemoryManager, agent_id: str) -> None:
    for block in memory.list_blocks(agent_id=agent_id):
        print_block(block)


def _print_turn(result: TurnResult) -> None:
    out = console()
    for call in result.tool_calls:
        out.print(Text(f"  (memory: {call.name.rsplit('__', 1)[-1]})", style="dim"))
    out.print(
        Text.assemble(
            Text("agent> ", style="bold"), Text(result.text, style="red" if result.is_error else "")
        )
    )
