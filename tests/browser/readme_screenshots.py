"""Remake the inspector screenshots the documentation shows (docs/img/).

Runs the SQLite page walk of the browser tests (tests/browser/test_inspector_browser.py) with its
screenshots sent to a temporary folder, then copies two of them, the agent's memory page and the
scored search page, to docs/img/. Needs what the browser tests need (`pip install -e
".[dev,browser]"` and Debian's chromium).

Run: python tests/browser/readme_screenshots.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "docs" / "img"
WANTED = {"memory": "inspector-memory.png", "search-scored": "inspector-search.png"}
"""Screenshot name (its page check's name in inspector_pages.PAGES) -> file under docs/img."""


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        environ = {
            **os.environ,
            "MEMORY_AGENT_SCREENSHOTS": folder,
            "MEMORY_AGENT_REQUIRE_BROWSER": "1",
        }
        test = "tests/browser/test_inspector_browser.py::test_every_page_opens_and_is_screenshotted"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
            cwd=ROOT,
            env=environ,
            check=False,
        )
        if done.returncode != 0:
            print("the page walk failed; no screenshot was copied", file=sys.stderr)
            return done.returncode
        TARGET.mkdir(parents=True, exist_ok=True)
        for name, target in WANTED.items():
            found = sorted(Path(folder).rglob(f"*-{name}.png"))
            if not found:
                print(f"no screenshot of the {name} page in {folder}", file=sys.stderr)
                return 1
            shutil.copyfile(found[0], TARGET / target)
            print(f"{TARGET / target}  ({(TARGET / target).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
