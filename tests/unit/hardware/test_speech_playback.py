"""One utterance's playback (:class:`hardware.speaker.UtterancePlayback`) fed by hand: the blocks
a sink receives, the events it fires, the cut at ``max_samples`` and a cancel, without an engine."""

from __future__ import annotations

import threading
from pathlib import Path

from hardware.speaker import (
    BLOCK_S,
    SAMPLE_WIDTH,
    SpeechEvent,
    SpokenUtterance,
    UtteranceCallbacks,
    UtterancePlayback,
)

RATE = 1000
"""1 kHz: one sample per millisecond, so sample counts read as milliseconds."""


class RecordingSink:
    """A sink that is not realtime (nothing waits) and keeps what it was given."""

    realtime = False
    latency_s = 0.0
    lead_s = 0.0

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def begin(self, name: str, sample_rate: int) -> None:
        self.calls.append(("begin", (name, sample_rate)))

    def write(self, pcm: bytes) -> None:
        self.calls.append(("write", len(pcm) // SAMPLE_WIDTH))

    def end(self) -> Path | None:
        self.calls.append(("end", None))
        return Path("said.wav")

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return "recording"


def _pcm(samples: int) -> bytes:
    return b"\0\0" * samples


def _playback(sink: RecordingSink, log: list[object], max_samples: int | None = None,
              cancel: threading.Event | None = None) -> UtterancePlayback:
    callbacks = UtteranceCallbacks(
        on_begin=lambda: log.append("begin"),
        on_end=lambda result: log.append(("end", result.samples)),
        on_word=lambda event: log.append(("word", event.name)),
        on_mark=lambda event: log.append(("mark", event.name)),
        on_phonemes=lambda events: log.append(("phonemes", [e.name for e in events])),
    )
    return UtterancePlayback(sink, SpokenUtterance("u", RATE), callbacks, cancel or threading.Event(), max_samples)


def test_audio_goes_out_in_blocks_with_its_events_in_audio_order() -> None:
    sink, log = RecordingSink(), []
    playback = _playback(sink, log)
    events = [SpeechEvent("word", "deal", 30), SpeechEvent("phoneme", "d", 30), SpeechEvent("mark", "nod", 10)]
    assert playback.on_audio(_pcm(50), events)
    playback.play_out()
    playback.finish()
    block = int(RATE * BLOCK_S)
    assert sink.calls == [("begin", ("u", RATE)), ("write", block), ("write", block), ("write", 50 - 2 * block),
                          ("end", None)]
    assert log == ["begin", ("phonemes", ["d"]), ("mark", "nod"), ("word", "deal"), ("end", 50)]
    result = playback.result
    assert [e.name for e in result.marks] == ["nod"] and [e.name for e in result.words] == ["deal"]
    assert result.path == Path("said.wav") and not result.cut and not result.cancelled


def test_the_cut_stops_synthesis_and_drops_what_was_never_said() -> None:
    sink, log = RecordingSink(), []
    playback = _playback(sink, log, max_samples=40)
    events = [SpeechEvent("word", "said", 20), SpeechEvent("word", "unsaid", 45),
              SpeechEvent("phoneme", "s", 20), SpeechEvent("phoneme", "_", 40)]
    assert not playback.on_audio(_pcm(60), events)
    playback.play_out()
    playback.finish()
    assert playback.result.cut and playback.result.samples == 40
    assert ("word", "unsaid") not in log and ("word", "said") in log
    assert [e.name for e in playback.result.phonemes] == ["s"]


def test_a_cancel_before_any_audio_reports_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    sink, log = RecordingSink(), []
    playback = _playback(sink, log, cancel=cancel)
    assert not playback.on_audio(_pcm(10), [SpeechEvent("word", "no", 0)])
    playback.play_out()
    playback.finish()
    assert playback.result.cancelled and sink.calls == [] and log == []
