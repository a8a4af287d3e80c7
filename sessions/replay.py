"""Replay a session through the real workers: camera, microphone and Rich Transcript worker
on a real MQTT broker, delivering to a recording stand-in EO on loopback.

Two modes:

* as fast as possible (``speed=None``), deterministic: each source runs on its own
  :class:`VirtualClock` anchored at the session's start, so every frame and audio block gets
  exactly its recorded time whatever the CPU does. Camera and microphone run concurrently
  (the two passes share the machine's cores), but the audio may never get closer than
  :data:`AUDIO_LAG_MS` of session time to the last frame the camera has finished
  (:class:`CameraProgress`): by the time an utterance's final transcript exists, every
  attention change it could depend on has been published, so the transcript worker decides
  with the complete attention history. Same session, same messages, every run.
* paced (``speed=1.0`` or any factor): both sources share one virtual clock running ``speed``
  times real time, as in the room, started once both workers are ready (:class:`HeldClock`);
  this is the mode for latency figures.

Every run uses a fresh environment id so retained messages of an earlier run never leak in.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hardware.clock import Clock, VirtualClock
from hardware.video import Frame, VideoSource
from hardware.video import open_source as open_video
from sessions.format import Session
from sessions.together import HeldClock, start_together
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Envelope, now_ms
from workers.runtime.ports import free_port, taken_port
from workers.runtime.worker import EXIT_UNAVAILABLE, Worker, run_worker
from workers.runtime.worker_ids import CAMERA, MICROPHONE, TRANSCRIPT

if TYPE_CHECKING:
    from standins.recorder import RecordingServer
    from workers.camera.worker import CameraWorker

log = logging.getLogger(__name__)

AUDIO_LAG_MS = 5000
"""Fast replay: the audio stays this much session time behind the camera's progress. An
attention change is published once its new target held ``min_dwell_ms`` (0.3 s) on most
frames, so 5 s leaves a wide margin, and it costs nothing but a short wait at the start."""
SETTLE_S = 0.3
"""Pause after a worker's last publication so the broker has delivered it to every subscriber."""
CONNECT_TIMEOUT_S = 10.0


class ReplayError(Exception):
    """The session cannot be replayed (missing media, broker unreachable, a worker failed);
    ``exit_code`` is the command's (:data:`~workers.runtime.EXIT_UNAVAILABLE` when a worker
    cannot run here: no speech model, say)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class BusEvent:
    t_ms: int
    """Wall-clock receipt time."""
    topic: str
    payload: dict[str, Any]


@dataclass
class ReplayResult:
    session: Session
    speed: float | None
    engine: str
    environment: str
    events: list[BusEvent] = field(default_factory=list)
    wall_s: float = 0.0
    wall_origin_ms: int = 0
    """Wall time at which the session's ``start_ms`` was replayed (paced mode only)."""
    camera_frames: int = 0

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if e.payload.get("type") == kind]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript worker's outgoing messages (envelopes), in publication order."""
        return self.of_type("humaine_message")

    def signature(self) -> list[tuple[Any, ...]]:
        """What must be identical between two replays of one session: per message its text,
        addressee, how the addressee was decided, utterance times and outcome."""
        out = []
        for env in self.messages:
            m = env["message"]
            out.append((m.get("text"), m.get("addressee"), m.get("addresseeSource"), m.get("utteranceStart"),
                        m.get("utteranceEnd"), env.get("outcome")))
        return out


class BusRecorder:
    """Subscribes to everything of one environment and keeps it, time-stamped on receipt."""

    def __init__(self, config: Config, client_id: str) -> None:
        self.bus = Bus(config, client_id)
        self.broker_url = config.broker.url
        self.events: list[BusEvent] = []
        self._lock = threading.Condition()

    def start(self) -> None:
        self.bus.subscribe(self.bus.topics.everything(), Envelope, self._on)
        self.bus.start()
        if not self.bus.wait_connected(CONNECT_TIMEOUT_S):
            raise ReplayError(f"cannot reach the MQTT broker at {self.broker_url} (start mosquitto, or set [broker] url)")

    def _on(self, topic: str, message: Envelope) -> None:
        with self._lock:
            self.events.append(BusEvent(now_ms(), topic, message.model_dump(mode="json")))
            self._lock.notify_all()

    def count(self, kind: str, predicate: Callable[[dict[str, Any]], object] | None = None) -> int:
        with self._lock:
            return sum(1 for e in self.events if e.payload.get("type") == kind and (predicate is None or predicate(e.payload)))

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(min(remaining, 0.1))
        return True

    def stop(self) -> None:
        self.bus.stop()


class CameraProgress:
    """How far (session time) the camera worker has got, for the audio to follow behind it.

    A frame counts as done when the worker asks for the next one: by then its head pose and any
    attention change it caused have been published."""

    def __init__(self) -> None:
        self._done_ms = -math.inf
        self._cond = threading.Condition()

    def mark(self, t_ms: float) -> None:
        with self._cond:
            self._done_ms = max(self._done_ms, t_ms)
            self._cond.notify_all()

    def finish(self) -> None:
        """The camera ended (or failed): nothing more to wait for."""
        self.mark(math.inf)

    def wait_past(self, t_ms: float, stop: threading.Event | None) -> bool:
        with self._cond:
            while self._done_ms < t_ms:
                if stop is not None and stop.is_set():
                    return False
                self._cond.wait(0.1)
        return True

    def opener(self, *args: Any, **kwargs: Any) -> VideoSource:
        """``open_source`` for the camera worker, reporting each finished frame."""
        return _ProgressSource(open_video(*args, **kwargs), self)


class _ProgressSource:
    def __init__(self, inner: VideoSource, progress: CameraProgress) -> None:
        self.inner = inner
        self.progress = progress
        self.description = inner.description
        self.stats = inner.stats
        self._previous: int | None = None

    @property
    def fps(self) -> float:
        return self.inner.fps

    def read(self) -> Frame | None:
        if self._previous is not None:
            self.progress.mark(self._previous)
        frame = self.inner.read()
        self._previous = frame.t_ms if frame is not None else None
        return frame

    def close(self) -> None:
        self.inner.close()


class FollowingClock(VirtualClock):
    """As fast as possible, but never within ``lag_ms`` of the camera's progress."""

    def __init__(self, start_ms: int, progress: CameraProgress, lag_ms: float) -> None:
        super().__init__(start_ms, None)
        self.progress = progress
        self.lag_ms = lag_ms

    def sleep_until(self, t_ms: int, stop: threading.Event | None = None) -> bool:
        if not self.progress.wait_past(t_ms + self.lag_ms, stop):
            return False
        return super().sleep_until(t_ms, stop)


def _start(worker: Worker, on_exit: Callable[[], None] | None = None) -> threading.Thread:
    thread = threading.Thread(target=_run, args=(worker, on_exit), name=f"replay-{worker.worker_id}", daemon=True)
    thread.start()
    return thread


def _run(worker: Worker, on_exit: Callable[[], None] | None) -> None:
    """A worker's thread: run it to its end, then ``on_exit``."""
    try:
        run_worker(worker, False, say_failure=False)  # replay says it, in its own line
    finally:
        if on_exit is not None:
            on_exit()


def _stop(worker: Worker, thread: threading.Thread) -> None:
    worker.stop()
    thread.join(10)


def replay_config(base: Config, session: Session, environment: str, eo_url: str, speed: float | None,
                  engine: str | None, media: tuple[bool, bool] = (True, True)) -> Config:
    """``base`` with what replaying ``session`` needs: its media as sources, its avatars and
    targets, a fixed round so messages are relayed, delivery to the stand-in EO. ``media``:
    whether to use its (audio, video) at all."""
    info = session.info
    audio = session.audio_path if media[0] else None
    video = session.video_path if media[1] else None
    kind = "video" if speed is None else "replay"
    # audio is always paced by its clock: in fast mode that clock follows the camera
    overrides: dict[str, Any] = {
        "environment_uuid": environment,
        "avatars": list(info.avatars),
        "camera.targets": info.targets,
        "transcript.round_id": 1,
        "transcript.session_log": False,
        "transcript.ttl_s": 60.0,
        "transcript.history_s": info.duration_ms / 1000 + 120.0,
        "eo.url": eo_url,
    }
    if video is not None and info.camera is not None:
        overrides.update({"camera.source": f"{kind}:{video}", "camera.fps": info.camera.fps,
                          "camera.width": info.camera.width, "camera.height": info.camera.height,
                          "camera.mirrored": info.camera.mirrored})
    if audio is not None:
        overrides["microphone.source"] = f"replay:{audio}"
    if engine:
        overrides["microphone.engine"] = engine
    return base.with_overrides(overrides)


def replay(session: Session, base: Config, speed: float | None = None, engine: str | None = None,
           timeout_s: float = 600.0, media: tuple[bool, bool] = (True, True)) -> ReplayResult:
    """Run ``session`` through the workers; returns everything published on the bus.
    ``media``: whether to replay its (audio, video) - a part found unreadable is left out."""
    from transcript.worker import TranscriptWorker

    environment = f"replay-{uuid.uuid4().hex[:10]}"
    started = time.monotonic()
    eo = _recording_eo(base)
    try:
        config = replay_config(base, session, environment, eo.url, speed, engine, media)
        recorder = BusRecorder(config, f"replay-recorder-{environment}")
        recorder.start()
        clocks = ReplayClocks.for_speed(session.info.start_ms, speed)
        # paced: finals are held for merging in session time, as live; as fast as possible,
        # wall time (the session's times are long past, so nothing waits)
        transcript = TranscriptWorker(config, worker_id=TRANSCRIPT, clock=clocks.held)
        t_thread = _start(transcript)
        if not transcript.bus.wait_connected(CONNECT_TIMEOUT_S):
            raise ReplayError("the transcript worker cannot reach the MQTT broker")
        time.sleep(SETTLE_S)  # its subscriptions are acknowledged before anything is published
        result = ReplayResult(session, speed, engine or "", environment)
        try:
            camera = _perceive(session, config, clocks, media, result, started + timeout_s)
            _wait_for_messages(recorder, camera.attention_changes if camera is not None else None)
            result.camera_frames = camera.frames_processed if camera is not None else 0
        finally:
            _stop(transcript, t_thread)
            recorder.stop()
    finally:
        eo.stop()
    result.events = sorted(recorder.events, key=lambda e: e.t_ms)
    result.wall_s = time.monotonic() - started
    return result


@dataclass
class ReplayClocks:
    """The clocks of one replay (see the module docstring): as fast as possible, the camera's
    own and the audio's following it; paced, one :class:`HeldClock` for both."""

    progress: CameraProgress
    camera: Clock
    audio: Clock
    held: HeldClock | None = None

    @classmethod
    def for_speed(cls, start_ms: int, speed: float | None) -> ReplayClocks:
        progress = CameraProgress()
        if speed is None:
            return cls(progress, VirtualClock(start_ms, None), FollowingClock(start_ms, progress, AUDIO_LAG_MS))
        held = HeldClock(start_ms, speed)
        return cls(progress, held, held, held)


def _recording_eo(base: Config) -> RecordingServer:
    """The replay's stand-in EO, listening (``[replay] recorder_host``/``recorder_port``)."""
    from sessions.settings import ReplaySettings
    from standins.recorder import RecordingServer

    where = base.section(ReplaySettings)
    if where.recorder_port:
        taken = taken_port([("the replay's stand-in EO ([replay] recorder_port; 0: any free port)",
                             where.recorder_host, where.recorder_port)])
        if taken:
            raise ReplayError(taken, EXIT_UNAVAILABLE)
    eo = RecordingServer(where.recorder_host, where.recorder_port or free_port(where.recorder_host))
    try:
        eo.start()
    except RuntimeError:
        raise ReplayError(f"cannot listen on {eo.host}:{eo.port} for the replay's stand-in EO ([replay] recorder_port)") from None
    return eo


def _perceive(session: Session, config: Config, clocks: ReplayClocks, media: tuple[bool, bool], result: ReplayResult,
              deadline: float) -> CameraWorker | None:
    """Run the camera and microphone workers over the session's media to their ends (by
    ``deadline``, monotonic); returns the camera worker (None: no video replayed). A paced
    replay's wall origin goes to ``result``."""
    from workers.camera.worker import CameraWorker
    from workers.microphone.worker import MicrophoneWorker

    camera: CameraWorker | None = None
    if media[1] and session.video_path and session.info.camera is not None:
        camera = CameraWorker(config, worker_id=CAMERA, clock=clocks.camera, opener=clocks.progress.opener)
    else:
        clocks.progress.finish()
    with_audio = media[0] and session.audio_path is not None
    mic = MicrophoneWorker(config, worker_id=MICROPHONE, clock=clocks.audio) if with_audio else None
    c_thread = _start(camera, clocks.progress.finish) if camera is not None else None
    m_thread = _start(mic) if mic is not None else None
    running: list[tuple[CameraWorker | MicrophoneWorker, threading.Thread]] = [
        (w, t) for w, t in ((mic, m_thread), (camera, c_thread)) if w is not None and t is not None]
    if clocks.held is not None:
        start_together(clocks.held, running)
        result.wall_origin_ms = now_ms()
    try:
        for worker, thread in running:
            _join_to_end(worker, thread, deadline)
            if worker.failure:
                raise ReplayError(f"{worker.worker_id}: {worker.failure}", worker.exit_code or 1)
    except ReplayError:
        for worker, thread in running:
            _stop(worker, thread)
        raise
    return camera


def _wait_for_messages(recorder: BusRecorder, attention_changes: int | None) -> None:
    """Until the bus has delivered what the workers published: every attention change of the
    camera (``None``: no camera) and a message for every final transcript."""
    if attention_changes is not None:
        published = attention_changes + 1
        recorder.wait_until(lambda: recorder.count("attention") >= published, 10.0)
    finals = recorder.count("transcript", lambda p: p.get("final") and p.get("text", "").strip())
    recorder.wait_until(lambda: recorder.count("humaine_message") >= finals, 30.0)
    time.sleep(SETTLE_S)


def _join_to_end(worker: Worker, thread: threading.Thread, deadline: float) -> None:
    """Wait for a worker whose source is finite to end by itself."""
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        _stop(worker, thread)
        raise ReplayError(f"{worker.worker_id} did not finish its source in time")

