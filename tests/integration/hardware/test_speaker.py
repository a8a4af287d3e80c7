"""The speaker with real espeak-ng: WAV output, voices, pacing, and event timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from hardware.speaker import SoundCardSink, Speaker, SpeakerError, VoiceSettings, WavSink, list_voices
from hardware.speaker_sinks import open_sink
from tests.support.paths import ROOT

CELIA = VoiceSettings("en-us+f3", rate=170)
WATSON = VoiceSettings("en-us+m3", rate=165)
SENTENCE = "How about if I sell you five eggs for three dollars."


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64), w.getframerate()


def median_f0(samples: np.ndarray, rate: int) -> float:
    """Median fundamental frequency of the voiced 40 ms frames (autocorrelation peak)."""
    n = int(0.04 * rate)
    found = []
    for i in range(0, len(samples) - n, n):
        frame = samples[i : i + n]
        if np.sqrt(np.mean(frame**2)) < 1000:
            continue
        frame = frame - frame.mean()
        ac = np.correlate(frame, frame, "full")[n - 1 :]
        lo, hi = rate // 400, rate // 60
        found.append(rate / (lo + int(np.argmax(ac[lo:hi]))))
    return float(np.median(found))


def test_wav_is_speech_of_plausible_length_with_voices_that_differ(tmp_path: Path) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=False))
    celia = speaker.speak(SENTENCE, CELIA, name="Celia-1")
    watson = speaker.speak(SENTENCE, WATSON, name="Watson-1")
    words = len(SENTENCE.split())
    pitches = {}
    for who, result in (("Celia", celia), ("Watson", watson)):
        assert result.path is not None and result.path.exists() and who in result.path.name
        samples, rate = read_wav(result.path)
        duration = len(samples) / rate
        assert duration == pytest.approx(result.duration_s)
        # 10 words at ~170 wpm is ~3.5 s; speech, not a click or a minute of noise
        assert 0.5 * words / 3.0 < duration < 2.0 * words / 2.5
        rms = np.sqrt(np.mean(samples**2))
        assert rms > 500, f"{who}'s audio is silent (rms {rms:.0f})"
        voiced = np.mean([np.sqrt(np.mean(samples[i : i + 441] ** 2)) > 300 for i in range(0, len(samples) - 441, 441)])
        assert voiced > 0.5
        pitches[who] = median_f0(samples, rate)
        assert [w.name for w in result.words] == SENTENCE.rstrip(".").split()
    # Celia's voice is female, Watson's male: about an octave apart
    assert pitches["Celia"] > 1.5 * pitches["Watson"]
    assert 150 < pitches["Celia"] < 300 and 70 < pitches["Watson"] < 150


class TimedWavSink(WavSink):
    """A WAV sink that notes when each block of audio reached it: (time, samples before it, after)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, realtime=True)
        self.blocks: list[tuple[float, int, int]] = []
        self._written = 0

    def write(self, pcm: bytes) -> None:
        before, self._written = self._written, self._written + len(pcm) // 2
        self.blocks.append((time.monotonic(), before, self._written))
        super().write(pcm)

    def reached(self, audio_ms: int, rate: int) -> float:
        """When the block holding the sample at ``audio_ms`` was written."""
        sample = audio_ms * rate // 1000
        return next(at for at, before, after in self.blocks if before <= sample < after)


def test_realtime_sink_is_paced_and_brackets_audio_with_begin_end(tmp_path: Path) -> None:
    sink = TimedWavSink(tmp_path)
    speaker = Speaker(sink)
    order: list[tuple[str, float]] = []
    marks = []
    result = speaker.speak(
        '<speak>Hello <mark name="gesture:nod"/>there, I can sell you five eggs '
        '<mark name="gesture:smile"/>today.</speak>',
        CELIA,
        on_begin=lambda: order.append(("begin", time.monotonic())),
        on_end=lambda r: order.append(("end", time.monotonic())),
        on_mark=lambda e: (marks.append(e), order.append(("mark", e.at))),
    )
    assert [kind for kind, _ in order] == ["begin", "mark", "mark", "end"]
    assert result.began_at is not None and result.first_audio_at is not None
    assert order[0][1] <= result.first_audio_at
    elapsed = order[-1][1] - order[0][1]
    # paced at playback speed: the end comes after the audio's duration, not at synthesis speed
    assert elapsed >= result.duration_s - 0.05
    assert elapsed < result.duration_s + 1.0
    # each mark fires when the output reaches its audio position (20 ms blocks): never before
    # its time at playback speed, and no later than the block holding it was written (later
    # than its time when synthesis fell behind playback on a busy machine)
    words = {w.name: w.audio_ms for w in result.words}
    assert [m.name for m in marks] == ["gesture:nod", "gesture:smile"]
    assert marks[0].audio_ms == words["there"] and marks[1].audio_ms == words["today"]
    for mark in marks:
        due = result.began_at + mark.audio_ms / 1000
        assert mark.at >= due - 0.001, (mark, due)
        assert mark.at - max(due, sink.reached(mark.audio_ms, result.sample_rate)) < 0.15, (mark, due, sink.blocks)
    assert marks[1].audio_ms - marks[0].audio_ms > 1000


def test_cancel_stops_an_utterance_and_still_ends_it(tmp_path: Path) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=True))
    ended = []
    timer = threading.Timer(0.4, speaker.cancel)
    timer.start()
    result = speaker.speak(SENTENCE * 3, WATSON, on_end=ended.append)
    timer.join()
    assert result.cancelled and ended == [result]
    assert 0.2 < result.duration_s < 2.0


def test_voices_listed_and_bad_voice_or_spec_is_a_readable_error(tmp_path: Path) -> None:
    ids = {v.id for v in list_voices()}
    assert "gmw/en-us" in ids
    speaker = Speaker(WavSink(tmp_path, realtime=False))
    with pytest.raises(SpeakerError, match="no voice 'no-such-voice'"):
        speaker.speak("hello", VoiceSettings("no-such-voice"))
    with pytest.raises(SpeakerError, match="unknown speaker"):
        open_sink("mp3:/tmp")
    sink = open_sink(f"wav:{tmp_path}")
    assert isinstance(sink, WavSink) and sink.realtime
    assert not open_sink(f"wav-fast:{tmp_path}").realtime


def test_missing_sound_card_is_one_line() -> None:
    # this machine (CI) has no output device; a venue machine has one and gets a sink
    try:
        sink = SoundCardSink()
    except SpeakerError as exc:
        assert "wav:DIR" in str(exc) and "\n" not in str(exc)
    else:
        assert sink.describe() == "soundcard"
        sink.close()


def test_auto_speaker_falls_back_to_wav_files_without_a_sound_card(tmp_path: Path) -> None:
    try:
        SoundCardSink().close()
        has_card = True
    except SpeakerError:
        has_card = False
    sink = open_sink("auto", fallback_dir=tmp_path / "speech")
    if has_card:
        assert isinstance(sink, SoundCardSink)
        sink.close()
        return
    assert isinstance(sink, WavSink) and sink.realtime
    assert sink.instead_of  # why there is no sound card: its owner says it (the Avatar Controller, one NOTICE line)
    result = Speaker(sink).speak("Three eggs.", CELIA)
    assert result.samples > 0 and list((tmp_path / "speech").glob("*.wav"))


def test_every_mark_fires_once_even_where_espeak_drops_it(tmp_path: Path) -> None:
    """espeak-ng reports no event for a mark opening a sentence; it still fires, with its word."""
    speaker = Speaker(WavSink(tmp_path, realtime=False))
    result = speaker.speak(
        '<speak>Two eggs, <mark name="a"/>fifty.<mark name="b"/> Deal? <mark name="c"/>Yes.<mark name="d"/></speak>',
        CELIA,
    )
    assert [m.name for m in result.marks] == ["a", "b", "c", "d"]
    offsets = [m.audio_ms for m in result.marks]
    assert offsets == sorted(offsets) and offsets[0] > 0
    assert offsets[-1] <= result.duration_s * 1000
    spoken = [w for w in result.words if w.name.strip()]
    # "b" and "c" coincide with the start of the word that follows them
    assert [w.name for w in spoken] == ["Two", "eggs", "fifty", "Deal", "Yes"]
    assert offsets[1] == spoken[3].audio_ms and offsets[2] == spoken[4].audio_ms


ALSA_FILE_DEVICE = """pcm.!default {{
    type file
    slave.pcm "null"
    file "{path}"
    format "raw"
}}
"""
SOUND_CARD_SCRIPT = """
import json, time
from hardware.speaker import Speaker, SoundCardSink, VoiceSettings
class TimedSoundCardSink(SoundCardSink):
    blocks = []  # (time, samples before the block, after it)

    def write(self, pcm):
        before = self.blocks[-1][2] if self.blocks else 0
        self.blocks.append((time.monotonic() - started, before, before + len(pcm) // 2))
        super().write(pcm)

speaker = Speaker(TimedSoundCardSink())
events = []
started = time.monotonic()
result = speaker.speak(
    '<speak>Five eggs <mark name="gesture:nod"/>for three dollars.</speak>', VoiceSettings("en-us+m3"),
    on_begin=lambda: events.append(("begin", time.monotonic())),
    on_mark=lambda e: events.append(("mark", e.at)),
    on_end=lambda r: events.append(("end", time.monotonic())),
)
speaker.close()
print(json.dumps({"duration": result.duration_s, "samples": result.samples, "latency": speaker.sink.latency_s,
                  "events": [(k, t - started) for k, t in events], "mark_ms": result.marks[0].audio_ms,
                  "begun": result.began_at - started, "rate": result.sample_rate, "blocks": speaker.sink.blocks}))
"""


def test_sound_card_path_through_portaudio_and_alsa(tmp_path: Path) -> None:
    """The production output (PortAudio → ALSA) on a machine without a sound card: ALSA's own
    ``file`` device stands in for the card and records what would have been played."""
    raw = tmp_path / "played.raw"
    (tmp_path / ".asoundrc").write_text(ALSA_FILE_DEVICE.format(path=raw))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SOUND_CARD_SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    played = np.frombuffer(raw.read_bytes(), dtype=np.int16).astype(np.float64)
    # everything synthesised reached the device, and it is speech, not silence
    assert len(played) >= report["samples"]
    assert np.sqrt(np.mean(played**2)) > 300
    kinds = [k for k, _ in report["events"]]
    assert kinds == ["begin", "mark", "end"]
    times = dict(report["events"])
    # paced by the device: the end comes after the audio has played, the mark when it is heard
    assert times["end"] - times["begin"] >= report["duration"] - 0.05
    # the mark is heard once the device played its audio: never before its time at playback
    # speed, and no later than the block holding it was written, plus the device's latency (later
    # than its time when synthesis fell behind playback on a busy machine)
    due = report["begun"] + report["latency"] + report["mark_ms"] / 1000
    sample = report["mark_ms"] * report["rate"] // 1000
    reached = next(at for at, before, after in report["blocks"] if before <= sample < after) + report["latency"]
    assert times["mark"] >= due - 0.001, (times, due)
    assert times["mark"] - max(due, reached) < 0.2, (times, due, reached)
