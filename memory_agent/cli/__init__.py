"""The `memory-agent` command line: a thin face over the library (see `memory-agent --help`)."""

from .main import cli, main

__all__ = ["cli", "main"]
