"""pocketsphinx: the embedded English fallback whose acoustic model ships inside the wheel.

With biasing on, the general English trigram model is replaced by a domain model trained on
generated negotiation sentences (see :mod:`workers.microphone.domain`) that also carries the
most frequent general English words as unigrams; with biasing off, the wheel's model is used
as is. The engine loader uses the domain model only with ``[microphone] pocketsphinx_domain_lm``
(off by default), decided on ``bench/stt.py`` (general vs domain model, one core): negotiation
speech by three Festival voices and espeak-ng, 120 utterances, WER 0.27 vs 0.15 and deal-term
recall 0.73 vs 0.94, but 4 vs 10 deal terms invented; real read speech (pocketsphinx test data)
WER 0.28 vs 0.60, Asterisk prompts 0.49 vs 0.77. The domain model wins only on the speech it was
built for and turns the rest into made-up negotiation: an invented quantity or price is a wrong
deal, a missed one is asked again. The pocketsphinx decoder is not thread-safe and decodes one utterance at a time, which
matches the microphone worker (one voice, one stream).
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import math
import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from pydantic import TypeAdapter, ValidationError

from workers.microphone.domain import build_arpa, corpus_sentences, corpus_vocabulary
from workers.microphone.recognizer import EngineUnavailable, Hypothesis, WordTiming
from workers.runtime.config import DEFAULT_AVATARS

log = logging.getLogger(__name__)

FRAME_MS = 10
"""pocketsphinx's feature frame rate (100 frames per second)."""
BACKGROUND_WORDS = 3000
"""How many of the most frequent general English words the domain model keeps."""
DECODER_DEFAULTS: dict[str, bool | int | float | str] = {"fwdflat": False}
"""Decoder options over pocketsphinx's own defaults, measured with ``bench/stt.py --ps-options``.

pocketsphinx runs two extra passes at the end of an utterance: ``fwdflat`` (a second Viterbi
search over the whole utterance with a flat lexicon) and ``bestpath`` (a lattice search that
also yields the word posteriors used as confidences). ``fwdflat`` is most of the end-of-utterance
time and keeps the general model out of the latency and speed targets, for a mixed effect on
accuracy, so it is off. ``bench/stt.py --engines pocketsphinx,pocketsphinx-biased --ps-options ''
--ps-options fwdflat=yes`` on one pinned core, general model, off vs on: RTF 0.24 vs 0.34,
speech-end → final p95 436 vs 695 ms, WER negotiation 0.785 vs 0.76, pocketsphinx test data
0.26 vs 0.28, Asterisk prompts 0.50 vs 0.44; domain model: p95 372 vs 531 ms, WER negotiation
0.31 vs 0.29. ``bestpath`` stays on: it is cheap without ``fwdflat`` and the confidences need its
lattice (without it every word reads 1.0)."""
OptionValue = bool | int | float | str
_FILLERS = re.compile(r"^(<s>|</s>|<sil>|\[.*\]|\+\+.*\+\+)$")


def _model_dir() -> Path:
    try:
        from pocketsphinx import get_model_path
    except ImportError as exc:
        raise EngineUnavailable(f"pocketsphinx is not installed ({exc}); pip install pocketsphinx") from None
    return Path(get_model_path()) / "en-us"


def general_lm_path() -> Path:
    """pocketsphinx's general English trigram model (in the wheel)."""
    return _model_dir() / "en-us.lm.bin"


def _clean(word: str) -> str:
    """A dictionary entry's word without its alternative-pronunciation mark: ``read(2)`` → ``read``."""
    head, mark, rest = word.partition("(")
    return head if mark and rest[:-1].isdigit() and rest.endswith(")") else word


def domain_lm_path(cache_dir: Path, extra_words: tuple[str, ...] = (), avatars: Sequence[str] = DEFAULT_AVATARS) -> Path:
    """Build (once, cached by content: the room's names are part of it) the domain ARPA model
    and return its path."""
    from pocketsphinx import Config, LogMath, NGramModel

    model = _model_dir()
    sentences = corpus_sentences(avatars=avatars)
    sentences += [w for w in extra_words]
    digest = hashlib.sha1("\n".join(sentences).encode() + str(BACKGROUND_WORDS).encode()).hexdigest()[:12]
    path = cache_dir / f"pocketsphinx-domain-{digest}.arpa"
    if path.is_file():
        return path
    dict_words = {_clean(line.split(" ", 1)[0]) for line in (model / "cmudict-en-us.dict").open(encoding="utf-8")}
    missing = sorted(corpus_vocabulary(sentences) - dict_words)
    if missing:
        log.warning("domain words without a pronunciation are left out: %s", ", ".join(missing))
        sentences = [s for s in sentences if not set(s.split()) & set(missing)]
    config = Config()
    config.set_string("-logfn", os.devnull)
    logmath = LogMath()
    general = NGramModel(config, logmath, str(general_lm_path()))
    base = math.log(1.0001)  # LogMath's default base: prob() returns integers in it
    scored = heapq.nlargest(BACKGROUND_WORDS, ((general.prob([w]), w) for w in dict_words if w.isalpha() or "'" in w))
    background = {w: math.exp(score * base) for score, w in scored}
    text = build_arpa(sentences, background)
    try:
        return _write_atomically(path, text)
    except OSError as exc:
        # a read-only or full data directory must not stop the microphone: the model is
        # rebuilt in a temporary folder (a few seconds more at each start)
        fallback = Path(tempfile.gettempdir()) / "humaine-env" / path.name
        log.warning("cannot write the pocketsphinx cache %s (%s); using %s", path, exc.strerror or exc, fallback)
        try:
            return _write_atomically(fallback, text)
        except OSError as again:
            raise EngineUnavailable(f"cannot write the pocketsphinx language model anywhere: {again.strerror or again}") from None


def _write_atomically(path: Path, text: str) -> Path:
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


class _DecoderConfig(Protocol):
    """A pocketsphinx ``Config`` as options are set on it: by name, typed like its defaults
    (pocketsphinx ships no types)."""

    def __getitem__(self, name: str) -> OptionValue | None: ...

    def __setitem__(self, name: str, value: OptionValue) -> None: ...


def _set_option(config: _DecoderConfig, key: str, value: OptionValue) -> OptionValue:
    """One decoder option, typed like pocketsphinx's own default for that key (pydantic's lax
    parsing: ``"no"`` is False for a boolean option, ``"1e-40"`` a float)."""
    name = key.lstrip("-")
    try:
        current = config[name]
    except KeyError:
        raise EngineUnavailable(f"unknown pocketsphinx option {name!r} in [microphone] pocketsphinx_options") from None
    kind = type(current) if current is not None else str
    try:
        typed: OptionValue = TypeAdapter(kind).validate_python(value)
    except ValidationError:
        raise EngineUnavailable(f"pocketsphinx option {name!r} needs a {kind.__name__}, got {value!r}") from None
    config[name] = typed
    return typed


class PocketsphinxStream:
    def __init__(self, owner: PocketsphinxRecognizer) -> None:
        self._owner = owner
        self._decoder = owner.decoder
        owner.lock.acquire()
        self._decoder.start_utt()
        self._done = False

    def accept(self, samples: NDArray[np.int16]) -> None:
        self._decoder.process_raw(samples.astype("<i2").tobytes(), False, False)

    def partial(self) -> str:
        hyp = self._decoder.hyp()
        return hyp.hypstr if hyp is not None else ""

    def final(self) -> Hypothesis:
        if self._done:
            raise RuntimeError("stream already finished")
        self._done = True
        try:
            self._decoder.end_utt()
            hyp = self._decoder.hyp()
            if hyp is None or not hyp.hypstr.strip():
                return Hypothesis("", 0.0, [])
            # pocketsphinx 5 already returns word posteriors from the lattice it builds for
            # the best path (no extra decoding): ``seg.prob`` is a probability, not a log value.
            words = [
                WordTiming(
                    _clean(seg.word),
                    seg.start_frame * FRAME_MS,
                    (seg.end_frame + 1) * FRAME_MS,
                    float(min(1.0, max(0.0, seg.prob))),
                )
                for seg in self._decoder.seg()
                if not _FILLERS.match(seg.word)
            ]
            # Mean word posterior, as Vosk reports it: the sentence posterior (``hyp.prob``)
            # shrinks with every word and would rank long utterances as unreliable.
            confidence = sum(w.conf for w in words) / len(words) if words else 0.0
            return Hypothesis(hyp.hypstr, confidence, words)
        finally:
            self._owner.lock.release()


class PocketsphinxRecognizer:
    """Loads the wheel's en-us acoustic model with either the general or the domain LM."""

    name = "pocketsphinx"

    def __init__(
        self,
        biasing: bool = True,
        cache_dir: Path | None = None,
        extra_words: tuple[str, ...] = (),
        options: Mapping[str, OptionValue] | None = None,
        avatars: Sequence[str] = DEFAULT_AVATARS,
    ) -> None:
        """``options`` (pocketsphinx Config keys without the dash, e.g. ``beam``, ``fwdflat``)
        are applied over :data:`DECODER_DEFAULTS`."""
        try:
            from pocketsphinx import Config, Decoder
        except ImportError as exc:
            raise EngineUnavailable(f"pocketsphinx is not installed ({exc}); pip install pocketsphinx") from None
        config = Config()  # defaults: the wheel's en-us model at 16 kHz
        config.set_string("-logfn", os.devnull)
        self.biasing = biasing
        if biasing:
            lm = domain_lm_path(cache_dir or Path(".cache/humaine-env"), extra_words, avatars)
            config.set_string("-lm", str(lm))
        else:
            config.set_string("-lm", str(general_lm_path()))
        self.options: dict[str, OptionValue] = {
            key: _set_option(config, key, value) for key, value in {**DECODER_DEFAULTS, **(options or {})}.items()
        }
        """The decoder options applied over pocketsphinx's defaults, typed."""
        self.decoder = Decoder(config)
        self.lock = threading.Lock()

    def stream(self) -> PocketsphinxStream:
        return PocketsphinxStream(self)
