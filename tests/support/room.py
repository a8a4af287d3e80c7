"""The other side of the bus for a transcript worker under test: a room that publishes what the
microphone, camera and Avatar Controller would, the worker run in a thread or as a process, and a
collector of what a subscription delivers."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.helpers import CHILD_ENV, CLI, wait_for
from transcript.session_log import read_session_log
from transcript.worker import TranscriptWorker
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Attention, OutgoingMessage, RoundState, Transcript, VadEvent, now_ms


class Collector:
    """Collects what a subscription delivers, thread-safely."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.lock = threading.Lock()

    def __call__(self, _topic: str, message: Any) -> None:
        with self.lock:
            self.items.append(message)

    def __len__(self) -> int:
        with self.lock:
            return len(self.items)

    def snapshot(self) -> list[Any]:
        """What was delivered so far (a copy: delivery goes on in the bus's thread)."""
        with self.lock:
            return list(self.items)


def typed_final(n: int) -> Transcript:
    """The ``n``-th of a series of typed finals, stamped now."""
    t = now_ms()
    return Transcript(
        source="typed", final=True, utterance_id=f"u{n}", text=f"I want {n} eggs",
        start=t - 500, end=t, engine="typed", worker="test",
    )


class Room:
    """The other side of the bus: publishes what the microphone, camera and Avatar Controller
    would, and collects the worker's outgoing messages."""

    def __init__(self, config: Config) -> None:
        self.bus = Bus(config, "test-room", persistent=False)
        self.topics = self.bus.topics
        self.outgoing: list[OutgoingMessage] = []
        self.bus.subscribe(self.topics.outgoing_message(), OutgoingMessage, lambda _t, m: self.outgoing.append(m))
        self.bus.start()
        assert self.bus.wait_connected(10)

    def round(self, round_id: int | str | None, phase: str = "round") -> None:
        self.bus.publish(self.topics.round_state(), RoundState(source="avatar", round_id=round_id, phase=phase))

    def look(self, target: str, since: int) -> None:
        self.bus.publish(self.topics.attention(), Attention(source="camera", target=target, since=since))

    def say(self, text: str, start: int, end: int, source: str = "mic", echo: bool = False) -> None:
        self.bus.publish(
            self.topics.transcript_final(),
            Transcript(source=source, final=True, utterance_id=f"u{start}", text=text, confidence=0.9,  # type: ignore[arg-type]
                       start=start, end=end, engine="test", echo=echo),
        )

    def vad(self, event: str, utterance_start: int, at: int) -> None:
        self.bus.publish(self.topics.vad(), VadEvent(source="microphone", event=event, utterance_id=f"u{utterance_start}", at=at))  # type: ignore[arg-type]

    def outcomes(self, count: int, timeout: float = 10.0) -> list[OutgoingMessage]:
        assert wait_for(lambda: len(self.outgoing) >= count, timeout), f"got {self.outgoing}"
        return list(self.outgoing)

    def close(self) -> None:
        self.bus.stop()


SPOKEN = ("Celia one egg", "Watson two eggs", "Celia three eggs", "Watson four eggs", "Celia five eggs")
"""Five lines a buyer says one after another, each naming its seller."""


@contextmanager
def running(config: Config, room: Room, ready_phase: str = "warmup") -> Iterator[TranscriptWorker]:
    """Start the worker and wait until its subscriptions are live (it has seen the retained
    round state, which it subscribes to after the transcripts)."""
    worker = TranscriptWorker(config)
    worker.start()
    thread = threading.Thread(target=worker.run, args=(worker.stop_event,), daemon=True)
    thread.start()
    try:
        assert worker.bus.wait_connected(10)
        assert wait_for(lambda: worker.rounds.state is not None, 10), "worker never saw the round state"
        yield worker
    finally:
        worker.stop()
        thread.join(5)
        assert not thread.is_alive(), "worker did not stop within 5 s"
        worker.close()


def session_records(tmp_path: Path) -> list[dict[str, Any]]:
    (log_file,) = sorted((tmp_path / "sessions").glob("*.jsonl"))
    return list(read_session_log(log_file))


def transcript_process(config: Config, eo_url: str, broker_url: str) -> subprocess.Popen[str]:
    """The transcript worker as the suite starts it: ``python -m humaine_env transcript``."""
    env = config.core.environment_uuid
    return subprocess.Popen(
        [*CLI, "transcript", "--set", f'environment_uuid="{env}"',
         "--set", f'broker.url="{broker_url}"', "--set", 'broker.mode="external"',
         "--set", f'data_dir="{config.core.data_dir}"', "--set", f'eo.url="{eo_url}"'],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=CHILD_ENV, stdin=subprocess.DEVNULL,
    )
