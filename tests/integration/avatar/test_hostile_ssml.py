"""Agent text that would silence or deafen the room: every effect bounded, no markup ever spoken,
no message holding the speech queue past ``max_speaking_s`` - checked on espeak-ng's real audio."""

from __future__ import annotations

import time
import wave
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest

from avatar.harness import utterance
from avatar.ssml import SsmlLimits, prepare
from hardware.speaker import Speaker, VoiceSettings, WavSink
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, AvatarRunner, agent, ready
from tests.support.helpers import wait_for
from workers.runtime.messages import Speaking

VOICE = VoiceSettings("en-us+f3", 170)
WORDS = "five eggs for three dollars"
LIMITS = SsmlLimits()

HOSTILE: list[tuple[str, str]] = [
    ("break of 28 hours", f'{WORDS} <break time="100000s"/> {WORDS}'),
    ("break in ms", f'{WORDS} <break time="999999999ms"/> {WORDS}'),
    ("negative break", f'{WORDS} <break time="-5s"/> {WORDS}'),
    ("NaN break", f'{WORDS} <break time="NaNs"/> {WORDS}'),
    ("bad strength", f'{WORDS} <break strength="forever"/> {WORDS}'),
    ("doctype with entity", f'<!DOCTYPE speak [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><speak>{WORDS} &xxe;</speak>'),
    ("entity bomb", '<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>' + f"{WORDS} &b;&b;&b;"),
    ("unterminated doctype", f"{WORDS} <!DOCTYPE speak [<!ENTITY x 'y'"),
    ("CDATA", f"{WORDS} <![CDATA[ <prosody rate='x-fast'>cdata</prosody> ]]>"),
    ("unterminated CDATA", f"{WORDS} <![CDATA[ secret words"),
    ("unterminated prosody", f'{WORDS} <prosody rate='),
    ("unterminated tag", f"{WORDS} <emphasis level=\"strong\""),
    ("unterminated comment", f"{WORDS} <!-- secret words"),
    ("processing instruction", f'<?xml-stylesheet href="x"?>{WORDS}<?php evil() ?>'),
    ("+200dB", f'<prosody volume="+200dB">{WORDS}</prosody>'),
    ("x-loud nested", f'<prosody volume="x-loud"><prosody volume="x-loud"><prosody volume="1000%">{WORDS}</prosody></prosody></prosody>'),
    ("rate 1000%", f'<prosody rate="1000%">{WORDS}</prosody>'),
    ("rate 0", f'<prosody rate="0">{WORDS}</prosody>'),
    ("rate -100%", f'<prosody rate="-100%">{WORDS}</prosody>'),
    ("compounding slow rates", "".join('<prosody rate="x-slow">' for _ in range(40)) + WORDS),
    ("compounding fast rates", "".join('<prosody rate="x-fast">' for _ in range(40)) + WORDS),
    ("pitch +1000st", f'<prosody pitch="+1000st" range="1e9%">{WORDS}</prosody>'),
    ("pitch in Hz", f'<prosody pitch="9000Hz">{WORDS}</prosody>'),
    ("attribute injection", f'<mark name=\'"/><audio src="x\'/>{WORDS}<prosody rate=\'"><x a="\'>y</prosody>'),
    ("bad emphasis", f'<emphasis level="infinite">{WORDS}</emphasis>'),
    ("deep nesting", "<s>" * 500 + WORDS + "</s>" * 500),
    ("empty sentences", "<s></s><p> </p>" * 500 + WORDS),
    ("voice change", f'<voice gender="male" name="en-us+m7">{WORDS}</voice>'),
    ("audio and lexicon", f'<audio src="http://x/a.wav">{WORDS}</audio><lexicon uri="http://x/l.pls"/>'),
]
"""(label, text): each must be spoken as its words, bounded, with no markup read out."""

MARKUP_WORDS = ("doctype", "entity", "xxe", "cdata", "prosody", "system", "passwd", "php", "stylesheet", "secret",
                "audio", "lexicon", "emphasis", "rate", "volume")


def audio_of(speaker: Speaker, ssml: str) -> tuple[float, float, list[str]]:
    """Duration (s), peak amplitude and the words espeak-ng spoke."""
    result = speaker.speak(ssml, VOICE)
    assert result.path is not None
    with wave.open(str(result.path)) as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.int32)
    return result.duration_s, float(np.abs(samples).max()) if samples.size else 0.0, [w.name.lower() for w in result.words]


@pytest.fixture(scope="module")
def plain_speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[Speaker, float, float]:
    speaker = Speaker(WavSink(tmp_path_factory.mktemp("wav"), realtime=False))
    duration, peak, _ = audio_of(speaker, prepare(WORDS).ssml)
    return speaker, duration, peak


@pytest.mark.parametrize(("label", "text"), HOSTILE, ids=[label for label, _ in HOSTILE])
def test_hostile_ssml_is_bounded_and_never_read_out(label: str, text: str, plain_speech: tuple[Speaker, float, float]) -> None:
    speaker, plain_duration, plain_peak = plain_speech
    prepared = prepare(text)
    root = ElementTree.fromstring(prepared.ssml)  # well-formed, whatever came in
    spoken_text = " ".join(root.itertext()).lower()
    assert "<" not in spoken_text and ">" not in spoken_text and "&" not in spoken_text, (label, prepared.ssml)
    for word in MARKUP_WORDS:
        assert word not in spoken_text, (label, word, prepared.ssml)
    assert "five eggs" in prepared.plain, (label, prepared.plain)

    duration, peak, words = audio_of(speaker, prepared.ssml)
    times = text.count(WORDS)
    # each run of the words at most twice as slow, plus two bounded pauses
    assert duration < times * plain_duration / LIMITS.min_rate + 2 * LIMITS.max_break_s + 0.5, (label, duration)
    assert duration > times * plain_duration / LIMITS.max_rate * 0.6, (label, duration)  # and never gabbled away
    if "<emphasis" in prepared.ssml:  # emphasis is louder by design: compare with a plain one
        _, plain_peak, _ = audio_of(speaker, prepare(f"<emphasis>{WORDS}</emphasis>").ssml)
    assert peak <= plain_peak * 1.15, (label, peak, plain_peak)
    assert not set(words) & set(MARKUP_WORDS), (label, words)


def test_a_long_message_is_cut_at_max_speaking_s_and_the_next_one_follows(
    mosquitto: Any, make_config: Any, tmp_path: Path
) -> None:
    avatars = AvatarRunner(mosquitto.url, make_config, tmp_path / "wav")
    try:
        local, observer = avatars(**{"avatar.max_speaking_s": 1.5})
        many_pauses = " ".join(f'word {i} <break time="2s"/>' for i in range(40))  # 80 s of pauses alone
        with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
            ready(http, observer)
            assert http.post(ep.RECEIVE_MESSAGE, json=agent("Celia", many_pauses)).status_code == 200
            started = time.monotonic()
            assert http.post(ep.RECEIVE_MESSAGE, json=agent("Watson", "And I say five eggs.")).status_code == 200
        events = observer.wait(Speaking, 4, timeout=20, where=utterance)
        elapsed = time.monotonic() - started
        assert [(e.avatar, e.state) for e in events] == [("Celia", "begin"), ("Celia", "end"), ("Watson", "begin"), ("Watson", "end")]
        celia_ms = events[1].at - events[0].at
        # its text is cut before synthesis where it is expected to pass 1.5 s, the audio at 1.5 s
        assert 1000 <= celia_ms < 3000, celia_ms
        assert elapsed < 10, elapsed
        # counted once the speaker returns, a moment after the end event is published
        assert wait_for(lambda: local.controller.speech.stats.spoken == 2, 5), local.controller.speech.stats
    finally:
        avatars.close()


def test_the_cut_reports_only_the_words_said(tmp_path: Path) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=False))
    counted = " ".join(str(n) for n in range(1, 60))
    result = speaker.speak(prepare(counted).ssml, VOICE, max_s=2.0)
    assert result.cut and result.duration_s == pytest.approx(2.0, abs=0.01)
    said = [w.name for w in result.words]
    assert 2 < len(said) < 20 and said == [str(n) for n in range(1, len(said) + 1)]
    assert not speaker.speak(prepare("three").ssml, VOICE, max_s=2.0).cut


def test_the_limits_are_configurable() -> None:
    loose = SsmlLimits(max_break_s=10.0, max_rate=3.0, max_pauses_s=30.0)
    assert 'time="10000ms"' in prepare('<break time="100s"/>', loose).ssml
    assert 'time="2000ms"' in prepare('<break time="100s"/>').ssml
    assert 'rate="300%"' in prepare('<prosody rate="500%">x</prosody>', loose).ssml


FLOODS: dict[str, str] = {
    "5,000 two-second breaks (90 KB)": "<speak>" + '<break time="2s"/>' * 5000,
    "a 100 KB single token": "x" * 100_000,
    "say-as characters x5000": '<say-as interpret-as="characters">AB</say-as>' * 5000,
}
"""Messages that held the room for 45 s: silence, or babble."""
REFERENCES = ("&#60;speak&#62;&#60;audio src=&#34;x.wav&#34;&#62;" + WORDS + "&#60;/audio&#62;&#60;/speak&#62;"
              " &amp;amp;amp;#60;prosody rate=&amp;amp;amp;#34;x-slow&amp;amp;amp;#34;&amp;amp;amp;#62;")
"""Tags written as character references, plainly and nested: markup, never the words "speak", "audio"."""


def test_no_message_is_expected_to_hold_the_room_past_its_budgets() -> None:
    """Before synthesis: what a message is expected to take (pauses included) is within
    ``max_speaking_s``, its pauses within ``max_pauses_s``; a spelled-out or glued-together
    flood counts every word it would say, so the 100-word rule refuses it."""
    for label, text in FLOODS.items():
        started = time.monotonic()
        prepared = prepare(text)
        assert time.monotonic() - started < 1.0, label
        assert prepared.expected_s <= LIMITS.max_speaking_s, (label, prepared.expected_s)
        assert len(prepared.ssml) < 10_000, (label, len(prepared.ssml))  # espeak-ng never gets the flood
    breaks = prepare(FLOODS["5,000 two-second breaks (90 KB)"])
    assert breaks.expected_s <= LIMITS.max_pauses_s and not breaks.plain and breaks.spoken_words == 0
    assert prepare(FLOODS["a 100 KB single token"]).spoken_words > 100
    assert prepare(FLOODS["say-as characters x5000"]).spoken_words == 10_000
    slow = prepare('<prosody rate="x-slow">' + " ".join(["eggs"] * 100) + "</prosody>")
    assert slow.cut and LIMITS.max_speaking_s - 1 < slow.expected_s <= LIMITS.max_speaking_s and slow.spoken_words == 100


def test_character_references_are_markup_never_words(plain_speech: tuple[Speaker, float, float]) -> None:
    speaker, plain_duration, _ = plain_speech
    prepared = prepare(REFERENCES)
    assert prepared.plain == WORDS, prepared.plain
    assert "audio" in prepared.dropped
    duration, _, words = audio_of(speaker, prepared.ssml)
    assert not {"speak", "audio", "prosody", "src", "wav", "rate", "slow"} & set(words), words
    assert duration < plain_duration * 1.3 + 0.3, (duration, plain_duration)  # not slowed either


def test_floods_never_hold_the_room_and_the_next_replies_are_spoken(
    mosquitto: Any, make_config: Any, tmp_path: Path
) -> None:
    """Through the Avatar Controller: each flood is refused or spoken within its budgets, and the
    three replies after them are all spoken (they had gone stale behind 45 s of silence)."""
    avatars = AvatarRunner(mosquitto.url, make_config, tmp_path / "wav")
    try:
        # unpaced WAVs: the audio's own length is what is measured, at the default limits
        local, observer = avatars(**{"avatar.speaker": f"wav-fast:{tmp_path / 'wav'}"})
        paused = f"{WORDS} " + '<break time="2s"/>' * 5000 + " for real"
        replies = ["Five eggs for three dollars.", "Or six for four.", "Last offer: seven for five."]
        with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
            ready(http, observer)
            for text in [*FLOODS.values(), paused, REFERENCES, *replies]:
                assert http.post(ep.RECEIVE_MESSAGE, json=agent("Celia", text)).status_code == 200
        assert local.controller.wait_spoken(2 + len(replies), timeout=30), local.controller.speech.stats
        stats = local.controller.speech.stats
        assert (stats.refused_too_long, stats.dropped_stale, stats.failed) == (2, 0, 0), stats
        spoken = local.controller.speech.spoken()
        assert [s.request.text.plain for s in spoken] == [f"{WORDS} for real", WORDS, *replies]
        for item in spoken:
            # the room is never held past the pause budget by silence, nor past the words it says
            assert item.result.duration_s < LIMITS.max_pauses_s + 4 and not item.result.cut, \
                (item.request.text.plain, item.result.duration_s)
            assert item.result.path is not None
            assert _longest_silence_s(item.result.path) <= LIMITS.max_pauses_s + 0.3, item.request.text.plain
    finally:
        avatars.close()


def _longest_silence_s(path: Path) -> float:
    """The longest run of near-silent audio in a WAV, in seconds."""
    with wave.open(str(path)) as w:
        rate = w.getframerate()
        samples = np.abs(np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.int32))
    window = rate // 50  # 20 ms
    loud = [samples[i:i + window].max(initial=0) > 300 for i in range(0, len(samples), window)]
    longest = run = 0
    for is_loud in loud:
        run = 0 if is_loud else run + 1
        longest = max(longest, run)
    return longest * window / rate
