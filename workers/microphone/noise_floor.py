"""The startup check: is the room too loud for the recogniser?

Over the first ``noise_check_s`` seconds of live input the worker measures the level the
microphone hears most of the time (the median of its 20 ms block levels: the hall's babble and
hum, which the buyer will have to be heard over; a few loud words do not move a median) and logs
one warning when that is too close to the level a buyer's speech reaches at the recommended gain
(:data:`SPEECH_LEVEL_DBFS`; docs/microphone.md#the-venues-microphone).

The threshold comes from ``bench/stt.py --snr`` (docs/microphone.md#speech-in-a-noisy-venue):
Whisper tiny.en loses the leading avatar names and the amounts as speech-to-babble falls from
20 dB to 10 dB (the voice-activity segmenter still finds the buyer over babble 10 dB under them:
it measures frames against the room's background, :class:`~workers.microphone.vad.BackgroundLevel`).
So the check warns when the floor is less than :data:`MIN_SNR_DB` under the expected speech
level, and says which way out there is (a close-talk microphone, lower gain with the mouth
closer).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from hardware.audio import level_dbfs

log = logging.getLogger(__name__)

SPEECH_LEVEL_DBFS = -26.0
"""A buyer's active speech level at the recommended microphone gain (a close-talk microphone,
speech peaks around -10 dBFS; docs/microphone.md#the-venues-microphone): the level the
noisy-venue benchmark sets speech to."""
MIN_SNR_DB = 15.0
"""Speech must stand this far over the room's floor: measured, names and amounts hold at 20 dB
of babble and collapse by 10 dB (``bench/stt.py --snr``)."""
CHECK_S = 5.0
WARN_OVER_DBFS = SPEECH_LEVEL_DBFS - MIN_SNR_DB


@dataclass
class NoiseFloorCheck:
    """Feed it the first blocks of live input; it logs at most one line, once, and keeps its
    verdict in :attr:`floor_dbfs` / :attr:`too_loud` for the worker's health figures."""

    seconds: float = CHECK_S
    warn_over_dbfs: float = WARN_OVER_DBFS
    source: str = ""
    floor_dbfs: float | None = field(default=None, init=False)
    too_loud: bool | None = field(default=None, init=False)
    _levels: list[float] = field(default_factory=list, init=False)
    _heard_ms: float = field(default=0.0, init=False)

    @property
    def done(self) -> bool:
        return self.floor_dbfs is not None or self.seconds <= 0

    def observe(self, samples: NDArray[np.int16], duration_ms: float) -> None:
        """One block of live input (int16). Cheap: one RMS per block, nothing once done."""
        if self.done:
            return
        self._levels.append(level_dbfs(samples))
        self._heard_ms += duration_ms
        if self._heard_ms >= self.seconds * 1000.0:
            self._conclude()

    def _conclude(self) -> None:
        self.floor_dbfs = round(float(np.median(self._levels)), 1)
        self._levels.clear()
        self.too_loud = self.floor_dbfs > self.warn_over_dbfs
        if self.too_loud:
            log.warning(
                "noise floor %.1f dBFS%s over its first %.0f s: only %.0f dB under a buyer at %.0f dBFS, where names and "
                "amounts are lost (need %.0f dB); use a close-talk or directional microphone and lower the gain with the "
                "mouth closer (docs/microphone.md: the venue's microphone)",
                self.floor_dbfs, f" on {self.source}" if self.source else "", self.seconds,
                SPEECH_LEVEL_DBFS - self.floor_dbfs, SPEECH_LEVEL_DBFS, MIN_SNR_DB,
            )
        else:
            log.info("noise floor %.1f dBFS%s over the first %.0f s (warns over %.0f)", self.floor_dbfs,
                     f" on {self.source}" if self.source else "", self.seconds, self.warn_over_dbfs)
