"""The round's books benchmark: prints ONE JSON line.

Every EO call that changes the round's books is written to the room's ledger (SQLite in WAL mode,
synchronous) and re-derives every view (the buyer page, the display, the day book and its two
export files) before the EO gets its answer; the EO has no timeout and a slow answer eats into
the sellers' 2-second turn window. Measured over real HTTP on loopback with a real Avatar
Controller (ledger on this machine's disk, mosquitto, the speaker writing fast WAVs):

* answer time of a seller's offer (``/receiveMessage`` with a ``SellOffer``), of
  ``/confirmAccept`` (``confirm_accept = "auto"``: no page asked, the prompt and its answer
  written) and of the booked Accept the EO forwards (``/receiveMessage`` with ``Accept``), p50
  and p95 in ms, beside ``/receiveLog`` (which writes nothing: the same answer without the
  ledger). Target p95 <= 20 ms each, as every EO-facing answer (``bench/avatar.py``);
* one derivation of every view from the ledger (``RoundBooks.refresh``) with the round's deals
  so far, p50/p95 ms;
* the ledger's size after the round.

Usage: ``.venv/bin/python bench/books.py [--deals N]`` (needs mosquitto).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# run as `python bench/books.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from avatar.books.ledger import LEDGER_FILE
from avatar.harness import LocalAvatar
from bench.stats import WEIBULL, percentile
from humaine_platform import endpoints as ep
from humaine_platform.models import ms_to_iso
from tests.support.helpers import MosquittoBroker
from workers.runtime.config import Config
from workers.runtime.messages import now_ms

TRAFFIC = json.loads((Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "eo-observed-traffic.json")
                     .read_text())["human-ui"]
ROUND_ID = 1
TARGET_P95_MS = 20.0


def stats(values: list[float]) -> dict[str, float | None]:
    return {"p50": round(statistics.median(values), 2), "p95": percentile(values, 95, 2, WEIBULL)}


def seller_message(i: int, bid_type: str) -> dict[str, Any]:
    seller = "Celia" if i % 2 == 0 else "Watson"
    return {"text": "Two eggs for a dollar." if bid_type != "Accept" else "Deal.", "speaker": seller, "role": "seller",
            "addressee": "Human", "environmentUUID": "benchbooks", "timeStamp": ms_to_iso(now_ms() + i), "roundId": ROUND_ID,
            "bid": {"type": bid_type, "quantity": {"egg": 2}, "price": {"unit": "USD", "value": 0.01}}}


def timed(http: httpx.Client, path: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = http.post(path, json=body)
    elapsed = (time.perf_counter() - started) * 1000
    assert answer.status_code == 200, answer.text
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=40, help="offers, confirmations and booked Accepts, each (a "
                        "busy round has ten)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = MosquittoBroker(Path(tmp) / "mosquitto").start()
        config = Config(file_data={}, environ={}, overrides={
            "environment_uuid": "benchbooks", "data_dir": str(Path(tmp) / "data"), "broker.url": broker.url,
            "broker.mode": "external", "avatar.port": 0, "avatar.speaker": f"wav-fast:{Path(tmp) / 'wav'}",
            "avatar.confirm_accept": "auto", "avatar.queue_max": 2,
        })
        local = LocalAvatar(config).start()
        offers, confirms, booked, logs = [], [], [], []
        try:
            with httpx.Client(base_url=local.url, timeout=30) as http:
                for key in ("/sendRoundMetadata", "/setUtility", "/startRound"):
                    http.post(key, json={**TRAFFIC[key]["body"], "roundId": ROUND_ID})
                for i in range(args.deals):
                    offers.append(timed(http, ep.RECEIVE_MESSAGE, seller_message(i, "SellOffer")))
                    accept = seller_message(i, "Accept")
                    confirms.append(timed(http, ep.CONFIRM_ACCEPT, accept))
                    booked.append(timed(http, ep.RECEIVE_MESSAGE, accept))
                    logs.append(timed(http, ep.RECEIVE_LOG, {**accept, "permitted": True, "rationale": None}))
            books = local.controller.books
            derive = []
            for _ in range(50):
                started = time.perf_counter()
                books.refresh()
                derive.append((time.perf_counter() - started) * 1000)
            book = books.current()
            deals = len(book.deals) if book is not None else 0
            size = sum(p.stat().st_size for p in config.core.data_dir.glob(LEDGER_FILE + "*"))  # with its WAL
        finally:
            local.stop()
            broker.stop()
    result = {
        "bench": "books",
        "deals_booked": deals,
        "offer_answer_ms": stats(offers),
        "confirm_accept_answer_ms": stats(confirms),
        "booked_accept_answer_ms": stats(booked),
        "log_answer_ms_no_ledger": stats(logs),
        "derive_views_ms": stats(derive),
        "ledger_kb": round(size / 1024, 1),
        "target_p95_ms": TARGET_P95_MS,
        "meets_target": all((p95 := stats(v)["p95"]) is not None and p95 <= TARGET_P95_MS for v in (offers, confirms, booked)),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
