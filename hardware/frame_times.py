"""Per-frame capture times stored next to a recorded video.

A video container only knows a nominal frame rate, but a webcam delivers frames with jitter
and drops; replaying them at ``index / fps`` would drift away from the audio. Recordings
therefore keep the capture time of every frame in a sidecar CSV (``index,t_ms``, ms since the
epoch) that video sources read back, so a replayed frame carries the time it was captured.
"""

from __future__ import annotations

import csv
from pathlib import Path

FRAME_TIMES_FILE = "frames.csv"
"""Name of the sidecar, in the video's folder (a session folder, see docs/sessions.md#the-session-folder)."""


class FrameTimesError(ValueError):
    """The sidecar exists but is not a readable ``index,t_ms`` table."""


def sidecar_of(video: str | Path) -> Path:
    return Path(video).with_name(FRAME_TIMES_FILE)


def read_frame_times(path: str | Path) -> list[int]:
    """The ``t_ms`` column in file order; [] when the file does not exist. A last row without
    its line end (a recorder killed while writing it) is left out: its time may be cut short."""
    p = Path(path)
    if not p.is_file():
        return []
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FrameTimesError(f"{p}: not an index,t_ms table ({exc})") from None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines.pop()
    try:
        return [int(row["t_ms"]) for row in csv.DictReader(lines)]
    except (KeyError, TypeError, ValueError) as exc:
        raise FrameTimesError(f"{p}: not an index,t_ms table ({exc})") from None
