"""Idle pages benchmark: prints ONE JSON line.

The room's pages stay open all day: the display on the venue's screen, the buyer's page on a
tablet, the operator's console. Between utterances nothing on them changes but the avatars'
breathing and blinking and the round's clock, and the browser should do no more than that needs.
Each page is opened alone in a headless Chromium (the page tests' own, software-drawn), on an
Avatar Controller run as its own process (``humaine-env avatar``, WAV speaker) on a real
mosquitto; the CPU of all Chromium's processes is measured over ``--seconds`` once the page has
settled, in % of one core.

Target: the display at 1080p <= 15 % (36-43 % when its breath moved on every frame, its
mouths' frame loop never stopped and its clock rewrote the page four times a second).

Usage: ``.venv/bin/python bench/pages_idle.py [--seconds S]`` (needs mosquitto and Chromium).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# run as `python bench/pages_idle.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import expect, sync_playwright

from avatar.buyer.routes import BUYER_PATH
from avatar.display.routes import DISPLAY_PATH
from avatar.operator.routes import CONSOLE_PATH
from tests.support.books_room import AvatarProcess
from tests.support.helpers import CHROMIUM, CHROMIUM_ARGS, UI_TIMEOUT_MS, MosquittoBroker, free_port

PAGES = {
    "display_720p": (DISPLAY_PATH, {"width": 1280, "height": 720}),
    "display_1080p": (DISPLAY_PATH, {"width": 1920, "height": 1080}),
    "buyer_1280x800": (BUYER_PATH, {"width": 1280, "height": 800}),
    "console_1280x800": (CONSOLE_PATH, {"width": 1280, "height": 800}),
}
SETTLE_S = 2.0
"""After the page says it is connected: the first snapshot drawn, the fonts loaded."""
TARGET_DISPLAY_PCT = 15.0


def chromium_cpu_s() -> float:
    """CPU seconds of every Chromium process on the machine (the benchmark's own browser: run it
    alone)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        if name.startswith(("chrom", "headless_shell")):
            fields = stat.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each page is measured")
    args = parser.parse_args()

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        broker = MosquittoBroker(folder / "mosquitto").start()
        port = free_port()
        config = folder / "avatar.toml"
        config.write_text(f'environment_uuid = "benchpages"\ndata_dir = "{folder / "data"}"\n'
                          f'[broker]\nurl = "{broker.url}"\nmode = "external"\n'
                          f'[avatar]\nport = {port}\nspeaker = "wav-fast:{folder / "wav"}"\n')
        avatar = AvatarProcess(config, port, folder / "avatar.log").start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for name, (path, viewport) in PAGES.items():
                    context = browser.new_context(viewport=viewport)
                    page = context.new_page()
                    page.goto(avatar.url + path)
                    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
                    time.sleep(SETTLE_S)
                    before = chromium_cpu_s()
                    time.sleep(args.seconds)
                    figures[name] = round(100 * (chromium_cpu_s() - before) / args.seconds, 1)
                    context.close()
                browser.close()
        finally:
            avatar.stop()
            broker.stop()

    print(json.dumps({
        "bench": "pages_idle",
        **{f"chromium_cpu_pct_{name}": pct for name, pct in figures.items()},
        "seconds": args.seconds,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "targets": {"chromium_cpu_pct_display_1080p": TARGET_DISPLAY_PCT},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
