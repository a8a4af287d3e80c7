"""Video sources behind one interface: BGR frames, each with its capture time.

The camera worker sees the same stream whether it comes from a webcam, a video file read as
fast as possible, a folder of stills, or a recording replayed on a (possibly faster than real
time) clock. Every frame carries ``t_ms``, ms since the epoch of its capture, taken from the
source's clock, so head-pose and attention times line up with the audio clock of the
microphone worker whatever the source.

Source specs (command line / config): ``webcam`` or ``webcam:INDEX``, ``video:PATH`` (decoded
as fast as the consumer reads), ``images:DIR`` (sorted stills), ``replay:PATH`` (a video
file paced by a clock at its own frame rate).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import cv2
import numpy as np
from numpy.typing import NDArray

from formats.session_files import VIDEO_FILE, media_file
from hardware.clock import REPLAY_KIND, Clock, RealClock
from hardware.frame_times import FrameTimesError, read_frame_times, sidecar_of

if TYPE_CHECKING:
    from cv2.typing import MatLike

log = logging.getLogger(__name__)

SPEC_HELP = "use webcam[:INDEX], video:PATH, images:DIR or replay:PATH"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
DEFAULT_FPS = 30.0
"""Frame rate assumed when a file does not state one (and for image folders)."""
MAX_PROBED_CAMERAS = 8
"""``list_cameras`` tries device indices 0..N-1; V4L2 rarely numbers real cameras higher."""
RECORDED_TIMES_SLACK_MS = 60_000
"""A clock at most this far past a recording's last frame is taken to be the recording's own
(replay) time, late only by model loading; further past, the recording is an old one."""
OPENCV_LOG_SILENT = 0
"""OpenCV's ``LOG_LEVEL_SILENT`` (``cv::utils::logging``), for ``cv2.setLogLevel``."""
GRAB_FAILURES_BEFORE_LOST = 15
"""Consecutive failed reads after which a webcam counts as lost (about half a second)."""


class VideoSourceError(Exception):
    """A source cannot be opened or stopped delivering; the message is meant for an operator."""


class NoCameraError(VideoSourceError):
    """No camera at the requested index (the suite goes on without gaze)."""


Image = NDArray[np.uint8]
"""An 8-bit colour image, height x width x 3: BGR (OpenCV's order) unless its name says RGB."""


def image_of(mat: MatLike) -> Image:
    """An image out of OpenCV, typed as what it is: OpenCV's stubs give any numeric array, but
    its captures, ``imread(..., IMREAD_COLOR)`` and its transforms of an 8-bit image are 8-bit."""
    return cast("Image", mat)


@dataclass(frozen=True)
class Frame:
    """``image``: BGR uint8 (OpenCV order); ``t_ms``: capture time; ``index``: running count."""

    image: Image
    t_ms: int
    index: int

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return int(self.image.shape[1]), int(self.image.shape[0])


@dataclass
class SourceStats:
    frames: int = 0
    dropped: int = 0
    """Frames the device produced that nobody read (gaps in the capture timeline)."""
    failures: int = 0


class VideoSource(Protocol):
    """What the camera worker reads from. ``read`` returns None at the end of a finite source."""

    description: str
    stats: SourceStats

    @property
    def fps(self) -> float: ...

    def read(self) -> Frame | None: ...

    def close(self) -> None: ...


def frames(source: VideoSource, stop: threading.Event | None = None) -> Iterator[Frame]:
    """Iterate a source until it ends or ``stop`` is set."""
    while stop is None or not stop.is_set():
        frame = source.read()
        if frame is None:
            return
        yield frame


def missed_frames(previous_ms: int, now_ms: int, fps: float) -> int:
    """Frames a device running at ``fps`` produced between two frames we read, and we did not."""
    return max(0, round((now_ms - previous_ms) * fps / 1000.0) - 1)


# -- webcam ------------------------------------------------------------------------------------
class WebcamSource:
    """A camera device through ``cv2.VideoCapture``.

    Dropped frames are counted from capture-time gaps: a driver that delivers 30 fps but is read
    at 20 fps shows frame intervals of about two periods, each counting as one drop. That is what
    matters downstream (samples missing from the head-pose stream), whatever the driver's
    internal buffering does.
    """

    def __init__(
        self,
        index: int = 0,
        width: int = 640,
        height: int = 480,
        fps: float = DEFAULT_FPS,
        clock: Clock | None = None,
    ) -> None:
        self.index = index
        self.clock = clock or RealClock()
        self.description = f"webcam:{index}"
        self.stats = SourceStats()
        if index not in _candidate_indices(max(MAX_PROBED_CAMERAS, index + 1)):
            raise _no_camera(index)
        previous = _quiet_opencv()
        try:
            self._cap = cv2.VideoCapture(index)
        finally:
            _restore_opencv(previous)
        if not self._cap.isOpened():
            self._cap.release()
            raise _no_camera(index)
        self._cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
        self._cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        self._cap.set(cv2.CAP_PROP_FPS, fps)
        self._cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        got_fps = self._cap.get(cv2.CAP_PROP_FPS)
        self._fps = float(got_fps) if got_fps and got_fps > 0 else fps
        self._last_ms: int | None = None
        self._consecutive_failures = 0
        got = (int(self._cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(self._cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        if got != (width, height):
            log.info("%s delivers %dx%d (asked for %dx%d)", self.description, got[0], got[1], width, height)

    @property
    def fps(self) -> float:
        return self._fps

    def read(self) -> Frame | None:
        """The next frame; raises :class:`VideoSourceError` when the device is lost."""
        while True:
            ok, image = self._cap.read()
            now = self.clock.now_ms()
            if ok and image is not None:
                break
            self.stats.failures += 1
            self._consecutive_failures += 1
            if self._consecutive_failures >= GRAB_FAILURES_BEFORE_LOST:
                raise VideoSourceError(f"{self.description} stopped delivering frames (unplugged?)")
        self._consecutive_failures = 0
        if self._last_ms is not None:
            self.stats.dropped += missed_frames(self._last_ms, now, self._fps)
        self._last_ms = now
        frame = Frame(image_of(image), now, self.stats.frames)
        self.stats.frames += 1
        return frame

    def close(self) -> None:
        self._cap.release()


# -- files -------------------------------------------------------------------------------------
class VideoFileSource:
    """A video file decoded as fast as it is read; frame times follow the file's own frame rate
    from ``start_ms`` (default: now), so results do not depend on decoding speed.

    A recording's video has its capture times next to it (``frames.csv``, see
    :mod:`hardware.frame_times`); frames then carry those times. They are used as they are when
    the clock is not past the recording by more than :data:`RECORDED_TIMES_SLACK_MS` (a replay
    clock anchored at the session's start, which the camera may open a little late), and
    shifted to start at ``start_ms`` / now otherwise (an old recording played on a real clock)."""

    def __init__(self, path: str | Path, start_ms: int | None = None, clock: Clock | None = None) -> None:
        self.path, missing = media_file(path, VIDEO_FILE, "video")
        if missing:
            raise VideoSourceError(missing)
        self._cap = cv2.VideoCapture(str(self.path))
        if not self._cap.isOpened():
            raise VideoSourceError(f"cannot decode video file {self.path} (not a video OpenCV/ffmpeg can read)")
        got_fps = self._cap.get(cv2.CAP_PROP_FPS)
        self._fps = float(got_fps) if got_fps and got_fps > 0 else DEFAULT_FPS
        self.clock = clock or RealClock()
        self.start_ms = self.clock.now_ms() if start_ms is None else int(start_ms)
        try:
            self._recorded = read_frame_times(sidecar_of(self.path))
        except FrameTimesError as exc:
            raise VideoSourceError(str(exc)) from None
        self._shift = 0
        if self._recorded and (start_ms is not None or self.start_ms > self._recorded[-1] + RECORDED_TIMES_SLACK_MS):
            self._shift = self.start_ms - self._recorded[0]
        self.description = f"video:{self.path}"
        self.stats = SourceStats()

    @property
    def fps(self) -> float:
        return self._fps

    @property
    def frame_count(self) -> int:
        return int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT))

    def frame_time(self, index: int) -> int:
        if not self._recorded:
            return self.start_ms + round(index * 1000.0 / self._fps)
        last = len(self._recorded) - 1
        if index <= last:
            return self._recorded[index] + self._shift
        return self._recorded[last] + self._shift + round((index - last) * 1000.0 / self._fps)

    def read(self) -> Frame | None:
        ok, image = self._cap.read()
        if not ok or image is None:
            return None
        frame = Frame(image_of(image), self.frame_time(self.stats.frames), self.stats.frames)
        self.stats.frames += 1
        return frame

    def close(self) -> None:
        self._cap.release()


class ReplaySource(VideoFileSource):
    """A video file paced by ``clock`` at the file's frame rate: real time with a
    :class:`RealClock`, faster (or as fast as possible) with a ``VirtualClock``."""

    def __init__(self, path: str | Path, clock: Clock | None = None, stop: threading.Event | None = None) -> None:
        super().__init__(path, clock=clock)
        self.description = f"replay:{self.path}"
        self._stop = stop

    def read(self) -> Frame | None:
        due = self.frame_time(self.stats.frames)
        if not self.clock.sleep_until(due, self._stop):
            return None
        return super().read()


class ImageFolderSource:
    """Stills from a folder in name order, one frame period apart (``fps``)."""

    def __init__(
        self, folder: str | Path, fps: float = DEFAULT_FPS, start_ms: int | None = None, clock: Clock | None = None
    ) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise VideoSourceError(f"image folder {self.folder} not found")
        self.files = sorted(p for p in self.folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not self.files:
            raise VideoSourceError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {self.folder}")
        self._fps = fps
        clock = clock or RealClock()
        self.start_ms = clock.now_ms() if start_ms is None else int(start_ms)
        self.description = f"images:{self.folder}"
        self.stats = SourceStats()
        self.skipped: list[Path] = []

    @property
    def fps(self) -> float:
        return self._fps

    def read(self) -> Frame | None:
        while self.stats.frames + len(self.skipped) < len(self.files):
            path = self.files[self.stats.frames + len(self.skipped)]
            image: MatLike | None = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                log.warning("skipping %s: not an image OpenCV can read", path)
                self.skipped.append(path)
                continue
            index = self.stats.frames
            frame = Frame(image_of(image), self.start_ms + round(index * 1000.0 / self._fps), index)
            self.stats.frames += 1
            return frame
        return None

    def close(self) -> None:
        pass


# -- construction ------------------------------------------------------------------------------
def open_source(
    spec: str,
    width: int = 640,
    height: int = 480,
    fps: float = DEFAULT_FPS,
    clock: Clock | None = None,
    stop: threading.Event | None = None,
) -> VideoSource:
    """Open the source named by ``spec`` (see the module docstring)."""
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "webcam":
        try:
            index = int(arg) if arg else 0
        except ValueError:
            raise VideoSourceError(f"webcam index must be a number, got {arg!r}; {SPEC_HELP}") from None
        return WebcamSource(index, width, height, fps, clock)
    if not arg:
        raise VideoSourceError(f"video source {spec!r} lacks a path; {SPEC_HELP}")
    if kind in ("video", "file"):
        return VideoFileSource(arg, clock=clock)
    if kind == "images":
        return ImageFolderSource(arg, fps=fps, clock=clock)
    if kind == REPLAY_KIND:
        return ReplaySource(arg, clock=clock, stop=stop)
    raise VideoSourceError(f"unknown video source {spec!r}; {SPEC_HELP}")


def list_cameras(max_index: int = MAX_PROBED_CAMERAS) -> list[dict[str, object]]:
    """Cameras that open, with the resolution and frame rate they report by default.

    Probing opens each device briefly, so do not call it while the camera worker runs.
    """
    found: list[dict[str, object]] = []
    previous = _quiet_opencv()
    try:
        for index in _candidate_indices(max_index):
            cap = cv2.VideoCapture(index)
            try:
                if not cap.isOpened():
                    continue
                found.append(
                    {
                        "index": index,
                        "spec": f"webcam:{index}",
                        "name": _device_name(index),
                        "width": int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)),
                        "height": int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)),
                        "fps": float(cap.get(cv2.CAP_PROP_FPS) or 0.0),
                        "backend": cap.getBackendName(),
                    }
                )
            finally:
                cap.release()
    finally:
        _restore_opencv(previous)
    return found


def _no_camera(index: int) -> NoCameraError:
    return NoCameraError(
        f"no camera at index {index}; plug one in, choose another with --set camera.source=webcam:N "
        f"(see `humaine-env devices`), or run without gaze"
    )


def _candidate_indices(max_index: int) -> list[int]:
    """Device indices worth opening: the V4L2 nodes that exist on Linux, else 0..max-1."""
    if sys.platform.startswith("linux"):
        return sorted(int(p.name[5:]) for p in Path("/dev").glob("video*") if p.name[5:].isdigit())
    else:  # the type checker skips the branch of the other platforms (an `if` without it: unreachable)
        return list(range(max_index))


def _device_name(index: int) -> str:
    """The V4L2 device name on Linux (empty elsewhere)."""
    name_file = Path(f"/sys/class/video4linux/video{index}/name")
    try:
        return name_file.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _quiet_opencv() -> int:
    """OpenCV warns on stderr for every index it cannot open; probing expects misses.
    The level before, for :func:`_restore_opencv`."""
    return cv2.setLogLevel(OPENCV_LOG_SILENT)


def _restore_opencv(previous: int) -> None:
    cv2.setLogLevel(previous)
