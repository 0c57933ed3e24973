"""The Agent College: a Critic, a Professor and a Scribe that coordinate through one shared block.

Why a session object: the three agents of one college must agree on who they are and which block
they share, whether they run in one process or in several. A college is named by an *instance
id*; its agents are `{instance}_critic`, `{instance}_professor` and `{instance}_scribe`, and they
share one block labelled `agent_college_shared_state`. Opening the same instance again (another
process, a restart) finds the same agents and the same block, so any process can open it.

Invariants:
- setting a college up is one write transaction: concurrent openers of the same instance end up
  with one shared block, never one each;
- the shared block belongs to its instance (found through the instance's agents), so several
  colleges can live in one storage dir without seeing each other's state;
- a role may hold the block read-only (`read_only_roles`): it sees every edit in its system
  prompt but its memory tools are refused.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from claude_agent_sdk import ClaudeAgentOptions

from ..agent import MemoryAwareAgent
from ..agent.client import RefreshMode
from ..agent.options import user_system_text
from ..core.blocks import Block
from ..errors import BlockNotFoundError, ConfigurationError
from ..manager import MemoryManager
from ..settings import Settings

__all__ = [
    "COLLEGE_BLOCK_DESCRIPTION",
    "COLLEGE_BLOCK_LABEL",
    "COLLEGE_BLOCK_LIMIT",
    "COLLEGE_ROLES",
    "CollegeRole",
    "CollegeSession",
    "college_agent_id",
    "resolve_instance_id",
    "role_prompt",
]

CollegeRole = Literal["critic", "professor", "scribe"]
COLLEGE_ROLES: tuple[CollegeRole, ...] = ("critic", "professor", "scribe")

COLLEGE_BLOCK_LABEL = "agent_college_shared_state"
COLLEGE_BLOCK_LIMIT = 20_000
"""Generous on purpose: three agents append to it for a whole task before anyone condenses it."""
COLLEGE_BLOCK_DESCRIPTION = (
    "Shared by the Critic, the Professor and the Scribe of this Agent College: findings, decisions "
    "and the running record of the task. Every edit reaches all three system prompts by their "
    "next turn. Append one line per entry, starting with your role (e.g. 'Critic: ...'); do not "
    "rewrite or delete lines written by the others."
)

_INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

_ROLE_DUTIES: Mapping[CollegeRole, str] = {
    "critic": (
        "You are the Critic. Find the weakest point of the work on the task (an error, a gap, an "
        "unstated assumption) and say how to fix it. Record your main finding in the shared block "
        "as one line starting with 'Critic:'."
    ),
    "professor": (
        "You are the Professor. Answer the task with a clear explanation that takes the findings "
        "already in the shared block into account. Record your key decision in the shared block as "
        "one line starting with 'Professor:'."
    ),
    "scribe": (
        "You are the Scribe. Keep the record: summarise what has been found and decided so far. "
        "Record your summary in the shared block as one line starting with 'Scribe:'."
    ),
}


def role_prompt(role: CollegeRole) -> str:
    """The role's part of its system prompt: the college, the shared block, and its duty."""
    return (
        "You are one of three agents of an Agent College (Critic, Professor, Scribe) working on "
        f"the same task. The core memory block '{COLLEGE_BLOCK_LABEL}' is shared by all three: "
        "what one of you writes there is in the others' system prompts from their next turn. "
        "Write to it with core_memory_append or memory_insert; keep entries short.\n\n"
        f"{_ROLE_DUTIES[_check_role(role)]}"
    )


def resolve_instance_id(instance_id: str | None = None, settings: Settings | None = None) -> str:
    """The argument, else AGENT_INSTANCE_ID, else a new `college-<hex>` id; validated either way."""
    chosen = instance_id or (settings.agent_instance_id if settings else None)
    if chosen is None:
        return f"college-{uuid.uuid4().hex[:8]}"
    if not _INSTANCE_ID.fullmatch(chosen):
        raise ConfigurationError(
            f"'{chosen}' is not a usable college instance id (AGENT_INSTANCE_ID). Use 1-64 "
            "letters, "
            "digits, '_', '-' or '.', starting with a letter or digit."
        )
    return chosen


def college_agent_id(instance_id: str, role: CollegeRole) -> str:
    """The agent id of one role of one college instance."""
    return f"{instance_id}_{_check_role(role)}"


def _check_role(role: str) -> CollegeRole:
    if role not in COLLEGE_ROLES:
        raise ConfigurationError(
            f"Unknown college role '{role}'; the roles are {', '.join(COLLEGE_ROLES)}."
        )
    return role


@dataclass(frozen=True)
class CollegeSession:
    """One Agent College instance on one storage dir: its three agents and their shared block.

    Build it with `CollegeSession.open(...)`; use it as a context manager to close a manager
    that `open` created.
    """

    memory: MemoryManager
    instance_id: str
    block_id: str
    agent_ids: Mapping[CollegeRole, str]
    read_only_roles: frozenset[CollegeRole] = frozenset()
    owns_memory: bool = field(default=False, repr=False)

    @classmethod
    def open(
        cls,
        memory: MemoryManager | None = None,
        instance_id: str | None = None,
        *,
        read_only_roles: Iterable[CollegeRole] = (),
        storage_dir: str | Path | None = None,
        settings: Settings | None = None,
        block_limit: int = COLLEGE_BLOCK_LIMIT,
    ) -> CollegeSession:
        """Create or join the college: its agents, the shared block, and every attachment.

        Args:
            memory: The manager to use; by default one on `storage_dir` acting as the Critic.
            instance_id: Names the college; default AGENT_INSTANCE_ID, else a generated id.
            read_only_roles: Roles that see the shared block but may not edit it (others may).
                Applied on every open, so reopening with another set changes the attachments.
            storage_dir: Storage dir of the manager created when `memory` is not given.
            settings: Where AGENT_INSTANCE_ID is read, and the settings of a manager this
                creates (default: the given manager's, else from the environment).
            block_limit: Character limit of the shared block when this open creates it.
        """
        settings = settings or (memory.settings if memory else Settings.from_env())
        instance = resolve_instance_id(instance_id, settings)
        agent_ids = {role: college_agent_id(instance, role) for role in COLLEGE_ROLES}
        read_only = frozenset(_check_role(role) for role in read_only_roles)
        owns = memory is None
        manager = memory or MemoryManager(
            storage_dir, agent_id=agent_ids["critic"], settings=settings
        )
        try:
            block_id = _set_up(manager, agent_ids, read_only, block_limit)
        except BaseException:
            if owns:
                manager.close()
            raise
        return cls(manager, instance, block_id, agent_ids, read_only, owns)

    # ----- identities ---------------------------------------------------------------------

    def agent_id(self, role: CollegeRole) -> str:
        return self.agent_ids[_check_role(role)]

    @property
    def critic_id(self) -> str:
        return self.agent_ids["critic"]

    @property
    def professor_id(self) -> str:
        return self.agent_ids["professor"]

    @property
    def scribe_id(self) -> str:
        return self.agent_ids["scribe"]

    # ----- the shared state ---------------------------------------------------------------

    def shared_block(self, role: CollegeRole = "critic") -> Block:
        """The shared block as `role` sees it now (its `read_only` is that role's view)."""
        return self.memory.get_agent_block(self.agent_id(role), COLLEGE_BLOCK_LABEL)

    def shared_state(self) -> str:
        """The current value of the shared block."""
        return self.shared_block().value

    # ----- agents -------------------------------------------------------------------------

    def system_prompt(self, role: CollegeRole, own: str | None = None) -> str:
        """The role's prompt, followed by the caller's own system prompt text if any."""
        return _join(role_prompt(role), own)

    def build_agent(
        self,
        role: CollegeRole,
        options: ClaudeAgentOptions | None = None,
        *,
        memory: MemoryManager | None = None,
        refresh_mode: RefreshMode = "live",
    ) -> MemoryAwareAgent:
        """A `MemoryAwareAgent` for one role, its role prompt put before the caller's own.

        Pass `memory` to give the agent a manager of its own (e.g. one per process); by default
        the agents of one process share this session's manager.
        """
        base = options or ClaudeAgentOptions()
        with_role = dataclasses.replace(
            base, system_prompt=self._role_system_prompt(role, base.system_prompt)
        )
        return MemoryAwareAgent(
            with_role,
            memory=memory or self.memory,
            agent_id=self.agent_id(role),
            refresh_mode=refresh_mode,
        )

    def _role_system_prompt(self, role: CollegeRole, system_prompt: Any) -> Any:
        if isinstance(system_prompt, dict) and system_prompt.get("type") == "preset":
            return {
                **system_prompt,
                "append": self.system_prompt(role, system_prompt.get("append")),
            }
        return self.system_prompt(role, user_system_text(system_prompt))

    # ----- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the manager if `open` created it; a manager passed in stays open."""
        if self.owns_memory:
            self.memory.close()

    def __enter__(self) -> CollegeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _join(first: str, second: str | None) -> str:
    return first if not second else f"{first}\n\n{second}"


def _set_up(
    memory: MemoryManager,
    agent_ids: Mapping[CollegeRole, str],
    read_only_roles: frozenset[CollegeRole],
    block_limit: int,
) -> str:
    """Agents, block and attachments in one transaction, so concurrent openers agree."""
    with memory.atomic():
        for agent_id in agent_ids.values():
            memory.ensure_agent(agent_id)
        block_id = _existing_block_id(memory, agent_ids.values())
        if block_id is None:
            block_id = memory.create_block(
                COLLEGE_BLOCK_LABEL,
                "",
                description=COLLEGE_BLOCK_DESCRIPTION,
                limit=block_limit,
                is_shared=True,
                agent_id=agent_ids["critic"],
            ).block_id
        for role, agent_id in agent_ids.items():
            _attach(memory, agent_id, block_id, read_only=role in read_only_roles)
    return block_id


def _existing_block_id(memory: MemoryManager, agent_ids: Iterable[str]) -> str | None:
    """The college block already attached to one of the instance's agents, if any."""
    for agent_id in agent_ids:
        block = _attached(memory, agent_id)
        if block is not None:
            return block.block_id
    return None


def _attached(memory: MemoryManager, agent_id: str) -> Block | None:
    try:
        return memory.get_agent_block(agent_id, COLLEGE_BLOCK_LABEL)
    except BlockNotFoundError:
        return None


def _attach(memory: MemoryManager, agent_id: str, block_id: str, *, read_only: bool) -> None:
    """Attach (or re-flag) only when something changes, so reopening adds no journal noise."""
    current = _attached(memory, agent_id)
    if current is None or current.block_id != block_id or current.read_only != read_only:
        memory.attach_block(agent_id, block_id, read_only=read_only)
