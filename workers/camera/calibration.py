"""Learn each avatar's direction from the buyer's seat, and save it to the TOML config.

The buyer looks at each avatar in turn, then away, a few seconds each. Each phase's target is
the median smoothed pose over the phase (after a settling time while the head turns), which
shrugs off blinks and the odd mis-fit. The angular tolerance is set to a fraction of the
smallest separation between the measured directions (avatars and "away"), so that targets
never overlap and looking away does not count as looking at anyone.

The buyer's face box over all phases (median centre and size) is saved too, as the seat
(:class:`Seat`): with several people in view, the buyer is the face closest to it.
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardware.video import Frame
from workers.camera.pipeline import CameraPipeline, FrameResult
from workers.camera.settings import CameraSettings, Seat, Target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

AWAY = "away"
TOLERANCE_SHARE = 0.45
"""Tolerance = this share of the smallest separation between calibrated directions."""
MIN_TOLERANCE_DEG = 5.0
MAX_TOLERANCE_DEG = 30.0
MIN_SAMPLES = 5
"""A phase with fewer usable poses than this failed (no face, wrong seat)."""


class CalibrationError(Exception):
    """Calibration could not measure a phase; the message says what to do."""


@dataclass(frozen=True)
class PhaseResult:
    name: str
    yaw: float
    pitch: float
    samples: int
    spread_deg: float
    """Median absolute deviation of yaw over the phase: how steady the head was."""
    seat: Seat | None = None
    """The buyer's median face box over the phase."""


class PhaseMeter:
    """One phase measured frame by frame: the command reads its own frames, the camera worker
    hands over the frames its pipeline has processed anyway (it holds the webcam)."""

    def __init__(self, name: str, seconds: float, settle_s: float) -> None:
        self.name, self.seconds, self.settle_s = name, seconds, settle_s
        self.yaws: list[float] = []
        self.pitches: list[float] = []
        self.boxes: list[tuple[float, float, float, float]] = []
        self.start: int | None = None

    def add(self, result: FrameResult) -> bool:
        """Take one processed frame; True once the phase has lasted ``settle_s + seconds``."""
        t_ms = result.frame.t_ms
        self.start = t_ms if self.start is None else self.start
        elapsed = (t_ms - self.start) / 1000.0
        if elapsed >= self.settle_s and result.pose is not None and result.buyer is not None:
            self.yaws.append(result.pose.yaw)
            self.pitches.append(result.pose.pitch)
            self.boxes.append(result.buyer.face.box)
        return elapsed >= self.settle_s + self.seconds

    def result(self) -> PhaseResult:
        if len(self.yaws) < MIN_SAMPLES:
            raise CalibrationError(
                f"calibration '{self.name}': saw a face in only {len(self.yaws)} frames; sit in front of the camera "
                f"in the buyer's seat, check lighting, and try again"
            )
        yaw, pitch = statistics.median(self.yaws), statistics.median(self.pitches)
        spread = statistics.median(abs(y - yaw) for y in self.yaws)
        return PhaseResult(self.name, yaw, pitch, len(self.yaws), spread, _median_seat(self.boxes))


def measure_phase(
    name: str, frames: Iterator[Frame], pipeline: CameraPipeline, seconds: float, settle_s: float
) -> PhaseResult:
    """Consume ``settle_s + seconds`` of frame time from ``frames`` and summarise the poses."""
    meter = PhaseMeter(name, seconds, settle_s)
    for frame in frames:
        if meter.add(pipeline.process(frame)):
            break
    return meter.result()


class LiveCalibration:
    """Every phase in turn (each avatar, then away) on frames handed over one by one."""

    def __init__(self, avatars: Iterable[str], seconds: float, settle_s: float) -> None:
        self.names = [*avatars, AWAY]
        self.seconds, self.settle_s = seconds, settle_s
        self.phases: list[PhaseResult] = []
        self.meter = PhaseMeter(self.names[0], seconds, settle_s)

    @property
    def phase(self) -> str:
        """The phase being measured (what the buyer should look at now)."""
        return self.meter.name

    @property
    def phase_s(self) -> float:
        return self.settle_s + self.seconds

    @property
    def done(self) -> bool:
        return len(self.phases) == len(self.names)

    def add(self, result: FrameResult) -> bool:
        """Take one processed frame; True when a phase ended (:class:`CalibrationError` when it
        failed). After the last one, :attr:`done`."""
        if self.done or not self.meter.add(result):
            return False
        self.phases.append(self.meter.result())
        if not self.done:
            self.meter = PhaseMeter(self.names[len(self.phases)], self.seconds, self.settle_s)
        return True


def _median_seat(boxes: list[tuple[float, float, float, float]]) -> Seat:
    return Seat(
        x=statistics.median(x + w / 2 for x, _, w, _ in boxes),
        y=statistics.median(y + h / 2 for _, y, _, h in boxes),
        width=statistics.median(w for _, _, w, _ in boxes),
        height=statistics.median(h for _, _, _, h in boxes),
    )


def seat_of(phases: Iterable[PhaseResult]) -> Seat | None:
    """The buyer's seat over all phases (the median of the phases' seats), rounded."""
    seats = [p.seat for p in phases if p.seat is not None]
    if not seats:
        return None
    return Seat(**{k: round(statistics.median(getattr(s, k) for s in seats), 4) for k in ("x", "y", "width", "height")})


def derive(phases: Iterable[PhaseResult]) -> tuple[dict[str, Target], float]:
    """(targets per avatar, tolerance) from measured phases (the ``away`` phase included)."""
    measured = list(phases)
    targets = {p.name: Target(yaw=round(p.yaw, 1), pitch=round(p.pitch, 1)) for p in measured if p.name != AWAY}
    separations = [
        math.hypot(a.yaw - b.yaw, a.pitch - b.pitch) for a, b in itertools.combinations(measured, 2)
    ]
    if not separations:
        return targets, CameraSettings.model_fields["tolerance_deg"].default
    tolerance = min(MAX_TOLERANCE_DEG, max(MIN_TOLERANCE_DEG, TOLERANCE_SHARE * min(separations)))
    return targets, round(tolerance, 1)


def save(path: Path, targets: Mapping[str, Target], tolerance_deg: float, seat: Seat | None = None) -> None:
    """Write ``[camera] tolerance_deg``, ``[camera.targets.*]`` and ``[camera.seat]`` into the
    TOML file at ``path``, keeping everything else in it (the file is created when missing)."""
    import tomli_w

    data: dict[str, Any] = {}
    if path.is_file():
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    camera = dict(data.get("camera", {}))
    camera["tolerance_deg"] = tolerance_deg
    camera["targets"] = {name: target.model_dump() for name, target in targets.items()}
    if seat is not None:
        camera["seat"] = seat.model_dump()
    data["camera"] = camera
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(tomli_w.dumps(data), encoding="utf-8")
    tmp.replace(path)
