"""A simulated room for full-duplex trials: the avatars' loudspeaker and the buyer heard by one
microphone through room impulse responses (``pyroomacoustics``' image-source model).

A session is laid out on one timeline, as the microphone worker hears a day: the buyer's
utterances alone (single talk), the buyer starting while an avatar's reply plays (double talk) and
replies alone (where every word heard is echo). What the loudspeaker played is kept apart, timed as
the sound server's monitor captures it (``output_delay_ms`` before it sounds), so the canceller is
given its reference exactly as in the room. One room per session: a room's echo path does not change
between utterances, and the canceller keeps what it learnt of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE
from workers.microphone.noise import set_active_level

TrialKind = Literal["single", "double", "echo"]
ROOM_M = (6.0, 5.0, 3.0)
"""A small shop or stand: 6 × 5 m, 3 m high."""
ABSORPTION = 0.35
"""Average wall absorption (a furnished room; reverberation time about 0.3 s)."""
MIC_AT = (3.0, 1.6, 1.2)
"""The microphone, on the counter in front of the buyer."""
BUYER_DISTANCE_M = 0.6
NOISE_DBFS = -65.0
"""The room's own noise under everything."""
GAP_MS = 1500
"""Quiet between trials: longer than the echo tail and the voice detector's hangover."""
BUYER_AFTER_MS = 1000
"""In double talk, the buyer starts this long after the avatar's reply began."""


@dataclass
class Trial:
    kind: TrialKind
    text: str
    """What the buyer said (empty for a reply alone)."""
    reply: str
    """What the avatar said (empty in single talk)."""
    reply_key: int = -1
    """Which of the caller's recorded replies was played (-1: none)."""
    buyer_ms: tuple[int, int] = (0, 0)
    """Where the buyer's speech lies on the session's timeline."""
    echo_ms: tuple[int, int] = (0, 0)
    """Where the avatar's reply sounds in the room."""
    onset_ms: int = 0
    """When the buyer's voice begins (the first loud frame of the utterance)."""


@dataclass
class Session:
    """One room's timeline: the microphone's signal, the loudspeaker's reference and the trials."""

    distance_m: float
    microphone: NDArray[np.int16]
    played: NDArray[np.int16]
    """The reference, on the monitor's timeline: ``played[i]`` sounds at sample ``i + delay``."""
    output_delay_ms: int
    trials: list[Trial] = field(default_factory=list)


def impulse_responses(distance_m: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The room's response from the loudspeaker (``distance_m`` from the microphone) and from the
    buyer (:data:`BUYER_DISTANCE_M`) to the microphone."""
    import pyroomacoustics as pra

    room = pra.ShoeBox(list(ROOM_M), fs=SAMPLE_RATE, materials=pra.Material(ABSORPTION), max_order=12)
    room.add_source([MIC_AT[0] - distance_m * 0.8, MIC_AT[1] + distance_m * 0.6, 1.5])
    room.add_source([MIC_AT[0], MIC_AT[1] - BUYER_DISTANCE_M, 1.6])
    room.add_microphone(list(MIC_AT))
    room.compute_rir()
    return np.asarray(room.rir[0][0], float), np.asarray(room.rir[0][1], float)


def _onset(samples: NDArray[np.float64]) -> int:
    """The first 20 ms frame within 25 dB of the utterance's loudest: where the voice begins."""
    frame = SAMPLE_RATE // 50
    levels = [float(np.sqrt(np.mean(np.square(samples[i:i + frame])))) for i in range(0, len(samples) - frame, frame)]
    peak = max(levels, default=0.0)
    first = next((i for i, lv in enumerate(levels) if lv > peak * 10 ** (-25 / 20)), 0)
    return first * frame


class SessionBuilder:
    """Lays trials out on one timeline in one room."""

    def __init__(self, distance_m: float, speech_dbfs: float, output_delay_ms: int, seed: int) -> None:
        self.distance_m = distance_m
        self.speech_dbfs = speech_dbfs
        self.output_delay_ms = output_delay_ms
        self._echo_ir, self._buyer_ir = impulse_responses(distance_m)
        self._mic: list[tuple[int, NDArray[np.float64]]] = []
        self._reference: list[tuple[int, NDArray[np.float64]]] = []
        self._cursor = SAMPLE_RATE * GAP_MS // 1000
        self._rng = np.random.default_rng(seed)
        self.trials: list[Trial] = []

    def _buyer(self, speech: NDArray[np.int16]) -> NDArray[np.float64]:
        heard = np.convolve(speech.astype(np.float64), self._buyer_ir)
        return set_active_level(heard, self.speech_dbfs)

    def _played(self, reply: NDArray[np.int16], over_db: float) -> NDArray[np.float64]:
        """The reply as the loudspeaker plays it: at the volume that puts its echo ``over_db``
        over the buyer's speech at the microphone. The room's response stays the same (what a
        canceller learns), the volume changes (a louder avatar, a buyer who speaks softly)."""
        heard = np.convolve(reply.astype(np.float64), self._echo_ir)
        at_level = set_active_level(heard, self.speech_dbfs + over_db)
        return reply.astype(np.float64) * (float(np.max(np.abs(at_level))) / max(1.0, float(np.max(np.abs(heard)))))

    def _ms(self, samples: int) -> int:
        return samples * 1000 // SAMPLE_RATE

    def single(self, text: str, speech: NDArray[np.int16]) -> None:
        heard = self._buyer(speech)
        start = self._cursor
        self._mic.append((start, heard))
        self.trials.append(Trial("single", text, "", buyer_ms=(self._ms(start), self._ms(start + len(heard))),
                                 onset_ms=self._ms(start + _onset(heard))))
        self._cursor += len(heard) + SAMPLE_RATE * GAP_MS // 1000

    def reply(self, key: int, reply_text: str, reply: NDArray[np.int16], over_db: float,
              text: str = "", speech: NDArray[np.int16] | None = None) -> None:
        """The avatar's reply, ``over_db`` louder at the microphone than the buyer's speech, with
        the buyer's utterance starting :data:`BUYER_AFTER_MS` into it (double talk) or alone."""
        played = self._played(reply, over_db)
        echo = np.convolve(played, self._echo_ir)
        start = self._cursor
        self._mic.append((start, echo))
        delay = SAMPLE_RATE * self.output_delay_ms // 1000
        self._reference.append((start - delay, played))
        end = start + len(reply)
        trial = Trial("echo" if speech is None else "double", text, reply_text, key, echo_ms=(self._ms(start), self._ms(end)))
        if speech is not None:
            heard = self._buyer(speech)
            at = start + SAMPLE_RATE * BUYER_AFTER_MS // 1000
            self._mic.append((at, heard))
            trial.buyer_ms = (self._ms(at), self._ms(at + len(heard)))
            trial.onset_ms = self._ms(at + _onset(heard))
            end = max(end, at + len(heard))
        self.trials.append(trial)
        self._cursor = max(end, start + len(echo)) + SAMPLE_RATE * GAP_MS // 1000

    def build(self) -> Session:
        length = self._cursor
        mic = self._rng.normal(0, 32768 * 10 ** (NOISE_DBFS / 20), length)
        played = np.zeros(length)
        for at, samples in self._mic:
            mic[at:at + len(samples)] += samples[:length - at]
        for at, samples in self._reference:
            played[at:at + len(samples)] += samples[:length - at]
        return Session(self.distance_m, _int16(mic), _int16(played), self.output_delay_ms, self.trials)


def _int16(samples: NDArray[np.float64]) -> NDArray[np.int16]:
    return np.clip(np.round(samples), -32768, 32767).astype(np.int16)
