"""``humaine-env headpose FILE...``: the camera worker's pipeline on images, image folders and
video files, one JSON line per frame on stdout.

For checking a camera placement before a session (is the buyer found, chosen and seen
turning towards each avatar?) and for trying the head-pose estimate on any photo. Each FILE
argument is its own sequence: a still is fed ``--repeat`` times as frames ``1/fps`` apart
(``[camera] fps``), a folder's images (name order) one after another, a video's frames at the
video's own rate. The scan for other faces runs inline at its configured rate of frame time,
so a run gives the same output every time.

A line: ``{"file", "frame", "ts_ms", "faces", "buyer", "yaw", "pitch", "roll", "confidence",
"target"}``; ``frame`` and ``ts_ms`` count from the start of that FILE argument, ``buyer`` is
the tracked face id (null when no face is the buyer), the angles and confidence are the
smoothed pose the worker publishes (null without a pose), ``target`` the addressee (null
for nobody).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from workers.camera.settings import CameraSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag

if TYPE_CHECKING:
    from cv2.typing import MatLike

    from hardware.video import Frame
    from workers.camera.pipeline import FrameResult
    from workers.camera.preview import Preview

EXIT_FAILED_INPUT = 1
"""Some FILE could not be read (the others were still processed)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="image, folder of images, or video file")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="feed each still N times as frames (default 1)")
    parser.add_argument("--preview", metavar="OUT.mp4", help="also write the annotated frames to OUT.mp4")
    setting_flag(parser, "--mirrored", CameraSettings, "mirrored")


def main(args: argparse.Namespace, config: Config) -> int:
    """The command, with MediaPipe's and OpenCV's native start-up lines kept off the console."""
    from workers.runtime.native_chatter import native_chatter_filtered

    with native_chatter_filtered():
        return _main(args, config)


def _main(args: argparse.Namespace, config: Config) -> int:
    from workers.camera.facemesh import FaceMeshDetector
    from workers.camera.pipeline import CameraPipeline
    from workers.camera.preview import Preview
    from workers.camera.scanner import FaceScanner
    from workers.runtime.worker import EXIT_CONFIG

    if args.repeat < 1:
        print("humaine-env headpose: --repeat must be at least 1", file=sys.stderr)
        return EXIT_CONFIG
    settings = config.section(CameraSettings).for_room(config.core.avatars)
    preview = Preview(args.preview) if args.preview else None
    detector = FaceMeshDetector(max_faces=1, static_image_mode=True)
    scanner = FaceScanner() if settings.max_faces > 1 else None
    failed = 0
    try:
        for name in args.files:
            pipeline = CameraPipeline(settings, detector=detector, scanner=scanner, background_scan=False)
            try:
                for file, frame in _frames(Path(name), args.repeat, settings.fps, preview):
                    result = pipeline.process(frame)
                    _emit(file, result)
                    if preview is not None:
                        preview.show(result)
            except InputError as exc:
                print(f"humaine-env headpose: {exc}", file=sys.stderr)
                failed += 1
            finally:
                pipeline.close()
    except BrokenPipeError:  # the reader stopped (| head): not a failure
        sys.stdout = open(os.devnull, "w")  # Python flushes stdout at exit: somewhere that takes it
        return 0
    except RuntimeError as exc:  # the preview file cannot be written
        print(f"humaine-env headpose: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    finally:
        if preview is not None:
            preview.close()
        detector.close()
        if scanner is not None:
            scanner.close()
    return EXIT_FAILED_INPUT if failed else 0


class InputError(Exception):
    """A FILE argument that is not a readable image, folder of images or video."""


def _frames(path: Path, repeat: int, fps: float, preview: Preview | None) -> Iterator[tuple[str, Frame]]:
    """(file name, frame) pairs of one FILE argument, times from 0."""
    import cv2

    from hardware.video import IMAGE_SUFFIXES, Frame, VideoFileSource, VideoSourceError, frames, image_of

    period = 1000.0 / fps
    if path.is_dir():
        stills = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not stills:
            raise InputError(f"{path}: no images ({', '.join(IMAGE_SUFFIXES)}) in the folder")
    elif path.suffix.lower() in IMAGE_SUFFIXES:
        stills = [path]
    else:
        try:
            source = VideoFileSource(path, start_ms=0)
        except VideoSourceError as exc:
            raise InputError(str(exc)) from None
        if preview is not None:
            preview.fps = preview.fps or source.fps
        try:
            for frame in frames(source):
                yield str(path), frame
        finally:
            source.close()
        return
    if preview is not None:
        preview.fps = preview.fps or fps
    index = 0
    for still in stills:
        if not Path(still).is_file():
            raise InputError(f"{still}: not found")
        image: MatLike | None = cv2.imread(str(still), cv2.IMREAD_COLOR)
        if image is None:
            raise InputError(f"{still}: not an image OpenCV can read")
        for _ in range(repeat):
            yield str(still), Frame(image_of(image), round(index * period), index)
            index += 1


def _emit(file: str, result: FrameResult) -> None:
    pose = result.pose
    line = {
        "file": file,
        "frame": result.frame.index,
        "ts_ms": result.frame.t_ms,
        "faces": len(result.faces),
        "buyer": result.buyer.face_id if result.buyer is not None else None,
        "yaw": round(pose.yaw, 2) if pose else None,
        "pitch": round(pose.pitch, 2) if pose else None,
        "roll": round(pose.roll, 2) if pose else None,
        "confidence": round(pose.confidence, 3) if pose else None,
        "target": result.attention or None,
    }
    print(json.dumps(line), flush=True)
