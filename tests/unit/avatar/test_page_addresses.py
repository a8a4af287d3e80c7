"""Every address a page uses comes from the server, which writes it into the page's HTML
(``{{key}}`` in the template, ``data-*`` on ``<body>``): no page's HTML or script spells a path
that a route module defines, so a path changes in one place."""

from __future__ import annotations

import re

from avatar import human_side
from avatar.buyer import routes as buyer
from avatar.display import AUDIO_PATH
from avatar.display import routes as display
from avatar.operator import routes as operator
from tests.support.pages import PAGES, page_html, script_of


def server_paths() -> set[str]:
    """Every ``*_PATH`` the route modules define (but the root, which any URL contains)."""
    paths = {value for module in (display, buyer, operator, human_side) for name, value in vars(module).items()
             if name.endswith("_PATH") and isinstance(value, str) and value.startswith("/") and value != "/"}
    return paths | {AUDIO_PATH}


def test_no_page_spells_an_address_the_server_defines() -> None:
    paths = server_paths()
    assert {display.DISPLAY_FEED_PATH, display.DISPLAY_STATIC_PATH, operator.CONSOLE_FEED_PATH, buyer.CHECK_PATH} <= paths
    for page in PAGES:
        for text in (page_html(page), script_of(page)):
            spelled = sorted(p for p in paths if re.search(r"""["'`]""" + re.escape(p) + r"""["'`/?#]""", text)
                             or re.search(r"""["'`]""" + re.escape(p[1:]) + "/", text))  # relative: "display/x.js"
            assert spelled == [], f"{page} spells {spelled}"


def test_each_page_reads_its_feed_from_the_html() -> None:
    for page in PAGES:
        assert 'data-feed="{{feed}}"' in page_html(page), page
        assert "dataset.feed" in script_of(page), page
