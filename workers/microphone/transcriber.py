"""Audio blocks → utterances → interim and final transcripts, independent of MQTT.

Gating happens here too, so it is testable without a broker: while paused (privacy) nothing is
recognized or emitted; speech overlapping an avatar's own speech (echo) is dropped or tagged.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE, AudioBlock, SourceKind
from workers.microphone import turn as turn_model
from workers.microphone.barge_in import BargeInDetector
from workers.microphone.echo import EchoGate
from workers.microphone.lips import LipWatch
from workers.microphone.names import Confirm, NameRecovery, names_prompt
from workers.microphone.normalize import NumberStyle, normalize_hypothesis, normalize_text
from workers.microphone.outgoing import Outgoing
from workers.microphone.prosody import PitchTracker
from workers.microphone.recognizer import Hypothesis, Recognizer, RecognizerStream, SpeculativeStream
from workers.microphone.review import review
from workers.microphone.settings import SPECULATE_MS
from workers.microphone.turn import EndOfTurn, UtteranceTurn
from workers.microphone.vad import FrameClassifier, Segmenter, SpeechAudio, SpeechEnd, SpeechStart, WebrtcFrames
from workers.runtime.config import DEFAULT_AVATARS
from workers.runtime.messages import BargeIn, Transcript, VadEvent, Word
from workers.runtime.worker_ids import MICROPHONE as MICROPHONE_WORKER

if TYPE_CHECKING:
    from workers.microphone.echo_cancel import EchoCanceller
    from workers.microphone.settings import MicrophoneSettings

log = logging.getLogger(__name__)


@dataclass
class _Open:
    utterance_id: str
    start_ms: int
    stream: RecognizerStream
    last_interim_ms: int
    heard_until_ms: int
    """Audio-clock end of the latest block of this utterance."""
    last_text: str = ""
    vad_published: bool = False
    silent_ms: int = 0
    """Unvoiced audio since the last voiced frame."""
    speculating: bool = False
    barged_at_ms: int | None = None
    """When the buyer was heard talking over an avatar (audio clock): this utterance is speech,
    not echo, from about then on."""
    pitch: PitchTracker | None = None
    """Measures how the utterance's pitch ends, when asked to (``measure_pitch``)."""
    turn: UtteranceTurn | None = None
    """The utterance's audio for the end-of-turn model and its answers, when a model reads them."""
    recent: collections.deque[NDArray[np.int16]] = field(default_factory=collections.deque)
    """Its last :data:`BARGE_LEAD_MS` of audio, to be heard again from when a barge-in shows it
    opened on the avatar's echo (kept only where barge-in is on)."""
    recent_samples: int = 0

    def keep_recent(self, samples: NDArray[np.int16]) -> None:
        self.recent.append(samples)
        self.recent_samples += len(samples)
        while self.recent_samples - len(self.recent[0]) >= SAMPLE_RATE * BARGE_LEAD_MS // 1000:
            self.recent_samples -= len(self.recent.popleft())

    def hear_again_from(self, stream: RecognizerStream, barged_at_ms: int) -> None:
        """The utterance opened on the avatar's echo well before the buyer barged in: its words
        up to then are the avatar's. ``stream`` hears it again from its last :data:`BARGE_LEAD_MS`."""
        audio = np.concatenate(list(self.recent))
        stream.accept(audio)
        old, self.stream = self.stream, stream
        self.start_ms = barged_at_ms - len(audio) * 1000 // SAMPLE_RATE
        self.speculating, self.silent_ms = False, 0
        try:
            old.final()  # its result is the echo's
        except Exception as exc:
            log.debug("dropping the echo's decode: %s", exc)
        log.info("the utterance opened on the avatar's echo: heard again from the barge-in on")


@dataclass
class TranscriberStats:
    utterances: int = 0
    finals: int = 0
    interims: int = 0
    echo_dropped: int = 0
    barge_ins: int = 0
    echo_tagged: int = 0
    paused_blocks: int = 0
    empty: int = 0
    bystanders: int = 0
    """Utterances dropped because the buyer's lips were still while they were said."""
    final_latency_ms: list[float] = field(default_factory=list)
    """Wall time from the end of the utterance's audio reaching us to its final (last 100)."""


SILENCE_SLACK_MS = 100
"""How far into the silence after the last voiced frame a word may still start."""


BARGE_LEAD_MS = 500
"""How long before the barge-in detector fired the buyer's voice may have begun: it fires once
the buyer stood over the echo for most of ``barge_in_min_ms`` (300), under 200 ms after they
began (``bench/duplex.py``'s ``barge_in_ms``, p95), later for a soft start."""
BARGE_OPENED_MS = BARGE_LEAD_MS + 300
"""An utterance open longer than this before its barge-in opened on the avatar's echo, before the
buyer spoke (what the canceller left of the day's first seconds of loudspeaker sound): it is
heard again from :data:`BARGE_LEAD_MS` before the barge-in. One that opened on the buyer's own
voice opened about the voice detector's pre-roll (300 ms) before it, and is heard whole."""


def heard_before(hyp: Hypothesis, speech_end_ms: int) -> Hypothesis:
    """The hypothesis without words that start in the silence after the utterance's last
    voiced frame (``speech_end_ms`` on the stream's clock): the voice activity detector heard
    nothing there, so an engine that puts a word there made it up."""
    kept = [w for w in hyp.words if w.start_ms <= speech_end_ms + SILENCE_SLACK_MS]
    if len(kept) == len(hyp.words):
        return hyp
    confidence = sum(w.conf for w in kept) / len(kept) if kept else 0.0
    return Hypothesis(" ".join(w.word for w in kept), confidence, kept)


def frame_classifier(settings: MicrophoneSettings) -> FrameClassifier:
    """The voice-activity frame classifier ``[microphone] vad_engine`` names."""
    if settings.vad_engine == "silero":
        from workers.microphone.vad_silero import SileroFrames

        return SileroFrames(settings.silero_threshold)
    return WebrtcFrames(settings.vad_aggressiveness)


def segmenter_for(settings: MicrophoneSettings, hangover_ms: int | None = None) -> Segmenter:
    """The voice-activity segmenter ``[microphone]`` configures (``hangover_ms``: a bench's
    override): the worker, the transcriber and the benchmarks all build it here."""
    s = settings
    return Segmenter(
        aggressiveness=s.vad_aggressiveness,
        preroll_ms=s.preroll_ms,
        hangover_ms=s.hangover_ms if hangover_ms is None else hangover_ms,
        max_utterance_ms=s.max_utterance_ms,
        energy_floor_dbfs=s.energy_floor_dbfs,
        classifier=frame_classifier(s),
        noise_margin_db=s.vad_noise_margin_db,
        release_margin_db=s.vad_release_margin_db,
    )


class Transcriber:
    def __init__(
        self,
        recognizer: Recognizer,
        segmenter: Segmenter,
        source_kind: SourceKind,
        emit_vad: Callable[[VadEvent], None],
        emit_transcript: Callable[[Transcript], None],
        worker_id: str = MICROPHONE_WORKER,
        echo: EchoGate | None = None,
        echo_mode: str = "drop",
        interim_hz: float = 5.0,
        numbers: NumberStyle = "digits",
        speculate_ms: int | None = SPECULATE_MS,
        barge_in: BargeInDetector | None = None,
        emit_barge_in: Callable[[BargeIn], None] | None = None,
        measure_pitch: bool = False,
        names: NameRecovery | None = None,
        quantity_doubts: float | None = None,
        turn: EndOfTurn | None = None,
        turn_tail_ms: int = 0,
        lips: LipWatch | None = None,
        avatars: Sequence[str] = DEFAULT_AVATARS,
    ) -> None:
        """``numbers``: how the normalisation step after the engine writes numbers and money
        (``normalize``); it runs on every interim and final, whatever the engine.
        ``speculate_ms``: pause after which a :class:`SpeculativeStream` starts its final
        (None: never). ``barge_in``: detect the buyer talking over an avatar; ``emit_barge_in``
        gets each one. ``measure_pitch``: finals carry ``pitch_end`` (only worth its per-block
        cost when the merger reads it: ``[transcript] merge_hold_level_pitch_st``). ``names``:
        recover a misheard leading avatar name; ``quantity_doubts``: list doubtful quantities, a
        number or unit below this probability being unsure (None: not checked); both in the
        final's ``doubts`` (:mod:`workers.microphone.review`). ``turn``: the end-of-turn model
        whose probability that the turn is complete each final carries (``turn_complete``).
        ``lips``: the buyer's lips as the camera saw them; speech while they were still is a
        bystander's, neither a final nor a barge-in (:mod:`workers.microphone.lips`).
        ``avatars``: the room's names (``[core] avatars``), written as configured."""
        self.recognizer = recognizer
        self.segmenter = segmenter
        self.emit_vad = emit_vad
        self.emit_transcript = emit_transcript
        self._out = Outgoing(worker_id, source_kind, recognizer.name)
        self.echo = echo or EchoGate()
        self.echo_mode = echo_mode
        self.interim_interval_ms = round(1000.0 / interim_hz)
        self.numbers: NumberStyle = numbers
        self.speculate_ms = speculate_ms
        self.barge_in = barge_in
        self.barge_in_trusted: Callable[[], bool] = lambda: True  # asked when the detector would fire (follow_canceller)
        self.emit_barge_in = emit_barge_in
        self._measure_pitch = measure_pitch
        self.names = names
        self.quantity_doubts = quantity_doubts
        self._turn = turn
        self.turn_tail_ms = turn_tail_ms
        self.lips = lips
        self.avatars = tuple(avatars)
        self.stats = TranscriberStats()
        self._paused = threading.Event()
        self._open: _Open | None = None

    @classmethod
    def from_settings(
        cls,
        settings: MicrophoneSettings,
        recognizer: Recognizer,
        source_kind: SourceKind,
        emit_vad: Callable[[VadEvent], None],
        emit_transcript: Callable[[Transcript], None],
        avatars: Sequence[str] = DEFAULT_AVATARS,
        cancelling: bool = False,
        **kwargs: Any,
    ) -> Transcriber:
        """The pipeline as ``[microphone]`` configures it (segmenter, interim rate, numbers) for
        a room with ``avatars``: the live worker, ``humaine-env transcribe`` and bench/stt.py all
        build it here. ``cancelling``: the blocks come through the echo canceller (barge-in's default)."""
        s = settings
        segmenter = segmenter_for(s)
        kwargs.setdefault("interim_hz", s.interim_hz)
        kwargs.setdefault("numbers", s.numbers)
        kwargs.setdefault("speculate_ms", s.speculate_ms or None)
        kwargs.setdefault("barge_in", BargeInDetector(s.barge_in_margin_db, s.barge_in_min_ms) if s.barges_in(cancelling) else None)
        recovery = NameRecovery.build(avatars, s.name_recovery_threshold, s.name_recovery_max_conf) if s.name_recovery else None
        kwargs.setdefault("names", recovery)
        kwargs.setdefault("quantity_doubts", s.quantity_doubt_conf if s.quantity_doubts else None)
        if "turn" not in kwargs:
            kwargs["turn"] = turn_model.load(s.turn_model_path) if s.end_of_turn else None
        kwargs.setdefault("turn_tail_ms", s.turn_tail_ms)
        kwargs.setdefault("lips", LipWatch(s.lips_min_motion) if s.lips else None)
        return cls(recognizer, segmenter, source_kind, emit_vad, emit_transcript, avatars=avatars, **kwargs)

    # -- privacy -------------------------------------------------------------------------------
    def pause(self) -> None:
        """Stop hearing: the open utterance is abandoned, nothing is published until resume."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    # -- what finals carry ---------------------------------------------------------------------
    def measure_pitch(self, on: bool) -> None:
        """Finals carry ``pitch_end`` from the next utterance on (or no longer)."""
        self._measure_pitch = on

    @property
    def turn(self) -> EndOfTurn | None:
        """The end-of-turn model whose ``turn_complete`` finals carry (None: they carry none)."""
        return self._turn

    def use_turn_model(self, model: EndOfTurn | None) -> None:
        """Finals carry the end-of-turn model's ``turn_complete`` from the next utterance on."""
        self._turn = model

    # -- audio ---------------------------------------------------------------------------------
    def process(self, block: AudioBlock) -> None:
        if self._paused.is_set():
            self.stats.paused_blocks += 1
            if self._open is not None or self.segmenter.in_speech:
                self._abandon()
            return
        for event in self.segmenter.process(block):
            self._handle(event, block)
        if self.barge_in is not None:
            self._check_barge_in(block)

    def echo_realigned(self) -> None:
        """The canceller moved its alignment: the echo it leaves changes while it re-adapts, and
        the barge-in detector learns it again rather than take the change for the buyer."""
        if self.barge_in is not None:
            self.barge_in.relearn()

    def _check_barge_in(self, block: AudioBlock) -> None:
        assert self.barge_in is not None
        current = self._open
        speaking = self.echo.speaking_at(block.t_ms)
        # the lips are asked only while an avatar speaks: there is nothing to barge into otherwise
        def can_fire() -> bool:
            return current is not None and self.barge_in_trusted() and not (
                speaking and self.lips is not None and self.lips.still(current.start_ms, block.end_ms)
            )

        level = self.barge_in.process(block.samples, round(block.duration_ms), speaking, can_fire=can_fire)
        if level is None or current is None:
            return
        current.barged_at_ms = block.end_ms
        self.stats.barge_ins += 1
        if current.start_ms < block.end_ms - BARGE_OPENED_MS:
            current.hear_again_from(self.recognizer.stream(), block.end_ms)
        if not current.vad_published:
            current.vad_published = True
            self.emit_vad(self._out.vad("speech_start", current.utterance_id, current.start_ms))
        log.info("barge-in: the buyer talks over the avatar (%.1f dBFS over an echo of %.1f)",
                 level, self.barge_in.last_reference_db or 0.0)
        if self.emit_barge_in is not None:
            echo_db = self.barge_in.last_reference_db or 0.0
            self.emit_barge_in(self._out.barge_in(current.utterance_id, block.end_ms, level, echo_db))

    def flush(self) -> None:
        """End of input: finish an open utterance."""
        for event in self.segmenter.flush():
            self._handle(event, None)

    def _abandon(self) -> None:
        if self._open is not None:
            current, self._open = self._open, None
            try:
                current.stream.final()
            except Exception as exc:  # the result is discarded either way
                log.debug("abandoning utterance: %s", exc)
            if current.vad_published:  # every published speech_start gets its speech_end
                self.emit_vad(self._out.vad("speech_end", current.utterance_id, current.heard_until_ms))
        self.segmenter.flush_silently()

    def _handle(self, event: SpeechStart | SpeechAudio | SpeechEnd, block: AudioBlock | None) -> None:
        if isinstance(event, SpeechStart):
            self.stats.utterances += 1
            stream = self.recognizer.stream()
            stream.accept(event.samples)
            self._open = _Open(event.utterance_id, event.t_ms, stream, event.t_ms, event.t_ms)
            if self.barge_in is not None:
                self._open.keep_recent(event.samples)
            if self._measure_pitch:
                self._open.pitch = PitchTracker()
                self._open.pitch.accept(event.samples)
            if self._turn is not None:
                self._open.turn = UtteranceTurn(self._turn, event.t_ms, self.turn_tail_ms)
                self._open.turn.accept(event.samples)
            if not self._gated(event.t_ms, event.onset_ms):
                self._open.vad_published = True
                self.emit_vad(self._out.vad("speech_start", event.utterance_id, event.onset_ms))
        elif isinstance(event, SpeechAudio) and self._open is not None:
            self._open.stream.accept(event.samples)
            if self.barge_in is not None:
                self._open.keep_recent(event.samples)
            if self._open.pitch is not None:
                self._open.pitch.accept(event.samples)
            if self._open.turn is not None:
                self._open.turn.accept(event.samples)
            assert block is not None
            self._open.heard_until_ms = block.end_ms
            self._maybe_speculate(event.voiced, round(block.duration_ms))
            if not (self._open.silent_ms and isinstance(self._open.stream, SpeculativeStream)):
                # in a pause there are no new words, and a re-decode there would hold up the final
                self._maybe_interim(block.end_ms)
        elif isinstance(event, SpeechEnd) and self._open is not None:
            self._finish(event)

    def _gated(self, start_ms: int, end_ms: int) -> bool:
        """True when this span is echo and echo is dropped."""
        return self.echo_mode == "drop" and self.echo.is_echo(start_ms, end_ms)

    def _maybe_speculate(self, voiced: bool, frame_ms: int) -> None:
        """A stream that decodes whole utterances starts its final ``speculate_ms`` into a
        pause and is told when the speaker goes on (see :class:`SpeculativeStream`)."""
        current = self._open
        assert current is not None
        if not isinstance(current.stream, SpeculativeStream) or self.speculate_ms is None:
            return
        if voiced:
            current.silent_ms = 0
            if current.speculating:
                current.speculating = False
                current.stream.retract()
            return
        current.silent_ms += frame_ms
        if not current.speculating and current.silent_ms >= self.speculate_ms:
            current.speculating = True
            current.stream.speculate()
            if current.turn is not None:
                current.turn.ask_early(current.heard_until_ms - current.silent_ms, current.silent_ms)

    def _maybe_interim(self, now_ms: int) -> None:
        assert self._open is not None
        if now_ms - self._open.last_interim_ms < self.interim_interval_ms:
            return
        self._open.last_interim_ms = now_ms
        text = normalize_text(self._open.stream.partial().strip(), self.numbers, self.avatars)
        if not text or text == self._open.last_text:
            return
        self._open.last_text = text
        echo = self.echo.is_echo(self._open.start_ms, now_ms) and self._open.barged_at_ms is None
        if echo and self.echo_mode == "drop":
            return
        if self.lips is not None and self.lips.still(self._open.start_ms, now_ms):
            return
        self.stats.interims += 1
        span = (self._open.start_ms, now_ms)
        self.emit_transcript(self._out.transcript(self._open.utterance_id, False, text, 0.0, [], span, echo))

    def _names_second_pass(self, stream: object, speech_end_ms: int) -> Confirm | None:
        """The names' second decode (:mod:`workers.microphone.names`), for an engine that can
        decode an utterance again with a context (Whisper); normalised like the first."""
        redecode = getattr(stream, "redecode", None)
        if self.names is None or redecode is None:
            return None
        prompt = names_prompt(self.names.avatars)
        return lambda: normalize_hypothesis(heard_before(redecode(prompt), speech_end_ms), self.numbers, self.avatars).words

    def _finish(self, end: SpeechEnd) -> None:
        assert self._open is not None
        current, self._open = self._open, None
        # before the final's decode is awaited: a speculative decode runs on meanwhile
        turn_complete = current.turn.complete(end.t_ms, end.forced) if current.turn is not None else None
        decode_started = time.monotonic()
        hyp = normalize_hypothesis(heard_before(current.stream.final(), end.t_ms - current.start_ms), self.numbers, self.avatars)
        decode_ms = (time.monotonic() - decode_started) * 1000.0
        echo = self.echo.is_echo(current.start_ms, end.t_ms) and current.barged_at_ms is None
        if current.vad_published or not echo:  # every published speech_start gets its speech_end
            self.emit_vad(self._out.vad("speech_end", current.utterance_id, end.t_ms))
        if echo and self.echo_mode == "drop":
            self.stats.echo_dropped += 1
            log.info("dropped echo utterance %r", hyp.text)
            return
        if not hyp.text.strip():
            self.stats.empty += 1
            return
        if self.lips is not None and self.lips.still(current.start_ms, end.t_ms):
            self.stats.bystanders += 1
            log.info("dropped a bystander's utterance (the buyer's lips were still): %r", hyp.text)
            return
        base = current.start_ms
        second_pass = self._names_second_pass(current.stream, end.t_ms - current.start_ms)
        hyp, doubts = review(hyp, base, self.names, self.quantity_doubts, second_pass)
        words = [Word(word=w.word, start=base + w.start_ms, end=base + w.end_ms, conf=w.conf) for w in hyp.words]
        self.stats.finals += 1
        self.stats.echo_tagged += int(echo)
        self.stats.final_latency_ms = [*self.stats.final_latency_ms[-99:], decode_ms]
        span = (current.start_ms, end.t_ms)
        transcript = self._out.transcript(current.utterance_id, True, hyp.text, hyp.confidence, words, span, echo)
        transcript.pitch_end = current.pitch.ending_st() if current.pitch is not None else None
        transcript.doubts = doubts
        transcript.turn_complete = turn_complete
        self.emit_transcript(transcript)


def follow_canceller(transcriber: Transcriber, canceller: EchoCanceller) -> None:
    """Judge ``transcriber``'s barge-ins on ``canceller``'s output as it allows: only while it
    trusts what it lets through (:meth:`~workers.microphone.echo_cancel.EchoCanceller.trusts_barge_in`),
    the detector learning the echo again after each of its realignments."""
    transcriber.barge_in_trusted = canceller.trusts_barge_in
    canceller.on_realigned = transcriber.echo_realigned
