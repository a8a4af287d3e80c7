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

from workers.microphone.settings import ENGINE_CHOICES
from workers.runtime.config import Config

if TYPE_CHECKING:
    from hardware.audio import SourceKind
    from workers.microphone.transcriber import Transcriber
    from workers.runtime.messages import Transcript

EXIT_FILE_FAILED = 1
"""At least one file could not be read (the others were transcribed)."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="audio files (WAV, raw 16 kHz, anything ffmpeg reads)")
    parser.add_argument("--engine", choices=ENGINE_CHOICES, help="speech recognition engine")
    parser.add_argument("--numbers", choices=("digits", "words"), help="numbers and money as digits (default) or as spoken words")


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
        }
        for t in finals
        if t.final
    ]


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.audio import AudioSourceError
    from workers.microphone.engines import load_recognizer
    from workers.microphone.recognizer import EngineUnavailable
    from workers.microphone.settings import MicrophoneSettings
    from workers.microphone.transcriber import Transcriber
    from workers.runtime.config import ConfigError
    from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE

    overrides: dict[str, object] = {"microphone.whisper_interims": False}  # nobody reads interims here
    if args.engine:
        overrides["microphone.engine"] = args.engine
    if args.numbers:
        overrides["microphone.numbers"] = args.numbers
    try:
        settings = config.with_overrides(overrides).section(MicrophoneSettings)
    except ConfigError as exc:
        print(f"humaine-env transcribe: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        recognizer = load_recognizer(settings, config.core.data_dir)
    except EngineUnavailable as exc:
        print(f"humaine-env transcribe: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE

    def factory(kind: SourceKind, finals: list[Transcript]) -> Transcriber:
        return Transcriber.from_settings(settings, recognizer, kind, lambda _event: None, finals.append)

    status = 0
    for path in args.files:
        try:
            lines = transcribe_file(path, factory)
        except AudioSourceError as exc:
            print(f"humaine-env transcribe: {exc}", file=sys.stderr)
            status = EXIT_FILE_FAILED
            continue
        for line in lines:
            print(json.dumps(line, ensure_ascii=False), flush=True)
    return status
