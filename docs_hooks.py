"""MkDocs hooks: pages that show a file from the repository root (README.md as the home page,
ARCHITECTURE.md, CONTRIBUTING.md), so each text exists once and reads well on GitHub too.

A page holding `<!-- include: NAME.md -->` gets that root file in its place, with the file's
links re-pointed at the site's pages (the root files link `docs/x.md`, the site has `x.md`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
_INCLUDE = re.compile(r"<!-- include: ([A-Za-z_.-]+\.md) -->")
# What a root file links to, and where that is on the site (relative to docs/).
_ROOT_LINKS = {
    "README.md": "index.md",
    "ARCHITECTURE.md": "architecture.md",
    "CONTRIBUTING.md": "contributing.md",
}


def _site_links(text: str) -> str:
    text = re.sub(r"\]\(docs/", "](", text)
    for name, page in _ROOT_LINKS.items():
        text = text.replace(f"]({name})", f"]({page})")
    return text


def _included(match: re.Match[str]) -> str:
    return _site_links((ROOT / match.group(1)).read_text(encoding="utf-8"))


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    return _INCLUDE.sub(_included, markdown)
