"""Fault injection, a hung worker: stopped with SIGSTOP it keeps its retained ``online`` (the
broker sees a live connection for a while), so the operator console marks it silent once its
refreshes stop (three refresh periods), and well again once it goes on (SIGCONT)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

from avatar.operator.feed import MISSED_REFRESHES, OperatorFeed
from standins.recorder import RecordingServer
from tests.support.helpers import MosquittoBroker, wait_for
from tests.support.room import Room, transcript_process
from workers.runtime.config import Config
from workers.runtime.messages import now_ms
from workers.runtime.worker import HEALTH_INTERVAL_S

SILENT_WITHIN_S = MISSED_REFRESHES * HEALTH_INTERVAL_S + 2 * HEALTH_INTERVAL_S


def test_a_worker_stopped_with_sigstop_is_shown_silent_then_well_again(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    eo = RecordingServer().start()
    config = make_config(mosquitto.url)
    room = Room(config)
    feed = OperatorFeed(room.bus)  # the console's own picture of the room, on a real bus
    assert room.bus.wait_connected(10)
    worker = transcript_process(config, eo.url, mosquitto.url)

    def transcript() -> dict:
        feed.check_silent(now_ms())
        return feed.view()["workers"].get("transcript") or {}

    try:
        assert wait_for(lambda: transcript().get("state") == "online", 30)
        worker.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        assert wait_for(lambda: transcript().get("silent") is True, SILENT_WITHIN_S, interval=0.2), transcript()
        silent_after = time.monotonic() - stopped
        assert transcript().get("state") == "online"  # the retained status alone still says online
        assert any(a.kind == "worker_silent" and "transcript" in a.text for a in feed.alerts())
        worker.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        assert wait_for(lambda: transcript().get("silent") is False, 2 * HEALTH_INTERVAL_S + 2, interval=0.2), transcript()
        print(f"\nSIGSTOP -> silent on the console after {silent_after:.1f} s; SIGCONT -> well again after "
              f"{time.monotonic() - resumed:.1f} s")
    finally:
        worker.send_signal(signal.SIGCONT)
        worker.terminate()
        worker.wait(10)
        room.close()
        eo.stop()
