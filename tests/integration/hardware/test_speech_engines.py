"""Every speech engine behind the speaker's one contract: espeak-ng, Festival (HTS) and Piper.

Each engine speaks the same SSML through the real :class:`Speaker` into real WAV files, and
the same things must hold whatever speaks: marks and gestures at their word, prosody and its
bounds, breaks, the ``max_s`` cut-off, cancellation (barge-in), lip-sync from the engine's own
timing against its audio, and a buyer (the suite's own recogniser) understanding the words.
Bounds are measured ones with a margin (``bench/voices.py`` prints the figures); nothing here
depends on one CPU's exact output.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from avatar import lipsync, visemes
from avatar.settings import AvatarSettings
from avatar.ssml import prepare
from formats import speech_script
from formats.speech_script import Pause, Phrase
from formats.spoken_amounts import heard, spoken
from hardware.audio_files import load_audio
from hardware.speaker import Speaker, SpeakerError, VoiceSettings, WavSink
from tests.support.paths import FIXTURES

FESTIVAL = VoiceSettings("cmu_us_slt_arctic_hts", 170, engine="festival", fallback="en-us+f3")
PIPER = VoiceSettings("en_US-joe-medium", 165, engine="piper", fallback="en-us+m3")
ESPEAK = VoiceSettings("en-us+f3", 170)
ENGINES = {"festival": FESTIVAL, "piper": PIPER, "espeak": ESPEAK}
HELDOUT = json.loads((FIXTURES / "seller-lines-heldout.json").read_text())
LIPSYNC_MAX_MS = 60
WER_MAX = 0.08
"""Measured 0.017-0.034 (Celia, Festival) and 0.019 (Watson, Piper) on this machine; the target
is 0.05 (``bench/voices.py``). The test keeps a margin for another CPU's decode."""


@pytest.fixture(scope="module")
def speaker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    speaker = Speaker(WavSink(tmp_path_factory.mktemp("wav"), realtime=False))
    yield speaker
    speaker.close()


@pytest.fixture(params=list(ENGINES))
def voice(request: pytest.FixtureRequest) -> VoiceSettings:
    return ENGINES[request.param]


def test_the_default_voices_are_natural_a_woman_and_a_man() -> None:
    settings = AvatarSettings()
    assert settings.voice_for("Celia") == FESTIVAL
    assert settings.voice_for("Watson") == PIPER


# -- the SSML subset ----------------------------------------------------------------------------
def test_the_script_reads_sentences_prosody_breaks_marks_and_aliases() -> None:
    text = prepare('Two eggs.<mark name="gesture:nod"/> <prosody rate="slow" volume="soft">Only</prosody> '
                   '<sub alias="three">3</sub> <break time="300ms"/> <say-as interpret-as="characters">ok</say-as>!').ssml
    pieces = speech_script.read(text)
    phrases = [p for p in pieces if isinstance(p, Phrase)]
    assert [p.text for p in phrases] == ["Two eggs.", "Only", "three", "o k!"]
    assert phrases[1].prosody.rate == pytest.approx(0.75) and phrases[1].prosody.volume == pytest.approx(0.5)
    assert phrases[0].marks == [(2, "gesture:nod")]  # reached as "Two eggs." ends, before "Only"
    assert any(isinstance(p, Pause) and p.ms == 300 for p in pieces)


def test_a_slow_engine_s_first_phrase_is_cut_where_a_phrase_may_start() -> None:
    lead = speech_script.split_lead(Phrase("four cups of milk for two dollars ninety final offer"), 4)
    assert [p.text for p in lead] == ["four cups of milk", "for two dollars ninety final offer"]
    lead = speech_script.split_lead(Phrase("I can beat that, six eggs for three dollars twenty"), 4)
    assert lead[0].text == "I can beat that,"
    assert speech_script.split_lead(Phrase("Deal at fifteen dollars"), 4) == [Phrase("Deal at fifteen dollars")]


def test_money_is_said_as_a_seller_says_it_and_usd_is_never_spelt() -> None:
    assert spoken("$4.50") == "four dollars fifty"
    assert spoken("$1") == "one dollar"
    assert spoken("$0.75 or 4.05 USD") == "seventy five cents or four dollars oh five"
    assert spoken("priced in USD") == "priced in dollars"
    speech = prepare("Two eggs for $3.50.")
    assert "three dollars fifty" in speech.ssml and speech.plain == "Two eggs for $3.50."


def test_a_seller_says_every_amount_with_cents_one_way() -> None:
    """The platform's example sellers ask $6.04 and $2.94 in one round: both are said as dollars
    then cents, not one "and four cents" and the other "ninety four"."""
    assert spoken("$6.04 or 2.94 USD") == "six dollars oh four or two dollars ninety four"
    assert heard("$6.04 or $2.94") == "six dollars and four cents or two dollars ninety four"  # as buyers say it


# -- the same behaviour from every engine ---------------------------------------------------------
def test_words_marks_and_phonemes_come_in_audio_order_at_their_word(speaker: Speaker, voice: VoiceSettings) -> None:
    text = prepare('How about two eggs?<mark name="gesture:nod"/> Deal at <mark name="m2"/>three dollars.').ssml
    result = speaker.speak(text, voice, name=f"marks-{voice.engine}")
    words = [w.name for w in result.words]
    assert words[:4] == ["How", "about", "two", "eggs"] and "Deal" in words
    assert [m.name for m in result.marks] == ["gesture:nod", "m2"]
    at = {w.name: w.audio_ms for w in result.words}
    nod, m2 = (m.audio_ms for m in result.marks)
    assert at["eggs"] < nod <= at["Deal"] + 20 and at["at"] < m2 <= at["three"] + 20
    assert [p.audio_ms for p in result.phonemes] == sorted(p.audio_ms for p in result.phonemes)
    assert {visemes.viseme(p.name) for p in result.phonemes} >= {"rest", "aa", "ee", "cons"}
    assert result.phonemes[-1].audio_ms < result.duration_s * 1000


def test_prosody_rate_and_volume_take_effect_within_bounds(speaker: Speaker, voice: VoiceSettings) -> None:
    plain = speaker.speak(prepare("Three cups of flour for six dollars.").ssml, voice, name="plain")
    slow = speaker.speak(prepare('<prosody rate="x-slow">Three cups of flour for six dollars.</prosody>').ssml, voice, name="slow")
    wild = speaker.speak(prepare('<prosody rate="5000%">Three cups of flour for six dollars.</prosody>').ssml, voice, name="wild")
    assert slow.duration_s > plain.duration_s * 1.3
    assert wild.duration_s > plain.duration_s * 0.35  # clamped at twice the rate, never a chirp
    loud = load_audio(plain.path).astype(float)  # type: ignore[arg-type]
    soft = load_audio(speaker.speak(prepare('<prosody volume="x-soft">Three cups of flour for six dollars.</prosody>').ssml,
                                    voice, name="soft").path).astype(float)  # type: ignore[arg-type]
    assert abs(soft).max() < abs(loud).max() * 0.5


def _longest_silence_s(path: Path) -> float:
    audio = np.abs(load_audio(path).astype(float))
    frames = audio[: len(audio) // 160 * 160].reshape(-1, 160).max(axis=1) < 0.01 * audio.max()
    longest = run = 0
    for quiet in frames:
        run = run + 1 if quiet else 0
        longest = max(longest, run)
    return longest * 0.01


def test_a_break_is_silence_of_its_length(speaker: Speaker, voice: VoiceSettings) -> None:
    # voiced on both sides of the break: the silence measure hears where the words end and start
    paused = speaker.speak(prepare('Eggs and <break time="800ms"/> milk.').ssml, voice, name="break")
    # the phrase edges either side add up to a few frames; measured 0.78-1.03 s
    assert _longest_silence_s(paused.path) == pytest.approx(0.8, abs=0.25)  # type: ignore[arg-type]


def test_max_s_cuts_the_audio_and_never_reports_what_was_not_said(speaker: Speaker, voice: VoiceSettings) -> None:
    long = prepare(" ".join(["Fresh eggs and fine flour for a fair price."] * 6)).ssml
    result = speaker.speak(long, voice, name="cut", max_s=2.0)
    assert result.cut and result.duration_s == pytest.approx(2.0, abs=0.05)
    assert all(w.audio_ms <= 2000 for w in result.words) and all(p.audio_ms < 2000 for p in result.phonemes)


def test_cancel_stops_within_a_block_and_the_next_utterance_speaks(tmp_path: Path, voice: VoiceSettings) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=True))
    long = prepare(" ".join(["Fresh eggs and fine flour for a fair price."] * 4)).ssml
    began = threading.Event()
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(speaker.speak(long, voice, on_begin=began.set)))
    worker.start()
    assert began.wait(10)
    time.sleep(0.5)
    cancelled_at = time.monotonic()
    speaker.cancel()
    worker.join(5)
    assert not worker.is_alive() and results[0].cancelled
    # the barge-in cut-off: the engine does not hold it (the rest of the utterance is over 8 s; the
    # cut measured well under 0.1 s on an idle machine, 0.32 s with the whole suite on two cores)
    assert results[0].ended_at - cancelled_at < 1.0
    assert results[0].duration_s < 2.0
    after = speaker.speak(prepare("Deal.").ssml, voice)
    assert not after.cancelled and after.duration_s > 0.2
    speaker.close()


def test_lipsync_from_the_engine_s_own_timing_matches_its_audio(speaker: Speaker, voice: VoiceSettings) -> None:
    errors: list[int] = []
    for line in ["Eggs. Flour, sugar. Milk and chocolate. Vanilla. Blueberry, please.", *HELDOUT["Celia"], *HELDOUT["Watson"]]:
        result = speaker.speak(prepare(line).ssml, voice, name="lipsync")
        found = lipsync.errors_ms(result.path, visemes.timeline(result.phonemes))  # type: ignore[arg-type]
        if found is not None:
            errors += found
    assert len(errors) >= 20  # words after a pause that both the audio and the timeline show
    # Piper samples its voice (VITS noise), so each run's audio differs a little: once in a while
    # the onset detector places one soft word start at a breath before it (seen: 248 ms, one word
    # in a fresh run). The timeline must match the audio everywhere else.
    outliers = [e for e in errors if e > LIPSYNC_MAX_MS]
    assert len(outliers) <= max(1, len(errors) // 50), errors


@pytest.mark.parametrize("avatar", ["Celia", "Watson"])
def test_a_listener_understands_each_default_voice(speaker: Speaker, avatar: str) -> None:
    """15 held-out seller lines, spoken by the avatar's default voice and transcribed by the
    suite's default recogniser: the prices and goods come through."""
    from bench.voices import in_the_room
    from workers.microphone.engines import load_recognizer
    from workers.microphone.evaluation import deal_terms, transcribe, wer
    from workers.microphone.settings import MicrophoneSettings

    recognizer = _recognizer(load_recognizer, MicrophoneSettings)
    voice = AvatarSettings().voice_for(avatar)
    lines = HELDOUT[avatar]
    heard = [transcribe(recognizer, in_the_room(load_audio(speaker.speak(prepare(line).ssml, voice, name=avatar).path))).text  # type: ignore[arg-type]
             for line in lines]
    assert wer(lines, heard) <= WER_MAX, list(zip(lines, heard, strict=True))
    # measured 13-14 of 15 (bench/voices.py, five runs) and 10 once: Piper samples its prosody anew each time
    assert sum(deal_terms(a) == deal_terms(b) for a, b in zip(lines, heard, strict=True)) >= 9


_RECOGNIZER: list[Any] = []


def _recognizer(load: Any, settings: Any) -> Any:
    if not _RECOGNIZER:
        import tempfile

        _RECOGNIZER.append(load(settings(), Path(tempfile.gettempdir())))
    return _RECOGNIZER[0]


# -- a voice that is not installed -------------------------------------------------------------
def test_a_missing_voice_names_what_to_install_once_and_falls_back_to_espeak(
    speaker: Speaker, caplog: pytest.LogCaptureFixture
) -> None:
    missing = [replace(FESTIVAL, voice="cmu_us_nobody_hts"), replace(PIPER, voice="en_US-nobody-medium")]
    for voice in missing:
        with caplog.at_level(logging.WARNING):
            first = speaker.speak(prepare("Deal.").ssml, voice)
            second = speaker.speak(prepare("Deal.").ssml, voice)
        assert first.duration_s > 0.2 and second.duration_s > 0.2
        lines = [r.getMessage() for r in caplog.records if voice.voice in r.getMessage()]
        assert len(lines) == 1 and "install" in lines[0] and voice.fallback in lines[0], lines
        caplog.clear()
    with pytest.raises(SpeakerError, match="install"):
        speaker.check_voice(replace(PIPER, voice="en_US-nobody-medium", fallback=None))
