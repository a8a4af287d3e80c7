"""The competition day in one table: every round with its buyer, deals, money and scores.

The operator names the buyer of the next round on the console; the day book then follows each
round through the buyer's book (:class:`avatar.buyer.book.BuyerBook`: deals, the saved allocation,
the EO's round totals) and the transcript worker's outcomes (utterances that never reached the
EO). After every change of a round it writes the day to ``data_dir/day/<date>.json`` and
``.csv``, so a crash of anything keeps the day so far, and the console serves both files.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import MAX_BUYER_CHARS, now_ms

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

DAY_DIR: Final = "day"
"""Under ``data_dir``: one JSON and one CSV file per date."""
CSV_COLUMNS: Final = ("date", "round", "buyer", "started", "deals", "paid", "allocation_saved", "buyer_utility",
                      "seller_revenue", "seller_utility", "undelivered")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _utility(entry: Any) -> float | None:
    """A participant's utility in the EO's totals: ``{"value": ...}`` or a bare number."""
    if isinstance(entry, Mapping):
        return _number(entry.get("value"))
    return _number(entry)


def clean_buyer(name: Any) -> str:
    """The operator's label for a buyer: printable, one line, bounded (it goes into files)."""
    text = " ".join(str(name or "").split())
    return "".join(ch for ch in text if ch.isprintable())[:MAX_BUYER_CHARS]


class DayBook:
    """The day's rounds, kept in memory and written to ``folder`` after every change."""

    def __init__(self, folder: Path, today: datetime.date | None = None) -> None:
        self.folder = folder
        self.date = (today or datetime.date.today()).isoformat()
        self._lock = threading.Lock()
        self._rounds: dict[str, dict[str, Any]] = {}
        self.next_buyer = ""
        self._load()

    # -- what happens ------------------------------------------------------------------------------
    def set_buyer(self, name: Any, round_id: Any = None) -> str:
        """The buyer of the next round (and of ``round_id`` when it runs already)."""
        label = clean_buyer(name)
        with self._lock:
            self.next_buyer = label
            if round_id is not None and str(round_id) in self._rounds:
                self._rounds[str(round_id)]["buyer"] = label
        self._write()
        return label

    def on_buyer_view(self, view: Mapping[str, Any]) -> None:
        """The buyer's book changed (a new round, a deal, a saved allocation, the totals)."""
        round_id = view.get("round_id")
        if round_id is None:
            return
        key = str(round_id)
        deals = view.get("deals") if isinstance(view.get("deals"), list) else []
        with self._lock:
            entry = self._rounds.get(key)
            if entry is None:
                entry = self._rounds[key] = {"round": key, "buyer": self.next_buyer, "started": now_ms(), "undelivered": 0,
                                             "totals": None}
            entry["deals"] = [{"seller": d.get("seller"), "goods": d.get("goods"), "price": d.get("price")} for d in deals]
            entry["paid"] = _number(view.get("spent")) or 0.0
            entry["allocation_saved"] = view.get("saved") is not None
            if view.get("human_totals") is not None:
                entry["totals"] = view.get("human_totals")
            totals = view.get("round_totals")
            if isinstance(totals, Mapping):
                entry["sellers"] = {str(name): {"revenue": _number(e.get("revenue")), "utility": _utility(e.get("utility"))}
                                    for name, e in totals.items() if isinstance(e, Mapping) and "revenue" in e}
        self._write()

    def undelivered(self, round_id: Any) -> None:
        """One of the buyer's utterances in this round never reached the EO (or may not have)."""
        if round_id is None:
            return
        with self._lock:
            entry = self._rounds.get(str(round_id))
            if entry is None:
                return
            entry["undelivered"] = int(entry.get("undelivered", 0)) + 1
        self._write()

    # -- what the console shows and serves ---------------------------------------------------------
    def rounds(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(json.dumps(entry)) for entry in self._rounds.values()]

    def summary(self) -> dict[str, Any]:
        """The day per round, per buyer and per seller."""
        rounds = self.rounds()
        buyers: dict[str, dict[str, Any]] = {}
        sellers: dict[str, dict[str, Any]] = {}
        for entry in rounds:
            buyer = buyers.setdefault(entry.get("buyer") or "(unnamed)", {"rounds": 0, "deals": 0, "paid": 0.0, "utility": 0.0})
            buyer["rounds"] += 1
            buyer["deals"] += len(entry.get("deals") or [])
            buyer["paid"] = round(buyer["paid"] + (entry.get("paid") or 0.0), 2)
            buyer["utility"] = round(buyer["utility"] + (_utility((entry.get("totals") or {}).get("utility")) or 0.0), 2)
            for name, figures in (entry.get("sellers") or {}).items():
                seller = sellers.setdefault(name, {"rounds": 0, "revenue": 0.0, "utility": 0.0})
                seller["rounds"] += 1
                seller["revenue"] = round(seller["revenue"] + (figures.get("revenue") or 0.0), 2)
                seller["utility"] = round(seller["utility"] + (figures.get("utility") or 0.0), 2)
        return {"date": self.date, "rounds": [self._row(e) for e in rounds], "buyers": buyers, "sellers": sellers,
                "next_buyer": self.next_buyer}

    def _row(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        sellers = entry.get("sellers") or {}
        return {
            "date": self.date,
            "round": entry.get("round"),
            "buyer": entry.get("buyer") or "",
            "started": datetime.datetime.fromtimestamp((entry.get("started") or 0) / 1000).strftime("%H:%M:%S"),
            "deals": len(entry.get("deals") or []),
            "paid": entry.get("paid") or 0.0,
            "allocation_saved": bool(entry.get("allocation_saved")),
            "buyer_utility": _utility((entry.get("totals") or {}).get("utility")),
            "seller_revenue": round(sum(s.get("revenue") or 0.0 for s in sellers.values()), 2) if sellers else None,
            "seller_utility": round(sum(s.get("utility") or 0.0 for s in sellers.values()), 2) if sellers else None,
            "undelivered": entry.get("undelivered", 0),
        }

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in self.summary()["rounds"]:
            writer.writerow({key: "" if row[key] is None else row[key] for key in CSV_COLUMNS})
        return out.getvalue()

    # -- files ----------------------------------------------------------------------------------
    @property
    def json_file(self) -> Path:
        return self.folder / f"{self.date}.json"

    @property
    def csv_file(self) -> Path:
        return self.folder / f"{self.date}.csv"

    def _load(self) -> None:
        """Go on with the day a restarted controller had written (the rounds so far)."""
        try:
            data = json.loads(self.json_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        for entry in data.get("detail", []) if isinstance(data, dict) else []:
            if isinstance(entry, dict) and entry.get("round") is not None:
                self._rounds[str(entry["round"])] = entry

    def _write(self) -> None:
        """Both files, each replaced whole (a reader never sees half a file); a disk problem is
        one rate-limited line, the day goes on in memory."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            payload = {**self.summary(), "detail": self.rounds()}
            for path, text in ((self.json_file, json.dumps(payload, indent=1)), (self.csv_file, self.csv_text())):
                staging = path.with_name(path.name + ".tmp")
                staging.write_text(text, encoding="utf-8", newline="")  # the CSV's own line ends, as served
                os.replace(staging, path)
        except OSError as exc:
            _notes.warning(("write", exc.errno), "the day's summary cannot be written to %s: %s", self.folder, exc.strerror or exc)
