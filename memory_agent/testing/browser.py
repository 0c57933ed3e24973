"""A headless Chromium for browser tests and the first-load benchmark, driven by Playwright.

The browser is the distribution's (Debian's `chromium` package, /usr/bin/chromium, or the path in
MEMORY_AGENT_CHROMIUM): Playwright drives it through `executable_path`, so nothing is downloaded
(`playwright install` is never needed). When Playwright is not installed or the browser cannot
start, `launch_chromium` raises `BrowserUnavailable` with the reason, which tests turn into a skip
(or a failure where MEMORY_AGENT_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "CHROMIUM_VARIABLE",
    "REQUIRE_BROWSER",
    "BrowserUnavailable",
    "chromium_path",
    "launch_chromium",
]

CHROMIUM_VARIABLE = "MEMORY_AGENT_CHROMIUM"
"""Environment variable naming the Chromium executable, when it is not /usr/bin/chromium."""
REQUIRE_BROWSER = "MEMORY_AGENT_REQUIRE_BROWSER"
"""Set (as .ci/run does) to make a browser that cannot start a failure, not a skip."""
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


class BrowserUnavailable(RuntimeError):
    """No headless browser can be driven here; the message says why and what to install."""


def chromium_path() -> str:
    """The Chromium executable: $MEMORY_AGENT_CHROMIUM, else Debian's, else `chromium` on PATH."""
    named = os.environ.get(CHROMIUM_VARIABLE)
    if named:
        if not os.access(named, os.X_OK):
            raise BrowserUnavailable(
                f"{CHROMIUM_VARIABLE} names {named}, which is not an executable file"
            )
        return named
    for candidate in CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise BrowserUnavailable(
            "no Chromium found (apt-get install chromium, or set MEMORY_AGENT_CHROMIUM)"
        )
    return found


@contextmanager
def launch_chromium() -> Iterator[Any]:
    """A headless Playwright `Browser` on the system's Chromium, closed on exit."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        raise BrowserUnavailable(
            f"Playwright is not installed (pip install -e '.[browser]'): {error}"
        ) from None
    executable = chromium_path()
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=executable, headless=True)
        except PlaywrightError as error:
            first = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
            raise BrowserUnavailable(
                f"{executable} did not start under Playwright: {first}"
            ) from None
        try:
            yield browser
        finally:
            browser.close()
