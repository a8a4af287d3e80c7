"""The three pages' sources as the server serves them: each page's HTML template and the script
it loads (found in the HTML, so a renamed script is followed), for tests that read them as text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from avatar.buyer import routes as buyer
from avatar.display import routes as display
from avatar.operator import routes as operator

PAGES: Final[dict[str, tuple[Path, str]]] = {
    "display": (display.STATIC_DIR, display.PAGE_FILE),
    "buyer": (buyer.STATIC_DIR, buyer.PAGE_FILE),
    "console": (operator.STATIC_DIR, operator.PAGE_FILE),
}
"""Each page's static folder and HTML template."""
SCRIPT: Final = re.compile(r'<script src="\{\{static\}\}/([\w.-]+)"')


def page_html(page: str) -> str:
    folder, html = PAGES[page]
    return (folder / html).read_text(encoding="utf-8")


def script_of(page: str) -> str:
    """The source of the one script ``page``'s HTML loads from its files."""
    (name,) = SCRIPT.findall(page_html(page))
    return (PAGES[page][0] / name).read_text(encoding="utf-8")
