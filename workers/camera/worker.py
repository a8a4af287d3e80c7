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
from pathlib import Path
from typing import Any, ClassVar

from hardware.clock import Clock
from hardware.video import NoCameraError, VideoSource, VideoSourceError, WebcamSource, frames, open_source
from workers.camera.calibration import CalibrationError, LiveCalibration, derive, save, seat_of
from workers.camera.facemesh import Box
from workers.camera.pipeline import CameraPipeline, FrameResult
from workers.camera.preview import Preview
from workers.camera.settings import CameraSettings
from workers.runtime.bus import Bus
from workers.runtime.config import DEFAULT_CONFIG_FILE, Config
from workers.runtime.logs import NOTICE
from workers.runtime.messages import NOBODY, Attention, Calibration, CalibrationState, CameraGeometry, HeadPose, now_ms
from workers.runtime.worker import DeviceAbsent, Worker, WorkerUnavailable
from workers.runtime.worker_ids import CAMERA as WORKER_ID


def _rounded(box: Box) -> Box:
    """A face box as published: four decimals (a tenth of a pixel of a 1000-pixel frame)."""
    x, y, width, height = box
    return round(x, 4), round(y, 4), round(width, 4), round(height, 4)


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
        self.settings = config.section(CameraSettings).for_room(config.core.avatars)
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
        self._calibration_request: Calibration | None = None
        """The console's latest request, taken up by the frame loop (set on the MQTT thread)."""
        self._calibration: LiveCalibration | None = None
        self._calibration_id = ""
        self.bus.subscribe(self.topics.camera_calibration(), Calibration, self._on_calibration)
        s = self.settings
        self._geometry = CameraGeometry(source=self.worker_id, targets={n: t.model_dump() for n, t in s.targets.items()},
                                        tolerance_deg=s.tolerance_deg, hysteresis_deg=s.hysteresis_deg)
        """The directions in use, retained for the console (again after a calibration)."""
        self.bus.own(self.topics.camera_geometry(), CameraGeometry, lambda: self._geometry)

    @property
    def media_open(self) -> bool:
        """The face models are loaded and the video source is open (recorded media started
        together wait for this: :mod:`sessions.together`)."""
        return self.source is not None

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
                raise DeviceAbsent(f"{exc}: the addressee comes from the names the buyer says") from None
            except VideoSourceError:
                pass  # a camera that is there but failed: retried below, with an error status meanwhile
        self.log.log(NOTICE, "loading the face models (MediaPipe FaceMesh and face detectors) ...")
        loading = time.monotonic()
        self.pipeline = CameraPipeline(self.settings)
        self.log.log(NOTICE, "face models ready (%.1f s)", time.monotonic() - loading)
        self._publish_attention(NOBODY, None, self.clock.now_ms() if self.clock else None)
        self.bus.publish(self.topics.camera_geometry(), self._geometry)
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
        self._calibrate(result)
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
                        face_box=_rounded(result.buyer.face.box),
                        face_id=result.buyer.face_id, frame_ts=frame_ms,
                        mouth_open=round(result.mouth, 4) if result.mouth is not None else None,
                    ),
                )
                self.headposes_published += 1
        if result.change is not None:
            self._publish_attention(result.change.target, result.change.previous, result.change.since)
        if self.preview is not None:
            self.preview.show(result)

    # -- calibration from the console -------------------------------------------------------
    def _on_calibration(self, _topic: str, message: Calibration) -> None:
        """A calibration request (this worker's own answers come back here too, and are not)."""
        if message.state != "requested":
            return
        if self.pipeline is None or self.source is None:
            self._answer(message.id, "failed", detail="the camera delivers no frames yet (still starting, or no camera)")
            return
        self._calibration_request = message

    def _calibrate(self, result: FrameResult) -> None:
        """Feed one frame to the calibration under way (or the one just requested)."""
        request, self._calibration_request = self._calibration_request, None
        if request is not None:
            self._calibration = LiveCalibration(self.config.core.avatars, self.settings.calibrate_s, self.settings.calibrate_settle_s)
            self._calibration_id = request.id
            self.log.log(NOTICE, "calibrating for the buyer in the seat (asked by %s)", request.source)
            self._measuring(self._calibration)
        calibration = self._calibration
        if calibration is None:
            return
        try:
            if not calibration.add(result):
                return
        except CalibrationError as exc:
            self._calibration = None
            self._answer(self._calibration_id, "failed", detail=str(exc))
            self.log.warning("%s", exc)
            return
        if not calibration.done:
            self._measuring(calibration)
            return
        self._calibration = None
        self._calibrated(calibration)

    def _measuring(self, calibration: LiveCalibration) -> None:
        deadline = now_ms() + round(calibration.phase_s * 1000)
        self._answer(self._calibration_id, "measuring", phase=calibration.phase, phase_deadline=deadline)

    def _calibrated(self, calibration: LiveCalibration) -> None:
        """Use the new directions at once, keep them in the configuration file, say so."""
        targets, tolerance = derive(calibration.phases)
        seat = seat_of(calibration.phases)
        assert self.pipeline is not None
        self.pipeline.recalibrate(targets, tolerance, seat)
        path = Path(self.config.path or DEFAULT_CONFIG_FILE)
        try:
            save(path, targets, tolerance, seat)
            detail = f"in use; saved to {path}"
        except OSError as exc:
            detail = f"in use until the camera worker restarts; not saved to {path}: {exc.strerror or exc}"
            self.log.warning("calibration %s", detail)
        self.log.log(NOTICE, "calibrated: %s, tolerance %g deg (%s)",
                     ", ".join(f"{n} yaw {t.yaw:+.1f} pitch {t.pitch:+.1f}" for n, t in targets.items()), tolerance, detail)
        directions = {name: target.model_dump() for name, target in targets.items()}
        self._answer(self._calibration_id, "done", detail=detail, tolerance_deg=tolerance, targets=directions)
        self._geometry = CameraGeometry(source=self.worker_id, targets=directions, tolerance_deg=tolerance,
                                        hysteresis_deg=self._geometry.hysteresis_deg)
        self.bus.publish(self.topics.camera_geometry(), self._geometry)

    def _answer(self, request_id: str, state: CalibrationState, **fields: Any) -> None:
        self.bus.publish(self.topics.camera_calibration(),
                         Calibration(source=self.worker_id, state=state, request_id=request_id, **fields))

    def _lost(self) -> None:
        """No frames any more: attention falls back to nobody (and the pipeline forgets)."""
        if self._calibration is not None:
            self._calibration = None
            self._answer(self._calibration_id, "failed", detail="the camera stopped delivering frames")
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
