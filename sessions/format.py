"""The recorded-session folder: what a session is on disk, and one reader/writer for it.

A session is a folder (documented in docs/sessions.md#the-session-folder)::

    session.json   environment, avatars and their gaze targets, camera intrinsics, start time
    audio.wav      16 kHz mono int16, sample 0 at ``start_ms``
    video.mp4      the camera stream
    frames.csv     ``index,t_ms``: capture time of every video frame (ms since the epoch)
    events.jsonl   bus traffic and HTTP exchanges, one JSON object a line, time-ordered
    truth.json     optional ground truth: utterances (text, addressee, cue, start/end) and gaze
                   spans (target, yaw/pitch), plus the head pose of every frame

Times are ms since the epoch everywhere, so audio sample ``n`` is at
``start_ms + n * 1000 / 16000`` and frame ``i`` at ``frames[i]``: replay puts them back on one
clock. The format is deliberately plain (WAV, MP4, CSV, JSON lines) so any tool can open it.
"""

from __future__ import annotations

import csv
import json
import wave
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from formats.session_files import AUDIO_FILE, VIDEO_FILE
from hardware.audio import SAMPLE_RATE
from hardware.frame_times import FRAME_TIMES_FILE, read_frame_times

if TYPE_CHECKING:
    from hardware.video import Image  # its module opens OpenCV, which only writing a video needs

FORMAT_NAME = "humaine-session"
FORMAT_VERSION = 1
SESSION_FILE = "session.json"
FRAMES_FILE = FRAME_TIMES_FILE
EVENTS_FILE = "events.jsonl"
TRUTH_FILE = "truth.json"
VIDEO_FOURCC = "mp4v"
"""MPEG-4 part 2: written and read by OpenCV's bundled ffmpeg without extra codecs."""

Cue = Literal["gaze", "name", "none"]
Speaker = Literal["buyer", "bystander"]


class SessionFormatError(Exception):
    """A folder is not a readable session; the message says which file and what is wrong."""


@dataclass
class CameraInfo:
    width: int
    height: int
    fps: float
    hfov_deg: float | None = None
    matrix: list[list[float]] | None = None
    """3x3 pinhole intrinsics when known (always for rendered sessions)."""
    mirrored: bool = False


@dataclass
class SessionInfo:
    """The content of ``session.json``."""

    environment_uuid: str
    start_ms: int
    duration_ms: int
    avatars: list[str]
    targets: dict[str, dict[str, float]]
    """Avatar -> {"yaw", "pitch"} as seen from the buyer's seat (``[camera] targets``)."""
    camera: CameraInfo | None
    audio: bool = True
    sample_rate: int = SAMPLE_RATE
    source: str = "recorded"
    """``recorded`` (humaine-env record) or ``generated`` (the corpus generator)."""
    notes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any], where: Path) -> SessionInfo:
        if data.get("format") != FORMAT_NAME or data.get("version") != FORMAT_VERSION:
            raise SessionFormatError(f"{where}: not a {FORMAT_NAME} v{FORMAT_VERSION} file")
        body = {k: v for k, v in data.items() if k not in ("format", "version")}
        camera = body.pop("camera", None)
        try:
            return cls(camera=CameraInfo(**camera) if camera else None, **body)
        except TypeError as exc:
            raise SessionFormatError(f"{where}: {exc}") from None


@dataclass
class TruthUtterance:
    id: str
    text: str
    addressee: str
    """An avatar name or ``""`` (nobody)."""
    cue: Cue
    """How the buyer addressed it: by gaze, by a leading name, or to nobody."""
    start_ms: int
    end_ms: int
    voice: str = ""
    speaker: Speaker = "buyer"
    """Who said it: the buyer at the microphone, or a bystander behind them (whose words the
    suite must not pass on: the buyer's lips were still)."""


@dataclass
class GazeSpan:
    start_ms: int
    end_ms: int
    target: str
    """The avatar looked at (``""``: away) once the head settles; turns are spans too."""
    yaw: float
    pitch: float
    """Pose at the end of the span (the fixation of a hold)."""
    motion: Literal["hold", "turn"] = "hold"


@dataclass
class Truth:
    utterances: list[TruthUtterance] = field(default_factory=list)
    gaze: list[GazeSpan] = field(default_factory=list)
    poses: list[tuple[int, float, float]] = field(default_factory=list)
    """(frame t_ms, yaw, pitch) of every video frame, from the renderer."""
    face: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "face": self.face,
            "utterances": [asdict(u) for u in self.utterances],
            "gaze": [asdict(g) for g in self.gaze],
            "poses": [list(p) for p in self.poses],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Truth:
        return cls(
            utterances=[TruthUtterance(**u) for u in data.get("utterances", [])],
            gaze=[GazeSpan(**g) for g in data.get("gaze", [])],
            poses=[(int(t), float(y), float(p)) for t, y, p in data.get("poses", [])],
            face=data.get("face", ""),
        )


def save_truth(folder: str | Path, truth: Truth) -> Path:
    """Write ``truth.json`` into a session folder (atomically: a reader never sees half)."""
    path = Path(folder) / TRUTH_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(truth.to_json(), separators=(",", ":")), encoding="utf-8")
    tmp.replace(path)
    return path


def write_info(folder: str | Path, info: SessionInfo) -> Path:
    """Write ``session.json``, the file that makes a folder a complete session: atomically (a
    reader never sees half of it), and by every writer of sessions through here."""
    path = Path(folder) / SESSION_FILE
    tmp = path.with_name(SESSION_FILE + ".tmp")
    tmp.write_text(json.dumps(info.to_json(), indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


class Session:
    """A session folder opened for reading."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        meta = self.path / SESSION_FILE
        if not meta.is_file():
            raise SessionFormatError(f"{self.path}: no {SESSION_FILE} (not a session folder)")
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SessionFormatError(f"{meta}: invalid JSON ({exc})") from None
        self.info = SessionInfo.from_json(data, meta)

    @property
    def audio_path(self) -> Path | None:
        p = self.path / AUDIO_FILE
        return p if p.is_file() else None

    @property
    def video_path(self) -> Path | None:
        p = self.path / VIDEO_FILE
        return p if p.is_file() else None

    def frame_times(self) -> list[int]:
        return read_frame_times(self.path / FRAMES_FILE)

    def events(self) -> Iterator[dict[str, Any]]:
        p = self.path / EVENTS_FILE
        if not p.is_file():
            return
        with p.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise SessionFormatError(f"{p}:{n}: invalid JSON ({exc})") from None

    def truth(self) -> Truth | None:
        """The ground truth, None without ``truth.json``; :class:`SessionFormatError` (one line)
        when it cannot be read (a copy cut short, a hand edit gone wrong)."""
        p = self.path / TRUTH_FILE
        if not p.is_file():
            return None
        try:
            return Truth.from_json(json.loads(p.read_text(encoding="utf-8")))
        except json.JSONDecodeError as exc:
            size = p.stat().st_size
            cut = " (cut short?)" if exc.pos >= size - 1 else ""
            raise SessionFormatError(f"{p}: invalid JSON at byte {exc.pos} of {size}{cut}: {exc.msg}") from None
        except (UnicodeDecodeError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise SessionFormatError(f"{p}: not a truth file ({type(exc).__name__}: {exc})") from None


class SessionWriter:
    """Writes a session folder; video frames and events are streamed, the rest at close."""

    def __init__(self, path: str | Path, info: SessionInfo) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.info = info
        self._video: _VideoTrack | None = None
        self._events = (self.path / EVENTS_FILE).open("w", encoding="utf-8")
        self._wav: wave.Wave_write | None = None

    def add_frame(self, image: Image, t_ms: int) -> None:
        if self._video is None:
            h, w = image.shape[:2]
            self._video = _VideoTrack(self.path, (w, h), self.info.camera.fps if self.info.camera else 30.0)
        self._video.add(image, t_ms)

    def add_event(self, event: dict[str, Any]) -> None:
        self._events.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")

    def add_audio(self, samples: NDArray[np.int16]) -> None:
        """Append samples to ``audio.wav`` (a recording streams them; the header is completed
        at :meth:`close`)."""
        if self._wav is None:
            self._wav = wave.open(str(self.path / AUDIO_FILE), "wb")
            self._wav.setnchannels(1)
            self._wav.setsampwidth(2)
            self._wav.setframerate(self.info.sample_rate)
        self._wav.writeframes(np.asarray(samples, dtype="<i2").tobytes())

    def write_audio(self, samples: NDArray[np.int16]) -> None:
        from hardware.audio_files import write_wav

        write_wav(self.path / AUDIO_FILE, samples)

    def write_truth(self, truth: Truth) -> None:
        save_truth(self.path, truth)

    def close(self) -> None:
        if self._video is not None:
            self._video.close()
        if self._wav is not None:
            self._wav.close()
        self._events.close()
        write_info(self.path, self.info)

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class _VideoTrack:
    """``video.mp4`` and ``frames.csv`` of a session, opened at its first frame (whose size is
    the video's): each frame into the video, its capture time into the CSV."""

    def __init__(self, folder: Path, size: tuple[int, int], fps: float) -> None:
        import cv2

        self._video = cv2.VideoWriter(str(folder / VIDEO_FILE), cv2.VideoWriter.fourcc(*VIDEO_FOURCC), fps, size)
        if not self._video.isOpened():
            raise SessionFormatError(f"{folder / VIDEO_FILE}: OpenCV cannot write {VIDEO_FOURCC} video here")
        self._times = (folder / FRAMES_FILE).open("w", newline="", encoding="utf-8", buffering=1)
        self._csv = csv.writer(self._times)
        self._csv.writerow(["index", "t_ms"])
        self._index = 0

    def add(self, image: Image, t_ms: int) -> None:
        self._video.write(image)
        self._csv.writerow([self._index, int(t_ms)])
        self._index += 1

    def close(self) -> None:
        self._video.release()
        self._times.close()
