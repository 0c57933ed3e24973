"""Running a tool for the model: find the spec, validate the arguments, call the manager.

Every failure comes back as an error outcome, never raised, because an exception here would end
the model's turn instead of informing it. `aexecute_tool` is the same call for async code: it
runs in a worker thread, since a tool may embed text or load the embedding model (seconds), and
the event loop it would block may serve other agents of the same process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from anyio.to_thread import run_sync

from ..authors import Author
from ..errors import MemoryAgentError, preview
from ..manager import ToolOutcome, register_tool_host
from ..privacy.sensitivity import clearance_of, with_clearance
from ..validation import check_text
from .archival import ARCHIVAL_TOOLS
from .core import CORE_MEMORY_TOOLS
from .memory_tool import MEMORY_TOOL
from .spec import ToolSpec, validate_arguments

if TYPE_CHECKING:
    from ..manager import MemoryManager

__all__ = [
    "ALL_TOOLS",
    "ToolOutcome",
    "aexecute_tool",
    "execute_tool",
    "find_tool",
    "get_tools_definitions",
]

logger = logging.getLogger(__name__)

ALL_TOOLS: tuple[ToolSpec, ...] = CORE_MEMORY_TOOLS + (MEMORY_TOOL,) + ARCHIVAL_TOOLS
"""Every model-facing memory tool: Letta's block tools, Anthropic's `memory` tool (the `/memories`
command set over the same blocks) and the archival tools."""


def get_tools_definitions(specs: tuple[ToolSpec, ...] = ALL_TOOLS) -> list[dict[str, Any]]:
    """Anthropic tool schemas for every model-facing memory operation."""
    return [spec.definition() for spec in specs]


def find_tool(name: str, specs: tuple[ToolSpec, ...] = ALL_TOOLS) -> ToolSpec | None:
    return next((spec for spec in specs if spec.name == name), None)


def execute_tool(
    memory: MemoryManager,
    name: str,
    arguments: Mapping[str, Any],
    *,
    agent_id: str | None = None,
    allow_secret: bool = False,
) -> ToolOutcome:
    """Run the memory tool `name` for the model on `agent_id` (the manager's agent by default).

    What it writes is journalled as that agent's model's (`Author.model(agent_id)`); what it reads
    is what that agent is allowed (`allow_secret`: its secret blocks and passages too; by default
    the model sees public and private ones only, `memory_agent.privacy.sensitivity`)."""
    try:
        check_text("tool name", name)
        spec = find_tool(name)
        if spec is None:
            known = ", ".join(s.name for s in ALL_TOOLS)
            return ToolOutcome(
                f"Unknown memory tool '{preview(name, 64)}'. Known tools: {known}.", is_error=True
            )
        clean = validate_arguments(spec, arguments)
        target = check_text("agent_id", agent_id, optional=True) or memory.agent_id
        with memory.acting_as(Author.model(target)), with_clearance(clearance_of(allow_secret)):
            return ToolOutcome(spec.run(memory, clean, target))
    except MemoryAgentError as error:
        return ToolOutcome(f"Error: {error}", is_error=True)
    except Exception as error:  # a defect of ours: the model still gets an answer, we get the log
        logger.exception("memory tool %r failed unexpectedly", name)
        return ToolOutcome(
            f"Error: the memory tool failed unexpectedly ({type(error).__name__}); "
            "nothing was changed. Try again, or use another tool.",
            is_error=True,
        )


async def aexecute_tool(
    memory: MemoryManager,
    name: str,
    arguments: Mapping[str, Any],
    *,
    agent_id: str | None = None,
    allow_secret: bool = False,
) -> ToolOutcome:
    """`execute_tool` off the event loop (in a worker thread), for async handlers."""
    return await run_sync(
        partial(execute_tool, memory, name, arguments, agent_id=agent_id, allow_secret=allow_secret)
    )


class _ManagerTools:
    """The `ToolHost` behind `MemoryManager.execute_tool` / `get_tools_definitions`."""

    def definitions(self) -> list[dict[str, Any]]:
        return get_tools_definitions()

    def execute(
        self,
        memory: MemoryManager,
        name: str,
        arguments: Mapping[str, Any],
        *,
        agent_id: str | None,
    ) -> ToolOutcome:
        return execute_tool(memory, name, arguments, agent_id=agent_id)


register_tool_host(_ManagerTools())
