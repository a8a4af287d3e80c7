"""Speech through the running controller: after the answer, one voice at a time, in order,
stale and over-long messages dropped, gestures on time, begin/end around the audio."""

from __future__ import annotations

import logging
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from avatar.harness import utterance
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, SPEECH_TIMEOUT, AvatarRunner, agent, captured, ready
from workers.runtime.messages import Gesture, Speaking, Stage


def wav_stats(path: Path) -> tuple[float, float]:
    with wave.open(str(path)) as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
        return len(samples) / w.getframerate(), float(np.sqrt(np.mean(samples**2)))


def test_spoken_after_the_answer_with_gestures_on_time(start_avatar: AvatarRunner, tmp_path: Path, caplog: Any) -> None:
    local, observer = start_avatar()
    text = ('<speak>Five eggs <mark name="gesture:nod"/>for three dollars, '
            'a very <emphasis>good</emphasis> price <mark name="gesture:thumbs_up"/>today.'
            '<mark name="gesture:moonwalk"/></speak>')
    caplog.set_level(logging.WARNING)
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        ready(http, observer)
        response = http.post(ep.RECEIVE_MESSAGE, json=agent("Watson", text, gesture=["wave", "moonwalk"]))
        assert response.status_code == 200
        # the answer came back while the avatar had not finished (speech happens after it)
        assert not observer.of(Speaking, where=utterance, state="end")
    begin, end = observer.wait(Speaking, 2, timeout=SPEECH_TIMEOUT, where=utterance, avatar="Watson")
    assert (begin.state, end.state) == ("begin", "end")
    assert begin.text == "Five eggs for three dollars, a very good price today."

    spoken = local.controller.speech.spoken()[-1]
    result = spoken.result
    assert result.path is not None and begin.message_id in result.path.name
    duration, rms = wav_stats(result.path)
    assert duration == pytest.approx(result.duration_s) and 2.0 < duration < 6.0
    assert rms > 500
    # begin/end bracket the audio: they are as far apart as the audio is long
    assert abs((end.at - begin.at) / 1000 - duration) < 0.3
    # and carry the message's stage times: received, first audio, speaking end, in that order
    assert begin.stages[Stage.FIRST_AUDIO] == begin.at and end.stages[Stage.SPEAKING_END] == end.at
    assert end.stages[Stage.RECEIVED] <= end.stages[Stage.FIRST_AUDIO] <= end.stages[Stage.SPEAKING_END]

    gestures = observer.wait(Gesture, 3, avatar="Watson")
    assert [g.name for g in gestures] == ["wave", "nod", "thumbs_up"]
    assert all(g.message_id == begin.message_id for g in gestures)
    assert abs(gestures[0].at - begin.at) < 100  # the message's gesture: when speech starts
    marks = {m.name: m.audio_ms for m in result.marks}
    words = {w.name: w.audio_ms for w in result.words}
    assert marks["gesture:nod"] == words["for"] and marks["gesture:thumbs_up"] == words["today"]
    for gesture in gestures[1:]:
        # played when speech reaches the marked word (20 ms output blocks; ms wall clock)
        offset = gesture.at - begin.at
        assert abs(offset - marks[f"gesture:{gesture.name}"]) < 150, (gesture.name, offset)
    assert gestures[2].at - gestures[1].at > 800
    assert any("moonwalk" in r.getMessage() for r in caplog.records)


def test_one_voice_at_a_time_in_arrival_order(start_avatar: AvatarRunner) -> None:
    local, observer = start_avatar()
    lines = [("Celia", "Two eggs for three dollars."), ("Watson", "I can do two fifty."),
             ("Celia", "Two twenty five, final.")]
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        ready(http, observer)
        for speaker, text in lines:
            assert http.post(ep.RECEIVE_MESSAGE, json=agent(speaker, text)).status_code == 200
        human = captured("/receiveMessage (from Human)")
        assert http.post(ep.RECEIVE_MESSAGE, json=human).status_code == 200
    events = observer.wait(Speaking, 6, timeout=SPEECH_TIMEOUT, where=utterance)
    assert [(e.avatar, e.state, e.text) for e in events] == [
        (speaker, state, text) for speaker, text in lines for state in ("begin", "end")
    ]
    for previous_end, next_begin in zip(events[1::2], events[2::2], strict=False):
        assert next_begin.at >= previous_end.at  # never two voices at once
    assert local.controller.speech.wait_idle(SPEECH_TIMEOUT)
    assert len(local.controller.speech.spoken()) == 3  # the human's own words are shown, not spoken


def test_r4_full_queue_and_stale_messages_are_not_spoken(start_avatar: AvatarRunner, caplog: Any) -> None:
    local, observer = start_avatar(**{"avatar.stale_after_s": 1.0, "avatar.queue_max": 2})
    caplog.set_level(logging.WARNING, logger="avatar.speech_queue")
    long_reply = "I really cannot go any lower than three dollars and fifty cents for these lovely eggs."
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        ready(http, observer)
        too_long = " ".join(["word"] * 101)
        assert http.post(ep.RECEIVE_MESSAGE, json=agent("Celia", too_long)).status_code == 200
        assert http.post(ep.RECEIVE_MESSAGE, json=agent("Celia", long_reply)).status_code == 200
        observer.wait(Speaking, 1, timeout=SPEECH_TIMEOUT, state="begin")
        for text in ("First waiting.", "Second waiting.", "Third waiting."):
            assert http.post(ep.RECEIVE_MESSAGE, json=agent("Watson", text)).status_code == 200
    assert local.controller.speech.wait_idle(SPEECH_TIMEOUT)
    time.sleep(0.2)
    spoken = [e.text for e in observer.of(Speaking, state="begin")]
    assert spoken == [long_reply]
    stats = local.controller.speech.stats
    assert (stats.refused_too_long, stats.refused_full, stats.dropped_stale, stats.spoken) == (1, 1, 2, 1)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "101 words" in text and "R4" in text
    assert "queue_max" in text
    assert text.count("stale_after_s") == 2
    health = loopback.get(local.url + "/health", timeout=HTTP_TIMEOUT).json()
    assert health["dropped_stale"] == 2 and health["refused_too_long"] == 1
