"""Where a recorded session keeps its media, for the sources that play them.

A file source (``replay:``, ``wav:``, ``video:``) given a session folder (what ``humaine-env
record`` writes; :mod:`sessions.format` reads it whole) plays the media file in it, so an
operator can name the folder they recorded rather than the file inside."""

from __future__ import annotations

from pathlib import Path

AUDIO_FILE = "audio.wav"
VIDEO_FILE = "video.mp4"
SESSIONS_DIR = "sessions"
"""Under ``data_dir``: the transcript worker's session logs and, per date, the rounds recorded
as sessions (``sessions/<date>/<round>-<buyer>/``)."""


def media_file(path: str | Path, name: str, what: str) -> tuple[Path, str | None]:
    """The file to play for ``path`` (itself, or ``path/name`` for a folder) and, when it is
    not there, the one line that says so (``what``: "audio", "video")."""
    p = Path(path)
    if p.is_dir():
        inner = p / name
        if inner.is_file():
            return inner, None
        return inner, f"{p} is a folder without {name} (give a {what} file, or a recorded session folder)"
    if not p.is_file():
        return p, f"{what} file {p} not found"
    return p, None
