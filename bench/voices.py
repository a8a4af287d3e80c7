"""Voices benchmark: can a buyer understand each avatar the first time? Prints ONE JSON line.

For each avatar's default voice (and, for comparison, its espeak-ng fallback), the 15 held-out
seller lines of ``tests/fixtures/seller-lines-heldout.json`` are spoken by the real speaker into
WAV files and transcribed by the suite's own default recogniser (a stand-in for a listener in
the room). Per voice:

* ``wer``: corpus word error rate (numbers and money compared as the normaliser writes them);
  ``deal_terms_exact``: lines whose prices, quantities and goods all came through;
* ``ttfa_ms_p50/p95``: request → first sample handed to the output (the speaker's own
  measure; ``bench/avatar.py`` measures it through HTTP);
* ``rtf``: rendering time over audio time (a fast WAV sink: the engine's own speed);
* ``lipsync_max_ms`` / ``lipsync_p95_ms``: every word after a pause against where the mouth
  opens in the timeline made from the engine's own timing (``avatar.lipsync``, the measure of
  ``tests/e2e/avatar/test_display_stage.py``); ``lipsync_unpaired``: lines whose pauses did not pair up.

Targets (issue: voices a buyer understands): WER ≤ 0.05 per default voice, TTFA p95 ≤ 150 ms,
lip-sync ≤ 60 ms. Usage: ``.venv/bin/python bench/voices.py [--avatar NAME] [--no-fallbacks]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# run as `python bench/voices.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from avatar import lipsync, visemes
from avatar.settings import AvatarSettings
from avatar.ssml import prepare
from bench.stats import percentile
from hardware.audio import SAMPLE_RATE
from hardware.audio_files import load_audio
from hardware.speaker import Speaker, VoiceSettings, WavSink
from workers.microphone.engines import load_recognizer
from workers.microphone.evaluation import deal_terms, transcribe, wer
from workers.microphone.settings import MicrophoneSettings

LINES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seller-lines-heldout.json"


ROOM_SILENCE_S = 0.3
"""Silence around each line, as the room's microphone hears it (the WAV starts 40 ms before
the first sound: a recogniser given only that clips the first word)."""


def in_the_room(samples: np.ndarray) -> np.ndarray:
    pad = np.zeros(int(ROOM_SILENCE_S * SAMPLE_RATE), np.int16)
    return np.concatenate([pad, samples, pad])


def measure(speaker: Speaker, voice: VoiceSettings, lines: list[str], recognizer: object, folder: Path) -> dict[str, object]:
    speaker.sink = WavSink(folder, realtime=False)
    used = speaker.check_voice(voice)
    speaker.speak(prepare("Hello.").ssml, voice, name="warm-up")
    ttfa, rtf, lip, unpaired, hypotheses, exact = [], [], [], 0, [], 0
    for index, line in enumerate(lines):
        result = speaker.speak(prepare(line).ssml, voice, name=f"line{index}")
        assert result.path is not None and result.first_audio_at is not None and result.ended_at is not None
        ttfa.append((result.first_audio_at - result.requested_at) * 1000)
        rtf.append((result.ended_at - result.requested_at) / max(result.duration_s, 1e-3))
        errors = lipsync.errors_ms(result.path, visemes.timeline(result.phonemes))
        if errors is None:
            unpaired += 1
        else:
            lip.extend(errors)
        heard = transcribe(recognizer, in_the_room(load_audio(result.path))).text
        hypotheses.append(heard)
        exact += deal_terms(line) == deal_terms(heard)
    return {
        "engine": used.engine, "voice": used.voice,
        "wer": round(wer(lines, hypotheses), 3),
        "deal_terms_exact": f"{exact}/{len(lines)}",
        "ttfa_ms_p50": round(statistics.median(ttfa), 1), "ttfa_ms_p95": percentile(ttfa, 95, 1),
        "rtf": round(statistics.median(rtf), 3),
        "lipsync_max_ms": max(lip, default=None), "lipsync_p95_ms": percentile(lip, 95),
        "lipsync_onsets": len(lip), "lipsync_unpaired": unpaired,
        "misheard": [[ref, hyp] for ref, hyp in zip(lines, hypotheses, strict=True)
                     if deal_terms(ref) != deal_terms(hyp)][:5],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--avatar", action="append", help="only this avatar (repeatable)")
    parser.add_argument("--no-fallbacks", action="store_true", help="skip the espeak-ng fallback voices")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    corpus = json.loads(LINES.read_text())
    settings = AvatarSettings()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        recognizer = load_recognizer(MicrophoneSettings(), Path(tmp))
        speaker = Speaker(WavSink(tmp, realtime=False))
        voices: dict[str, object] = {}
        try:
            for avatar in args.avatar or ["Celia", "Watson"]:
                voice = settings.voice_for(avatar)
                voices[avatar] = measure(speaker, voice, corpus[avatar], recognizer, Path(tmp) / avatar)
                if not args.no_fallbacks and voice.fallback:
                    fallback = replace(voice, engine="espeak", voice=voice.fallback, fallback=None)
                    voices[f"{avatar} (espeak-ng fallback)"] = measure(speaker, fallback, corpus[avatar], recognizer,
                                                                       Path(tmp) / f"{avatar}-espeak")
        finally:
            speaker.close()
    print(json.dumps({
        "bench": "voices", "voices": voices, "lines_per_avatar": 15, "seconds": round(time.monotonic() - started, 1),
        "loadavg_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        "targets": {"wer": 0.05, "ttfa_ms_p95": 150, "lipsync_max_ms": 60},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
