"""``humaine-env transcribe FILE...``: audio files through the live worker's pipeline.

Each file is read by the file source (any rate and channel count; other formats through
ffmpeg), segmented by the same VAD and decoded by the same engine and normalisation as the
microphone worker, and printed as one JSON line per utterance on stdout. A file that is
missing, empty or not audio is one line on stderr; the others are still transcribed, and the
exit status says something failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workers.microphone.settings import MicrophoneSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag

if TYPE_CHECKING:
    from hardware.audio import SourceKind
    from workers.microphone.transcriber import Transcriber
    from workers.runtime.messages import Transcript

EXIT_FILE_FAILED = 1
"""At least one file could not be read (the others were transcribed)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="audio files (WAV, raw 16 kHz, anything ffmpeg reads), folders of them, or recorded session folders")
    setting_flag(parser, "--engine", MicrophoneSettings, "engine")
    setting_flag(parser, "--numbers", MicrophoneSettings, "numbers")


def audio_files_of(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """The files to transcribe: each file named, a recorded session folder's audio, or every
    audio file of a folder (sorted); and a line for each folder that holds none."""
    from formats.session_files import AUDIO_FILE
    from hardware.audio_files import AUDIO_SUFFIXES

    files: list[Path] = []
    problems: list[str] = []
    for path in paths:
        if not path.is_dir():
            files.append(path)
        elif (path / AUDIO_FILE).is_file():
            files.append(path / AUDIO_FILE)
        else:
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)
            files += found
            if not found:
                problems.append(f"{path}: no audio files ({', '.join(AUDIO_SUFFIXES)}) in the folder")
    return files, problems


def transcribe_file(path: Path, transcriber_factory: Callable[[SourceKind, list[Transcript]], Transcriber]) -> list[dict[str, object]]:
    """The file's utterances as the JSON objects printed. Raises ``AudioSourceError``."""
    from hardware.audio import AudioSourceError
    from hardware.audio_files import FileSource

    source = FileSource(path)
    if len(source.samples) == 0:
        raise AudioSourceError(f"{path}: empty (no audio samples)")
    finals: list[Transcript] = []
    transcriber = transcriber_factory(source.kind, finals)
    for block in source.blocks(threading.Event()):
        transcriber.process(block)
    transcriber.flush()
    return [
        {
            "file": str(path),
            "start_ms": t.start,
            "end_ms": t.end,
            "text": t.text,
            "confidence": round(t.confidence, 3),
            "engine": t.engine,
            "words": [w.model_dump() for w in t.words],
            **({"doubts": [d.model_dump() for d in t.doubts]} if t.doubts else {}),
        }
        for t in finals
        if t.final
    ]


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.audio import AudioSourceError
    from workers.microphone.engines import load_recognizer
    from workers.microphone.recognizer import EngineUnavailable
    from workers.microphone.transcriber import Transcriber
    from workers.runtime.config import ConfigError
    from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE

    try:  # nobody reads interims here
        settings = config.with_overrides({"microphone.whisper_interims": False}).section(MicrophoneSettings)
    except ConfigError as exc:
        print(f"humaine-env transcribe: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        recognizer = load_recognizer(settings, config.core.data_dir, config.core.avatars)
    except EngineUnavailable as exc:
        print(f"humaine-env transcribe: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE

    def factory(kind: SourceKind, finals: list[Transcript]) -> Transcriber:
        return Transcriber.from_settings(settings, recognizer, kind, lambda _event: None, finals.append, config.core.avatars)

    status = 0
    files, missing = audio_files_of(args.files)
    for line in missing:
        print(f"humaine-env transcribe: {line}", file=sys.stderr)
        status = EXIT_FILE_FAILED
    for path in files:
        try:
            lines = transcribe_file(path, factory)
        except AudioSourceError as exc:
            print(f"humaine-env transcribe: {exc}", file=sys.stderr)
            status = EXIT_FILE_FAILED
            continue
        for record in lines:
            print(json.dumps(record, ensure_ascii=False), flush=True)
    return status
