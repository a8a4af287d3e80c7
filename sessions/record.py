"""Record a session while the suite runs: audio, video and every bus message of the environment.

The media come from any source ``hardware/`` can open (a microphone and a webcam, or files
standing in for them); the bus traffic is everything published under ``Topics(env)``, each
payload kept with its topic and the time it was received. The result is a session folder
(:mod:`sessions.format`) that ``humaine-env replay`` feeds back through the workers.

A webcam (and often a microphone) can be opened by one process only, so the recorder can also
run the camera and microphone workers itself, fed with the very frames and audio blocks it
records (``perceive``): the suite then runs without its own camera and microphone
(``humaine-env run --without camera,mic``), and the recording holds exactly what the
perception saw, with the same timestamps.

Times: ``session.json``'s ``start_ms`` is the recorder's start; audio blocks are placed at
their capture times (a source opened late or a device that stalled leaves silence, never a
shift), frames keep their capture times in ``frames.csv``. ``session.json`` is written last,
when recording stops, so a folder without it is an interrupted recording.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hardware.audio import SAMPLE_RATE, AudioBlock, AudioSource, AudioSourceError, NoInputDeviceError
from hardware.audio_sources import open_source as open_audio
from hardware.clock import Clock, RealClock, paced_by_clock
from hardware.video import Frame, NoCameraError, VideoSource, VideoSourceError, frames
from hardware.video import open_source as open_video
from sessions.format import SESSION_FILE, CameraInfo, SessionInfo, SessionWriter
from sessions.together import HeldClock, start_together
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Envelope
from workers.runtime.worker import Worker, run_worker

if TYPE_CHECKING:
    from workers.camera.worker import CameraWorker
    from workers.microphone.worker import MicrophoneWorker

log = logging.getLogger(__name__)

AUDIO_GAP_TOLERANCE_MS = 60
"""A block later than where the track has got to by more than this starts after silence
(whole blocks of it, so replay cuts the file into the very blocks that were recorded);
smaller differences are capture jitter and the samples are simply appended."""
CONNECT_TIMEOUT_S = 5.0
WORKER_STOP_S = 10.0


class RecordUnavailable(Exception):
    """A device the recording needs is not on this machine (no camera, no microphone):
    recording cannot be done here, and waiting will not help (exit status 3)."""


class RecordError(Exception):
    """The recording cannot start (a source does not open, the folder is taken)."""


class AudioTrack:
    """Puts audio blocks at their capture times: sample ``n`` of ``audio.wav`` is at
    ``start_ms + n / 16`` ms, the property replay relies on to line audio up with video."""

    def __init__(self, writer: SessionWriter | None, start_ms: int) -> None:
        self.writer = writer
        self.start_ms = start_ms
        self.samples = 0
        self._lock = threading.Lock()

    def add(self, block: AudioBlock) -> None:
        at = (block.t_ms - self.start_ms) * SAMPLE_RATE // 1000
        with self._lock:
            assert self.writer is not None, "blocks arrive only once the session folder is open"
            gap = at - self.samples
            if gap > AUDIO_GAP_TOLERANCE_MS * SAMPLE_RATE // 1000:
                n = len(block.samples)
                gap = round(gap / n) * n
                self.writer.add_audio(np.zeros(gap, dtype=np.int16))
                self.samples += gap
            self.writer.add_audio(block.samples)
            self.samples += len(block.samples)

    @property
    def duration_ms(self) -> int:
        return self.samples * 1000 // SAMPLE_RATE


class TeeVideoSource:
    """A video source that hands every frame it delivers to ``on_frame`` as well."""

    def __init__(self, inner: VideoSource, on_frame: Callable[[Frame, VideoSource], None]) -> None:
        self.inner = inner
        self.on_frame = on_frame
        self.description = inner.description
        self.stats = inner.stats
        """The inner source's own figures (it counts them in place)."""

    @property
    def fps(self) -> float:
        return self.inner.fps

    def read(self) -> Frame | None:
        frame = self.inner.read()
        if frame is not None:
            self.on_frame(frame, self.inner)
        return frame

    def close(self) -> None:
        self.inner.close()


class TeeAudioSource:
    """An audio source that hands every block it delivers to ``on_block`` as well."""

    def __init__(self, inner: AudioSource, on_block: Callable[[AudioBlock], None]) -> None:
        self.inner = inner
        self.on_block = on_block
        self.kind = inner.kind
        self.description = inner.description

    def blocks(self, stop: threading.Event) -> Any:
        for block in self.inner.blocks(stop):
            self.on_block(block)
            yield block

    def stats(self) -> dict[str, object]:
        return self.inner.stats()

    def close(self) -> None:
        self.inner.close()


class Recorder:
    """One recording into ``folder``. :meth:`run` records until ``stop`` is set, or, when every
    medium ended by itself (file sources), ``linger_s`` later (the messages the last words
    cause arrive a moment after them)."""

    def __init__(self, config: Config, folder: str | Path, audio_spec: str | None, video_spec: str | None,
                 perceive: bool = False, clock: Clock | None = None, linger_s: float = 5.0) -> None:
        from workers.camera.settings import CameraSettings

        self.config = config
        self.folder = Path(folder)
        if (self.folder / SESSION_FILE).exists():
            raise RecordError(f"{self.folder} already holds a session; record into a new folder")
        if audio_spec is None and video_spec is None:
            raise RecordError("nothing to record: give an audio source, a video source or both")
        self.audio_spec = audio_spec
        self.video_spec = video_spec
        self.perceive = perceive
        specs = [spec for spec in (audio_spec, video_spec) if spec is not None]
        self._held: HeldClock | None = None
        """Recorded files perceived by the workers: their clock starts once both are ready."""
        if clock is None and perceive and all(paced_by_clock(spec) for spec in specs):
            self._held = HeldClock(RealClock().now_ms(), 1.0)
        self.clock: Clock = clock or self._held or RealClock()
        self.linger_s = linger_s
        self.camera = config.section(CameraSettings)
        self.counts: dict[str, int] = {}
        """Bus messages recorded, by payload type."""
        self.frames = 0
        self._count_lock = threading.Condition()
        self.info: SessionInfo | None = None
        self.writer: SessionWriter | None = None
        self.audio: AudioTrack | None = None
        self.media_ended = threading.Event()
        """Set once every medium ended by itself (file sources)."""

    # -- media -------------------------------------------------------------------------------
    def _on_frame(self, frame: Frame, source: VideoSource) -> None:
        assert self.writer is not None and self.info is not None
        if self.info.camera is None:
            width, height = frame.size
            self.info.camera = CameraInfo(width, height, round(source.fps, 3), mirrored=self.camera.mirrored)
        self.writer.add_frame(frame.image, frame.t_ms)
        self.frames += 1

    def _open_video(self, stop: threading.Event) -> TeeVideoSource:
        assert self.video_spec is not None
        c = self.camera
        inner = open_video(self.video_spec, c.width, c.height, c.fps, clock=self.clock, stop=stop)
        return TeeVideoSource(inner, self._on_frame)

    def _open_audio(self) -> TeeAudioSource:
        from workers.microphone.settings import MicrophoneSettings

        assert self.audio_spec is not None
        if self.audio is None:
            self.audio = AudioTrack(None, self.clock.now_ms())
        block_ms = self.config.section(MicrophoneSettings).block_ms
        inner = open_audio(self.audio_spec, clock=self.clock, block_ms=block_ms, start_ms=self.clock.now_ms())
        return TeeAudioSource(inner, self.audio.add)

    # -- bus ---------------------------------------------------------------------------------
    def _on_message(self, topic: str, message: Envelope) -> None:
        assert self.writer is not None
        payload = message.model_dump(mode="json")
        self.writer.add_event({"t_ms": self.clock.now_ms(), "kind": "mqtt", "topic": topic, "payload": payload})
        with self._count_lock:
            self.counts[message.type] = self.counts.get(message.type, 0) + 1
            self._count_lock.notify_all()

    def count(self, kind: str) -> int:
        with self._count_lock:
            return self.counts.get(kind, 0)

    def wait_for(self, kind: str, n: int, timeout: float) -> bool:
        """Block until ``n`` messages of type ``kind`` were recorded (tests, scripts)."""
        with self._count_lock:
            return self._count_lock.wait_for(lambda: self.counts.get(kind, 0) >= n, timeout)

    # -- the recording -----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> Path:
        """Record until stopped; returns the session folder (complete, ``session.json`` last)."""
        start_ms = self.clock.now_ms()
        self.audio = AudioTrack(None, start_ms)
        self.info = self._session_info(start_ms)
        media_stop = threading.Event()
        video, audio = self._open_media(media_stop)
        self.writer = SessionWriter(self.folder, self.info)
        self.audio.writer = self.writer
        bus = self._recording_bus()
        threads: list[tuple[threading.Thread, Worker | None]] = []
        try:
            threads = self._start_media(video, audio, media_stop, stop)
            self._record_until(stop, threads)
        finally:
            media_stop.set()
            _stop_threads(threads)
            if not self.perceive:
                for source in (video, audio):
                    if source is not None:
                        source.close()
            bus.stop()
            self.info.duration_ms = max(self.clock.now_ms() - start_ms, self.audio.duration_ms)
            self.writer.close()
        log.info("recorded %s: %.1f s, %d frames, %s", self.folder, self.info.duration_ms / 1000, self.frames,
                 ", ".join(f"{n} {k}" for k, n in sorted(self.counts.items())) or "no bus traffic")
        return self.folder

    def _session_info(self, start_ms: int) -> SessionInfo:
        """``session.json`` as far as it is known at the start (the camera's size comes with its
        first frame, the duration at the end)."""
        core = self.config.core
        return SessionInfo(
            environment_uuid=core.environment_uuid, start_ms=start_ms, duration_ms=0, avatars=list(core.avatars),
            targets={n: {"yaw": t.yaw, "pitch": t.pitch} for n, t in self.camera.targets.items()},
            camera=None, audio=self.audio_spec is not None, source="recorded",
            notes={"audio_source": self.audio_spec, "video_source": self.video_spec, "perceive": self.perceive},
        )

    def _open_media(self, media_stop: threading.Event) -> tuple[TeeVideoSource | None, TeeAudioSource | None]:
        """Open both sources before writing anything: a missing device leaves no half folder."""
        video: TeeVideoSource | None = None
        try:
            video = self._open_video(media_stop) if self.video_spec else None
            if video is not None and self.perceive:
                # the camera worker opens it itself once its model is loaded: frames read
                # before the worker runs would be older than its first attention message
                video.close()
            audio = self._open_audio() if self.audio_spec else None
        except (VideoSourceError, AudioSourceError) as exc:
            if video is not None:
                video.close()
            if isinstance(exc, (NoCameraError, NoInputDeviceError)):
                raise RecordUnavailable(str(exc)) from None
            raise RecordError(str(exc)) from None
        return video, audio

    def _recording_bus(self) -> Bus:
        """Every message of the environment into the session, from now on."""
        bus = Bus(self.config, f"record-{uuid.uuid4().hex[:8]}")
        bus.subscribe(bus.topics.everything(), Envelope, self._on_message)
        bus.start()
        if not bus.wait_connected(CONNECT_TIMEOUT_S):
            log.warning("MQTT broker %s not reachable yet: recording media, bus traffic once it connects",
                        self.config.broker.url)
        return bus

    def _start_media(self, video: TeeVideoSource | None, audio: TeeAudioSource | None, media_stop: threading.Event,
                     stop: threading.Event) -> list[tuple[threading.Thread, Worker | None]]:
        """The threads that read the media: the perceiving workers (started together on recorded
        files), else a plain reader for each source."""
        if self.perceive:
            workers = self._start_workers(audio)
            if self._held is not None:
                start_together(self._held, workers, stop)
            return [(thread, worker) for worker, thread in workers]
        threads: list[tuple[threading.Thread, Worker | None]] = []
        if video is not None:
            threads.append((_thread("record-video", _drain_video, video, media_stop), None))
        if audio is not None:
            threads.append((_thread("record-audio", _drain_audio, audio, media_stop), None))
        return threads

    def _record_until(self, stop: threading.Event, threads: list[tuple[threading.Thread, Worker | None]]) -> None:
        """Until ``stop``, or until every medium ended and ``linger_s`` more passed."""
        log.info("recording into %s (stop with Ctrl-C)", self.folder)
        while not stop.is_set() and any(t.is_alive() for t, _ in threads):
            stop.wait(0.2)
        if not stop.is_set():
            self.media_ended.set()
            log.info("the sources ended; recording the bus for %.1f s more", self.linger_s)
            stop.wait(self.linger_s)

    def _start_workers(self, audio: TeeAudioSource | None) -> list[tuple[CameraWorker | MicrophoneWorker, threading.Thread]]:
        """The camera and microphone workers on the recorded media (see the module docstring)."""
        from sessions.tee_microphone import TeeMicrophone
        from workers.camera.worker import CameraWorker

        overrides: dict[str, Any] = {}
        if self.video_spec:
            overrides["camera.source"] = self.video_spec
        if self.audio_spec:
            overrides["microphone.source"] = self.audio_spec
        config = self.config.with_overrides(overrides)
        started: list[tuple[CameraWorker | MicrophoneWorker, threading.Thread]] = []
        if self.video_spec:
            camera = CameraWorker(config, clock=self.clock, opener=self._open_tee_video)
            started.append((camera, _thread("record-camera", run_worker, camera, False)))
        if audio is not None:
            mic = TeeMicrophone(config, self.clock, audio, self._open_audio)
            started.append((mic, _thread("record-mic", run_worker, mic, False)))
        return started

    def _open_tee_video(self, spec: str, width: int, height: int, fps: float, clock: Clock | None = None,
                        stop: threading.Event | None = None) -> VideoSource:
        """``open_source`` for the camera worker: the frames it reads are recorded too."""
        return TeeVideoSource(open_video(spec, width, height, fps, clock=clock, stop=stop), self._on_frame)


def _stop_threads(threads: list[tuple[threading.Thread, Worker | None]]) -> None:
    for thread, worker in threads:
        if worker is not None:
            worker.stop()
        thread.join(WORKER_STOP_S)


def _thread(name: str, target: Callable[..., Any], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


def _drain_video(source: VideoSource, stop: threading.Event) -> None:
    for _ in frames(source, stop):
        pass


def _drain_audio(source: AudioSource, stop: threading.Event) -> None:
    for _ in source.blocks(stop):
        pass
