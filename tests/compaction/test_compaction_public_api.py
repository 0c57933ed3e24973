"""The compaction package's public surface, and its independence from memory_agent."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import compaction

PACKAGE_DIR = Path(compaction.__file__).resolve().parent

PUBLIC_NAMES = {
    "DEFAULT_ENCODING", "MODES", "SUMMARY_SYSTEM_PROMPT", "TRUNCATION_MARKER", "UNMEASURED_SCALE",
    "AnthropicSummarizer", "CompactionError", "CompactionMode", "CompactionOutcome",
    "CompactionPlan", "CompactionSettings", "CompactionSettingsError", "CompactionStatus",
    "ContextBudget", "MessageRecord", "RetryPolicy", "Summarizer", "SummarizerBackoff",
    "SummarizerError",
    "TiktokenCounter", "TokenCounter", "clip_text", "compact", "count_messages", "count_request",
    "count_system", "count_tools", "default_counter", "is_retryable", "message_tokens",
    "plan_compaction", "render_transcript", "reported_input_tokens", "should_compact",
    "summary_request_text", "summary_tokens", "truncation_summary", "valid_cuts",
}  # fmt: skip


def test_public_names_are_pinned() -> None:
    assert set(compaction.__all__) == PUBLIC_NAMES
    for name in compaction.__all__:
        assert getattr(compaction, name) is not None


def test_every_module_declares_all_and_exports_what_it_defines() -> None:
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        module = importlib.import_module(
            f"compaction.{path.stem}" if path.stem != "__init__" else "compaction"
        )
        assert hasattr(module, "__all__"), f"{path.name} has no __all__"
        for name in module.__all__:
            assert hasattr(module, name), f"{path.name} lists {name} but does not define it"


def test_the_package_init_only_re_exports() -> None:
    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8"))
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}


def test_no_module_imports_memory_agent() -> None:
    for path in PACKAGE_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            assert not any(name.split(".")[0] == "memory_agent" for name in names), path.name


def test_importing_compaction_is_light_and_independent() -> None:
    code = (
        "import sys, compaction; "
        "assert 'memory_agent' not in sys.modules, 'memory_agent imported'; "
        "assert 'anthropic' not in sys.modules, 'anthropic imported eagerly'; "
        "assert compaction.tokens.load_encoding.cache_info().currsize == 0, 'encoding loaded'"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PACKAGE_DIR.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
