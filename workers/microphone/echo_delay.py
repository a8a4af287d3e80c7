"""How late the loudspeaker's echo really reaches the microphone, measured from the audio itself.

The canceller is first aligned by what the sound server says (the sink's latency, the capture
times of both streams). Those figures can be off by more than the adaptive filter spans: a USB
microphone or loudspeaker with its own buffers, a capture that came in a burst, a device whose
latency the server misreports. Every :data:`EVERY_MS` of audio in which the loudspeaker played,
the delay between the reference as fed to the filter and the microphone is measured by
generalised cross-correlation with phase transform (GCC-PHAT, the usual echo-delay estimator: its
peak stands out for broadband sound like speech whatever the room's colouring) over the last
:data:`WINDOW_MS`; when :data:`AGREEING` measurements in a row agree and put the echo outside the
filter's comfortable span (no later than :data:`LATE_MS`), the alignment moves so that the
reference leads its echo by the canceller's lead again.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE

log = logging.getLogger(__name__)

WINDOW_MS = 2000
"""Audio each measurement compares (several syllables of the avatar's speech)."""
EVERY_MS = 1000
"""How often a measurement is made while the loudspeaker plays."""
SEARCH_MS = 900
"""Delays searched on either side of the current alignment."""
AGREE_MS = 10
"""Measurements within this of each other agree."""
AGREEING = 3
"""Measurements in a row that must agree before the alignment moves: a move made on a wrong one
(two avatars saying the same words a second apart, a buyer talking over the echo) costs the
canceller seconds of echo, so it waits for three seconds of evidence."""
EDGE_MS = 100
"""A peak this close to the edge of the search is no measurement: the true delay may lie beyond."""
PEAK_RATIO = 8.0
"""A correlation peak this many times the correlation's typical magnitude is a measurement; a
weaker one (no echo heard, the buyer talking over it) is not."""
LATE_MS = 60
"""An echo later than this after the fed reference is moved back to the lead although the filter
would still reach it: the reference is then being taken later than it need be, and when the sink
states a shorter latency than its sound really takes (a room whose way to the microphone adds
its own), that is audio the server has not delivered yet (waited for, then counted as silence)."""
ACTIVE_RMS = 30.0
"""The reference must be at least this loud (about -60 dBFS) over the window to measure by."""
NOW_MS = 300
"""The echo's delay *now* (:meth:`DelayEstimator.heard_now_ms`) is measured over this much of the
latest microphone audio: what the barge-in detector judged on (``barge_in_min_ms``), so that audio
from before a jump of the echo's path does not outweigh what came after it; enough for a clear
peak with the buyer talking over the echo (``bench/duplex.py``)."""
NOW_SEARCH_MS = 300
"""Delays searched on either side for it: a jump of the echo's path beyond the filter's reach."""


@dataclass
class DelayEstimator:
    """Follows the echo's real delay; :attr:`offset_ms` is what the canceller adds to its
    alignment. ``lead_ms``: where the echo should fall after the reference (the canceller's lead);
    ``span_ms``: how far after it the filter still reaches."""

    lead_ms: int
    span_ms: int
    offset_ms: int = 0
    measured_ms: int | None = None
    """The last measured delay of the echo after the fed reference (None: none yet)."""
    moves: int = 0
    learnt_ms: int | None = None
    """The echo's delay where the filter has learnt it: a measurement made while it removed the
    echo well (:meth:`learnt`); None until then, and after each move."""
    _mic: collections.deque[NDArray[np.int16]] = field(default_factory=collections.deque, init=False)
    _since_ms: int = field(default=0, init=False)
    _agreeing: list[int] = field(default_factory=list, init=False)

    def observe(self, mic: NDArray[np.int16], block_ms: int) -> bool:
        """Keep the microphone's block; True when a measurement is due (the caller then calls
        :meth:`measure` with the reference around the window)."""
        self._mic.append(mic)
        while len(self._mic) * block_ms > WINDOW_MS:
            self._mic.popleft()
        self._since_ms += block_ms
        if self._since_ms < EVERY_MS or len(self._mic) * block_ms < WINDOW_MS:
            return False
        self._since_ms = 0
        return True

    def measure(self, reference: NDArray[np.int16]) -> int | None:
        """``reference``: the fed reference over the window, with :data:`SEARCH_MS` more on each
        side (what the filter would have been given, and around it). The delay measured, if any."""
        mic = np.concatenate(self._mic).astype(np.float64)
        ref = reference.astype(np.float64)
        delay_ms = _delay_ms(mic, ref, SEARCH_MS)
        if delay_ms is None:
            self._agreeing.clear()
            return None
        self.measured_ms = delay_ms
        if self._agreeing and abs(delay_ms - self._agreeing[-1]) > AGREE_MS:
            self._agreeing.clear()
        self._agreeing.append(delay_ms)
        if len(self._agreeing) >= AGREEING and not 0 <= delay_ms <= min(LATE_MS, self.span_ms // 2):
            self.offset_ms -= delay_ms - self.lead_ms  # the reference taken that much earlier (later)
            self.moves += 1
            self.learnt_ms = None
            self._agreeing.clear()
            log.info("the loudspeaker's echo came %d ms after its reference: the reference moves by %+d ms (now %+d ms)",
                     delay_ms, self.lead_ms - delay_ms, self.offset_ms)
        return delay_ms

    def learnt(self, delay_ms: int) -> None:
        """``delay_ms`` was measured while the filter removed the echo well: that is where it has
        learnt it."""
        self.learnt_ms = delay_ms

    def heard_now_ms(self, reference: NDArray[np.int16]) -> int | None:
        """The echo's delay over the latest :data:`NOW_MS` of microphone audio (None: no clear
        peak); ``reference`` is the fed reference over them with :data:`NOW_SEARCH_MS` more on
        either side."""
        mic = np.concatenate(self._mic)[-SAMPLE_RATE * NOW_MS // 1000:].astype(np.float64) if self._mic else None
        if mic is None or len(mic) < SAMPLE_RATE * NOW_MS // 1000:
            return None
        return _delay_ms(mic, reference.astype(np.float64), NOW_SEARCH_MS)

    def moved_from_learnt(self, reference: NDArray[np.int16]) -> int | None:
        """The echo's delay now when it is no longer where the filter learnt it (more than
        :data:`AGREE_MS` away): its path changed under the filter. None when it is there, or
        when either is not known."""
        if self.learnt_ms is None:
            return None
        now = self.heard_now_ms(reference)
        return now if now is not None and abs(now - self.learnt_ms) > AGREE_MS else None


def _delay_ms(mic: NDArray[np.float64], reference: NDArray[np.float64], search_ms: int) -> int | None:
    """How late ``mic`` hears ``reference`` (which covers ``search_ms`` more on either side), in
    ms; None without a clear peak, for a reference too quiet to tell, or at the search's edge."""
    if float(np.sqrt(np.mean(np.square(reference)))) < ACTIVE_RMS:
        return None
    search = SAMPLE_RATE * search_ms // 1000
    lag = gcc_phat_lag(mic, reference, search)
    delay_ms = None if lag is None else round(lag * 1000 / SAMPLE_RATE)
    return None if delay_ms is None or abs(delay_ms) > search_ms - EDGE_MS else delay_ms


def gcc_phat_lag(mic: NDArray[np.float64], ref: NDArray[np.float64], search: int) -> int | None:
    """How many samples after ``ref`` its echo is in ``mic`` (negative: before it), ``ref``
    covering ``search`` samples more than ``mic`` on either side; None without a clear peak.

    ``mic[i]`` hears ``ref[i + search - d]`` for an echo ``d`` samples late, so the correlation
    ``c[k] = sum_i mic[i] ref[i + k]`` peaks at ``k = search - d``."""
    n = 1 << int(np.ceil(np.log2(len(ref) + len(mic))))
    cross = np.conj(np.fft.rfft(mic, n)) * np.fft.rfft(ref, n)
    correlation = np.fft.irfft(cross / (np.abs(cross) + 1e-12), n)[: 2 * search + 1]
    magnitude = np.abs(correlation)
    best = int(np.argmax(magnitude))
    if magnitude[best] < PEAK_RATIO * (float(np.median(magnitude)) + 1e-12):
        return None
    return search - best
