"""The project's own export format: a JSON document holding every table's rows of some agents.

    {"format": "memory-agent", "version": 1, "exported_at": "...",
     "agents": [...], "blocks": [...], "block_history": [...], "attachments": [...],
     "messages": [...], "summaries": [...], "passages": [...], "journal": [...]}

Each section is a list of objects with the fields of the matching record in `records`. Nothing
is lost on the way out (values, limits, read-only and on-demand flags, versions and history,
timestamps, every stored message including the SDK's result and status rows, summaries, passages,
the journal), so an export imported into an empty storage dir gives back the same memory. On the
way in, unknown fields are ignored (a newer exporter may add some) and missing or mistyped ones
are refused with the section and position named (a flag must be a JSON boolean, a limit a
positive whole number, an id unique).

What two exports of the same memory may differ in (`stable_form` leaves it out, so that an
export, imported into a fresh store and exported again, compares equal byte for byte):
- `exported_at`, the time of the export;
- message and summary ids: they are the storing database's own integers, so an import numbers them
  anew (the references between them, a summary's message range, are kept);
- journal entries with the action `import_agent`, which an import adds to record itself.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..errors import ImportFormatError
from ..snapshots.records import (
    AgentRecord,
    AttachmentRecord,
    BlockRecord,
    BlockVersionRecord,
    JournalRecord,
    MessageRecord,
    PassageRecord,
    Snapshot,
    SummaryRecord,
)
from ..snapshots.values import utc_now

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "is_project_document",
    "parse_project",
    "stable_form",
    "to_project",
]

FORMAT_NAME = "memory-agent"
FORMAT_VERSION = 1

_SECTIONS: dict[str, type[Any]] = {
    "agents": AgentRecord,
    "blocks": BlockRecord,
    "block_history": BlockVersionRecord,
    "attachments": AttachmentRecord,
    "messages": MessageRecord,
    "summaries": SummaryRecord,
    "passages": PassageRecord,
    "journal": JournalRecord,
}

_CHECKS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "str | None": lambda v: v is None or isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "int | None": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "bool": lambda v: isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "list[str]": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    "dict[str, Any]": lambda v: isinstance(v, dict),
    "int | str": lambda v: isinstance(v, (int, str)) and not isinstance(v, bool),
    "int | str | None": lambda v: (
        v is None or (isinstance(v, (int, str)) and not isinstance(v, bool))
    ),
    "str | list[dict[str, Any]]": lambda v: (
        isinstance(v, str) or (isinstance(v, list) and all(isinstance(i, dict) for i in v))
    ),
}

R = TypeVar("R")


def is_project_document(document: Any) -> bool:
    return isinstance(document, Mapping) and document.get("format") == FORMAT_NAME


def to_project(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as a JSON-ready document."""
    document: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": utc_now(),
    }
    for section in _SECTIONS:
        document[section] = [dataclasses.asdict(record) for record in getattr(snapshot, section)]
    return document


def parse_project(document: Mapping[str, Any]) -> Snapshot:
    """The snapshot a project document holds; refuses what it cannot read, saying where."""
    if not is_project_document(document):
        raise ImportFormatError(
            f"Not a {FORMAT_NAME} export: its 'format' field is missing or different."
        )
    version = document.get("version")
    if version != FORMAT_VERSION:
        raise ImportFormatError(
            f"This export is format version {version!r}; this memory-agent reads version "
            f"{FORMAT_VERSION}. Upgrade memory-agent, or export again with this version."
        )
    sections: dict[str, Any] = {}
    for name, record_type in _SECTIONS.items():
        items = document.get(name, [])
        if not isinstance(items, list):
            raise ImportFormatError(f"Section '{name}' must be a list, got {type(items).__name__}.")
        sections[name] = [
            _record(record_type, item, f"{name}[{index}]") for index, item in enumerate(items)
        ]
    return Snapshot(**sections)


def _record(record_type: Callable[..., R], item: Any, where: str) -> R:
    if not isinstance(item, Mapping):
        raise ImportFormatError(f"{where} must be an object, got {type(item).__name__}.")
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(record_type):  # type: ignore[arg-type]  # always a records.py dataclass
        if spec.name not in item:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise ImportFormatError(f"{where} has no '{spec.name}' field.")
            continue
        value = item[spec.name]
        check = _CHECKS.get(str(spec.type))
        if check is not None and not check(value):
            raise ImportFormatError(
                f"{where}.{spec.name} must be {spec.type}, got {type(value).__name__}."
            )
        values[spec.name] = value
    return record_type(**values)


def stable_form(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document without what the format documents as volatile (see the module doc): no
    `exported_at`, no `import_agent` journal entries, message and summary ids numbered 1, 2, ... in
    document order with every reference to them renumbered alike."""
    stable = copy.deepcopy(dict(document))
    stable.pop("exported_at", None)
    messages = {
        str(m["message_id"]): index for index, m in enumerate(stable.get("messages", []), 1)
    }
    summaries = {
        str(s["summary_id"]): index for index, s in enumerate(stable.get("summaries", []), 1)
    }
    for message in stable.get("messages", []):
        message["message_id"] = messages[str(message["message_id"])]
    for summary in stable.get("summaries", []):
        summary["summary_id"] = summaries[str(summary["summary_id"])]
        for end in ("first_message_id", "last_message_id"):
            if summary[end] is not None:
                summary[end] = messages.get(str(summary[end]), summary[end])
    stable["journal"] = [
        entry for entry in stable.get("journal", []) if entry["action"] != "import_agent"
    ]
    for entry in stable["journal"]:
        if entry["target_type"] == "summary" and entry["target_id"] is not None:
            entry["target_id"] = str(summaries.get(str(entry["target_id"]), entry["target_id"]))
    return stable
