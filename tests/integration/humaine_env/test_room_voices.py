"""Only the room's own workers speak on its screens, with a real mosquitto.

The operator console's feed and ``run``'s terminal each read the bus through a client of their
own. A message claiming the transcript worker's ``source`` from a stray client, one replayed
from the worker's previous run and one typed without any origin (as ``mosquitto_pub`` would) are
shown on neither; the transcript worker's own message is shown on both, and so is what a client
says under its own name on the console (which lists every client of the bus)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from avatar.operator.feed import OperatorFeed
from humaine_env.supervisor import ConsoleLines, RoomLines
from tests.support.helpers import MosquittoBroker, wait_for
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Origin, OutgoingMessage
from workers.runtime.worker_ids import TRANSCRIPT

INTRUDER = "intruder"


def _utterance(text: str, source: str = TRANSCRIPT, origin: Origin | None = None) -> OutgoingMessage:
    body = {"speaker": "Human", "addressee": "Celia", "text": text, "addresseeSource": "name", "source": "mic"}
    return OutgoingMessage(source=source, message=body, outcome="delivered", origin=origin)


@pytest.fixture
def buses(mosquitto: MosquittoBroker, make_config: Callable[..., Config]) -> Iterator[Callable[[str], Bus]]:
    """``bus(name)``: a connected client of one room on the session's mosquitto, stopped at the end."""
    config = make_config(mosquitto.url)
    started: list[Bus] = []

    def bus(name: str, subscribe: Callable[[Bus], Any] | None = None) -> Bus:
        client = Bus(config, name, persistent=False)
        if subscribe is not None:
            subscribe(client)
        client.start()
        started.append(client)
        assert client.wait_connected(10)
        return client

    yield bus  # type: ignore[misc]
    for client in reversed(started):
        client.stop()


def test_a_message_claiming_a_room_workers_name_is_shown_only_when_that_worker_said_it(
    buses: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    readers: dict[str, Any] = {}
    buses("console", lambda bus: readers.update(feed=OperatorFeed(bus)))
    buses("supervisor-test", lambda bus: readers.update(lines=RoomLines(bus, {TRANSCRIPT}, ConsoleLines())))
    feed, lines = readers["feed"], readers["lines"]
    transcript = buses(TRANSCRIPT)  # the worker's own client, as the worker runs it
    assert wait_for(lambda: TRANSCRIPT in lines.statuses and TRANSCRIPT in feed.view()["workers"], 10)

    intruder = buses(INTRUDER)
    topic = intruder.topics.outgoing_message()
    earlier = transcript.origin.model_copy(update={"started_at": transcript.origin.started_at - 60_000})
    intruder.publish(topic, _utterance("forged: two eggs for free"))
    intruder.publish(topic, _utterance("replayed from the previous run", origin=earlier))
    intruder.publish_raw(topic, json.dumps(_utterance("typed by hand").model_dump(exclude={"origin"})).encode())
    intruder.publish(topic, _utterance("the intruder's own words", source=INTRUDER))  # after the others, from the same client

    def shown() -> list[str]:
        return [u.text for u in feed.utterances()]

    # once the intruder's last message is on the console, mosquitto has passed on all before it to every reader
    assert wait_for(lambda: shown() == ["the intruder's own words"], 10), shown()
    transcript.publish(transcript.topics.outgoing_message(), _utterance("Celia, two eggs for 0.8 USD"))
    printed: list[str] = []

    def terminal() -> str:
        printed.append(capsys.readouterr().out)
        return "".join(printed)

    real = 'buyer → Celia (by name): "Celia, two eggs for 0.8 USD"  [delivered]'
    assert wait_for(lambda: real in terminal(), 10), terminal()
    # the console and the terminal are two clients of the broker: each gets it in its own time
    assert wait_for(lambda: shown() == ["the intruder's own words", "Celia, two eggs for 0.8 USD"], 10), shown()
    assert terminal().strip().splitlines() == [real]  # nothing of the intruder's, under any name
