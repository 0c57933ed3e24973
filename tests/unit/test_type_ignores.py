"""A `type: ignore` names the error it silences and says why (`# type: ignore[code]  # why`)."""

from __future__ import annotations

import re
from pathlib import Path

import memory_agent

ROOT = Path(memory_agent.__file__).resolve().parent.parent
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")
EXPLAINED = re.compile(r"^\[[a-z-]+(,\s*[a-z-]+)*\]\s+#\s*\S")


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    unexplained = []
    for package in ("memory_agent", "compaction"):
        for path in (ROOT / package).rglob("*.py"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                match = IGNORE.search(line)
                if match and not EXPLAINED.match(match.group("rest")):
                    unexplained.append(f"{path.relative_to(ROOT)}:{number}")
    assert unexplained == []
