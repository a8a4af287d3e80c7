"""Opening the avatars' speaker by its spec: a sound card, WAV files, the browser, or several.

Apart from :mod:`hardware.speaker` (speech and the sinks' interface) because the browser and tee
sinks of :mod:`hardware.speaker_stream` import that interface: the factory imports them all, and
none of them imports the factory.
"""

from __future__ import annotations

import logging
from pathlib import Path

from formats.unknown import unknown
from hardware.speaker import AudioSink, SoundCardSink, SpeakerError, WavSink
from hardware.speaker_stream import StreamSink, TeeSink

log = logging.getLogger(__name__)


def open_sink(spec: str, fallback_dir: str | Path | None = None) -> AudioSink:
    """``auto`` | ``soundcard`` | ``soundcard:DEVICE`` | ``wav:DIR`` | ``wav-fast:DIR`` |
    ``browser`` → a sink; several joined by ``+`` (``browser+wav:DIR``) feed one utterance to each.

    ``auto`` is the sound card when the machine has one, else WAV files in ``fallback_dir``
    (paced like a sound card): a laptop or CI machine without audio still runs the whole loop
    and keeps what the avatars said. ``browser``: the display page plays the speech
    (:mod:`hardware.speaker_stream`)."""
    if "+" in spec:
        return TeeSink([open_sink(part, fallback_dir) for part in spec.split("+")])
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "auto":
        try:
            return SoundCardSink(None)
        except SpeakerError as exc:
            if fallback_dir is None:
                raise
            # the owner says why, at the level a documented fallback deserves
            return WavSink(str(fallback_dir), realtime=True, instead_of=str(exc))
    if kind == "wav" and arg:
        return WavSink(arg, realtime=True)
    if kind == "wav-fast" and arg:
        return WavSink(arg, realtime=False)
    if kind == "browser" and not arg:
        return StreamSink()
    if kind == "soundcard":
        device: str | int | None = None
        if arg:
            device = int(arg) if arg.isdigit() else arg
        return SoundCardSink(device)
    said = unknown("speaker", kind, ("auto", "soundcard", "wav", "wav-fast", "browser"))
    raise SpeakerError(f"{said} in {spec!r} (auto, soundcard, soundcard:DEVICE, wav:DIR, wav-fast:DIR or browser; several "
                       f"joined by '+': browser+wav:DIR)")
