"""The memory inspector (`memory-agent ui`): local web pages to see, search, correct and roll back
an agent's memory. It sits beside the CLI, above the manager, and reads and writes only through
`MemoryManager`'s public API (see ARCHITECTURE.md and docs/inspector.md)."""

from .app import create_app
from .server import serve, serve_line

__all__ = ["create_app", "serve", "serve_line"]
