"""Choosing and loading the recognition engine from the configuration."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from workers.microphone.domain import GOODS_COUNTABLE, INGREDIENTS, UNITS, corpus_sentences, corpus_vocabulary, domain_words
from workers.microphone.engine_vosk import ENGLISH_MODEL
from workers.microphone.recognizer import EngineUnavailable, Recognizer
from workers.microphone.rescore import NBestRescorer
from workers.microphone.settings import MicrophoneSettings
from workers.runtime.config import DEFAULT_AVATARS
from workers.runtime.logs import NOTICE

log = logging.getLogger(__name__)

ACCURACY_ORDER: tuple[str, ...] = ("whisper", "vosk", "pocketsphinx")
"""What ``engine = "auto"`` tries, most accurate first."""
WHY: dict[str, str] = {
    "whisper": "the most accurate engine here (bench/stt.py, one core: the lowest WER on negotiation speech, "
    "read speech and telephone prompts)",
    "vosk": "no Whisper model; Vosk's small English model is next (published LibriSpeech test-clean WER 9.9% vs "
    "Whisper tiny.en 5.6%)",
    "pocketsphinx": "the only engine present, and the least accurate (bench/stt.py: several times Whisper's WER on "
    "read speech and telephone prompts)",
}
"""The reason ``auto`` logs with its choice (bench/stt.py measures it: docs/microphone.md#speech-engines-measured
says what, docs/measurements.md has the figures)."""
WHISPER_MODEL_PREFIX = "faster-whisper-"
"""Folder name prefix of the Whisper models ``humaine-env models --whisper`` installs."""


def default_vosk_model(data_dir: Path) -> Path:
    """Where ``humaine-env models`` puts the English model."""
    return data_dir / "models" / ENGLISH_MODEL


def vosk_model_path(settings: MicrophoneSettings, data_dir: Path) -> Path:
    return Path(settings.vosk_model).expanduser() if settings.vosk_model else default_vosk_model(data_dir)


def whisper_model_dir(name: str, data_dir: Path) -> Path:
    """Where ``humaine-env models --whisper NAME`` installs a model (``base.en``, ...)."""
    return data_dir / "models" / f"{WHISPER_MODEL_PREFIX}{name}"


def whisper_model_path(settings: MicrophoneSettings, data_dir: Path) -> Path | None:
    """The configured Whisper model folder; None: the bundled tiny.en. A value that is not an
    existing folder and has no slash is a model name under ``<data_dir>/models``."""
    value = settings.whisper_model.strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if path.is_dir() or "/" in value or "\\" in value:
        return path
    return whisper_model_dir(value.removeprefix(WHISPER_MODEL_PREFIX), data_dir)


def biasing_vocabulary(settings: MicrophoneSettings, avatars: Sequence[str]) -> list[str]:
    """Vosk's runtime vocabulary: the domain's key words, every word of the domain language
    model's training sentences, and the configured extra words or phrases."""
    words = set(domain_words(avatars)) | corpus_vocabulary(corpus_sentences(avatars=avatars))
    return sorted(words) + list(settings.vocabulary)


def whisper_hotwords(settings: MicrophoneSettings, avatars: Sequence[str]) -> str:
    """Whisper's hotwords: the avatars' names, the goods and the units (and the configured
    extra words) — names of things, never example sentences, so no price can leak from them."""
    from workers.microphone.engine_whisper import hotwords_for

    return hotwords_for([*avatars, *INGREDIENTS, *GOODS_COUNTABLE, *UNITS, "dollars", "cents", *settings.vocabulary], avatars)


def whisper_rescorer(settings: MicrophoneSettings, data_dir: Path,
                     avatars: Sequence[str] = DEFAULT_AVATARS) -> NBestRescorer | None:
    """The finals' n-best rescorer, or None when it is off or its language models cannot be
    had (then Whisper runs as before, with one warning)."""
    if not settings.whisper_rescore:
        return None
    from workers.microphone.rescore import domain_rescorer

    try:
        return domain_rescorer(data_dir / "cache", tuple(settings.vocabulary), settings.whisper_rescore_weight, avatars)
    except (EngineUnavailable, OSError, RuntimeError, ValueError) as exc:
        log.warning("Whisper's n-best rescoring is off: %s", exc)
        return None


def _whisper(settings: MicrophoneSettings, data_dir: Path, avatars: Sequence[str]) -> Recognizer:
    """Hotwords only with the full 30 s window: with the trimmed one the decoder copies them
    and loops (bench/stt.py whisper-biased: WER 0.31 vs 0.16 on negotiation speech, 62 invented
    deal terms vs 22, latency p95 9.7 s)."""
    from workers.microphone.engine_whisper import WhisperRecognizer

    return WhisperRecognizer(
        whisper_model_path(settings, data_dir),
        beam_size=settings.whisper_beam_size,
        threads=settings.whisper_threads,
        hotwords=whisper_hotwords(settings, avatars) if settings.biasing and settings.whisper_context == "full" else None,
        interims=settings.whisper_interims,
        context=settings.whisper_context,
        context_pad_s=settings.whisper_context_pad_s,
        prompt=settings.whisper_prompt or None,
        rescorer=whisper_rescorer(settings, data_dir, avatars),
    )


def _vosk(settings: MicrophoneSettings, data_dir: Path, avatars: Sequence[str]) -> Recognizer:
    from workers.microphone.engine_vosk import VoskRecognizer

    vocab = biasing_vocabulary(settings, avatars) if settings.biasing else None
    return VoskRecognizer(vosk_model_path(settings, data_dir), vocabulary=vocab)


def _pocketsphinx(settings: MicrophoneSettings, data_dir: Path, avatars: Sequence[str]) -> Recognizer:
    from workers.microphone.engine_pocketsphinx import PocketsphinxRecognizer

    return PocketsphinxRecognizer(
        biasing=settings.biasing and settings.pocketsphinx_domain_lm,
        cache_dir=data_dir / "cache",
        extra_words=tuple(settings.vocabulary),
        options=settings.pocketsphinx_options,
        avatars=avatars,
    )


LOADERS: dict[str, Callable[[MicrophoneSettings, Path, Sequence[str]], Recognizer]] = {
    "whisper": _whisper,
    "vosk": _vosk,
    "pocketsphinx": _pocketsphinx,
}


def describe(recognizer: Recognizer) -> str:
    """``whisper (tiny.en, beam 5, n-best rescored)``: the engine and what it was loaded with."""
    details: list[str] = []
    model = getattr(recognizer, "model_name", None) or getattr(recognizer, "model_path", None)
    if model is not None:
        details.append(model if isinstance(model, str) else Path(model).name)
    beam = getattr(recognizer, "beam_size", None)
    if beam:
        details.append(f"beam {beam}")
    if getattr(recognizer, "hotwords", None) or getattr(recognizer, "grammar", None) or getattr(recognizer, "biasing", False):
        details.append("biased")
    if getattr(recognizer, "rescorer", None) is not None:
        details.append("n-best rescored")
    return f"{recognizer.name} ({', '.join(details)})" if details else recognizer.name


def load_recognizer(settings: MicrophoneSettings, data_dir: Path,
                    avatars: Sequence[str] = DEFAULT_AVATARS) -> Recognizer:
    """The configured engine, biased towards the room's names (``[core] avatars``); ``auto``
    loads the first of :data:`ACCURACY_ORDER` whose model is present and logs one line with the
    choice and the reason. Raises :class:`EngineUnavailable`
    (one line). Loading takes seconds: the console says what loads, and when it is ready."""
    wanted = settings.engine if settings.engine != "auto" else f"the most accurate present of {', '.join(ACCURACY_ORDER)}"
    log.log(NOTICE, "loading the speech engine (%s) ...", wanted)
    started = time.monotonic()
    recognizer = _load(settings, data_dir, avatars)
    log.log(NOTICE, "speech engine ready: %s (%.1f s)", describe(recognizer), time.monotonic() - started)
    return recognizer


def _load(settings: MicrophoneSettings, data_dir: Path, avatars: Sequence[str]) -> Recognizer:
    if settings.engine != "auto":
        return LOADERS[settings.engine](settings, data_dir, avatars)
    absent: list[str] = []
    for engine in ACCURACY_ORDER:
        try:
            recognizer = LOADERS[engine](settings, data_dir, avatars)
        except EngineUnavailable as exc:
            absent.append(f"{engine}: {exc}")
            continue
        skipped = f" [not present: {'; '.join(absent)}]" if absent else ""
        level = logging.INFO if engine == ACCURACY_ORDER[0] else logging.WARNING  # a less accurate engine than possible
        log.log(level, "speech engine: %s, chosen by accuracy: %s%s", describe(recognizer), WHY[engine], skipped)
        return recognizer
    raise EngineUnavailable("no speech engine could be loaded: " + "; ".join(absent))
