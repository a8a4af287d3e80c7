"""Benchmark: the full-duplex room. The buyer's negotiation utterances spoken alone and starting
while an avatar's reply plays through a simulated room (``sessions/duplex_room.py``: image-source
room responses, the loudspeaker 1.5 to 3 m from the microphone, the echo 0 to +10 dB over the
buyer's speech at the microphone), and the replies alone, through the microphone worker's own path:
the echo canceller with the loudspeaker's output as its reference, then the transcriber as
``[microphone]`` configures it (voice detector, barge-in, echo gate, the speech engine).

Prints ONE JSON line:

- ``single_talk_exact`` / ``double_talk_exact``: the fraction of utterances whose deal terms (every
  number, and the leading name) were heard as said (``bench/noisy.py``'s ``exact``);
- ``echo_leak_words``: words of an avatar's reply that reached a transcript as the buyer's (in
  double talk, words of the reply heard within ``LEAK_WINDOW_MS`` of when the reply says them that
  neither the buyer said nor the same utterance heard alone got, if a deal term or two in a row;
  with the reply alone, every word);
- ``barge_in_caught``: the fraction of double-talk utterances the barge-in detector caught, and
  ``barge_in_ms`` p50/p95 after the buyer's voice began;
- ``erle_db``: echo return loss enhancement over the replies alone (after the first, which the
  canceller converges on), per room;
- ``canceller_cpu``: the canceller's CPU seconds per second of audio (0.05 is 5 % of one core).

``--cancel off`` runs the same rooms without the canceller (today's echo gate): the comparison.
``--echo muted`` plays the replies at no level at all: the leak count's own floor (what the
recogniser does alone), which must be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/duplex.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench import noisy  # noqa: E402
from bench.stats import LINEAR, percentile  # noqa: E402
from hardware.audio import AudioBlock  # noqa: E402
from hardware.audio_files import load_audio  # noqa: E402
from scripts.synth_speech import SENTENCES, negotiation_corpus  # noqa: E402
from sessions import barge_in_check  # noqa: E402
from sessions.duplex_room import Session, SessionBuilder, Trial  # noqa: E402
from workers.microphone.echo import EchoGate  # noqa: E402
from workers.microphone.echo_cancel import EchoCanceller, PlayedAudio  # noqa: E402
from workers.microphone.engines import load_recognizer  # noqa: E402
from workers.microphone.evaluation import deal_terms, normalize, transcribe  # noqa: E402
from workers.microphone.noise_floor import SPEECH_LEVEL_DBFS  # noqa: E402
from workers.microphone.recognizer import Recognizer  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402
from workers.microphone.transcriber import Transcriber, follow_canceller  # noqa: E402
from workers.runtime.config import Config  # noqa: E402
from workers.runtime.messages import BargeIn, Speaking, Transcript  # noqa: E402

DISTANCES_M = (1.5, 2.25, 3.0)
BUYER_VOICES = ("en-us", "festival:cmu_us_slt_arctic_hts")
"""An espeak-ng male and Festival's HTS female voice (trained on a recorded speaker): every
sentence of the corpus in each."""
ECHO_OVER_DB = (0.0, 5.0, 10.0)
MUTED_DB = -200.0
"""``--echo muted``: the replies' level over the buyer (nothing reaches the microphone)."""
OUTPUT_DELAY_MS = 60
"""The simulated sink's output latency (a USB loudspeaker through the sound server): the reference
is captured this long before it sounds, and the canceller is told so, as the worker is."""
BUYER_DBFS = SPEECH_LEVEL_DBFS - 10
"""The buyer's speech level at a room microphone on the counter: 10 dB under a close-talk
microphone's, so that the loudest echo (+10 dB) peaks under full scale instead of clipping (a
clipped echo is no longer the reference's linear echo, and no canceller removes it)."""
WARM_UP_REPLIES = 2
"""Replies alone before the first trial, as a round opens with the avatars' greetings: the canceller
learns the room's echo path on them (its ERLE over the first is ``erle_first_db``). Their words
count as leaked if any are heard."""
EPOCH_MS = 1_700_000_000_000
AVATAR = "Celia"


def _session(distance: float, seed: int, buyers: list[tuple[str, np.ndarray]], replies: list[tuple[str, np.ndarray]],
             echo_over_db: tuple[float, ...] = ECHO_OVER_DB) -> Session:
    room = SessionBuilder(distance, BUYER_DBFS, OUTPUT_DELAY_MS, seed)
    def reply(key: int) -> tuple[int, str, np.ndarray]:
        return (key % len(replies), *replies[key % len(replies)])

    for key in range(WARM_UP_REPLIES):  # the avatars greet the buyer: the canceller converges
        room.reply(*reply(key), echo_over_db[-1])
    for index, (text, speech) in enumerate(buyers):
        room.single(text, speech)
        over = echo_over_db[index % len(echo_over_db)]
        room.reply(*reply(index + 1), over, text, speech)
        if index % 3 == 2:
            room.reply(*reply(index + 2), over)
    return room.build()


def _run_session(session: Session, settings: MicrophoneSettings, recognizer: Recognizer, cancel: bool) -> dict[str, Any]:
    finals: list[Transcript] = []
    barges: list[BargeIn] = []
    gate = EchoGate(settings.echo_tail_cancelled_ms if cancel else settings.echo_tail_ms)
    played = PlayedAudio()
    canceller = EchoCanceller(played, session.output_delay_ms, settings.block_ms, settings.echo_filter_ms) if cancel else None
    transcriber = Transcriber.from_settings(
        settings, recognizer, "mic", lambda _e: None, lambda t: finals.append(t) if t.final else None,
        cancelling=cancel, echo=gate, echo_mode=settings.echo_mode, emit_barge_in=barges.append,
    )
    if canceller is not None:
        follow_canceller(transcriber, canceller)  # as the worker
    block = 16 * settings.block_ms
    events = sorted((t.echo_ms[i], i == 0) for t in session.trials if t.kind != "single" for i in (0, 1))
    erle: list[float] = []
    mic_e = out_e = 0.0
    echo_only = [t.echo_ms for t in session.trials if t.kind == "echo"][WARM_UP_REPLIES:]
    for start in range(0, len(session.microphone) - block + 1, block):
        t_ms = EPOCH_MS + start // 16
        rel_ms = start // 16
        while events and events[0][0] <= rel_ms:
            at, begin = events.pop(0)
            gate.on_speaking(Speaking(source="avatar", avatar=AVATAR, state="begin" if begin else "end", at=EPOCH_MS + at))
        samples = session.microphone[start:start + block]
        if canceller is not None:
            played.add(AudioBlock(session.played[start:start + block], t_ms))
            out = canceller.process(AudioBlock(samples, t_ms))
        else:
            out = AudioBlock(samples, t_ms)
        if any(a <= rel_ms < b for a, b in echo_only):
            mic_e += float(np.sum(np.square(samples.astype(float))))
            out_e += float(np.sum(np.square(out.samples.astype(float))))
        transcriber.process(out)
    transcriber.flush()
    if mic_e and out_e:
        erle.append(10 * float(np.log10(mic_e / out_e)))
    return {"finals": finals, "barges": barges, "erle_db": erle,
            "cpu": (canceller.stats.cpu_s, canceller.stats.audio_s) if canceller else (0.0, 0.0)}


def _heard(trial: Trial, finals: list[Transcript], span: tuple[int, int]) -> str:
    lo, hi = EPOCH_MS + span[0], EPOCH_MS + span[1]
    return " ".join(f.text for f in finals if lo <= (f.start + f.end) / 2 < hi)


LEAK_WINDOW_MS = 400
"""A word heard within this of the same word in the reply (as the recogniser times both) is the
reply's: the buyer's own word, misheard as one the reply also has, is rarely heard at that moment."""

TimedWords = list[tuple[str, int]]
"""Normalised words and when each starts, in ms from its recording's start."""


def _timed(words: list[tuple[str, int]]) -> TimedWords:
    return [(token, start) for word, start in words for token in normalize(word).split()]


def reply_words(recognizer: Recognizer, played: np.ndarray) -> TimedWords:
    """The reply's words as the recogniser hears the loudspeaker's signal itself, with their times."""
    hypothesis = transcribe(recognizer, played)
    return _timed([(w.word, w.start_ms) for w in hypothesis.words])


def _leaked(trial: Trial, finals: list[Transcript], reply: TimedWords, heard_alone: str) -> list[str]:
    """Words of the reply that reached a transcript as the buyer's. With no buyer, every word
    heard. In double talk, the words of the reply heard at the moment the reply says them that the
    buyer did not say and the same utterance heard alone did not get either, when they are
    evidence of the echo: a deal term (a number, a price, goods, a unit: what would change a deal),
    or two or more of them in a row. A lone "a" or "the" is not: with the echo muted, the
    recogniser's own function words land on the reply's now and then (``--echo muted``)."""
    if trial.kind == "echo":
        return normalize(_heard(trial, finals, (trial.echo_ms[0], trial.echo_ms[1] + 1000))).split()
    # "$8.50" was said "eight dollars and fifty cents": the words as written and as normalised
    said = {_stem(w) for text in (trial.text, heard_alone) for w in (*normalize(text).split(), *text.lower().split())}
    lo, hi = EPOCH_MS + trial.buyer_ms[0], EPOCH_MS + trial.buyer_ms[1]
    heard = _timed([(w.word, w.start - (EPOCH_MS + trial.echo_ms[0])) for f in finals if lo <= (f.start + f.end) / 2 < hi for w in f.words])
    theirs = [_stem(w) not in said and any(w == r and abs(at - t) <= LEAK_WINDOW_MS for r, t in reply) for w, at in heard]
    in_runs = [mine and ((i > 0 and theirs[i - 1]) or (i + 1 < len(theirs) and theirs[i + 1])) for i, mine in enumerate(theirs)]
    return [w for (w, _at), mine, run in zip(heard, theirs, in_runs, strict=True) if mine and (run or deal_terms(w))]


def _stem(word: str) -> str:
    """A word without its plural's "s": the buyer's "costs" heard as "cost" is their own word."""
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def score(sessions: list[Session], results: list[dict[str, Any]], replies: list[TimedWords]) -> dict[str, Any]:
    names = noisy.matcher()
    exact: dict[str, list[bool]] = {"single": [], "double": []}
    leaks: list[str] = []
    caught: list[float | None] = []
    for session, result in zip(sessions, results, strict=True):
        finals: list[Transcript] = result["finals"]
        alone: dict[str, str] = {}
        for trial in session.trials:
            if trial.kind != "single":
                leaks += _leaked(trial, finals, replies[trial.reply_key], alone.get(trial.text, ""))
            if trial.kind == "echo":
                continue
            heard = _heard(trial, finals, trial.buyer_ms)
            exact[trial.kind].append(noisy.verdict(names, trial.text, heard).exact)
            alone.setdefault(trial.text, heard)  # single talk comes first
            if trial.kind == "double":
                lo, hi = EPOCH_MS + trial.buyer_ms[0], EPOCH_MS + trial.buyer_ms[1]
                fired = [b.at for b in result["barges"] if lo <= b.at <= hi]
                caught.append(fired[0] - (EPOCH_MS + trial.onset_ms) if fired else None)
    delays = [d for d in caught if d is not None]
    cpu_s = sum(r["cpu"][0] for r in results)
    audio_s = sum(r["cpu"][1] for r in results)
    single = sum(exact["single"]) / len(exact["single"])
    double = sum(exact["double"]) / len(exact["double"])
    return {
        "single_talk_exact": round(single, 3),
        "double_talk_exact": round(double, 3),
        "utterances": len(exact["single"]),
        "echo_leak_words": len(leaks),
        "leaked": leaks[:20],
        "barge_in_caught": round(len(delays) / len(caught), 3) if caught else None,
        "barge_in_ms": {"p50": percentile(delays, 50, method=LINEAR), "p95": percentile(delays, 95, method=LINEAR)},
        "erle_db": [round(e, 1) for r in results for e in r["erle_db"]],
        "canceller_cpu": round(cpu_s / audio_s, 4) if audio_s else None,
    }


def _buyers(voices: tuple[str, ...], count: int) -> list[tuple[str, np.ndarray]]:
    """``count`` sentences of the corpus in each voice, the voices interleaved over the rooms."""
    corpus = negotiation_corpus(voices=voices)
    per_voice = [corpus[i * len(SENTENCES):i * len(SENTENCES) + count] for i in range(len(voices))]
    return [(u.text, load_audio(u.path)) for group in zip(*per_voice, strict=True) for u in group]


def _replies() -> list[tuple[str, np.ndarray]]:
    voices = barge_in_check.avatar_voices()
    per_reply = len(voices) // len(barge_in_check.REPLIES)
    return [(barge_in_check.REPLIES[i // per_reply], v) for i, v in enumerate(voices)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=len(SENTENCES), help="sentences per voice (split over the rooms)")
    parser.add_argument("--voices", default=",".join(BUYER_VOICES), help="the buyer's synthetic voices (scripts/synth_speech.py)")
    parser.add_argument("--cancel", choices=("on", "off"), default="on")
    parser.add_argument("--echo", choices=("heard", "muted"), default="heard",
                        help="muted: the replies play at no level (the leak count's floor)")
    args = parser.parse_args(argv)
    config = Config.load(None, os.environ, {})
    settings = config.section(MicrophoneSettings)
    started = time.perf_counter()
    buyers = _buyers(tuple(v for v in args.voices.split(",") if v), args.utterances)
    replies = _replies()
    recognizer = load_recognizer(settings, config.core.data_dir, config.core.avatars)
    per_room = -(-len(buyers) // len(DISTANCES_M))
    levels = ECHO_OVER_DB if args.echo == "heard" else (MUTED_DB,) * len(ECHO_OVER_DB)
    sessions = [_session(d, i, buyers[i * per_room:(i + 1) * per_room], replies, levels) for i, d in enumerate(DISTANCES_M)]
    results = [_run_session(s, settings, recognizer, args.cancel == "on") for s in sessions]
    heard_replies = [reply_words(recognizer, samples) for _text, samples in replies]
    line = {"bench": "duplex", "cancel": args.cancel, "engine": recognizer.name, "voices": args.voices,
            "rooms_m": list(DISTANCES_M), "echo_over_db": list(levels), "output_delay_ms": OUTPUT_DELAY_MS,
            **score(sessions, results, heard_replies)}
    line["wall_s"] = round(time.perf_counter() - started, 1)
    s, d = line["single_talk_exact"], line["double_talk_exact"]
    p95 = line["barge_in_ms"]["p95"]
    line["meets_targets"] = {
        "double_vs_single": d >= 0.9 * s,
        "no_echo_leak": line["echo_leak_words"] == 0,
        "barge_in": (line["barge_in_caught"] or 0) >= 0.95 and p95 is not None and p95 <= 500,
        "canceller_cpu": line["canceller_cpu"] is not None and line["canceller_cpu"] <= 0.05,
    }
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
