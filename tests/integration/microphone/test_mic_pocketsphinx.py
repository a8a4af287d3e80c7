"""pocketsphinx on real human speech and on synthesized negotiation speech, with measured
word-error-rate bounds (see the issue's closing note for the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import synth_speech
from workers.microphone.engine_pocketsphinx import DECODER_DEFAULTS, PocketsphinxRecognizer
from workers.microphone.engines import load_recognizer
from workers.microphone.evaluation import (
    Sample,
    asterisk_corpus,
    corpus_wer,
    normalize,
    pocketsphinx_corpus,
    transcribe,
    wer,
)
from workers.microphone.recognizer import EngineUnavailable, Hypothesis
from workers.microphone.settings import MicrophoneSettings

# Bounds: the measured corpus WER of this pocketsphinx build plus a margin for other builds.
READ_SPEECH_BOUND = 0.35  # measured 0.29 (goforward + 5 librivox sentences, general model)
ASTERISK_BOUND = 0.45  # measured 0.37 on the first 10 plain-word prompts
NEGOTIATION_BOUND = 0.5  # measured 0.445 over 90 utterances (30 sentences × 3 espeak-ng voices), domain model,
# and 0.417 since; 0.402 on the 30 the test decodes (each sentence once, the voices in turn);
# 0.24 on the first 12 sentences alone: the 18 later ones (a dozen eggs, best price, costs...) leave its templates
# Domain biasing on the first 6 en-us utterances: measured 0.63 (general) → 0.23 (domain).


def negotiation_samples(voices: tuple[str, ...] | None = None) -> list[Sample]:
    chosen = voices or synth_speech.VOICES
    return [Sample(u.path.name, u.path, u.text) for u in synth_speech.negotiation_corpus(voices=chosen)]


@pytest.fixture(scope="module")
def general(tmp_path_factory: pytest.TempPathFactory) -> PocketsphinxRecognizer:
    return PocketsphinxRecognizer(biasing=False, cache_dir=tmp_path_factory.mktemp("ps"))


@pytest.fixture(scope="module")
def biased(tmp_path_factory: pytest.TempPathFactory) -> PocketsphinxRecognizer:
    return PocketsphinxRecognizer(biasing=True, cache_dir=tmp_path_factory.mktemp("ps"))


@pytest.fixture(scope="module")
def read_speech(general: PocketsphinxRecognizer) -> list[tuple[Sample, Hypothesis]]:
    """The read recordings (goforward and the LibriVox sentences; not the cards) and the general
    model's decode of each: decoded once, their words, timings, WER and confidences each a test."""
    samples = [s for s in pocketsphinx_corpus() if not s.name.startswith("cards/")]
    return [(sample, transcribe(general, sample.audio())) for sample in samples]


def test_goforward_words_and_timings(read_speech: list[tuple[Sample, Hypothesis]]) -> None:
    sample, hyp = read_speech[0]
    assert sample.name == pocketsphinx_corpus()[0].name
    audio = sample.audio()
    assert hyp.text.startswith("go forward ten")
    duration_ms = len(audio) * 1000 // 16000
    assert [w.word for w in hyp.words][:3] == ["go", "forward", "ten"]
    for a, b in zip(hyp.words, hyp.words[1:], strict=False):
        assert a.start_ms < a.end_ms <= b.start_ms + 10
    assert 200 <= hyp.words[0].start_ms and hyp.words[-1].end_ms <= duration_ms


def test_read_speech_wer(read_speech: list[tuple[Sample, Hypothesis]]) -> None:
    pairs = [(sample.text, hyp.text) for sample, hyp in read_speech]
    assert len(pairs) == 6
    assert wer([r for r, _ in pairs], [h for _, h in pairs]) <= READ_SPEECH_BOUND, pairs


def test_asterisk_prompts_wer(general: PocketsphinxRecognizer) -> None:
    samples = asterisk_corpus(limit=10)
    assert len(samples) == 10
    error_rate, pairs = corpus_wer(general, samples)
    assert error_rate <= ASTERISK_BOUND, pairs


def test_domain_biasing_lowers_wer_on_negotiation_speech(general: PocketsphinxRecognizer, biased: PocketsphinxRecognizer) -> None:
    one_voice = negotiation_samples(("en-us",))[:6]
    wer_general, _ = corpus_wer(general, one_voice)
    wer_biased, pairs = corpus_wer(biased, one_voice)
    assert wer_biased <= 0.35, pairs
    assert wer_general - wer_biased >= 0.25


def every_sentence_in_turns_of_voice() -> list[Sample]:
    """Each negotiation sentence once, the voices taking turns: every sentence and every voice
    in a third of the decodes (the whole grid, all three voices for each sentence: ``python
    bench/stt.py --engines pocketsphinx``)."""
    by_voice = [negotiation_samples((voice,)) for voice in synth_speech.VOICES]
    return [by_voice[i % len(by_voice)][i] for i in range(len(synth_speech.SENTENCES))]


def test_biased_wer_over_all_voices(biased: PocketsphinxRecognizer) -> None:
    samples = every_sentence_in_turns_of_voice()
    assert len(samples) == len(synth_speech.SENTENCES) and len({s.text for s in samples}) == len(samples)
    error_rate, pairs = corpus_wer(biased, samples)
    assert error_rate <= NEGOTIATION_BOUND, pairs
    # The avatars' names are the words that route a message: most mentions must survive.
    mentions = [(r, h) for r, h in pairs if "watson" in r.split()]
    assert sum("watson" in h.split() for _, h in mentions) >= len(mentions) * 2 // 3


def test_confidence_is_the_word_posterior(read_speech: list[tuple[Sample, Hypothesis]]) -> None:
    """Word confidences are lattice posteriors: correct words score clearly higher than
    misrecognized ones (measured 0.74 vs 0.40 on these six recordings), and the utterance
    confidence is their mean, not a constant."""
    right: list[float] = []
    wrong: list[float] = []
    for sample, hyp in read_speech:
        reference = set(normalize(sample.text).split())
        assert hyp.words and all(0.0 <= w.conf <= 1.0 for w in hyp.words)
        assert 0.0 < hyp.confidence < 1.0
        assert hyp.confidence == pytest.approx(sum(w.conf for w in hyp.words) / len(hyp.words))
        for w in hyp.words:
            (right if w.word in reference else wrong).append(w.conf)
    assert right and wrong
    assert sum(right) / len(right) >= sum(wrong) / len(wrong) + 0.15, (right, wrong)


def test_decoder_options_from_settings(tmp_path: Path) -> None:
    """``[microphone] pocketsphinx_options`` reach the decoder typed like pocketsphinx's own
    defaults (a TOML or environment ``"yes"`` turns a boolean on), over the engine defaults."""
    settings = MicrophoneSettings(
        engine="pocketsphinx", biasing=False, pocketsphinx_options={"fwdflat": "yes", "beam": "1e-40", "maxhmmpf": 5000}
    )
    recognizer = load_recognizer(settings, tmp_path)
    assert isinstance(recognizer, PocketsphinxRecognizer)
    config = recognizer.decoder.config
    assert config["fwdflat"] is True and config["beam"] == pytest.approx(1e-40, rel=1e-6) and config["maxhmmpf"] == 5000
    hyp = transcribe(recognizer, pocketsphinx_corpus()[0].audio())
    assert hyp.text.startswith("go forward ten")
    # without options the engine's own defaults apply over pocketsphinx's
    plain = load_recognizer(MicrophoneSettings(engine="pocketsphinx", biasing=False), tmp_path)
    assert isinstance(plain, PocketsphinxRecognizer)
    assert DECODER_DEFAULTS and all(plain.decoder.config[key] == value for key, value in DECODER_DEFAULTS.items())
    assert plain.decoder.config["fwdflat"] is False


@pytest.mark.parametrize(
    ("options", "message"),
    [({"no_such_option": 1}, "unknown pocketsphinx option 'no_such_option'"), ({"bestpath": "maybe"}, "needs a bool")],
)
def test_bad_decoder_option_is_one_readable_line(tmp_path: Path, options: dict[str, str | int], message: str) -> None:
    settings = MicrophoneSettings(engine="pocketsphinx", biasing=False, pocketsphinx_options=options)
    with pytest.raises(EngineUnavailable, match=message) as info:
        load_recognizer(settings, tmp_path)
    assert "\n" not in str(info.value)
