"""What of a session folder can be used: each part checked before a replay scores it.

A recording cut short (disk full, a killed recorder, a copy interrupted) leaves parts that are
missing, unreadable or shorter than ``session.json`` says. Scored silently they turn into
figures that look like the suite's accuracy; so each part gets a status and the share of the
session's duration it covers, and ``eval`` prints them beside its scores.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from formats.session_files import AUDIO_FILE, VIDEO_FILE
from sessions.format import EVENTS_FILE, FRAMES_FILE, TRUTH_FILE, Session, SessionFormatError

PartStatus = Literal["ok", "missing", "truncated", "unreadable"]
COMPLETE = 0.98
"""A part covering less than this share of the session's duration is called truncated."""


@dataclass
class Part:
    name: str
    status: PartStatus
    coverage: float | None = None
    """Share of the session's duration the part covers (None where it has no duration)."""
    detail: str = ""


@dataclass
class SessionCoverage:
    session: str
    parts: list[Part] = field(default_factory=list)

    def part(self, name: str) -> Part | None:
        return next((p for p in self.parts if p.name == name), None)

    def usable(self, name: str) -> bool:
        part = self.part(name)
        return part is not None and part.status in ("ok", "truncated")

    @property
    def problems(self) -> list[str]:
        """One line per part that is not fully there."""
        return [f"{self.session}/{p.name}: {p.status}{': ' + p.detail if p.detail else ''}"
                for p in self.parts if p.status != "ok"]

    def summary(self) -> dict[str, Any]:
        return {"session": self.session,
                "coverage": {p.name: p.coverage for p in self.parts if p.coverage is not None},
                "problems": self.problems}

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "parts": [asdict(p) for p in self.parts]}


def _share(covered_s: float, duration_s: float) -> float:
    return round(min(covered_s / duration_s, 1.0), 4) if duration_s > 0 else 0.0


def _timed(name: str, covered_s: float, duration_s: float, unit: str = "s") -> Part:
    share = _share(covered_s, duration_s)
    if share < COMPLETE:
        return Part(name, "truncated", share, f"{covered_s:.1f} of {duration_s:.1f} {unit}")
    return Part(name, "ok", share)


def _audio(session: Session, duration_s: float) -> Part:
    from hardware.audio import AudioSourceError
    from hardware.audio_files import load_audio

    path = session.path / AUDIO_FILE
    if not path.is_file():
        return Part(AUDIO_FILE, "missing", 0.0)
    try:
        samples = load_audio(path)
    except AudioSourceError as exc:
        return Part(AUDIO_FILE, "unreadable", 0.0, str(exc).removeprefix(f"{path}: "))
    return _timed(AUDIO_FILE, len(samples) / session.info.sample_rate, duration_s)


def _frames(session: Session, duration_s: float) -> tuple[Part, int]:
    from hardware.frame_times import FrameTimesError

    path = session.path / FRAMES_FILE
    if not path.is_file():
        return Part(FRAMES_FILE, "missing", 0.0), 0
    try:
        times = session.frame_times()
    except FrameTimesError as exc:
        return Part(FRAMES_FILE, "unreadable", 0.0, str(exc).removeprefix(f"{path}: ")), 0
    if not times:
        return Part(FRAMES_FILE, "truncated", 0.0, "no frame times"), 0
    fps = session.info.camera.fps if session.info.camera else 0.0
    frame_s = 1.0 / fps if fps > 0 else 0.0
    covered = (max(times) - session.info.start_ms) / 1000.0 + frame_s
    return _timed(FRAMES_FILE, covered, duration_s), len(times)


def _video(session: Session, expected_frames: int) -> Part:
    import cv2

    path = session.path / VIDEO_FILE
    if not path.is_file():
        return Part(VIDEO_FILE, "missing", 0.0)
    capture = cv2.VideoCapture(str(path))
    try:
        ok, _ = capture.read() if capture.isOpened() else (False, None)
        if not ok:
            return Part(VIDEO_FILE, "unreadable", 0.0, "no frame can be decoded")
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
    finally:
        capture.release()
    if expected_frames <= 0:
        return Part(VIDEO_FILE, "ok", None, f"{count} frames, no frames.csv to compare")
    share = round(min(count / expected_frames, 1.0), 4)
    if share < COMPLETE:
        return Part(VIDEO_FILE, "truncated", share, f"{count} of {expected_frames} frames")
    return Part(VIDEO_FILE, "ok", share)


def _events(session: Session) -> Part:
    path = session.path / EVENTS_FILE
    if not path.is_file():
        return Part(EVENTS_FILE, "missing")
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    bad = []
    for n, line in enumerate(lines, 1):
        try:
            json.loads(line)
        except json.JSONDecodeError:
            bad.append(n)
    if bad == [len(lines)]:
        return Part(EVENTS_FILE, "truncated", None, f"its last line ({len(lines)}) is cut short")
    if bad:
        return Part(EVENTS_FILE, "unreadable", None, f"{len(bad)} of {len(lines)} lines are not JSON")
    return Part(EVENTS_FILE, "ok")


def _truth(session: Session) -> Part:
    if not (session.path / TRUTH_FILE).is_file():
        return Part(TRUTH_FILE, "missing")
    try:
        session.truth()
    except SessionFormatError as exc:
        return Part(TRUTH_FILE, "unreadable", None, str(exc).removeprefix(f"{session.path / TRUTH_FILE}: "))
    return Part(TRUTH_FILE, "ok")


def check(session: Session) -> SessionCoverage:
    """Every part of ``session``, with its status and coverage."""
    duration_s = session.info.duration_ms / 1000.0
    report = SessionCoverage(session.path.name)
    report.parts.append(_audio(session, duration_s))
    if session.info.camera is not None or (session.path / VIDEO_FILE).is_file():
        frames, count = _frames(session, duration_s)
        report.parts += [_video(session, count), frames]
    report.parts += [_events(session), _truth(session)]
    return report
