"""Small per-agent state kept in `agents.metadata` (JSON), such as the current SDK session id."""

from __future__ import annotations

import json
from typing import Any

from .protocol import Connection

__all__ = ["BASE_PROMPT_KEY", "LETTA_KEY", "TOKEN_SCALE_KEY", "read_state", "write_state"]

BASE_PROMPT_KEY = "base_system_prompt"
"""The agent's own base system prompt (an imported Letta agent's `system`)."""
LETTA_KEY = "letta"
"""What an imported Letta agent had that only a Letta export uses again (model configs, groups)."""
TOKEN_SCALE_KEY = "token_scale"
"""Reported input tokens per estimated token, measured on this agent's requests, so a reopened
agent sizes its first request by it (see `compaction.budget`)."""


def read_state(conn: Connection, agent_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT metadata FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
    return {} if row is None else dict(json.loads(row["metadata"] or "{}"))


def write_state(conn: Connection, agent_id: str, updates: dict[str, Any]) -> None:
    """Merge `updates` into the agent's state (None removes a key); call inside a transaction."""
    state = read_state(conn, agent_id)
    for key, value in updates.items():
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    conn.execute("UPDATE agents SET metadata = ? WHERE agent_id = ?", (json.dumps(state), agent_id))
