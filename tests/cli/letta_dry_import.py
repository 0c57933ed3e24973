"""Letta's own check of agent files, without its database: `python letta_dry_import.py FILE...`.

Needs `letta` importable (install it in a separate venv: it pins versions this project does not
use). For each file it runs what Letta's import runs before touching a database: the pydantic
schema (`AgentFileSchema.model_validate`), the serialization manager's `_validate_schema` (id
formats, duplicates, references), then builds each agent (`CreateAgent`), message (`Message`)
and group (`GroupCreate`) the way `AgentSerializationManager.import_file` does, with database ids
invented for the file's ids. Prints `OK name` or the errors; exits 1 when any file fails.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any


def letta_import_errors(document: Any) -> list[str]:
    """Every error Letta raises while checking and building the document's objects ([] =
    accepted)."""
    from letta.schemas.agent import CreateAgent
    from letta.schemas.agent_file import AgentFileSchema
    from letta.schemas.group import GroupCreate
    from letta.schemas.message import Message
    from letta.services.agent_serialization_manager import AgentSerializationManager

    if isinstance(document, str):
        document = json.loads(document)
    try:
        schema = AgentFileSchema.model_validate(document)
        checker = object.__new__(AgentSerializationManager)
        checker._validate_schema(schema)
    except Exception as error:  # noqa: BLE001 - any refusal is the finding
        return [f"{type(error).__name__}: {error}"]
    errors: list[str] = []
    database = {
        item.id: f"{item.id.split('-')[0]}-{uuid.uuid4()}"
        for section in (schema.agents, schema.blocks, schema.tools, schema.sources, schema.groups)
        for item in section
    }
    for agent in schema.agents:
        data = agent.model_dump(exclude={"id", "in_context_message_ids", "messages"})
        for key in ("tool_ids", "block_ids", "source_ids"):
            if data.get(key):
                data[key] = [database[ref] for ref in data[key]]
        try:
            CreateAgent(**data)
            ids = {}
            for message in agent.messages:
                built = Message(
                    **{**message.model_dump(exclude={"id", "type"}), "agent_id": database[agent.id]}
                )
                ids[message.id] = built.id
            [ids[ref] for ref in agent.in_context_message_ids]
        except Exception as error:  # noqa: BLE001
            errors.append(f"agent {agent.id}: {type(error).__name__}: {error}")
    for group in schema.groups:
        data = group.model_dump(exclude={"id"})
        try:
            data["agent_ids"] = [database[ref] for ref in data["agent_ids"]]
            if "manager_agent_id" in data["manager_config"]:
                data["manager_config"]["manager_agent_id"] = database[
                    data["manager_config"]["manager_agent_id"]
                ]
            GroupCreate(**data)
        except Exception as error:  # noqa: BLE001
            errors.append(f"group {group.id}: {type(error).__name__}: {error}")
    return errors


def main(paths: list[str]) -> int:
    failed = 0
    for path in paths:
        errors = letta_import_errors(json.loads(Path(path).read_text(encoding="utf-8")))
        print(("OK   " if not errors else "FAIL ") + Path(path).name)
        for error in errors:
            print("     " + error[:600])
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
