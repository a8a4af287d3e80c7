"""The speech engines in a supervised child process (:mod:`hardware.speech_process`).

Real engines in a real child: each default voice speaks through it as it speaks in-process;
a cancelled utterance stops the child's synthesis; a child killed (SIGKILL) or hung (SIGSTOP)
mid-utterance fails that utterance with a :class:`SpeakerError` - a failure, not a cancel: the
speech queue counts it and the next message speaks through a fresh child; an Avatar Controller
keeps answering HTTP meanwhile; and the child never outlives its parent, even a ``kill -9``-ed one.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from avatar.harness import LocalAvatar, Observer, utterance
from avatar.settings import AvatarSettings
from avatar.ssml import prepare
from hardware.speaker import Speaker, SpeakerError, SpeechEvent, SpokenUtterance, VoiceSettings, WavSink
from hardware.speech_engines import EngineSet
from hardware.speech_process import BACKOFF_FIRST_S, SpeechProcess
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, agent, ready
from workers.runtime.messages import Speaking

SETTINGS = AvatarSettings()
VOICES = {
    "espeak": SETTINGS.voice_for("Somebody"),  # any avatar but Celia and Watson: espeak-ng en-us
    "festival": SETTINGS.voice_for("Celia"),
    "piper": SETTINGS.voice_for("Watson"),
}
TEXT = prepare('Two cups of flour <mark name="gesture:nod"/>for a dollar twenty. That is my best price today.').ssml
LONG = prepare(" ".join(["I hear you, and I promise these are the freshest eggs and the finest vanilla in town."] * 5)).ssml
DEADLINE_S = 30.0
"""Generous bound for anything that should take well under a second (a busy two-core machine)."""


@pytest.fixture(params=list(VOICES))
def voice(request: pytest.FixtureRequest) -> VoiceSettings:
    return VOICES[request.param]


@pytest.fixture(scope="module")
def shared_process() -> Iterator[SpeechProcess]:
    engines = SpeechProcess()
    yield engines
    engines.close()


@pytest.fixture
def fresh_process() -> Iterator[SpeechProcess]:
    """A child of this test alone (the tests that kill it)."""
    engines = SpeechProcess()
    yield engines
    engines.close()


def gone_or_exited(pid: int) -> bool:
    """The process has ended: no entry, or only its exit status left (``Z``) for a parent to read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def speech_children() -> set[int]:
    """This process's children that are speech processes, or that ended and were not reaped."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and (b"hardware.speech_process" in cmdline or fields[0] == "Z"):
            found.add(int(entry.name))
    return found


def wait_process_end(pid: int, timeout: float) -> bool:
    """Wait (without polling) until ``pid`` ends; True if it did within ``timeout``."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([handle], [], [], timeout)[0])
    finally:
        os.close(handle)


def kill_on_begin(engines: SpeechProcess, sig: int, killed: list[int]) -> Callable[[], None]:
    """An ``on_begin`` that sends ``sig`` to the child speaking (it is still synthesising the rest)."""

    def on_begin() -> None:
        pid = engines.pid
        assert pid is not None
        killed.append(pid)
        os.kill(pid, sig)

    return on_begin


# -- the same speech as in-process ------------------------------------------------------------------
def test_each_default_voice_speaks_through_the_child_as_in_process(
    shared_process: SpeechProcess, voice: VoiceSettings, tmp_path: Path
) -> None:
    local = Speaker(WavSink(tmp_path / "local", realtime=False))
    remote = Speaker(WavSink(tmp_path / "child", realtime=False), engines=shared_process)
    assert remote.check_voice(voice) == local.check_voice(voice) == voice  # installed here: nobody falls back
    here = local.speak(TEXT, voice, name="here")
    there = remote.speak(TEXT, voice, name="there")

    assert there.sample_rate == here.sample_rate
    assert there.duration_s > 2.0
    # the same audio up to the engines' own run-to-run differences (Piper samples its durations)
    assert abs(there.samples - here.samples) <= 0.1 * here.samples
    assert [w.name for w in there.words] == [w.name for w in here.words]
    assert len(there.words) >= 12 and there.words[0].name == "Two"
    assert [m.name for m in there.marks] == [m.name for m in here.marks] == ["gesture:nod"]
    assert len(there.phonemes) >= 30 and abs(len(there.phonemes) - len(here.phonemes)) <= 0.1 * len(here.phonemes)
    assert there.path is not None and there.path.stat().st_size == 44 + 2 * there.samples  # the WAV holds it all
    assert shared_process.pid is not None and shared_process.pid != os.getpid()


def test_a_missing_voice_falls_back_with_the_same_one_line_and_an_unknown_one_is_the_same_error(
    fresh_process: SpeechProcess, caplog: pytest.LogCaptureFixture
) -> None:
    missing = VoiceSettings("no_such_festival_voice", engine="festival", fallback="en-us+f3")
    caplog.set_level(logging.WARNING, logger="hardware.speech_engines")
    _, expected = EngineSet().resolve(missing)
    expected_lines = [r.getMessage() for r in caplog.records if r.name == "hardware.speech_engines"]
    assert len(expected_lines) == 1
    caplog.clear()

    engine, used = fresh_process.resolve(missing)
    assert used == expected
    assert fresh_process.resolve(missing)[1] == expected  # asked again: no second line
    lines = [r.getMessage() for r in caplog.records if r.name == "hardware.speech_engines"]
    assert lines == expected_lines  # the child's line, logged here once under the engines' logger

    # a new child loads the voice again without saying it again
    pid = fresh_process.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_process_end(pid, DEADLINE_S)
    chunks: list[bytes] = []
    engine.synthesize(TEXT, used, lambda pcm, _events: chunks.append(pcm) or True)  # died between utterances: speaks
    assert sum(map(len, chunks)) > engine.sample_rate
    assert [r.getMessage() for r in caplog.records if r.name == "hardware.speech_engines"] == expected_lines

    unknown = VoiceSettings("xx-nope")
    with pytest.raises(SpeakerError) as here:
        EngineSet().resolve(unknown)
    with pytest.raises(SpeakerError) as there:
        fresh_process.resolve(unknown)
    assert str(there.value) == str(here.value)
    assert "espeak-ng has no voice 'xx-nope'" in str(there.value)


# -- cancel ---------------------------------------------------------------------------------------
def test_cancel_stops_the_child_s_synthesis_and_the_next_utterance_speaks(shared_process: SpeechProcess) -> None:
    espeak = VOICES["espeak"]
    engine, used = shared_process.resolve(espeak)
    # about 90 minutes of speech: espeak-ng would need ~15 s to synthesise it all, the socket
    # holds a few seconds of it, so a child that did not stop would hold up the next utterance
    huge = prepare(" ".join(["Six eggs for three dollars twenty, and that is a very good price."] * 2000)).ssml
    calls: list[int] = []

    def stop_at_third(pcm: bytes, _events: list[SpeechEvent]) -> bool:
        calls.append(len(pcm))
        return len(calls) < 3

    started = time.monotonic()
    engine.synthesize(huge, used, stop_at_third)
    assert len(calls) == 3  # nothing after the False
    assert time.monotonic() - started < DEADLINE_S

    chunks: list[tuple[bytes, list[SpeechEvent]]] = []
    first_at: list[float] = []

    def keep(pcm: bytes, events: list[SpeechEvent]) -> bool:
        if not first_at:
            first_at.append(time.monotonic())
        chunks.append((pcm, events))
        return True

    asked = time.monotonic()
    engine.synthesize(TEXT, used, keep)
    assert first_at[0] - asked < 3.0  # the cancelled utterance's rest was neither synthesised nor played
    words = [e for _, events in chunks for e in events if e.kind == "word"]
    assert [w.name for w in words][:4] == ["Two", "cups", "of", "flour"]  # this text, from its start
    assert words[0].audio_ms < 500

    again: list[bytes] = []
    engine.synthesize(TEXT, used, lambda pcm, _e: again.append(pcm) or True)
    # the whole text, as the same child speaks it with no cancel before (espeak-ng itself differs
    # by a few samples from run to run; the in-process engine is no reference here: espeak-ng's
    # settings are process-wide, and the tests before this one set them in the test process)
    assert abs(sum(len(p) for p, _ in chunks) - sum(map(len, again))) <= 0.01 * sum(map(len, again))


def test_speaker_cancel_through_the_child_ends_the_utterance_cut(shared_process: SpeechProcess, tmp_path: Path) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=True), engines=shared_process)
    voice = VOICES["piper"]
    words: list[str] = []

    def on_word(event: SpeechEvent) -> None:
        words.append(event.name)
        if len(words) == 3:
            speaker.cancel()

    result = speaker.speak(LONG, voice, on_word=on_word)
    assert result.cancelled and len(words) == 3 and result.duration_s < 10
    after = speaker.speak(prepare("Two cups of flour.").ssml, voice)
    assert not after.cancelled and [w.name for w in after.words] == ["Two", "cups", "of", "flour"]


# -- supervision ----------------------------------------------------------------------------------
def test_a_child_killed_mid_utterance_fails_it_and_the_next_speaks(
    fresh_process: SpeechProcess, voice: VoiceSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=False), engines=fresh_process)
    speaker.check_voice(voice)
    killed: list[int] = []
    ended: list[SpokenUtterance] = []
    caplog.set_level(logging.WARNING, logger="hardware.speech_process")
    started = time.monotonic()
    with pytest.raises(SpeakerError, match=r"was killed by SIGKILL while speaking") as failure:
        speaker.speak(LONG, voice, on_begin=kill_on_begin(fresh_process, signal.SIGKILL, killed), on_end=ended.append)
    assert time.monotonic() - started < DEADLINE_S
    assert "\n" not in str(failure.value)
    assert ended and ended[0].duration_s < 20  # begun, ended, not the whole text
    assert not Path(f"/proc/{killed[0]}").exists()  # reaped: no zombie of ours
    warnings = [r for r in caplog.records if r.name == "hardware.speech_process"]
    assert len(warnings) == 1 and "SIGKILL" in warnings[0].getMessage()

    after = speaker.speak(TEXT, voice)
    assert after.duration_s > 2.0 and len(after.words) >= 12
    assert fresh_process.pid not in (None, killed[0]) and fresh_process.restarts == 1


def test_a_hung_child_is_killed_after_the_stall_bound_and_the_next_speaks(tmp_path: Path) -> None:
    engines = SpeechProcess(stall_s=1.0)
    try:
        speaker = Speaker(WavSink(tmp_path, realtime=False), engines=engines)
        voice = VOICES["festival"]
        speaker.check_voice(voice)
        stopped: list[int] = []
        started = time.monotonic()
        with pytest.raises(SpeakerError, match=r"stopped answering for 1 s while speaking"):
            speaker.speak(LONG, voice, on_begin=kill_on_begin(engines, signal.SIGSTOP, stopped))
        assert time.monotonic() - started < DEADLINE_S
        assert not Path(f"/proc/{stopped[0]}").exists()
        # the new child loads Festival first (as the controller's check does at start): on a
        # loaded machine that alone can take longer than this test's 1 s stall bound
        speaker.check_voice(voice)
        assert speaker.speak(TEXT, voice).duration_s > 2.0
    finally:
        engines.close()


def test_a_crash_loop_says_so_once_and_backs_off(fresh_process: SpeechProcess, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=False), engines=fresh_process)
    voice = VOICES["espeak"]
    speaker.check_voice(voice)
    caplog.set_level(logging.WARNING, logger="hardware.speech_process")
    killed: list[int] = []
    spent = []
    for _ in range(3):
        started = time.monotonic()
        with pytest.raises(SpeakerError):
            speaker.speak(LONG, voice, on_begin=kill_on_begin(fresh_process, signal.SIGKILL, killed))
        spent.append(time.monotonic() - started)
    assert len(set(killed)) == 3 and fresh_process.restarts == 3
    assert spent[2] >= BACKOFF_FIRST_S  # the third child started after a backoff
    assert len([r for r in caplog.records if r.name == "hardware.speech_process"]) == 1
    assert speaker.speak(TEXT, voice).duration_s > 2.0


def test_close_ends_the_child_and_reaps_it() -> None:
    engines = SpeechProcess()
    engines.resolve(VOICES["festival"])
    pid = engines.pid
    assert pid is not None and Path(f"/proc/{pid}").exists()
    engines.close()
    assert not Path(f"/proc/{pid}").exists()
    assert engines.pid is None
    with pytest.raises(SpeakerError, match="closed"):
        engines.resolve(VOICES["espeak"])


CHILD_OF_A_PARENT = """
import sys
from hardware.speech_process import SpeechProcess
from hardware.speech_types import VoiceSettings

engines = SpeechProcess()
engines.resolve(VoiceSettings("en-us"))
print(engines.pid, flush=True)
sys.stdin.read()
"""


def test_the_child_does_not_outlive_a_parent_killed_with_sigkill() -> None:
    parent = subprocess.Popen([sys.executable, "-c", CHILD_OF_A_PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        assert select.select([parent.stdout], [], [], 60.0)[0], "the parent never said its child's pid"
        child = int(parent.stdout.readline())
        handle = os.pidfd_open(child)
        try:
            parent.kill()  # SIGKILL: no atexit, no close()
            parent.wait(DEADLINE_S)
            started = time.monotonic()
            assert select.select([handle], [], [], 5.0)[0], "the speech child outlived its parent"
            assert time.monotonic() - started < 5.0
        finally:
            os.close(handle)
        # this machine's init may leave the orphan's exit status unread (Z): it is not running either way
        assert gone_or_exited(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# -- the Avatar Controller --------------------------------------------------------------------------
def test_the_controller_answers_http_while_its_speech_child_is_killed(mosquitto: Any, make_config: Any, tmp_path: Path) -> None:
    config = make_config(mosquitto.url, **{"avatar.port": 0, "avatar.speaker": f"wav-fast:{tmp_path / 'wav'}",
                                           "avatar.speech_process": True})
    observer = Observer(config).start()
    local = LocalAvatar(config).start()
    try:
        engines = local.controller.speaker.engines
        assert isinstance(engines, SpeechProcess)
        first = engines.pid
        assert first is not None  # the voices were loaded at start (check())
        with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
            ready(http, observer)
            assert http.post(ep.RECEIVE_MESSAGE, json=agent("Watson", LONG)).json()["status"].lower() == "acknowledged"
            observer.wait(Speaking, where=utterance, state="begin", timeout=DEADLINE_S)
            os.kill(first, signal.SIGKILL)
            answers: list[tuple[int, float]] = []
            for _ in range(3):
                asked = time.monotonic()
                health = http.get(ep.HEALTH)
                reply = http.post(ep.RECEIVE_MESSAGE, json=agent("Celia", "Deal, three eggs for two dollars."))
                answers.append((health.status_code, time.monotonic() - asked))
                assert reply.status_code == 200 and reply.json()["status"].lower() == "acknowledged"
            assert all(code == 200 and spent < 2.0 for code, spent in answers), answers
            assert local.controller.wait_spoken(4, DEADLINE_S)  # the killed one ended, then the three replies
            assert http.get(ep.HEALTH).json()["failed"] == 1
        spoken = local.controller.speech.spoken()
        assert spoken[0].request.avatar == "Watson" and spoken[0].result.duration_s < 20  # cut short by the kill
        for item in spoken[1:]:
            assert item.request.avatar == "Celia" and item.result.duration_s > 1.0 and not item.result.cancelled
        assert engines.pid not in (None, first)
        assert not Path(f"/proc/{first}").exists()
    finally:
        local.stop()
        observer.stop()
    assert engines.pid is None  # stopping the controller closed its speech process


def test_an_unknown_voice_stops_the_controller_early_and_leaves_no_child(mosquitto: Any, make_config: Any,
                                                                           tmp_path: Path) -> None:
    config = make_config(mosquitto.url, **{"avatar.port": 0, "avatar.speaker": f"wav-fast:{tmp_path / 'wav'}",
                                           "avatar.voices": {"Celia": {"engine": "espeak", "voice": "xx-nope"}}})
    before = speech_children()
    with pytest.raises(SpeakerError, match=r"^espeak-ng has no voice 'xx-nope'; list them with"):
        LocalAvatar(config)
    assert speech_children() <= before


def test_the_controller_can_keep_its_engines_in_process(mosquitto: Any, make_config: Any, tmp_path: Path) -> None:
    config = make_config(mosquitto.url, **{"avatar.port": 0, "avatar.speaker": f"wav-fast:{tmp_path / 'wav'}",
                                           "avatar.speech_process": False})
    local = LocalAvatar(config)
    try:
        assert isinstance(local.controller.speaker.engines, EngineSet)
    finally:
        local.stop()

