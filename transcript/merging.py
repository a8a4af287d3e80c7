"""Merging final transcripts that belong to one turn.

A speaker's pause mid-sentence often ends one recognition result and starts another. Sent as
two messages, the second would be blocked by the EO's R0 (5 s between human messages), so
finals closer than the merge gap become one message. The price is waiting: a final is held
until the gap after its end has passed with no new speech.

The next part's final only exists once that speech has ended, the segmenter's hangover has
passed and the recogniser has finished: always later than the gap after the held part. What
arrives within the gap is the microphone's voice-activity ``speech_start``; it keeps the held
utterance open until that part's final (or, should none come, a bounded wait after its
``speech_end``).

Only finals that read as unfinished are held (:mod:`transcript.completeness`): a final that
reads as a complete sentence is released as soon as it arrives, unless speech had already
started again within the gap when it came. A held utterance that a later part completes is
released when that part arrives, not at the end of the gap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from transcript.completeness import Completeness
from transcript.settings import TranscriptSettings
from workers.runtime.messages import Stage, Stages, Transcript, VadEvent


@dataclass
class Utterance:
    """One or more final transcripts sent as one message."""

    parts: list[Transcript]
    arrived_mono: float
    """Seconds on a monotonic clock when the latest part arrived (the TTL runs from here: a
    held turn is as fresh as its last words): the ``now_mono`` given to :meth:`Merger.add` -
    the transcript worker's clock - or ``time.monotonic()`` when none is given."""
    hold_until_ms: float
    """Time (ms, on the clock of the audio: wall time for a live microphone) after which no
    further part can join."""
    awaiting: str | None = None
    """The utterance id of speech that started within the gap and whose final is awaited."""
    held_because: str = ""
    """Why the utterance waited for a continuation (empty: it did not wait)."""
    released_ms: int | None = None
    """When the transcript worker let it go (ms since the epoch, on its clock: wall time live,
    the session's clock in a paced replay)."""

    @property
    def text(self) -> str:
        return " ".join(p.text.strip() for p in self.parts if p.text.strip())

    @property
    def start(self) -> int:
        return min(p.start for p in self.parts)

    @property
    def end(self) -> int:
        return max(p.end for p in self.parts)

    @property
    def speech_start(self) -> int:
        """When the first word begins. A recogniser's segment starts with the voice-activity
        pre-roll (a few hundred ms of silence before the speech); when the recogniser gives word
        times, the speech starts at the first word. This is where the buyer's gaze counts."""
        first = min(self.parts, key=lambda p: p.start)
        return min((w.start for w in first.words), default=first.start)

    @property
    def source(self) -> str:
        return self.parts[0].source

    @property
    def confidence(self) -> float:
        """Word-count-weighted mean of the parts' confidences."""
        weights = [max(1, len(p.text.split())) for p in self.parts]
        return round(sum(p.confidence * w for p, w in zip(self.parts, weights, strict=True)) / sum(weights), 3)

    @property
    def utterance_ids(self) -> list[str]:
        return [p.utterance_id for p in self.parts]

    def stages(self) -> Stages:
        """The human-side stage timestamps so far: speech on the audio clock, the final when it
        was published (wall clock), the release on the transcript worker's clock (all one clock
        for a live microphone)."""
        stages = {Stage.SPEECH_START: self.speech_start, Stage.SPEECH_END: self.end, Stage.FINAL: max(p.ts for p in self.parts)}
        if self.released_ms is not None:
            stages[Stage.RELEASED] = self.released_ms
        return stages


@dataclass
class Merger:
    """Holds at most one utterance open for merging. Pure apart from the clocks passed in."""

    gap_ms: float
    mergeable_sources: frozenset[str]
    final_wait_ms: float
    """After the awaited speech's ``speech_end``, how long its final may take."""
    vad_wait_ms: float
    """How long after the gap a ``speech_start`` of speech that began within it may arrive."""
    speech_wait_ms: float
    """After the awaited speech's ``speech_start``, how long it may last before the held
    utterance is sent without it."""
    completeness: Completeness | None = None
    """Which finals wait for a continuation; ``None``: every mergeable final waits the gap."""
    turn: str = "off"
    """How the end-of-turn model's verdict joins the text rules (``[transcript] merge_turn``)."""
    turn_threshold: float = 0.5
    """Below this ``turn_complete`` a turn is unfinished."""
    pending: Utterance | None = None
    _started: VadEvent | None = None
    """The latest ``speech_start`` whose final has not arrived yet: speech that began before
    the previous part's final came (a recogniser slower than the speaker's pause)."""
    _started_ended_ms: float | None = None
    """When that speech ended (its ``speech_end`` came), if it has."""

    @classmethod
    def from_settings(cls, settings: TranscriptSettings, avatars: tuple[str, ...] | list[str] = ()) -> Merger:
        completeness = None
        if settings.merge_hold == "unfinished":
            completeness = Completeness.build(
                settings.merge_hold_words,
                settings.greetings,
                avatars,
                settings.merge_hold_bare_numbers,
                settings.merge_hold_giving_verbs,
                settings.merge_hold_level_pitch_st,
            )
        return cls(
            settings.merge_gap_s * 1000,
            frozenset(settings.merge_sources),
            settings.merge_final_wait_s * 1000,
            settings.merge_vad_wait_s * 1000,
            settings.merge_speech_wait_s * 1000,
            completeness,
            settings.merge_turn,
            settings.merge_turn_threshold,
        )

    def add(self, part: Transcript, now_ms: float, now_mono: float | None = None) -> list[Utterance]:
        """Take a final; returns the utterances now complete (in order). ``now_mono``: now in
        seconds on the clock the caller measures TTLs with (default ``time.monotonic()``)."""
        mono = time.monotonic() if now_mono is None else now_mono
        mergeable = self.gap_ms > 0 and part.source in self.mergeable_sources
        restarted = self._speech_restarted(part)
        try:
            return self._add(part, now_ms, mono, mergeable, restarted)
        finally:
            self._started_ended_ms = None  # it belonged to the speech just consumed

    def _add(self, part: Transcript, now_ms: float, mono: float, mergeable: bool, restarted: str | None) -> list[Utterance]:
        """:meth:`add` once it is known whether speech restarted after ``part`` (its id)."""
        ready: list[Utterance] = []
        if self.pending is not None:
            joins = (
                mergeable
                and part.source == self.pending.source
                and part.start - self.pending.end < self.gap_ms
            )
            if joins:
                held = self.pending
                held.parts.append(part)
                held.arrived_mono = mono
                held.hold_until_ms = self._hold_until(part, now_ms, restarted)
                held.awaiting = restarted
                if self._hold_reason(held.text, restarted, part) is None:
                    self.pending = None
                    ready.append(held)
                return ready
            ready.append(self.pending)
            self.pending = None
        utterance = Utterance([part], mono, self._hold_until(part, now_ms, restarted), awaiting=restarted)
        reason = self._hold_reason(part.text, restarted, part) if mergeable else None
        if reason is not None:
            utterance.held_because = reason
            self.pending = utterance
        else:
            ready.append(utterance)
        return ready

    def _hold_reason(self, text: str, restarted: str | None, latest: Transcript) -> str | None:
        """Why an utterance (``text`` so far, ``latest`` its last part: how its pitch ended and
        what the end-of-turn model made of it) should wait for a continuation, or ``None``."""
        if restarted is not None:
            return "speech started again within the gap"
        if self.completeness is None:
            return f"waits {self.gap_ms:g} ms for a continuation"
        by_text = self.completeness.unfinished(text, latest.pitch_end)
        p = latest.turn_complete
        if self.turn == "off" or p is None:
            return by_text
        by_model = f"the end-of-turn model heard an unfinished turn (p {p:.2f})" if p < self.turn_threshold else None
        if self.turn == "alone":
            return by_model
        if self.turn == "or_text":
            return by_text or by_model
        return f"{by_text}; {by_model}" if by_text and by_model else None

    def _speech_restarted(self, part: Transcript) -> str | None:
        """The id of speech that began within the gap after ``part``, before its final came."""
        started, self._started = self._started, None
        if started is None or part.source == "typed" or started.utterance_id == part.utterance_id:
            return None
        return started.utterance_id if 0 <= started.at - part.end < self.gap_ms else None

    def _hold_until(self, part: Transcript, now_ms: float, restarted: str | None = None) -> float:
        if restarted is not None:  # wait for that speech's final, as after its speech_start/end
            ended = self._started_ended_ms
            return now_ms + self.speech_wait_ms if ended is None else max(now_ms, ended + self.final_wait_ms)
        # the audio clock of another machine may be off: never hold longer than one gap
        return min(part.end + self.gap_ms, now_ms + self.gap_ms) + self.vad_wait_ms

    def speech(self, event: VadEvent, now_ms: float) -> None:
        """A voice-activity event of the microphone: speech that starts within the gap after
        the held utterance may be its continuation, so the utterance waits for its final."""
        held = self.pending
        if held is not None and held.source == "typed":
            held = None
        if event.event == "speech_start":
            if held is not None and held.awaiting is None and event.at - held.end < self.gap_ms:
                held.awaiting = event.utterance_id
                held.hold_until_ms = max(held.hold_until_ms, now_ms + self.speech_wait_ms)
            else:
                self._started, self._started_ended_ms = event, None
        elif held is not None and event.utterance_id == held.awaiting:
            held.hold_until_ms = now_ms + self.final_wait_ms
        elif self._started is not None and event.utterance_id == self._started.utterance_id:
            self._started_ended_ms = now_ms

    def due(self, now_ms: float) -> list[Utterance]:
        """The pending utterance if its merge window is over."""
        if self.pending is not None and now_ms >= self.pending.hold_until_ms:
            done, self.pending = self.pending, None
            return [done]
        return []

    def next_due_ms(self) -> float | None:
        return None if self.pending is None else self.pending.hold_until_ms

    def drain(self) -> list[Utterance]:
        done = [self.pending] if self.pending is not None else []
        self.pending = None
        return done
