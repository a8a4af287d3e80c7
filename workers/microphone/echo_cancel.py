"""Echo cancellation: the microphone's audio minus the echo of what the room's loudspeaker played.

The far-end reference is the loudspeaker's own output, captured by the sound server (its sink's
monitor) as it is played, so whatever plays there (either avatar, a page's sound) is cancelled,
not only what one process knows it sent. :class:`PlayedAudio` keeps the last seconds of it by
capture time; :class:`EchoCanceller` pairs each microphone block with the stretch played
``output_delay_ms`` earlier (the sink's reported latency: what was handed to the device then is
what the loudspeaker sounds now), less a little (:data:`LEAD_MS`: the adaptive filter must see a
sound before its echo, never after; it spans ``tail_ms`` of lead, room response and jitter).

With the canceller on, what the buyer says while an avatar speaks reaches the voice detector and
the barge-in detector as the buyer's voice over a residual echo some 40 dB under the avatar's,
instead of under it (``bench/duplex.py`` measures both, and the echo that leaks into transcripts).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE, AudioBlock, AudioSource, level_dbfs, resilient_blocks
from workers.microphone.echo_delay import NOW_MS, NOW_SEARCH_MS, SEARCH_MS, WINDOW_MS, DelayEstimator
from workers.microphone.speexdsp import SpeexEchoCanceller
from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
REFUSAL_LOG_S = 10.0
"""At most one line this often says that barge-ins are refused (an echo path that jumped)."""
_refusals = RateLimitedLog(log, REFUSAL_LOG_S)

LEAD_MS = 30
"""How far ahead of its expected echo the reference is taken: room for the capture timestamps'
jitter, so a sound never reaches the filter after its echo (which no filter can cancel)."""
TAIL_MS = 300
"""The echo path the adaptive filter spans: the room's direct sound and early reflections, the
lead and the alignment's jitter (a longer filter converges more slowly)."""
KEEP_MS = 5000
"""How much played audio is kept: the delay estimator's window and search reach this far back
(``workers/microphone/echo_delay.py``)."""
CONTIGUOUS_MS = 40
"""A reference block that starts within this of where the previous one ended follows it: capture
timestamps jitter by a few ms, the samples themselves do not."""
WAIT_MS = 150
"""How long a microphone block waits for the reference stretch it needs (the reference's reader
is a block or two behind, more on a loaded machine); then the missing part counts as silence. A
stretch due further ahead than this is not waited for at all: waiting at every block for what
cannot come in time would put the microphone ever further behind."""
LIVE_S = 0.25
"""A reference that delivered nothing for this long is not waited for at all (it failed, and its
reader is reopening it): a block waiting for it each time would put the microphone behind."""
ACTIVE_DBFS = -60.0
"""A reference block louder than this is the loudspeaker playing: the blocks ERLE is measured on."""
ERLE_SPAN_MS = 5000
"""The health's echo removal is over about this much of the loudspeaker's latest sound: what the
canceller does now, not an average that the day's first, unconverged seconds would weigh down."""
ECHO_HEARD_DBFS = -60.0
"""A block the microphone heard quieter than this (a pause in the avatar's speech) tells nothing
of the echo's removal."""
CONVERGED_DB = 20.0
"""Echo removal (:attr:`CancellerStats.erle_db`) at which the canceller has learnt the room: the
echo it leaves is then well under a buyer's voice. Before (the day's first seconds, the seconds
after a realignment) the residual swells and dips as the filter adapts, and a barge-in judged on
it took a swell for the buyer (an echo fragment sent as the buyer's message)."""
CONVERGED_BLOCKS = 25
"""Echo blocks measured before :data:`CONVERGED_DB` is believed (half a second of the avatar's voice)."""
REMOVING_MS = 1000
"""A delay measured while the filter removed :data:`CONVERGED_DB` over this much of the latest
echo is where it has learnt the echo (the health's 5 s would still show it removing the second
after the echo's path changed)."""
QUIET_AFTER_MS = 1000
"""This long after the loudspeaker last played (its echo has died away, the filter's span and the
room's reverberation), the microphone's audio goes on unprocessed: the suppressor's gains would
only colour the buyer's voice, which the recognisers were measured on as the microphone hears it."""


class PlayedAudio:
    """The loudspeaker's output by capture time, 16 kHz mono: written by the reference's reader
    thread, read by the microphone path."""

    def __init__(self, keep_ms: int = KEEP_MS, now: Callable[[], float] = time.monotonic) -> None:
        self._keep = SAMPLE_RATE * keep_ms // 1000
        self._now = now
        self._samples = np.zeros(0, np.int16)
        self._start_ms = 0.0
        self._changed = threading.Condition()
        self._added_at = 0.0
        self.blocks = 0
        self.late = 0
        """Takes that waited :data:`WAIT_MS` and went on without the end of their stretch (the
        reference's reader behind: the filter was fed silence for sound the room played)."""

    def add(self, block: AudioBlock) -> None:
        with self._changed:
            end_ms = self._start_ms + len(self._samples) * 1000 / SAMPLE_RATE
            if len(self._samples) and abs(block.t_ms - end_ms) <= CONTIGUOUS_MS:
                self._samples = np.concatenate((self._samples, block.samples))
            else:  # the first block, or the reference restarted after a gap
                self._samples, self._start_ms = block.samples.copy(), float(block.t_ms)
            surplus = len(self._samples) - self._keep
            if surplus > 0:
                self._samples = self._samples[surplus:]
                self._start_ms += surplus * 1000 / SAMPLE_RATE
            self.blocks += 1
            self._added_at = self._now()
            self._changed.notify_all()

    def take(self, t_ms: float, count: int, wait_ms: float = WAIT_MS) -> NDArray[np.int16]:
        """``count`` samples played from ``t_ms`` on; silence for what was not played (or not
        captured). Waits up to ``wait_ms`` for a stretch that has not arrived yet."""
        deadline = self._now() + wait_ms / 1000
        needed_ms = t_ms + count * 1000 / SAMPLE_RATE
        with self._changed:
            while 0 < needed_ms - self._end_ms() <= wait_ms and self._now() - self._added_at < LIVE_S:
                left = deadline - self._now()
                if left <= 0:
                    self.late += 1
                    break
                self._changed.wait(left)
            out = np.zeros(count, np.int16)
            first = round((t_ms - self._start_ms) * SAMPLE_RATE / 1000)
            lo, hi = max(first, 0), min(first + count, len(self._samples))
            if hi > lo:
                out[lo - first:hi - first] = self._samples[lo:hi]
            return out

    def _end_ms(self) -> float:
        return self._start_ms + len(self._samples) * 1000 / SAMPLE_RATE


@dataclass
class CancellerStats:
    blocks: int = 0
    echo_blocks: int = 0
    """Blocks during which the loudspeaker played."""
    cpu_s: float = 0.0
    audio_s: float = 0.0
    removed_db: collections.deque[float] = field(default_factory=collections.deque)
    """How much quieter each of the latest echo blocks came out than the microphone heard it
    (the canceller keeps :data:`ERLE_SPAN_MS` of them)."""

    @property
    def erle_db(self) -> float | None:
        """Echo return loss enhancement over the latest blocks the loudspeaker played in: the
        median of theirs, so the blocks the buyer spoke in (double talk, where the output is
        rightly as loud as the microphone) and the pauses in the avatar's speech do not count."""
        if not self.removed_db:
            return None
        return round(float(np.median(self.removed_db)), 1)

    @property
    def cpu_share(self) -> float:
        """CPU seconds per second of audio (0.05: 5 % of one core)."""
        return self.cpu_s / self.audio_s if self.audio_s else 0.0


class EchoCanceller:
    """The microphone path's first stage: each block minus the echo of what was played."""

    def __init__(self, played: PlayedAudio, output_delay_ms: float, block_ms: int, tail_ms: int = TAIL_MS) -> None:
        self.played = played
        self.output_delay_ms = output_delay_ms
        self.block_ms = block_ms
        self.engine = SpeexEchoCanceller(SAMPLE_RATE * block_ms // 1000, SAMPLE_RATE, tail_ms)
        self.delay = DelayEstimator(LEAD_MS, tail_ms)
        self.stats = CancellerStats(removed_db=collections.deque(maxlen=ERLE_SPAN_MS // block_ms))
        self._quiet_ms = QUIET_AFTER_MS
        """How long the loudspeaker has been silent (in the reference as fed)."""
        self._previous: NDArray[np.int16] = np.zeros(SAMPLE_RATE * block_ms // 1000, np.int16)
        self._output_delay_changes = 0
        self._counted_realignments = 0
        self._converged = False
        self._fed_ms = 0.0
        """Where the latest block's reference was taken (its capture time, aligned)."""
        self.moved_refused = 0
        """Barge-ins not trusted because the echo was no longer where the filter learnt it."""
        self.on_realigned: Callable[[], None] = lambda: None
        """Called from :meth:`process` when the alignment has moved (the filter re-adapts)."""

    def set_output_delay(self, output_delay_ms: float) -> None:
        """The sink's latency changed (:class:`~workers.microphone.echo_reference.OutputDelay`)."""
        self.output_delay_ms = output_delay_ms
        self._output_delay_changes += 1

    @property
    def realignments(self) -> int:
        """How often the reference's alignment moved (the sink's latency, the measured delay):
        after each, the filter re-adapts and the echo it leaves is not what it was."""
        return self._output_delay_changes + self.delay.moves

    @property
    def converged(self) -> bool:
        """Whether the filter has learnt the room since it was last realigned: it removed
        :data:`CONVERGED_DB` once, and holds (the buyer's double talk later lowers the figure
        without unlearning anything). Judged at every echo block, whether anyone asks or not."""
        return self._converged

    def _judge_convergence(self) -> None:
        if not self._converged and len(self.stats.removed_db) >= CONVERGED_BLOCKS:
            erle = self.stats.erle_db
            self._converged = erle is not None and erle >= CONVERGED_DB

    def _removing(self) -> bool:
        """Whether the filter removed :data:`CONVERGED_DB` over the latest :data:`REMOVING_MS` of echo."""
        latest = list(self.stats.removed_db)[-(REMOVING_MS // self.block_ms):]
        return len(latest) >= CONVERGED_BLOCKS and float(np.median(latest)) >= CONVERGED_DB

    def trusts_barge_in(self) -> bool:
        """Whether speech over the avatar in the output may be the buyer's: the filter has learnt
        the room (:attr:`converged`) and the echo is still where it learnt it. When the echo's
        path jumps (a sound card's underrun, a device restarted), the residual swells to nearly the
        echo while the filter re-adapts, and by level alone that is the buyer; the echo's delay
        over the last :data:`NOW_MS` tells it apart (the buyer's voice over the echo leaves the
        echo's delay where it was). Asked only when the barge-in detector would fire."""
        if not self._converged:
            return False
        start_ms = self._fed_ms + self.block_ms - NOW_MS - NOW_SEARCH_MS
        around = self.played.take(start_ms, SAMPLE_RATE * (NOW_MS + 2 * NOW_SEARCH_MS) // 1000, wait_ms=0)
        now_ms = self.delay.moved_from_learnt(around)
        if now_ms is None:
            return True
        self.moved_refused += 1
        _refusals.log(logging.INFO, "moved", "no barge-in: the echo now comes %d ms after its reference, where the "
                      "canceller learnt it at %s ms; it re-adapts meanwhile", now_ms, self.delay.learnt_ms)
        return False

    @property
    def playing(self) -> bool:
        """Whether the loudspeaker played within :data:`QUIET_AFTER_MS` (its echo may still sound)."""
        return self._quiet_ms < QUIET_AFTER_MS

    def process(self, block: AudioBlock) -> AudioBlock:
        started = time.thread_time()
        if self.realignments != self._counted_realignments:  # it learns the room again
            self._counted_realignments = self.realignments
            self.stats.removed_db.clear()
            self._converged = False
            self.on_realigned()
        fed_ms = block.t_ms - self.output_delay_ms + LEAD_MS + self.delay.offset_ms
        self._fed_ms = fed_ms
        reference = self.played.take(fed_ms, len(block.samples))
        if self.delay.observe(block.samples, self.block_ms):
            window_ms = fed_ms + self.block_ms - WINDOW_MS - SEARCH_MS
            moves = self.delay.moves
            measured = self.delay.measure(self.played.take(window_ms, SAMPLE_RATE * (WINDOW_MS + 2 * SEARCH_MS) // 1000, wait_ms=0))
            if measured is not None and self.delay.moves == moves and self._removing():
                self.delay.learnt(measured)
        out = self.engine.process(block.samples, reference)  # always: the filter's state runs on
        playing = level_dbfs(reference) > ACTIVE_DBFS
        self._quiet_ms = 0 if playing else self._quiet_ms + self.block_ms
        if self._quiet_ms >= QUIET_AFTER_MS:
            out = self._previous  # as heard, as late as the processed output
        self._previous = block.samples
        self._count(block, out, playing)
        if playing:
            self._judge_convergence()
        self.stats.cpu_s += time.thread_time() - started
        # the output is one frame late (speexdsp's preprocessor overlaps its frames): its first
        # sample was captured a block before this block's
        return AudioBlock(out, block.t_ms - round(block.duration_ms))

    def _count(self, block: AudioBlock, out: NDArray[np.int16], playing: bool) -> None:
        st = self.stats
        st.blocks += 1
        st.audio_s += block.duration_ms / 1000
        if playing:
            st.echo_blocks += 1
            heard = level_dbfs(block.samples)
            if heard > ECHO_HEARD_DBFS:
                st.removed_db.append(heard - level_dbfs(out))

    def close(self) -> None:
        self.engine.close()


class ReferenceReader:
    """Reads the reference source into :class:`PlayedAudio` on a thread of its own, reopening it
    when it fails (a sound server restarted): meanwhile nothing is cancelled, and said so."""

    def __init__(
        self, open_reference: Callable[[], AudioSource], played: PlayedAudio,
        on_error: Callable[[str], None], retry_s: float,
    ) -> None:
        self._open = open_reference
        self.played = played
        self._on_error = on_error
        self._retry_s = retry_s
        self._stop = threading.Event()
        self.description = ""
        self._thread = threading.Thread(target=self._run, name="echo-reference", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _opened(self, source: AudioSource) -> None:
        self.description = source.description
        log.info("echo reference: %s", source.description)

    def _blocks(self) -> Iterator[AudioBlock]:
        return resilient_blocks(self._open, self._stop, self._on_error, self._opened, self._retry_s)

    def _run(self) -> None:
        for block in self._blocks():
            self.played.add(block)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)
