"""The microphone worker of a recording that perceives (:mod:`sessions.record`): it reads the
very audio source the recorder records."""

from __future__ import annotations

from collections.abc import Callable

from hardware.audio import AudioSource
from hardware.clock import Clock
from workers.microphone.worker import MicrophoneWorker
from workers.runtime.config import Config


class TeeMicrophone(MicrophoneWorker):
    """The microphone worker reading the recorded audio source ``first``; after a device
    failure it reopens it the recorder's way (``reopen``), so the blocks are still recorded."""

    def __init__(self, config: Config, clock: Clock, first: AudioSource, reopen: Callable[[], AudioSource]) -> None:
        super().__init__(config, clock=clock)
        self._pending = [first]
        self._reopen = reopen

    def _open(self, spec: str) -> AudioSource:
        return self._pending.pop() if self._pending else self._reopen()
