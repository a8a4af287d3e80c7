"""Synthesized speech with a known text: one utterance by an espeak-ng or Festival voice as a
16 kHz mono WAV, cached under ``.cache/synth`` keyed by text, voice and rate.

The generated sessions speak with it (:mod:`sessions.generate`), so the words in the truth are
the words in the audio. The speech corpora of the tests and benchmarks
(``scripts/synth_speech.py``, ``scripts/paused_speech.py``) are sentences and voices run
through the same function, which is why it lives here, below them, and not in those programs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hardware.audio_files import load_audio, write_wav

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "synth"
FESTIVAL_PREFIX = "festival:"
"""A voice named ``festival:<voice>`` is Festival's; any other name is an espeak-ng voice."""


@dataclass(frozen=True)
class Utterance:
    path: Path
    text: str
    voice: str


def _espeak() -> str:
    found = shutil.which("espeak-ng")
    if found is None:
        raise RuntimeError("espeak-ng is not installed (apt install espeak-ng)")
    return found


def _festival_command(voice: str, native: Path, text: str) -> tuple[list[str], str]:
    """text2wave reads the text on stdin; a missing voice makes it fail (stderr says which)."""
    found = shutil.which("text2wave")
    if found is None:
        raise RuntimeError("festival is not installed (apt install festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts)")
    name = voice.removeprefix(FESTIVAL_PREFIX)
    return [found, "-eval", f"(voice_{name})", "-o", str(native)], text


def synthesize(text: str, voice: str, out_dir: Path = CACHE, speed_wpm: int = 160) -> Utterance:
    """One utterance as 16 kHz mono int16 WAV (cached). ``voice`` is an espeak-ng voice or
    ``festival:<voice>`` (Festival speaks at its own rate; ``speed_wpm`` is espeak-ng's)."""
    key = hashlib.sha1(f"{voice}|{speed_wpm}|{text}".encode()).hexdigest()[:16]
    path = out_dir / f"{voice.replace('+', '_').replace(':', '_')}-{key}.wav"
    if not path.is_file():
        out_dir.mkdir(parents=True, exist_ok=True)
        # names of this process's own: two processes (test workers, a set-up step) that make the
        # same utterance at once each write their own file, and the last atomic rename wins
        native = path.with_name(f"{path.stem}.{os.getpid()}.native.wav")
        if voice.startswith(FESTIVAL_PREFIX):
            cmd, stdin = _festival_command(voice, native, text)
        else:
            cmd, stdin = [_espeak(), "-v", voice, "-s", str(speed_wpm), "-w", str(native), text], ""
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not native.is_file():
            raise RuntimeError(f"{voice} could not speak {text!r}: {proc.stderr.strip()[-200:]}")
        samples = load_audio(native)
        native.unlink()
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        write_wav(tmp, samples)
        tmp.replace(path)
    return Utterance(path, text, voice)
