"""The camera worker: video source -> pipeline -> ``headpose`` and ``attention`` on MQTT.

* ``headpose``: the buyer's smoothed pose, at most ``headpose_rate_hz`` samples per second of
  frame time (QoS 0: a newer sample replaces a lost one).
* ``attention``: retained, published once at start (nobody) and on every change, with
  ``since`` = the frame time when the new target was first seen, so the Rich Transcript worker
  can line attention up with the words of an utterance. When the camera is lost or the worker
  stops, attention goes back to nobody: a stale retained target would misaddress utterances.
* A missing camera is one readable ``error`` status and periodic retries; the rest of the
  suite goes on without gaze. A camera lost mid-session is the same: error, retry, no crash.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from hardware.clock import Clock
from hardware.video import NoCameraError, VideoSource, VideoSourceError, WebcamSource, frames, open_source
from workers.camera import WORKER_ID
from workers.camera.pipeline import CameraPipeline, FrameResult
from workers.camera.preview import Preview
from workers.camera.settings import CameraSettings
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.logs import NOTICE
from workers.runtime.messages import NOBODY, Attention, HeadPose
from workers.runtime.worker import Worker, WorkerUnavailable


class CameraWorker(Worker):
    name: ClassVar[str] = WORKER_ID

    def __init__(
        self,
        config: Config,
        worker_id: str | None = None,
        bus: Bus | None = None,
        clock: Clock | None = None,
        preview: Preview | None = None,
        opener: Callable[..., VideoSource] = open_source,
        need_camera_at_start: bool = False,
    ) -> None:
        """``opener`` builds the video source from the ``[camera]`` settings (``open_source``
        signature); a recording that simulates a device can stand in for the webcam.
        ``need_camera_at_start``: no webcam when the worker starts means it cannot run here
        (:class:`WorkerUnavailable`: ``humaine-env camera`` under ``run`` goes on without gaze);
        otherwise a missing webcam is an ``error`` status and retried, like one lost later."""
        super().__init__(config, worker_id, bus)
        self.need_camera_at_start = need_camera_at_start
        self.settings = config.section(CameraSettings)
        self.clock = clock
        self.preview = preview
        self.opener = opener
        self.pipeline: CameraPipeline | None = None
        self.frames_processed = 0
        self.headposes_published = 0
        self.attention_changes = 0
        self.source: VideoSource | None = None
        self._last_headpose_ms: int | None = None
        self._attention = NOBODY
        self._started = time.monotonic()
        self._latency_ms = 0.0
        self._last_frame_ms: int | None = None

    # -- health ------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        figures = super().health()
        elapsed = max(1e-6, time.monotonic() - self._started)
        figures.update(
            source=self.settings.source,
            frames=self.frames_processed,
            fps=round(self.frames_processed / elapsed, 1),
            dropped=self.source.stats.dropped if self.source else 0,
            latency_ms=round(self._latency_ms, 1),
            attention=self._attention,
        )
        return figures

    # -- main loop ---------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        if self.need_camera_at_start and self.settings.source.startswith("webcam"):
            # no camera at start: this worker cannot run here (run goes on without gaze), and
            # says so in its status too - not only on the console of a process about to exit
            try:
                self.opener(self.settings.source, self.settings.width, self.settings.height, self.settings.fps,
                            clock=self.clock, stop=stop).close()
            except NoCameraError as exc:
                raise WorkerUnavailable(str(exc)) from None
            except VideoSourceError:
                pass  # a camera that is there but failed: retried below, with an error status meanwhile
        self.log.log(NOTICE, "loading the face models (MediaPipe FaceMesh and face detectors) ...")
        loading = time.monotonic()
        self.pipeline = CameraPipeline(self.settings)
        self.log.log(NOTICE, "face models ready (%.1f s)", time.monotonic() - loading)
        self._publish_attention(NOBODY, None, self.clock.now_ms() if self.clock else None)
        try:
            while not stop.is_set():
                try:
                    source = self.opener(
                        self.settings.source, self.settings.width, self.settings.height,
                        self.settings.fps, clock=self.clock, stop=stop,
                    )
                except VideoSourceError as exc:
                    if not self.settings.source.startswith("webcam"):
                        raise WorkerUnavailable(str(exc)) from None  # a file does not get better by waiting
                    self.report_error(f"camera unavailable: {exc}")
                    stop.wait(self.settings.retry_s)
                    continue
                self.source = source
                if self.preview is not None and not self.preview.fps:
                    self.preview.fps = source.fps  # the recording plays at the camera's speed
                self.report_ok(source.description)
                read = 0
                try:
                    for frame in frames(source, stop):
                        read += 1
                        self.handle(self.pipeline.process(frame))
                except VideoSourceError as exc:
                    self.report_error(f"camera lost: {exc}; retrying every {self.settings.retry_s:g} s")
                    self._lost()
                    stop.wait(self.settings.retry_s)
                    continue
                finally:
                    source.close()
                if not isinstance(source, WebcamSource):
                    if not read and not stop.is_set():
                        raise WorkerUnavailable(f"{source.description}: not one frame could be read")
                    return  # a file or folder ended
        finally:
            self._lost()
            if self.preview is not None:
                self.preview.close()
            self.pipeline.close()

    def handle(self, result: FrameResult) -> None:
        """Publish what one processed frame says (rate-limited pose, attention changes)."""
        self.frames_processed += 1
        self._latency_ms = result.latency_ms
        frame_ms = result.frame.t_ms
        self._last_frame_ms = frame_ms
        if result.pose is not None and result.buyer is not None:
            interval = 1000.0 / self.settings.headpose_rate_hz
            if self._last_headpose_ms is None or frame_ms - self._last_headpose_ms >= interval - 0.5:
                self._last_headpose_ms = frame_ms
                pose = result.pose
                self.bus.publish(
                    self.topics.headpose(),
                    HeadPose(
                        source=self.worker_id,
                        yaw=round(pose.yaw, 2), pitch=round(pose.pitch, 2), roll=round(pose.roll, 2),
                        confidence=round(pose.confidence, 3),
                        face_box=tuple(round(v, 4) for v in result.buyer.face.box),  # type: ignore[arg-type]
                        face_id=result.buyer.face_id, frame_ts=frame_ms,
                    ),
                )
                self.headposes_published += 1
        if result.change is not None:
            self._publish_attention(result.change.target, result.change.previous, result.change.since)
        if self.preview is not None:
            self.preview.show(result)

    def _lost(self) -> None:
        """No frames any more: attention falls back to nobody (and the pipeline forgets)."""
        if self._attention != NOBODY:
            self._publish_attention(NOBODY, self._attention, self._last_frame_ms)
        if self.pipeline is not None:
            self.pipeline.addressee.reset(NOBODY)

    def _publish_attention(self, target: str, previous: str | None, since: int | None) -> None:
        message = Attention(source=self.worker_id, target=target, previous=previous, since=since or 0)
        if since is None:
            message.since = message.ts
        self._attention = target
        self.attention_changes += previous is not None
        self.bus.publish(self.topics.attention(), message)
