"""The avatars' speaker on a sound server's sink by name (``pasimple`` playback).

Like :class:`hardware.speaker.SoundCardSink` the stream stays open between utterances (opening
one costs a round trip to the server). Its buffer is kept short (a little over the speaker's
lead), and playback starts with the first block, so what is written is heard after the sink's
own latency: :attr:`SoundServerSink.latency_s` is that latency as the server reports it with the
stream connected (its configured latency: the current one swings while the device settles
after a stream arrives), which keeps the speaker's word and gesture events in step with the sound.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hardware import sound_server
from hardware.speaker import BLOCK_S, SOUNDCARD_LEAD_S
from hardware.speech_types import SAMPLE_WIDTH, SpeakerError

log = logging.getLogger(__name__)

BUFFER_S = 2 * SOUNDCARD_LEAD_S
"""The stream's target buffer: room for the speaker's lead, so writes rarely wait."""


def server_sink_for(device: str | None) -> sound_server.SoundDevice | None:
    """The sound server's sink ``soundcard:DEVICE`` means (its default without DEVICE), or
    ``None``: no server, no such sink, or DEVICE is a number (PortAudio's index)."""
    wanted = (device or "").strip()
    if wanted.isdigit() or not sound_server.server_reachable():
        return None
    sinks = sound_server.list_sinks()
    if not wanted:
        return next((s for s in sinks if s.default), None)
    return sound_server.match_device(sinks, wanted)


class SoundServerSink:
    """One named sink of the sound server, 16-bit mono at each utterance's rate (the server
    converts to the device's rate and channels)."""

    realtime = True
    lead_s = SOUNDCARD_LEAD_S

    def __init__(self, sink: str) -> None:
        self.sink = sink
        self.latency_s = 0.0
        self._stream: Any = None
        self._rate = 0
        try:
            import pasimple
        except (ImportError, OSError) as exc:  # libpulse missing
            raise SpeakerError(f"the sound server's client library is not available ({exc})") from None
        self._pasimple = pasimple

    def describe(self) -> str:
        return f"soundcard:{self.sink} (sound server)"

    def _open(self, sample_rate: int) -> None:
        pasimple = self._pasimple
        block = max(int(sample_rate * BLOCK_S), 1) * SAMPLE_WIDTH
        try:
            self._stream = pasimple.PaSimple(
                pasimple.PA_STREAM_PLAYBACK, pasimple.PA_SAMPLE_S16LE, 1, sample_rate,
                app_name=sound_server.CLIENT_NAME, stream_name="humaine-env speaker", device_name=self.sink,
                tlength=int(sample_rate * BUFFER_S) * SAMPLE_WIDTH, prebuf=block, minreq=block,
            )
        except pasimple.PaSimpleError as exc:
            raise SpeakerError(
                f"cannot open the sound server's sink {self.sink!r} ({exc}); list devices with "
                f"`humaine-env devices`, or use --speaker wav:DIR"
            ) from None
        self._rate = sample_rate

    def begin(self, name: str, sample_rate: int) -> None:
        if self._stream is None or self._rate != sample_rate:
            self.close()
            self._open(sample_rate)
        measured = sound_server.configured_latency_ms(self.sink, "sink")
        if measured is not None:
            self.latency_s = measured / 1000.0

    def write(self, pcm: bytes) -> None:
        try:
            self._stream.write(pcm)
        except self._pasimple.PaSimpleError as exc:
            self.close()  # the next utterance opens it again (the sink may be back by then)
            raise SpeakerError(f"the sound server's sink {self.sink!r} failed: {exc}") from None

    def end(self) -> Path | None:
        return None

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.close()
            except self._pasimple.PaSimpleError as exc:
                log.debug("closing %s: %s", self.describe(), exc)
