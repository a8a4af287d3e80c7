"""The ``[camera]`` configuration section.

Targets are where each avatar is seen from the buyer's seat, as head yaw/pitch in degrees
(the convention of :class:`workers.runtime.messages.HeadPose`); ``humaine-env calibrate`` measures
and writes them. Example (Celia to the buyer's left: yaw > 0)::

    [camera]
    source = "webcam:0"
    [camera.targets.Celia]
    yaw = 25.0
    pitch = 0.0
    [camera.targets.Watson]
    yaw = -25.0
    pitch = 0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workers.runtime.config import DEFAULT_AVATARS, Section
from workers.runtime.topics import check_segment


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")

    yaw: float
    pitch: float = 0.0


class Seat(BaseModel):
    """Where the buyer's face is in the frame when they sit in the buyer's seat (measured by
    ``humaine-env calibrate``): the centre and size of their face box, fractions of the frame."""

    model_config = ConfigDict(extra="forbid")

    x: float = Field(ge=0, le=1)
    y: float = Field(ge=0, le=1)
    width: float = Field(gt=0, le=1)
    height: float = Field(gt=0, le=1)


def default_targets() -> dict[str, Target]:
    """The first avatar to the buyer's left and the second to their right, a typical two-screen
    booth (Celia and Watson in the default room)."""
    return dict(zip(DEFAULT_AVATARS, (Target(yaw=25.0), Target(yaw=-25.0)), strict=True))


class CameraSettings(Section):
    section_name: ClassVar[str] = "camera"

    source: str = "webcam:0"
    """``webcam[:INDEX]``, ``video:PATH``, ``images:DIR`` or ``replay:PATH``."""
    width: int = Field(640, gt=0)
    """Frame size asked of the webcam (it may deliver another)..."""
    height: int = Field(480, gt=0)
    """...and its height."""
    fps: float = Field(30.0, gt=0)
    """Frame rate asked of the webcam; for images: the rate stills are fed at."""
    mirrored: bool = False
    """True when the camera delivers a mirrored (selfie) image; yaw and roll are flipped back."""
    method: Literal["kabsch", "pnp"] = "kabsch"
    """Head-pose fit: ``kabsch`` (a rigid fit of the landmarks to a 3D face, the more accurate on
    rendered views) or ``pnp`` (OpenCV ``solvePnP``). Measured by ``bench/sessions_pose.py
    --methods kabsch,pnp`` (rendered views at known pose) and ``bench/camera.py`` (the labelled
    stills); see docs/measurements.md."""
    fov_deg: float = Field(60.0, gt=10, lt=170)
    """Horizontal field of view, used only by the ``pnp`` method."""
    max_faces: int = Field(3, ge=1, le=10)
    """Faces considered when choosing the buyer. Above 1, other faces come from a scan run
    ``scan_hz`` times a second beside the buyer's per-frame tracking."""
    seat: Seat | None = None
    """The buyer's face at calibration; with several faces in view the buyer is the face
    closest to it in position and size. Without it, the largest and most central face."""
    scan_hz: float = Field(3.0, gt=0, le=30)
    """How often (frame time) to look for faces other than the tracked one."""
    headpose_rate_hz: float = Field(15.0, gt=0, le=60)
    """Upper bound on published head-pose samples per second (QoS 0 stream)."""
    min_confidence: float = Field(0.3, ge=0, le=1)
    """Poses below this fit confidence count as no face."""
    one_euro_min_cutoff_hz: float = Field(1.0, gt=0)
    """One-Euro smoothing of the pose: lower is smoother when the head is still..."""
    one_euro_beta: float = Field(0.05, ge=0)
    """...higher follows fast turns with less lag."""
    targets: dict[str, Target] = Field(default_factory=default_targets)
    """Where each avatar is seen from the buyer's seat, as head yaw/pitch in degrees (``humaine-env calibrate`` writes them)."""
    tolerance_deg: float = Field(15.0, gt=0)
    """A pose counts for a target when within this angle of it (yaw/pitch distance)."""
    hysteresis_deg: float = Field(5.0, ge=0)
    """The current target keeps the buyer until this much beyond the tolerance."""
    min_dwell_ms: int = Field(300, ge=0)
    """A new target must hold this long (and at least two frames) before attention changes."""
    retry_s: float = Field(3.0, gt=0)
    """Seconds between attempts to reopen a lost camera."""
    calibrate_s: float = Field(3.0, gt=0, le=60)
    """Calibration: seconds measured per phase (each avatar, then away)..."""
    calibrate_settle_s: float = Field(1.0, ge=0, le=10)
    """...after this many seconds at the start of each phase, while the head still turns."""

    def for_room(self, avatars: Sequence[str]) -> CameraSettings:
        """These settings with a target for each of the room's avatars (``[core] avatars``) and
        no other: the configured or calibrated one, else the default target of its place (the
        first avatar to the buyer's left, the second to their right), so a room with other
        names has gaze before it is calibrated and never attends to an avatar it does not have."""
        defaults = list(default_targets().values())
        targets = {}
        for place, name in enumerate(avatars):
            if name in self.targets:
                targets[name] = self.targets[name]
            elif place < len(defaults):
                targets[name] = defaults[place]
        return self.model_copy(update={"targets": targets})

    @model_validator(mode="after")
    def _check_targets(self) -> CameraSettings:
        for name in self.targets:
            check_segment(name, "camera target name")
        return self
