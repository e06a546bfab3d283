"""The headless Chromium that the report's benchmark, its screenshot and its browser tests drive through Playwright.

Playwright cannot download a browser here, so it is pointed at Debian's Chromium (``apt-get install chromium``),
or at the one ``PLANTRAIL_CHROMIUM`` names. The flags keep a headless run from reaching the network or
starting background services, so a page's own requests are the only ones it makes.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["ARGS", "CHROMIUM"]

CHROMIUM: Final = os.environ.get("PLANTRAIL_CHROMIUM", "/usr/bin/chromium")
ARGS: Final = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
