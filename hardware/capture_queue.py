"""The hand-over between a live capture's own thread and the worker that reads its blocks.

A driver's callback (PortAudio) or a reader thread (the sound server's simple API) only puts each
block into a bounded queue, so a slow consumer costs counted drops rather than stalling the
driver; the consumer's side turns a capture that failed, or that has delivered nothing for
:data:`STALL_S`, into :class:`~hardware.audio.AudioSourceError`, which the worker reports and
retries. Every live source shares it.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator

from hardware.audio import AudioBlock, AudioSourceError

QUEUE_BLOCKS = 100
"""About two seconds of audio may wait for the consumer before blocks are dropped."""
STALL_S = 2.0
"""A running capture that delivers nothing for this long is considered failed."""
POLL_S = 0.2
"""How often a consumer waiting for a block looks whether the capture failed."""


class CaptureQueue:
    """Blocks from a capture thread to their reader, counted both ways."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.dropped = 0
        self.delivered = 0
        self._queue: queue.Queue[AudioBlock] = queue.Queue(maxsize=QUEUE_BLOCKS)

    def put(self, block: AudioBlock) -> None:
        """From the capture's thread: never blocks (a full queue drops the block, counted)."""
        try:
            self._queue.put_nowait(block)
        except queue.Full:
            self.dropped += 1

    def blocks(self, stopped: Callable[[], bool], fault: Callable[[bool], str | None]) -> Iterator[AudioBlock]:
        """The blocks as they come until ``stopped()`` (an end, not a fault). ``fault(idle)``,
        asked before each block and while waiting for one (``idle``: nothing is queued, so what
        the capture delivered before it failed has been read), says why the capture failed, or
        None while it is well."""
        silent_s = 0.0
        while not stopped():
            reason = fault(False)
            if reason is not None:
                raise AudioSourceError(reason)
            try:
                block = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                silent_s += POLL_S
                reason = fault(True) or (f"{self.description} delivers no audio" if silent_s >= STALL_S else None)
                if reason is not None:
                    raise AudioSourceError(reason) from None
                continue
            silent_s = 0.0
            self.delivered += 1
            yield block
