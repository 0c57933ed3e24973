"""Moving agents between storage dirs: the project's JSON export and Letta's Agent File (.af)."""

from ..snapshots import ImportReport, Snapshot
from .files import (
    ExportFormat,
    decode_document,
    export_memory,
    import_file,
    import_snapshot,
    load_document,
    parse_document,
    write_export,
)
from .letta_af import parse_letta
from .letta_export import to_letta
from .project_json import parse_project, to_project

__all__ = [
    "ExportFormat",
    "ImportReport",
    "Snapshot",
    "decode_document",
    "export_memory",
    "import_file",
    "import_snapshot",
    "load_document",
    "parse_document",
    "parse_letta",
    "parse_project",
    "to_letta",
    "to_project",
    "write_export",
]
