"""SSML handling: what espeak-ng supports is kept, the rest stripped, markup never spoken."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from avatar import gestures
from avatar.ssml import KEPT_ELEMENTS, prepare
from hardware.speaker import Speaker, VoiceSettings, WavSink

VOICE = VoiceSettings("en-us+f3")

MESSY = (
    '<?xml version="1.0"?><speak version="1.1" xmlns="http://www.w3.org/2001/10/synthesis">'
    '<voice gender="male">I can</voice> <emphasis level="strong">sell</emphasis> you '
    '<prosody rate="slow" pitch="+10%" onclick="x">five eggs</prosody><break time="300ms"/>'
    '<audio src="bell.wav">for<desc>a bell rings</desc></audio> <foo:bar>three</foo:bar> '
    '<say-as interpret-as="characters">USD</say-as><!-- a comment --><phoneme ph="x">today</phoneme>'
    '<mark name="gesture:nod"/></speak>'
)
PLAIN_EQUIVALENT = "I can sell you five eggs for three U S D today"
TAG_NAMES = ("speak", "voice", "emphasis", "prosody", "break", "audio", "desc", "foo", "bar", "say", "phoneme",
             "mark", "gesture", "xml", "version", "comment", "bell", "rings", "onclick")


def test_supported_markup_is_kept_and_the_rest_stripped() -> None:
    text = prepare(MESSY)
    root = ElementTree.fromstring(text.ssml)  # always well-formed
    used = {el.tag for el in root.iter()} - {"speak"}
    assert used <= set(KEPT_ELEMENTS)
    assert {"emphasis", "prosody", "break", "say-as", "mark"} <= used
    assert root.find("prosody").attrib == {"rate": "75%", "pitch": "110%"}  # as bounded factors
    assert text.plain == "I can sell you five eggs for three USD today"
    assert text.marks == ["gesture:nod"]
    assert {"voice", "audio", "desc", "phoneme", "foo:bar"} <= set(text.dropped)
    assert "bell" not in text.ssml and "comment" not in text.ssml and "male" not in text.ssml


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("I sell 5 < 6 eggs & milk", "I sell 5 < 6 eggs & milk"),
        ("3<4 and 5>2", "3<4 and 5>2"),
        ("x </prosody> y <prosody rate='fast'>unclosed", "x y unclosed"),
        ("<s>One</s><s>Two</s>", "One Two"),
        ("x<voice>hi</voice>", "x hi"),
        ("Tom &amp; Jerry &lt;3", "Tom & Jerry <3"),
        ("", ""),
    ],
)
def test_broken_or_plain_text_is_escaped_not_parsed(raw: str, plain: str) -> None:
    text = prepare(raw)
    ElementTree.fromstring(text.ssml)
    assert text.plain == plain


def test_word_count_ignores_markup() -> None:
    words = " ".join(f'<emphasis>w{i}</emphasis><break time="1ms"/>' for i in range(100))
    assert prepare(words).word_count == 100
    assert prepare(words + " one more").word_count == 102


def test_gesture_field_and_marks() -> None:
    assert gestures.parse_field(None).names == []
    assert gestures.parse_field("Nod").names == ["nod"]
    request = gestures.parse_field(["smile", "Thumbs-Up", "moonwalk", 3])
    assert request.names == ["smile", "thumbs_up"]
    assert request.unknown == ["moonwalk", "3"]
    assert gestures.from_mark("gesture:wave") == "wave"
    assert gestures.from_mark("chapter2") is None
    assert not gestures.is_known("moonwalk")


def spoken_words(tmp_path: Path, raw: str) -> tuple[list[str], float]:
    speaker = Speaker(WavSink(tmp_path, realtime=False))
    text = prepare(raw)
    result = speaker.speak(text.ssml, VOICE)
    return [w.name for w in result.words if w.name.strip()], result.duration_s


def test_espeak_never_speaks_the_markup(tmp_path: Path) -> None:
    words, duration = spoken_words(tmp_path, MESSY)
    joined = " ".join(words).lower()
    assert "<" not in joined and ">" not in joined
    for name in TAG_NAMES:
        assert not re.search(rf"\b{re.escape(name)}\b", joined), (name, words)
    assert {"sell", "five", "eggs", "three", "today"} <= {w.lower() for w in words}
    # the markup-laden message lasts about as long as its words said plainly (plus the slow
    # prosody and the 300 ms break), not as long as reading tags out would take
    _, plain_duration = spoken_words(tmp_path, PLAIN_EQUIVALENT)
    assert 0.8 * plain_duration < duration < plain_duration + 1.5
    _, literal_duration = spoken_words(tmp_path, MESSY.replace("<", " less than "))
    assert literal_duration > duration + 3.0
