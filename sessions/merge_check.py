"""How spoken utterances with a pause become messages: the microphone's segmenter and
recogniser on real audio, then the transcript worker's merger, on the audio's own clock.

Each item is played through the same :class:`~workers.microphone.transcriber.Transcriber` the
microphone worker runs (voice activity, the configured engine) on a virtual clock. Every event
reaches the :class:`~transcript.merging.Merger` when a live worker would see it: voice-activity
events when the block that caused them ends, a final when its block ends *plus* the time the
recogniser really took to decode it. The merger's holds expire on that same clock. What comes
out is what the transcript worker would send: how many messages each item became, and how long
each message waited after its last final.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hardware.audio_files import ReplaySource
from hardware.clock import VirtualClock
from transcript.merging import Merger, Utterance
from transcript.settings import TranscriptSettings
from workers.microphone.recognizer import Recognizer
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.transcriber import Transcriber
from workers.runtime.messages import PITCH_END, Transcript, VadEvent

START_MS = 1_000_000_000


class Item(Protocol):
    path: Path
    kind: str

    @property
    def text(self) -> str: ...


@dataclass
class ItemResult:
    kind: str
    text: str
    finals: list[str]
    messages: list[str]
    held_because: list[str]
    wait_ms: list[float]
    """Per message: its release time minus the arrival of its last final (the merge hold)."""

    @property
    def one_message(self) -> bool:
        return len(self.messages) == 1


@dataclass
class MergeReport:
    items: list[ItemResult] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[ItemResult]:
        return [r for r in self.items if r.kind == kind]

    def one_message_share(self, kind: str) -> float | None:
        """Of the items of ``kind`` the recogniser split in two or more finals, the share that
        still became one message (an item heard as one final proves nothing about merging)."""
        split = [r for r in self.of_kind(kind) if len(r.finals) > 1]
        return None if not split else sum(r.one_message for r in split) / len(split)


class _HeardEvents:
    """What the recogniser reports, each at the time a live worker would have it: a
    voice-activity event when its block ends, a final that much later as its decode took."""

    def __init__(self, decode_ms: float | None) -> None:
        """``decode_ms``: see :func:`run_item`."""
        self.events: list[tuple[float, Transcript | VadEvent]] = []
        self._decode_ms = decode_ms
        self._block_end_ms: float = START_MS
        self._decode_started = 0.0

    def decoding(self, block_end_ms: float | None = None) -> None:
        """A block (ending at ``block_end_ms``; None: the flush after the last) goes to the recogniser now."""
        if block_end_ms is not None:
            self._block_end_ms = block_end_ms
        self._decode_started = time.perf_counter()

    def on_vad(self, event: VadEvent) -> None:
        self.events.append((self._block_end_ms, event))

    def on_transcript(self, transcript: Transcript) -> None:
        if transcript.final:  # the recogniser's decode time is added to the block's end
            took_ms = (time.perf_counter() - self._decode_started) * 1000 if self._decode_ms is None else self._decode_ms
            self.events.append((self._block_end_ms + took_ms, transcript))


def run_item(
    item: Item, recognizer: Recognizer, mic: MicrophoneSettings, settings: TranscriptSettings, avatars: Iterable[str],
    decode_ms: float | None = None,
) -> ItemResult:
    """``decode_ms``: how long each final takes after its last block (None: what the recogniser
    really took here; a figure: that figure, so the result does not depend on the machine)."""
    names = tuple(avatars)
    clock = VirtualClock(start_ms=START_MS, speed=None)
    source = ReplaySource(item.path, clock=clock, block_ms=mic.block_ms)
    heard = _HeardEvents(decode_ms)
    transcriber = Transcriber.from_settings(
        mic, recognizer, "replay", heard.on_vad, heard.on_transcript, names,
        measure_pitch=PITCH_END in settings.finals_read(),
    )
    for block in source.blocks(threading.Event()):
        heard.decoding(block.end_ms)
        transcriber.process(block)
    heard.decoding()
    transcriber.flush()
    return _merged(item, heard.events, Merger.from_settings(settings, names))


def _merged(item: Item, events: list[tuple[float, Transcript | VadEvent]], merger: Merger) -> ItemResult:
    """The heard ``events`` through the transcript worker's ``merger``, on their own clock."""
    released: list[tuple[float, Utterance]] = []
    finals: list[str] = []
    last_final_at: dict[str, float] = {}
    for at, event in sorted(events, key=lambda pair: pair[0]):
        released += [(u.hold_until_ms, u) for u in merger.due(at)]
        if isinstance(event, VadEvent):
            merger.speech(event, at)
            continue
        finals.append(event.text)
        last_final_at[event.utterance_id] = at
        released += [(at, u) for u in merger.add(event, at)]
    released += [(u.hold_until_ms, u) for u in merger.drain()]
    return ItemResult(
        item.kind,
        item.text,
        finals,
        [u.text for _, u in released],
        [u.held_because for _, u in released],
        [round(when - max(last_final_at[i] for i in u.utterance_ids), 1) for when, u in released],
    )


def run(
    items: Iterable[Item], recognizer: Recognizer, mic: MicrophoneSettings, settings: TranscriptSettings,
    avatars: Iterable[str], decode_ms: float | None = None,
) -> MergeReport:
    """Every item through the recogniser and the merger (``decode_ms``: see :func:`run_item`)."""
    names = tuple(avatars)
    return MergeReport([run_item(item, recognizer, mic, settings, names, decode_ms) for item in items])
