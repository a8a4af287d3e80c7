"""Festival voices (Debian ``festival`` + ``festvox-*``): the HTS voice ``cmu_us_slt_arctic_hts``
is Celia's default - a natural female voice a listener understands the first time.

One ``festival --pipe`` process per voice stays up (loading a voice takes ~0.2 s; a sentence
then renders in 20-120 ms on two cores). Commands go in on standard input; each answer - the
utterance's segments and words with their start times - comes back on standard error, which
Festival does not buffer, ended by :data:`_DONE`. The audio goes through a file in a private
temporary directory (``/dev/shm`` when there is one).

Rate and pitch: HTS voices take the HTS engine's speed (``-r``) and half-tone shift (``-fm``);
other Festival voices take ``Duration_Stretch`` (pitch is left as the voice's own).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import wave
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray

from formats.phoneme_alphabets import from_cmu
from formats.speech_script import Phrase
from formats.unknown import unknown
from hardware.speech_chunked import ChunkedEngine, Rendering, rate_factor, semitones
from hardware.speech_types import SpeakerError, VoiceSettings

log = logging.getLogger(__name__)

INSTALL_HINT = "install Festival and the voice (Debian/Ubuntu: apt-get install festival festvox-us-slt-hts)"
VOICE_DIRS = (Path("/usr/share/festival/voices"), Path("/usr/local/share/festival/voices"))
_DONE = "@@humaine-env-done"
_ANSWER = re.compile(r"^([SW]) (\S+) ([0-9.]+)$")
_UNSAFE = re.compile(r'[\\"]')
LOAD_TIMEOUT_S = 20.0
RENDER_TIMEOUT_S = 30.0
_DEFINITIONS = """
(define (humaine_say text file)
  (let ((u (SynthText text)))
    (utt.save.wave u file 'riff)
    (mapcar (lambda (s) (format stderr "S %s %f\\n" (item.name s) (item.feat s 'segment_start)))
            (utt.relation.items u 'Segment))
    (mapcar (lambda (w) (format stderr "W %s %f\\n" (item.name w) (item.feat w 'word_start)))
            (utt.relation.items u 'Word))
    t))
"""


def installed_voices() -> list[str]:
    """Festival voices installed in the usual places (``cmu_us_slt_arctic_hts``, ``kal_diphone``)."""
    return sorted({p.name for d in VOICE_DIRS if d.is_dir() for p in d.glob("*/*") if p.is_dir()})


class FestivalEngine(ChunkedEngine):
    name = "festival"
    lead_words = 0
    """A whole sentence renders within the first-audio budget: never split."""

    def __init__(self, voice: str) -> None:
        super().__init__(voice)
        self._process: subprocess.Popen[bytes] | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix="humaine-festival-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
        self._hts = voice.endswith("_hts")
        self._start_lock = threading.Lock()

    # -- the process -------------------------------------------------------------------------
    def check_voice(self, settings: VoiceSettings) -> None:
        with self._start_lock:
            if self._process is not None and self._process.poll() is None:
                return
            if shutil.which("festival") is None:
                raise SpeakerError(f"Festival is not installed; {INSTALL_HINT}")
            if self.voice not in installed_voices():
                raise SpeakerError(f"Festival: {unknown('voice', self.voice, installed_voices())}; {INSTALL_HINT}")
            if self._process is not None:
                log.warning("Festival (%s) had stopped (status %s): starting it again", self.voice, self._process.returncode)
            self._process = subprocess.Popen(["festival", "--pipe"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, start_new_session=True)
            answer = self._command(f"(voice_{self.voice}) {_DEFINITIONS}", LOAD_TIMEOUT_S)
            if any("SIOD ERROR" in line or "unbound variable" in line for line in answer):
                self.close()
                raise SpeakerError(f"Festival could not load the voice {self.voice!r}: {' '.join(answer)[:200]}")
            probe = self._render_file("Hello.", 1.0, 0.0)
            self.sample_rate = probe[0]

    def _command(self, scheme: str, timeout: float) -> list[str]:
        """Send ``scheme``; the lines Festival wrote on standard error until it was done."""
        process = self._process
        assert process is not None and process.stdin is not None and process.stderr is not None
        lines: list[str] = []
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            process.stdin.write(f'{scheme} (format stderr "{_DONE}\\n")\n'.encode())
            process.stdin.flush()
            stream: IO[bytes] = process.stderr
            while True:
                raw = stream.readline()
                if not raw:
                    raise SpeakerError(f"Festival ({self.voice}) stopped while speaking (status {process.poll()})")
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if line == _DONE:
                    return lines
                lines.append(line)
        except (BrokenPipeError, OSError) as exc:
            raise SpeakerError(f"Festival ({self.voice}) is not answering: {exc}") from None
        finally:
            timer.cancel()

    def _render_file(self, text: str, rate: float, shift: float) -> tuple[int, NDArray[np.int16], list[str]]:
        settings = ""
        if self._hts:
            settings = (f'(set! hts_engine_params (append {self.voice}::hts_engine_params '
                        f'(list (list "-r" {rate:.3f}) (list "-fm" {shift:.2f}))))')
        else:
            settings = f"(Parameter.set 'Duration_Stretch {1.0 / rate:.3f})"
        self._tmp.mkdir(parents=True, exist_ok=True)
        path = self._tmp / "say.wav"
        safe = _UNSAFE.sub(" ", text)
        lines = self._command(f'{settings} (humaine_say "{safe}" "{path}")', RENDER_TIMEOUT_S)
        with wave.open(str(path), "rb") as wav:
            rate_hz = wav.getframerate()
            pcm = np.frombuffer(wav.readframes(wav.getnframes()), np.int16)
        return rate_hz, pcm, lines

    def render(self, phrase: Phrase, settings: VoiceSettings) -> Rendering:
        if self._process is None or self._process.poll() is not None:
            self.check_voice(settings)
        rate_hz, pcm, lines = self._render_file(phrase.text, rate_factor(settings, phrase),
                                                semitones(settings, phrase) if self._hts else 0.0)
        if rate_hz != self.sample_rate:
            raise RuntimeError(f"Festival changed its sample rate ({rate_hz} Hz, was {self.sample_rate})")
        phonemes: list[tuple[int, str]] = []
        words: list[int] = []
        for line in lines:
            match = _ANSWER.match(line)
            if match is None:
                continue
            kind, name, start = match.group(1), match.group(2), round(float(match.group(3)) * 1000)
            if kind == "S":
                phonemes.append((start, from_cmu(name)))
            else:
                words.append(start)
        return Rendering(pcm, phonemes, words)

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        shutil.rmtree(self._tmp, ignore_errors=True)
