"""Choosing and loading the recognition engine from the configuration."""

from __future__ import annotations

import logging
from pathlib import Path

from workers.microphone.domain import DOMAIN_WORDS, corpus_sentences, corpus_vocabulary
from workers.microphone.engine_vosk import ENGLISH_MODEL
from workers.microphone.recognizer import EngineUnavailable, Recognizer
from workers.microphone.settings import MicrophoneSettings

log = logging.getLogger(__name__)


def default_vosk_model(data_dir: Path) -> Path:
    """Where ``humaine-env models`` puts the English model."""
    return data_dir / "models" / ENGLISH_MODEL


def vosk_model_path(settings: MicrophoneSettings, data_dir: Path) -> Path:
    return Path(settings.vosk_model).expanduser() if settings.vosk_model else default_vosk_model(data_dir)


def biasing_vocabulary(settings: MicrophoneSettings) -> list[str]:
    """Vosk's runtime vocabulary: the domain's key words, every word of the domain language
    model's training sentences, and the configured extra words or phrases."""
    return sorted(set(DOMAIN_WORDS) | corpus_vocabulary(corpus_sentences())) + list(settings.vocabulary)


def load_recognizer(settings: MicrophoneSettings, data_dir: Path) -> Recognizer:
    """The configured engine. ``auto`` prefers Vosk and falls back to pocketsphinx with a
    warning that names the missing model. Raises :class:`EngineUnavailable` (one line)."""
    if settings.engine in ("auto", "vosk"):
        from workers.microphone.engine_vosk import VoskRecognizer

        try:
            vocab = biasing_vocabulary(settings) if settings.biasing else None
            return VoskRecognizer(vosk_model_path(settings, data_dir), vocabulary=vocab)
        except EngineUnavailable as exc:
            if settings.engine == "vosk":
                raise
            log.warning("%s; using pocketsphinx instead (less accurate)", exc)
    from workers.microphone.engine_pocketsphinx import PocketsphinxRecognizer

    return PocketsphinxRecognizer(
        biasing=settings.biasing,
        cache_dir=data_dir / "cache",
        extra_words=tuple(settings.vocabulary),
        options=settings.pocketsphinx_options,
    )
