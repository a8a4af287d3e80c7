"""The round's books held against the EO's ``/viewTotals``: what only the EO booked is added, a
difference or a round the EO lost is said, each only when two checks in a row see it.

The EO's answers are those the platform EO gives (its ``totals`` shape, a 500 for a round it
forgot, no answer when its process is gone), served in-process; the controller, its ledger and
the console's alerts are real."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from avatar.controller import AvatarController
from avatar.reconcile import CHECK_RETRIES, UNREACHABLE_S, Reconciler, differences, eo_books, ledger_books
from avatar.room_ledger import ledger_in_memory
from avatar.settings import AvatarSettings
from hardware.speaker import Speaker, WavSink
from humaine_platform.client import EOClient, HttpPoster
from tests.support.bids import accept
from workers.runtime.messages import Envelope, now_ms
from workers.runtime.topics import Topic, Topics

EO = "http://eo.test"


class QuietBus:
    """The bus the controller publishes on, kept in a list (nothing here listens)."""

    def __init__(self) -> None:
        self.topics = Topics("reconcile")
        self.published: list[tuple[str, Envelope]] = []

    def publish(self, topic: Topic, message: Envelope) -> None:
        self.published.append((topic.name, message))

    def subscribe(self, topic: Topic, model: Any, handler: Any) -> None: ...

    def own(self, topic: Topic, model: Any, current: Any) -> None: ...


def controller(tmp_path: Path, phase: str = "round", deadline: int | None = None) -> tuple[AvatarController, list[tuple[str, str]]]:
    ledger = ledger_in_memory()
    key = ledger.begin_round("r1", {"warmUp": 1, "round": 60, "post": 10}, 50.0, "USD", "warmup", now_ms(), None).key
    ledger.set_phase(key, phase, now_ms(), deadline)  # type: ignore[arg-type]
    ledger.book_deal(key, "Celia", accept({"egg": 2}, 1.0), "Deal.", "m1", now_ms())
    ctl = AvatarController(AvatarSettings(), ["Celia", "Watson"], QuietBus(), Speaker(WavSink(tmp_path, realtime=False)),
                           ledger=ledger)
    alerts: list[tuple[str, str]] = []
    ctl.on_alert(lambda kind, text: alerts.append((kind, text)))
    return ctl, alerts


def eo_answering(*answers: httpx.Response | Exception) -> httpx.MockTransport:
    """An EO that gives these answers to ``/viewTotals``, one per check, then the last again."""
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handle)


def totals(celia: tuple[float, dict[str, int]], watson: tuple[float, dict[str, int]] | None = None) -> httpx.Response:
    """``/viewTotals`` as the platform EO answers it: the speaker's and the addressee's books."""
    human_goods: dict[str, int] = {}
    body: dict[str, Any] = {"Celia": {"price": celia[0], "quantity": celia[1]}}
    for seller in (celia, watson):
        for good, n in (seller[1] if seller else {}).items():
            human_goods[good] = human_goods.get(good, 0) + n
    if watson is not None:
        body["Watson"] = {"price": watson[0], "quantity": watson[1]}
    body["Human"] = {"price": celia[0] + (watson[0] if watson else 0), "quantity": human_goods}
    return httpx.Response(200, json=body)


def checks(ctl: AvatarController, eo: httpx.MockTransport, count: int, clock: Callable[[], float] = time.monotonic) -> list[str]:
    async def run() -> list[str]:
        reconciler = Reconciler(ctl, EO, EOClient(EO, HttpPoster(transport=eo, retry=CHECK_RETRIES)), clock=clock)
        try:
            return [await reconciler.check() for _ in range(count)]
        finally:
            await reconciler.eo.aclose()

    return asyncio.run(run())


def test_books_that_agree_are_left_alone(tmp_path: Path) -> None:
    ctl, alerts = controller(tmp_path)
    assert checks(ctl, eo_answering(totals((1.0, {"egg": 2}))), 3) == ["agree"] * 3
    assert alerts == []


def test_a_deal_only_the_eo_booked_is_added_from_its_totals_after_two_checks(tmp_path: Path) -> None:
    ctl, alerts = controller(tmp_path)
    eo = totals((1.0, {"egg": 2}), (0.6, {"flour": 2}))  # Watson's deal never reached the room
    assert checks(ctl, eo_answering(eo), 3) == ["differ (once)", "differ", "agree"]
    assert len(alerts) == 1
    book = ctl.ledger.current_book()
    assert book is not None and [(d.seller, d.goods, d.price, d.source) for d in book.deals][-1] == \
        ("Watson", {"flour": 2}, 0.6, "eo-totals")
    assert book.left == 48.4
    (kind, text), = alerts
    assert kind == "books_differ" and "Watson +2 flour for +0.60" in text and "added" in text


def test_a_difference_the_room_cannot_mend_is_said_once(tmp_path: Path) -> None:
    ctl, alerts = controller(tmp_path)
    behind = httpx.Response(200, json={"Human": {"price": 0, "quantity": {}}})  # the room has a deal the EO has not
    assert checks(ctl, eo_answering(behind), 6)[1:] == ["differ", "differ (once)", "differ (said)", "differ (said)", "differ (said)"]
    assert len(alerts) == 1 and "Celia -2 egg for -1.00" in alerts[0][1] and "added" not in alerts[0][1]


def test_a_difference_seen_once_is_the_eo_booking_before_it_forwards(tmp_path: Path) -> None:
    ctl, alerts = controller(tmp_path)
    ahead = totals((1.0, {"egg": 2}), (0.6, {"flour": 2}))
    assert checks(ctl, eo_answering(ahead, totals((1.0, {"egg": 2}))), 2) == ["differ (once)", "agree"]
    assert alerts == [] and len(ctl.ledger.current_book().deals) == 1  # type: ignore[union-attr]


def test_a_round_the_eo_forgot_is_lost_or_over(tmp_path: Path) -> None:
    ctl, alerts = controller(tmp_path)
    forgot = httpx.Response(500, text="TypeError")
    assert checks(ctl, eo_answering(forgot), 3)[-1] == "unknown (never known)"  # no proof the EO ever had it
    assert ctl.ledger.current().phase == "round" and alerts == []  # type: ignore[union-attr]
    assert checks(ctl, eo_answering(totals((1.0, {"egg": 2})), forgot), 2) == ["agree", "unknown"]  # at the first check
    assert ctl.ledger.current().phase == "lost" and alerts[0][0] == "round_lost"  # type: ignore[union-attr]
    assert "what was booked stays booked" in ctl.ledger.current().note  # type: ignore[union-attr]

    # that the EO knew the round is the ledger's: a room restarted after the EO forgot it still knows
    again, alerts = controller(tmp_path / "again")
    assert checks(again, eo_answering(totals((1.0, {"egg": 2}))), 1) == ["agree"]
    restarted = AvatarController(AvatarSettings(), ["Celia", "Watson"], QuietBus(), Speaker(WavSink(tmp_path, realtime=False)),
                                 ledger=again.ledger)
    assert checks(restarted, eo_answering(forgot), 1) == ["unknown"]
    assert restarted.ledger.current().phase == "lost"  # type: ignore[union-attr]

    late, alerts = controller(tmp_path / "late", phase="post", deadline=now_ms() - 60_000)
    assert checks(late, eo_answering(httpx.Response(500)), 1) == ["unknown"]
    current = late.ledger.current()
    assert current is not None and current.phase == "ended" and "totals never reached" in current.note

    # a round whose post-round would have ended while the room was away is over, not lost, whatever
    # phase the ledger last had
    away, alerts = controller(tmp_path / "away", phase="round", deadline=now_ms() - 60_000)
    assert checks(away, eo_answering(totals((1.0, {"egg": 2})), forgot), 2) == ["agree", "unknown"]
    current = away.ledger.current()
    assert current is not None and current.phase == "ended" and "totals never reached" in current.note


def test_an_error_that_is_no_word_on_the_round_loses_nothing(tmp_path: Path) -> None:
    """Only the EOs' own answers for a round they do not have (the stand-in's 404, the platform's
    500) say it is gone; a proxy's 502 or a refused token says nothing of it."""
    ctl, alerts = controller(tmp_path)
    assert checks(ctl, eo_answering(totals((1.0, {"egg": 2}))), 1) == ["agree"]
    for status in (502, 503, 401):
        assert checks(ctl, eo_answering(httpx.Response(status)), 2)[-1].startswith("no word")
    assert ctl.ledger.current().phase == "round" and alerts == []  # type: ignore[union-attr]
    assert checks(ctl, eo_answering(httpx.Response(404)), 1) == ["unknown"]
    assert ctl.ledger.current().phase == "lost"  # type: ignore[union-attr]


def test_an_eo_gone_after_a_cut_confirmation_lost_the_round(tmp_path: Path) -> None:
    ctl, alerts = controller(tmp_path)
    gone = httpx.ConnectError("connection refused")
    assert checks(ctl, eo_answering(gone), 2) == ["unreachable", "unreachable"]
    assert ctl.ledger.current().phase == "round" and alerts == []  # type: ignore[union-attr]  # the EO may just be away
    # the previous run stopped while the EO waited for the buyer's answer to an Accept; this run takes the round up
    ctl.ledger.add_prompt("p1", ctl.ledger.current().key, "Watson", "Deal?", accept({"egg": 1}, 2.0), now_ms())  # type: ignore[union-attr]
    ctl.rounds.take_up()
    assert ctl.cut_prompts == 1
    # an EO still starting (it restarted with the room) is given UNREACHABLE_S to answer
    seconds = iter([0.0, 0.0, 5.0])
    assert checks(ctl, eo_answering(gone), 2, clock=lambda: next(seconds))[-1] == "unreachable"
    assert ctl.ledger.current().phase == "round" and alerts == []  # type: ignore[union-attr]
    later = iter([0.0, 0.0, UNREACHABLE_S])
    assert checks(ctl, eo_answering(gone), 2, clock=lambda: next(later))[-1] == "unreachable"
    assert ctl.ledger.current().phase == "lost" and "lost by the EO" in alerts[0][1]  # type: ignore[union-attr]


def test_the_eos_totals_are_read_liberally() -> None:
    assert eo_books(None) is None and eo_books([1, 2]) is None and eo_books({}) == {}
    documented = {"roundId": "r1", "phase": "round", "roundTotals": {"Human": {"cost": 2}, "Celia": {"revenue": 2, "quantity": {"egg": 1}}}}
    assert eo_books(documented)["Celia"].price == 2.0  # type: ignore[index]
    odd = eo_books({"Celia": {"price": "lots", "quantity": {"egg": "two", "milk": 1}}, "Watson": "?"})
    assert odd is not None and odd["Celia"].price == 0.0 and odd["Celia"].goods == {"milk": 1}
    ledger = ledger_in_memory()
    key = ledger.begin_round("r1", {}, 50.0, "USD", "round", now_ms(), None).key
    ledger.book_deal(key, "Celia", accept({"milk": 1}, 0.0), "", "m", now_ms())
    assert differences(odd, ledger_books(ledger.book(key))) == {}  # type: ignore[arg-type]
