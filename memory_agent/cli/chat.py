"""`memory-agent chat`: an interactive main loop on `MemoryAwareAgent.process_turn`.

One SDK session for the whole chat; memory (blocks, messages, summaries) is stored as the
conversation goes, so a later chat, or any other command, sees it. The agent gets its memory tools
and no built-in tools (no shell, no file access): it is a conversation with memory, nothing more.
"""

from __future__ import annotations

import asyncio
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
def chat(system_prompt: str | None, model: str | None) -> None:
    """Chat with the agent; its memory persists. Type /help for the commands.

    Needs ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL for a compatible server.
    """
    settings = load_settings()
    if not (settings.anthropic_api_key or settings.anthropic_base_url):
        raise click.ClickException(
            "chat needs a model: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible "
            "server), in the environment or in .env.")
    # The SDK loads in about a second; only this command needs it.
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKError

    from ..agent import MemoryAwareAgent

    options = ClaudeAgentOptions(system_prompt=system_prompt, model=model, tools=[], env=_model_env(settings))
    with open_memory() as memory:
        try:
            asyncio.run(_main_loop(MemoryAwareAgent(options, memory=memory)))
        except ClaudeSDKError as error:
            raise click.ClickException(one_line(f"The agent stopped: {error}")) from None


def _model_env(settings: Settings) -> dict[str, str]:
    """Credentials read from .env reach the SDK's CLI too (it only inherits the environment)."""
    pairs = (("ANTHROPIC_API_KEY", settings.anthropic_api_key), ("ANTHROPIC_BASE_URL", settings.anthropic_base_url))
    return {name: value for name, value in pairs if value}


async def _main_loop(agent: MemoryAwareAgent) -> None:
    out = console()
    out.print(Text(f"Chatting as agent '{agent.agent_id}'. /help for commands, /quit to leave.", style="dim"))
    async with agent:
        while (line := _read_line()) is not None:
            text = line.strip()
            if text in ("/quit", "/exit"):
                break
            if text == "/help":
                out.print(Text(HELP))
            elif text == "/memory":
                _show_memory(agent.memory, agent.agent_id)
            elif text.startswith("/"):
                out.print(Text(f"Unknown command {text}; /help lists the commands.", style="yellow"))
            elif text:
                _print_turn(await agent.process_turn(text))


def _read_line() -> str | None:
    """The user's next line; None at end of input or Ctrl-C."""
    try:
        return str(click.prompt("you", prompt_suffix="> ", default="", show_default=False))
    except (click.Abort, EOFError):
        return None


def _show_memory(memory: MemoryManager, agent_id: str) -> None:
    for block in memory.list_blocks(agent_id=agent_id):
        print_block(block)


def _print_turn(result: TurnResult) -> None:
    out = console()
    for call in result.tool_calls:
        out.print(Text(f"  (memory: {call.name.rsplit('__', 1)[-1]})", style="dim"))
    out.print(Text.assemble(Text("agent> ", style="bold"), Text(result.text, style="red" if result.is_error else "")))
