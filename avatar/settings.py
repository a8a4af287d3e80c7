"""The ``[avatar]`` configuration section of the Avatar Controller.

Example (``humaine-env.toml``)::

    [avatar]
    host = "127.0.0.1"
    port = 7040
    speaker = "auto"                 # sound card, or WAVs under data_dir/speech when there is none;
                                     # also "soundcard", "wav:recordings/", "wav-fast:DIR",
                                     # "browser" (the display page plays it); join with "+"
    confirm_accept = "buyer"         # the buyer answers a seller's Accept on /buyer or by voice;
                                     # "operator", "auto", "competition-ui"

    [avatar.voices.Celia]
    engine = "festival"              # "festival", "piper" or "espeak"
    voice = "cmu_us_slt_arctic_hts"
    fallback = "en-us+f3"            # espeak-ng, when the voice is not installed
    rate = 170

Every key can also be set with ``HUMAINE_ENV_AVATAR_<KEY>`` or ``--set avatar.<key>=...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from avatar.ssml import DEFAULT_LIMITS, SsmlLimits
from hardware.speaker import VoiceSettings
from hardware.speech_engines import EngineName
from humaine_platform.endpoints import DEFAULT_HUMAN_PORT
from humaine_platform.rules import DEFAULT_R4_MAX_WORDS
from workers.runtime.config import DEFAULT_AVATARS, ListenHost, Section
from workers.runtime.http.edge import DEFAULT_MAX_BODY_BYTES

DEFAULT_PORT = DEFAULT_HUMAN_PORT
"""The port the competition UI used: the Avatar Controller takes its place in the EO's
``appSettings.json``."""


ConfirmMode = Literal["buyer", "operator", "auto", "competition-ui"]
"""Who answers a seller's Accept (see :attr:`AvatarSettings.confirm_accept`)."""


class AvatarVoice(BaseModel):
    """One avatar's voice: an engine, a voice of it, and pyttsx3's rate/volume conventions."""

    model_config = ConfigDict(extra="forbid")

    engine: EngineName = "espeak"
    """``festival`` (a Festival voice, e.g. the HTS ``cmu_us_slt_arctic_hts``), ``piper`` (a
    packaged Piper voice such as ``en_US-joe-medium``, or a ``.onnx`` model path) or ``espeak``."""
    voice: str = "en-us"
    """The engine's voice. espeak-ng: a name, optionally with a variant (``en-us+f3`` female,
    ``+m3`` male)."""
    fallback: str = "en-us"
    """The espeak-ng voice that speaks when ``voice`` is not installed (one line says what to install)."""
    rate: int = Field(175, ge=80, le=450)
    """Words per minute."""
    volume: float = Field(1.0, ge=0.0, le=2.0)
    pitch: int | None = Field(None, ge=0, le=100)
    look: Literal["female", "male"] = "female"
    """The figure the display draws for this avatar."""

    def settings(self) -> VoiceSettings:
        return VoiceSettings(self.voice, self.rate, self.volume, self.pitch, engine=self.engine,
                             fallback=self.fallback if self.engine != "espeak" else None)


def _room_default_voices() -> tuple[AvatarVoice, ...]:
    """Natural voices a listener understands the first time (``bench/voices.py`` measures them),
    in the order of ``[core] avatars``: the first avatar female (Festival HTS), the second male
    (Piper); espeak-ng formant voices as fallbacks."""
    return (
        AvatarVoice(engine="festival", voice="cmu_us_slt_arctic_hts", fallback="en-us+f3", rate=170, look="female"),
        AvatarVoice(engine="piper", voice="en_US-joe-medium", fallback="en-us+m3", rate=165, look="male"),
    )


def _default_voices() -> dict[str, AvatarVoice]:
    """The default room's avatars with their voices."""
    return dict(zip(DEFAULT_AVATARS, _room_default_voices(), strict=True))


class AvatarSettings(Section):
    section_name: ClassVar[str] = "avatar"

    host: ListenHost = "127.0.0.1"
    """Where the HTTP service listens. Loopback by default: the EO normally runs on the same
    machine, and nothing else should be able to make the avatars talk."""
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    """Port of the HTTP service (the EO's human-side service and the display page); 0: any free port."""
    token: str = Field("", json_schema_extra={"secret": True})
    """When set, every endpoint except ``/health`` needs ``Authorization: Bearer <token>``
    (the display page: ``?token=``). The stock EO sends no token: use it behind a proxy; the
    stand-in EO sends this one (or ``[standin] human_token``)."""
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024)
    """Larger request bodies are refused with 413 before being read."""
    speaker: str = "auto"
    """``auto`` (the sound card, or WAV files under ``data_dir``/speech when there is none),
    ``soundcard``, ``soundcard:DEVICE`` (the sound server's sink by name, else PortAudio's output;
    ``humaine-env devices`` lists them), ``wav:DIR`` (one WAV per utterance, paced like a sound
    card), ``wav-fast:DIR`` or ``browser`` (the display page plays the speech); several joined by
    ``+`` (``browser+wav:DIR``)."""
    voices: dict[str, AvatarVoice] = Field(default_factory=_default_voices)
    """Per avatar, merged over the defaults (Celia: Festival ``cmu_us_slt_arctic_hts``; Watson:
    Piper ``en_US-joe-medium``). A room with other names (``[core] avatars``) gives its first
    avatar the first default voice and its second the second, unless set here; any further
    avatar speaks with espeak-ng's default ``en-us``."""
    speech_process: bool = True
    """Run the speech engines (Piper's onnxruntime, Festival, espeak-ng: native code) in a
    supervised child process (:class:`hardware.speech_process.SpeechProcess`): a segfault or
    abort in one of them then fails the utterance being spoken - a new child speaks the next -
    instead of ending this process, whose HTTP endpoints the EO is waiting on (it exits when they
    go away, e.g. in the middle of a ``/confirmAccept``). The cost: a little more memory in all,
    the same CPU, a slower start-up, and time to first audio within the machine's noise (measured
    by ``bench/avatar.py --speech-process on|off``: ``rss_mb`` + ``speech_child_rss_mb``,
    ``cpu_s`` + ``speech_child_cpu_s``, ``start_s``, ``ttfa_ms_p50``; see docs/measurements.md). ``false`` keeps the
    engines in this process."""
    queue_max: int = Field(8, ge=1)
    """Messages waiting to be spoken; a message arriving when the queue is full is not spoken."""
    stale_after_s: float = Field(20.0, gt=0)
    """A message still waiting this long after it arrived is dropped: the conversation has
    moved on and a late reply would only confuse the buyer."""
    max_words: int = Field(DEFAULT_R4_MAX_WORDS, ge=1)
    """The platform's rule R4: agent messages over this many words are never spoken."""
    max_speaking_s: float = Field(DEFAULT_LIMITS.max_speaking_s, gt=0)
    """Longest one message may speak (pauses included; 100 words take about 35 s): what its text
    is expected to take beyond it is not synthesised, and the audio is cut there, so no text
    holds the speech queue longer."""
    max_break_s: float = Field(DEFAULT_LIMITS.max_break_s, ge=0)
    """Longest pause one SSML ``<break>`` makes."""
    max_pauses_s: float = Field(DEFAULT_LIMITS.max_pauses_s, ge=0)
    """Longest all SSML pauses of one message make together: later breaks are dropped."""
    min_rate: float = Field(DEFAULT_LIMITS.min_rate, gt=0, le=1)
    """Lowest SSML ``<prosody rate>``, as a factor of the avatar's own rate."""
    max_rate: float = Field(DEFAULT_LIMITS.max_rate, ge=1)
    """SSML ``<prosody rate>`` bounds, as factors of the avatar's own rate."""
    min_pitch: float = Field(DEFAULT_LIMITS.min_pitch, gt=0, le=1)
    """Lowest SSML ``<prosody pitch>``, as a factor of the voice's own."""
    max_pitch: float = Field(DEFAULT_LIMITS.max_pitch, ge=1)
    """SSML ``<prosody pitch>`` and ``range`` bounds, as factors of the voice's own."""
    max_volume: float = Field(DEFAULT_LIMITS.max_volume, ge=1, le=4)
    """SSML ``<prosody volume>`` bound, as a factor of the avatar's configured volume."""
    confirm_accept: ConfirmMode = "buyer"
    """Who answers a seller's Accept (``/confirmAccept``; the EO books the deal only on a yes).
    ``buyer``: the buyer, on the ``/buyer`` page (Accept / Decline) or by voice ("yes", "deal" /
    "no"); the display shows the question large. ``operator``: a click on the display page.
    ``auto``: yes at once, without asking anyone. ``competition-ui``: yes at once, because the
    platform's competition-ui is registered beside this service and asks the buyer (the EO books
    an Accept only when every human-side service says yes)."""
    confirm_timeout_s: float = Field(15.0, gt=0)
    """With ``buyer`` or ``operator``: how long a deal waits for its answer (the EO and the
    seller wait meanwhile: the EO has no timeout of its own)."""
    confirm_timeout_answer: Literal["acknowledged", "rejected"] = "acknowledged"
    """What an unanswered confirmation becomes (the page says so), and what every waiting
    confirmation becomes when the controller stops (the EO must not lose its answer)."""
    eo_books_check_s: float = Field(5.0, gt=0)
    """While a round lasts, how often the round's books are held against the EO's own
    (``/viewTotals``): a deal booked while the controller was down is added from them, and a
    difference or a round the EO lost is said on the console (:mod:`avatar.reconcile`)."""
    display: bool = True
    """Serve the display page at ``/``."""

    @field_validator("voices")
    @classmethod
    def _keep_defaults(cls, value: dict[str, AvatarVoice]) -> dict[str, AvatarVoice]:
        """Configuring Watson alone must not turn Celia into espeak's default (male) voice."""
        return {**_default_voices(), **value}

    @property
    def confirm_asks(self) -> bool:
        """Whether a seller's Accept waits for a person here (``buyer`` or ``operator``)."""
        return self.confirm_accept in ("buyer", "operator")

    def ssml_limits(self, avatar: str | None = None) -> SsmlLimits:
        """The SSML bounds, with ``avatar``'s rate for the expected speaking time."""
        rate = self.voice_for(avatar).rate if avatar is not None else DEFAULT_LIMITS.words_per_minute
        return SsmlLimits(self.max_break_s, self.min_rate, self.max_rate, self.min_pitch, self.max_pitch, self.max_volume,
                          max_speaking_s=self.max_speaking_s, max_pauses_s=self.max_pauses_s, words_per_minute=rate)

    def voice_for(self, avatar: str) -> VoiceSettings:
        return self.voices.get(avatar, AvatarVoice()).settings()

    def for_room(self, avatars: Sequence[str]) -> AvatarSettings:
        """These settings with a voice for each of the room's avatars: configured by name, or
        the default voice of its place in ``[core] avatars``."""
        defaults = _room_default_voices()
        voices = dict(self.voices)
        for place, name in enumerate(avatars):
            if name not in voices and place < len(defaults):
                voices[name] = defaults[place]
        return self.model_copy(update={"voices": voices})

    def looks(self, avatars: Sequence[str]) -> dict[str, str]:
        """The figure the display draws for each avatar."""
        return {name: self.voices.get(name, AvatarVoice()).look for name in avatars}
