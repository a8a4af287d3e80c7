"""The pages' events as :mod:`avatar.page_events` types them, held against the pages' scripts.

Each page's script dispatches an event through ``handlers[event.type]``, a ``const handlers = {...}``
object. Its keys must be exactly the types of the models that name the page (``pages``) on the
feed the page listens to: a model no handler takes is an event the page silently drops, a
handler no model sends is dead code or a renamed event. The scripts are read as text: the
handler object's top-level keys, whether written ``name(e) {...}`` or ``name: fn``.
"""

from __future__ import annotations

import re

import pytest

from avatar import page_events as pe
from avatar.buyer.book import buyer_event
from avatar.display import DisplayHub
from tests.support.pages import PAGES, script_of

HANDLERS_START = re.compile(r"\bconst\s+handlers\s*=\s*\{")
DISPATCH = re.compile(r"\bhandlers\[\s*event\.type\s*\]")
KEY = re.compile(r"""^\s*(?:async\s+)?["']?([A-Za-z_$][\w$]*)["']?\s*(?:\(|:|$)""")
OPENING, CLOSING = "([{", ")]}"


def _top_level(source: str, start: int) -> str:
    """The text of the object literal opening at ``source[start]`` that is not inside a nested
    bracket, string or comment: its keys and separators."""
    depth, i, kept = 0, start, []
    while i < len(source):
        ch = source[i]
        if source.startswith("//", i):
            i = source.index("\n", i)
            continue
        if source.startswith("/*", i):
            i = source.index("*/", i) + 2
            continue
        if ch in "\"'`":
            end = i + 1
            while source[end] != ch:
                end += 2 if source[end] == "\\" else 1
            if depth == 1:
                kept.append(source[i : end + 1])
            i = end + 1
            continue
        if ch in OPENING:
            depth += 1
        elif ch in CLOSING:
            depth -= 1
            if depth == 0:
                return "".join(kept)
        elif depth == 1:
            kept.append(ch)
        i += 1
    raise AssertionError("the handlers object never closes")


def handler_types(script: str) -> set[str]:
    """The keys of the script's ``handlers`` object."""
    found = HANDLERS_START.search(script)
    assert found is not None, "no `const handlers = {` in the script"
    keys = set()
    for entry in _top_level(script, found.end() - 1).split(","):
        if entry.strip():
            key = KEY.match(entry)
            assert key is not None, f"cannot read a handler key in {entry!r}"
            keys.add(key.group(1))
    return keys


def test_the_handler_reader_takes_methods_properties_and_nested_braces() -> None:
    script = """const handlers = {
      snapshot(s) { if (s.a) { f({ x: "}, y(" }); } },  // a comment, with: a colon
      day: setDay,
      "quoted": (e) => [e, { z: 1 }],
      /* block, comment */ async later(e) { return `${e.type}`; },
    };"""
    assert handler_types(script) == {"snapshot", "day", "quoted", "later"}


@pytest.mark.parametrize("page", list(pe.FEEDS))
def test_each_page_handles_exactly_the_events_meant_for_it(page: pe.Page) -> None:
    assert set(PAGES) == set(pe.FEEDS)  # every page has its feed, every feed its page
    script = script_of(page)
    assert DISPATCH.search(script), f"{page}: events are not dispatched through handlers[event.type]"
    handled = handler_types(script)
    meant = {model.event_type() for model in pe.FEEDS[page] if page in model.pages}
    assert meant - handled == set(), f"{page}'s script has no handler for {sorted(meant - handled)}"
    assert handled - meant == set(), f"{page}'s script handles {sorted(handled - meant)}, which no model sends it"


def test_every_model_is_on_the_feed_of_the_pages_it_names_and_says_why_when_none_does() -> None:
    models = {model for feed in pe.FEEDS.values() for model in feed}
    for model in models:
        assert model.event_type()  # one Literal value each
        for page in model.pages:
            assert model in pe.FEEDS[page], f"{model.__name__} names {page}, whose feed does not carry it"
        if not model.pages:
            assert (model.__doc__ or "").strip(), f"{model.__name__} is shown on no page: its docstring says who reads it"
    feed_only = {m.event_type() for m in models if not m.pages}
    assert feed_only == {"not_spoken", "utility", "rejection"}  # read by the tests and benchmarks that follow a round


def test_the_wire_keeps_numbers_types_and_leaves_out_what_was_not_given() -> None:
    message = pe.MessageEvent(message_id="m1", speaker="Human", addressee="Celia", text="hi", bid=None, at=5)
    assert list(message.wire()) == ["type", "message_id", "speaker", "addressee", "text", "bid", "at"]
    assert message.model_copy(update={"verdict": "queued"}).wire()["verdict"] == "queued"
    buyer_view = pe.BuyerEvent(round_id=3, phase="round", budget=50, spent=0, left=47.5, offers=[], offered=False, deals=[],
                               waiting_eo=[], cut=[], have={}, saved=None, human_totals=None, round_totals=None, result=None,
                               utility=None, utility_problem=None, plan=None, recipe={}).wire()
    assert [type(buyer_view[k]) for k in ("round_id", "budget", "spent", "left")] == [int, int, int, float]
    link = pe.LinkEvent(name="eo", url="http://eo", reachable=None, detail="")
    assert link.wire() == {"type": "link", "name": "eo", "url": "http://eo", "reachable": None, "detail": ""}
    begin = pe.SpeakingBegin(avatar="Celia", text="Hello", message_id="m2", at=7, latency_ms=40)
    assert "audio" not in begin.wire() and begin.caption().wire() == {"avatar": "Celia", "text": "Hello", "message_id": "m2",
                                                                      "at": 7, "latency_ms": 40}
    with pytest.raises(ValueError, match="extra"):
        pe.WordEvent(avatar="Celia", message_id="m2", word="Hello", spoken=True)  # type: ignore[call-arg]


def test_the_display_hub_keeps_what_a_new_page_needs() -> None:
    hub = DisplayHub(["Celia", "Watson"], "buyer", {"Celia": "female"})
    no_round = buyer_event(None)
    first = hub.snapshot().wire()
    assert first["type"] == "snapshot" and "buyer" not in first  # the books were not read yet
    assert first["captions"] == {"Celia": None, "Watson": None}

    def keep(state: pe.DisplayState) -> None:
        state.camera = pe.CameraView(state="online", detail="")
        state.buyer = no_round.view()

    hub.emit(pe.CameraStateEvent(state="online", detail=""), keep)
    later = hub.snapshot()
    assert later.wire()["camera"] == {"state": "online", "detail": ""} and later.wire()["buyer"] == no_round.payload()
    later.captions["Celia"] = pe.Caption(avatar="Celia", text="changed", message_id="m", at=1, latency_ms=0)  # a snapshot is a copy
    assert hub.snapshot().captions["Celia"] is None
    assert hub.snapshot_text().startswith('{"type":"snapshot",')


def test_the_words_a_person_reads_have_their_amounts_written_as_people_write_money() -> None:
    sent, shown = "Two eggs for 0.8 USD, or three for 1.0 USD?", "Two eggs for $0.80, or three for $1.00?"
    events = [
        pe.SpeakingBegin(avatar="Celia", text=sent, message_id="m1", at=1, latency_ms=0),
        pe.MessageEvent(message_id="m1", speaker="Celia", addressee="Human", text=sent, bid=None, at=1),
        pe.LogEvent(speaker="Celia", text=sent, permitted=True, rationale=None, at=1),
        pe.RejectionEvent(speaker="Celia", text=sent, rationale="R4"),
    ]
    assert [event.wire()["text"] for event in events] == [shown] * len(events)
    assert events[0].payload()["text"] == shown  # the caption a page opened later gets
