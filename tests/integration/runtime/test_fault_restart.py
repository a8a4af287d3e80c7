"""Fault injection, a worker restart during speech: finals published while the Rich
Transcript worker is down (killed with SIGKILL, or stopped) reach the EO once it is back.

The broker queues them in the worker's persistent session and delivers them the moment it
reconnects, before the retained round state: its handlers are in place before it connects,
and it holds the finals until it knows the round."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from humaine_platform import endpoints as ep
from standins.recorder import RecordingServer
from tests.support.helpers import MosquittoBroker, wait_for
from tests.support.room import SPOKEN, Collector, Room, running, session_records, transcript_process
from workers.runtime.config import Config
from workers.runtime.messages import Status, Transcript, now_ms


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
def test_no_final_lost_across_a_transcript_worker_restart(
    how: int, mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    eo = RecordingServer().start()
    config = make_config(mosquitto.url)
    room = Room(config)
    statuses = Collector()
    room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
    room.round("r1", "round")
    first = transcript_process(config, eo.url, mosquitto.url)
    second: subprocess.Popen[str] | None = None
    try:
        assert wait_for(lambda: any(s.pid == first.pid and s.state == "online" for s in statuses.items), 20)
        first.send_signal(how)
        first.wait(10)
        for i, text in enumerate(SPOKEN):  # the buyer goes on talking while the worker is down
            t = now_ms()
            room.say(text, t - 900, t - 100 - i, source="typed")
            time.sleep(0.05)
        second = transcript_process(config, eo.url, mosquitto.url)
        assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) >= len(SPOKEN), 20), \
            f"{len(eo.bodies(ep.RELAY_MESSAGE))} of {len(SPOKEN)} relayed"
        time.sleep(1.0)
        assert [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)] == list(SPOKEN)  # none lost, none twice, in order
        outcomes = [m.outcome for m in room.outgoing]
        assert outcomes == ["delivered"] * len(SPOKEN), [(m.outcome, m.reason) for m in room.outgoing]
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=10)
        assert second.returncode == 0 and "Traceback" not in err, err
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
        room.close()
        eo.stop()


def test_finals_queued_for_a_long_absence_are_recorded_not_relayed(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    """A persistent session can hold finals from long ago (the worker was down for an hour):
    the conversation has moved on, so they are recorded as too old; a fresh one is relayed."""
    eo = RecordingServer().start()
    config = make_config(mosquitto.url, **{"eo.url": eo.url, "transcript.session_dir": str(tmp_path / "sessions")})
    room = Room(config)
    room.round("r1", "round")
    try:
        with running(config, room):
            t = now_ms()
            stale = Transcript(source="typed", final=True, utterance_id="old", text="Celia an hour ago",
                               start=t - 3_600_900, end=t - 3_600_100, engine="test", ts=t - 3_600_000)
            room.bus.publish(room.topics.transcript_final(), stale)
            room.say("Watson now", t - 900, t - 100, source="typed")
            assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) == 1, 10)
            time.sleep(0.5)
        assert [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)] == ["Watson now"]
        ignored = [r for r in session_records(tmp_path) if r["kind"] == "final_ignored"]
        assert len(ignored) == 1 and ignored[0]["utterance_id"] == "old" and "too old" in ignored[0]["reason"]
    finally:
        room.close()
        eo.stop()
