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
from hardware.speaker_pulse import SoundServerSink, server_sink_for
from hardware.speaker_stream import StreamSink, TeeSink

log = logging.getLogger(__name__)


def _sound_card(device: str | None) -> AudioSink:
    """The sound server's sink ``device`` names (its default for ``None``) when a server runs
    and has it, else PortAudio's output (an index, or part of a name)."""
    found = server_sink_for(device)
    if found is not None:
        return SoundServerSink(found.name)
    return SoundCardSink(int(device) if device and device.isdigit() else device)


def open_sink(spec: str, fallback_dir: str | Path | None = None) -> AudioSink:
    """``auto`` | ``soundcard`` | ``soundcard:DEVICE`` | ``wav:DIR`` | ``wav-fast:DIR`` |
    ``browser`` → a sink; several joined by ``+`` (``browser+wav:DIR``) feed one utterance to each.

    ``soundcard:NAME`` is the sound server's sink NAME when a server runs and has it, else
    PortAudio's device; ``auto`` and ``soundcard`` prefer the server's default sink.
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
            return _sound_card(None)
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
        return _sound_card(arg or None)
    said = unknown("speaker", kind, ("auto", "soundcard", "wav", "wav-fast", "browser"))
    raise SpeakerError(f"{said} in {spec!r} (auto, soundcard, soundcard:DEVICE, wav:DIR, wav-fast:DIR or browser; several "
                       f"joined by '+': browser+wav:DIR)")
