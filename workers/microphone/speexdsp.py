"""speexdsp's acoustic echo canceller, through the C library Debian ships (``libspeexdsp1``).

The canceller is speexdsp's MDF adaptive filter (a multi-delay block frequency-domain filter with
double-talk-robust learning) followed by its preprocessor's residual echo suppressor, which uses
the filter's own residual estimate. Measured against WebRTC's AEC3 (the ``livekit`` wheel's
``AudioProcessingModule``) on the same simulated rooms before choosing
(docs/microphone.md#full-duplex-the-echo-canceller): both remove some 40 dB of echo, but AEC3
keeps about a third of the buyer's voice while the avatar talks (Whisper then got 27 % of those
utterances' deal terms right, against 80 % here), speexdsp 95 % of it. The Python bindings on PyPI are source packages that need SWIG and
the development headers; the library's five calls are bound here instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

import numpy as np
from numpy.typing import NDArray

LIBRARY = "speexdsp"
SONAME = "libspeexdsp.so.1"

# speex_echo.h / speex_preprocess.h request codes
ECHO_SET_SAMPLING_RATE = 24
PREPROCESS_SET_ECHO_STATE = 24
PREPROCESS_SET_NOISE_SUPPRESS = 18
PREPROCESS_SET_ECHO_SUPPRESS = 20
PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE = 22

NOISE_SUPPRESS_DB = -3
"""The preprocessor's noise suppression, kept nearly off: it applies its residual echo
suppression only as part of its denoiser's gains, and the recogniser was measured on unsuppressed
noise (``[microphone] enhance`` chooses a noise suppressor)."""
ECHO_SUPPRESS_DB = -40
"""Residual echo attenuation while only the avatar talks (speexdsp's default)."""
ECHO_SUPPRESS_ACTIVE_DB = -15
"""...and while the buyer talks too (speexdsp's default): gentler, to keep the buyer's voice.
-25, -30 and -35 were measured too (``bench/duplex.py``): no fewer leaked words, no better double talk."""


class SpeexUnavailable(RuntimeError):
    """``libspeexdsp`` is not installed (Debian: ``libspeexdsp1``)."""


@cache
def _library() -> ctypes.CDLL:
    try:  # the soname Debian's libspeexdsp1 installs; elsewhere, wherever the linker finds it
        lib = ctypes.CDLL(SONAME)
    except OSError:
        found = ctypes.util.find_library(LIBRARY)
        if found is None:
            raise SpeexUnavailable("speexdsp is not installed; install libspeexdsp1") from None
        lib = ctypes.CDLL(found)
    lib.speex_echo_state_init.restype = ctypes.c_void_p
    lib.speex_echo_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
    lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.speex_preprocess_state_init.restype = ctypes.c_void_p
    lib.speex_preprocess_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.speex_preprocess_state_destroy.argtypes = [ctypes.c_void_p]
    lib.speex_preprocess_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.speex_preprocess_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib


class SpeexEchoCanceller:
    """One microphone's canceller: ``process(mic, played)`` per frame of ``frame`` samples, the
    played frame being what the loudspeaker played at the time the microphone frame was captured
    (or a little before: the filter spans ``tail_ms`` of echo path and misalignment)."""

    def __init__(self, frame: int, rate: int, tail_ms: int) -> None:
        lib = _library()
        self.frame = frame
        self._lib = lib
        self._echo = lib.speex_echo_state_init(frame, rate * tail_ms // 1000)
        value = ctypes.c_int(rate)
        lib.speex_echo_ctl(self._echo, ECHO_SET_SAMPLING_RATE, ctypes.byref(value))
        self._pre = lib.speex_preprocess_state_init(frame, rate)
        lib.speex_preprocess_ctl(self._pre, PREPROCESS_SET_ECHO_STATE, ctypes.c_void_p(self._echo))
        for request, db in (
            (PREPROCESS_SET_NOISE_SUPPRESS, NOISE_SUPPRESS_DB),
            (PREPROCESS_SET_ECHO_SUPPRESS, ECHO_SUPPRESS_DB),
            (PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, ECHO_SUPPRESS_ACTIVE_DB),
        ):
            value = ctypes.c_int(db)
            lib.speex_preprocess_ctl(self._pre, request, ctypes.byref(value))
        self._out = np.empty(frame, np.int16)

    def process(self, mic: NDArray[np.int16], played: NDArray[np.int16]) -> NDArray[np.int16]:
        if self._echo is None:
            raise RuntimeError("the echo canceller is closed")
        mic = np.ascontiguousarray(mic, dtype=np.int16)
        played = np.ascontiguousarray(played, dtype=np.int16)
        if len(mic) != self.frame or len(played) != self.frame:
            raise ValueError(f"the canceller takes frames of {self.frame} samples")
        out = self._out
        self._lib.speex_echo_cancellation(self._echo, mic.ctypes.data, played.ctypes.data, out.ctypes.data)
        self._lib.speex_preprocess_run(self._pre, out.ctypes.data)
        return out.copy()

    def close(self) -> None:
        echo, self._echo = getattr(self, "_echo", None), None  # getattr: also after a failed __init__
        if echo is not None:
            self._lib.speex_preprocess_state_destroy(self._pre)
            self._lib.speex_echo_state_destroy(echo)

    def __del__(self) -> None:
        self.close()
