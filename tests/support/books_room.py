"""A room held to the EO's books, as the day tests drive it: the Avatar Controller as its own
process, the EO's other participants (the buyer's and the sellers' turns sent to the EO's
``/relayMessage``), and what the room shows (the buyer page, the display, the day book) compared
with the EO's ``/viewTotals``."""

from __future__ import annotations

import signal
import subprocess
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from avatar.operator.routes import DAY_JSON_PATH
from humaine_platform import endpoints as ep
from humaine_platform.models import ms_to_iso
from tests.support import loopback
from tests.support.helpers import CLI, UI_TIMEOUT_MS, wait_for
from workers.runtime.messages import now_ms

START_TIMEOUT_S = 60.0
"""The controller loads both voices before it answers (a few seconds; more on a busy machine)."""


class AvatarProcess:
    """``humaine-env avatar`` as the venue runs it: its own process, stopped by real signals."""

    def __init__(self, config_path: Path, port: int, log_path: Path) -> None:
        self.config_path, self.port, self.log_path = config_path, port, log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AvatarProcess:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([*CLI, "avatar", "--config", str(self.config_path)],
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        assert wait_for(self.answers, START_TIMEOUT_S, interval=0.1), self.log_tail()
        return self

    def answers(self) -> bool:
        try:
            return loopback.get(self.url + ep.HEALTH, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        code = self.process.wait(timeout)
        self.process = None
        return code

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:]) if self.log_path.exists() else ""


class Platform:
    """The EO's other participants as the test drives them: the buyer's and the sellers' turns."""

    def __init__(self, eo_url: str, env: str, http: httpx.Client, round_id: str) -> None:
        self.eo_url, self.env, self.http, self.round_id = eo_url, env, http, round_id
        self.human_at = 0.0
        self.pool = ThreadPoolExecutor(4)

    def say(self, text: str, addressee: str) -> None:
        body = {"roundId": self.round_id, "speaker": "Human", "addressee": addressee, "text": text, "role": "buyer",
                "environmentUUID": self.env, "timestamp": int(time.time() * 1000)}
        answer = self.http.post(self.eo_url + ep.RELAY_MESSAGE, json=body)
        assert answer.status_code == 200, answer.text
        self.human_at = time.time() * 1000

    def accept(self, seller: str, goods: dict[str, int], price: float, after_ms: int = 500) -> Future[httpx.Response]:
        """The seller's Accept ``after_ms`` after the buyer spoke (``now``: the EO's rules read the
        time from it). The EO answers it only once the human side confirmed: in the background."""
        body = {"roundId": self.round_id, "speaker": seller, "addressee": "Human", "text": f"Deal: that is yours for ${price:.2f}.",
                "role": "seller", "environmentUUID": self.env, "timeStamp": ms_to_iso(now_ms()),
                "now": int(self.human_at + after_ms),
                "bid": {"type": "Accept", "quantity": goods, "price": {"unit": "USD", "value": price}}}
        return self.pool.submit(self.http.post, self.eo_url + ep.RELAY_MESSAGE, json=body)

    def totals(self) -> dict[str, Any]:
        answer = self.http.get(f"{self.eo_url}{ep.VIEW_TOTALS}/{self.round_id}")
        assert answer.status_code == 200, answer.text
        return answer.json() or {}

    def human(self) -> tuple[float, dict[str, int]]:
        human = self.totals().get("Human") or {}
        return round(float(human.get("price") or 0.0), 2), {g: int(n) for g, n in (human.get("quantity") or {}).items() if n}


def money(value: float) -> str:
    return f"${value:.2f}"


def sum_goods(deals: list[dict[str, Any]]) -> dict[str, int]:
    have: dict[str, int] = {}
    for deal in deals:
        for good, n in deal["goods"].items():
            have[good] = have.get(good, 0) + n
    return have


class Views:
    """What the room shows of the round: the buyer page, the display, the day book."""

    def __init__(self, avatar_url: str, buyer: Page, display: Page, round_id: str, budget: float) -> None:
        self.avatar_url, self.buyer, self.display, self.round_id, self.budget = avatar_url, buyer, display, round_id, budget

    def day_row(self) -> tuple[dict[str, Any], dict[str, Any]]:
        day = loopback.get(self.avatar_url + DAY_JSON_PATH, timeout=10).json()
        row = next(r for r in day["rounds"] if str(r["round"]) == self.round_id)
        detail = next(d for d in day["detail"] if str(d["round"]) == self.round_id)
        return row, detail

    def display_deals(self) -> tuple[int, float]:
        prices = self.display.locator("#deals tbody tr td:nth-child(3)").all_text_contents()
        return len(prices), round(sum(float(p.lstrip("$")) for p in prices), 2)

    def agree(self, platform: Platform, step: str) -> None:
        """The buyer page's budget left, the display's deals and the day book's row equal the EO's books."""
        paid, goods = platform.human()
        expect(self.buyer.locator("#left"), step).to_have_text(money(self.budget - paid), timeout=UI_TIMEOUT_MS)

        def day_agrees() -> bool:
            row, detail = self.day_row()
            return row["paid"] == paid and sum_goods(detail["deals"]) == goods

        assert wait_for(day_agrees, 15), (step, self.day_row(), (paid, goods))
        row, _detail = self.day_row()
        assert wait_for(lambda: self.display_deals() == (row["deals"], paid), 15), (step, self.display_deals(), row)
