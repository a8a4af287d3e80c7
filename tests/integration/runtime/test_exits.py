"""Every "cannot" of a command is one line on stderr and a documented exit status: never a
traceback, never a hang, never 0 after a failure (docs/faults.md#exit-statuses)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from hardware.audio_sources import list_input_devices
from sessions.generate import generate
from tests.support.helpers import CLI, QUICK_SESSION, MosquittoBroker, free_port
from tests.support.paths import ROOT
from workers.runtime.config import FILE_SUFFIX
from workers.runtime.worker import EXIT_CONFIG, EXIT_NO_BROKER, EXIT_UNAVAILABLE


def cli(args: list[str], tmp_path: Path, broker_url: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """The command with no terminal (stdin closed), its data in ``tmp_path``, at the default
    (quiet) log level."""
    argv = [*CLI, *args, "--set", f'data_dir="{tmp_path / "data"}"']
    if broker_url:
        argv += ["--set", f'broker.url="{broker_url}"', "--set", 'broker.mode="external"']
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL)


def problem_lines(stderr: str) -> list[str]:
    """Lines an operator reads as problems: not the NOTICE progress lines (a model loading),
    nor MediaPipe's C++ start-up chatter."""
    chatter = ("INFO: Created TensorFlow", "WARNING: All log messages before absl", "W0000 ")
    return [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(chatter) and " NOTICE " not in ln[:20]]


def test_an_unknown_log_level_is_one_line(tmp_path: Path) -> None:
    done = cli(["--log-level", "LOUD", "devices"], tmp_path)
    assert done.returncode == EXIT_CONFIG
    assert done.stderr.splitlines() == [
        "humaine-env devices: --log-level: unknown log level 'LOUD'; use one of DEBUG, INFO, NOTICE, WARNING, ERROR, CRITICAL"
    ]
    configured = cli(["--set", 'log_level="chatty"', "devices"], tmp_path)
    assert configured.returncode == EXIT_CONFIG and configured.stderr.count("\n") == 1
    assert "log_level" in configured.stderr and "Traceback" not in configured.stderr


@pytest.mark.parametrize(("args", "hint"), [
    (["run", "--without", "camra"], "--without: unknown worker 'camra'; did you mean 'camera'?"),
    (["run", "--only", "avatr,transcript"], "--only: unknown worker 'avatr'; did you mean 'avatar'?"),
    (["transcribe", "--engine", "wisper", "x.wav"], "--engine: unknown choice 'wisper'; did you mean 'whisper'?"),
    (["--set", 'microphone.engine="wisper"', "transcribe", "x.wav"], "microphone.engine: unknown value 'wisper'; did you mean 'whisper'?"),
    (["--set", 'avatar.speaker="wav-fats:/tmp/x"', "avatar"], "unknown speaker 'wav-fats'; did you mean 'wav-fast'?"),
], ids=["without", "only", "engine-flag", "engine-setting", "speaker"])
def test_a_mistyped_name_is_exit_2_with_the_closest_known_one(tmp_path: Path, args: list[str], hint: str) -> None:
    """Every name a user types gets the same did-you-mean: worker names, engines, speaker specs
    (as keys, sections and environment variables already did)."""
    done = cli(args, tmp_path, timeout=60)
    assert done.returncode == EXIT_CONFIG or (args[-1] == "avatar" and done.returncode == EXIT_UNAVAILABLE), done.stderr
    assert hint in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(problem_lines(done.stderr)) <= 2, done.stderr  # argparse's usage line, then the one line


def test_a_missing_audio_file_is_unavailable_not_retried(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    started = time.monotonic()
    done = cli(["mic", "--source", f"wav:{tmp_path / 'nope.wav'}"], tmp_path, mosquitto.url)
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    lines = problem_lines(done.stderr)
    assert len(lines) == 1 and lines[0].endswith(f"cannot run: audio file {tmp_path / 'nope.wav'} not found"), done.stderr
    assert time.monotonic() - started < 60


@pytest.mark.skipif(bool(list_input_devices()), reason="this machine has a microphone")
def test_no_microphone_and_no_terminal_is_unavailable(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    done = cli(["mic", "--source", "mic:0"], tmp_path, mosquitto.url)
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    lines = problem_lines(done.stderr)
    assert len(lines) == 1 and "no terminal for typed input" in lines[0], done.stderr


def test_a_folder_without_video_is_named_as_a_folder(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    folder = tmp_path / "session"
    folder.mkdir()
    done = cli(["camera", "--source", f"replay:{folder}"], tmp_path, mosquitto.url)
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    lines = problem_lines(done.stderr)
    assert len(lines) == 1 and f"{folder} is a folder without video.mp4" in lines[0], done.stderr


def test_a_session_folder_plays_as_a_replay_source(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    session = generate(QUICK_SESSION)
    done = cli(["camera", "--source", f"replay:{session}", "--speed", "20"], tmp_path, mosquitto.url)
    assert done.returncode == 0, done.stderr[-3000:]  # played to its end
    assert problem_lines(done.stderr) == [], done.stderr


def test_no_broker_says_it_waits_then_gives_up(tmp_path: Path) -> None:
    """At the default log level: one line that it is waiting, within seconds, and a bounded wait."""
    url = f"mqtt://127.0.0.1:{free_port()}"
    started = time.monotonic()
    process = subprocess.Popen(
        [*CLI, "transcript", "--set", f'broker.url="{url}"', "--set", 'broker.mode="external"',
         "--set", "broker.connect_wait_s=8", "--set", f'data_dir="{tmp_path / "data"}"'],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        said_after = time.monotonic() - started
        assert f"waiting for the MQTT broker at {url}" in first and "giving up after 8 s" in first, first
        rest = process.stderr.read()
        code = process.wait(30)
        ended_after = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
    assert code == EXIT_NO_BROKER
    assert problem_lines(rest) == [f"{rest.splitlines()[0]}"] and "no MQTT broker answered" in rest, rest
    # said when the wait begins, not at its end (measured from the events, not from a start-up
    # whose length is the machine's load), and the wait is bounded
    assert ended_after - said_after >= 6, (said_after, ended_after)
    assert ended_after < 40


def test_replay_without_the_vosk_model_stops_with_one_line(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    session = generate(QUICK_SESSION)
    started = time.monotonic()
    done = cli(["eval", str(session), "--engine", "vosk", "--set", f'microphone.vosk_model="{tmp_path / "no-model"}"'],
               tmp_path, mosquitto.url, timeout=120)
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr[-3000:]
    eval_lines = [ln for ln in done.stderr.splitlines() if ln.startswith("humaine-env eval:")]
    assert len(eval_lines) == 1 and "Vosk model not found" in eval_lines[0], done.stderr[-3000:]
    assert done.stderr.count("Vosk model not found") == 1, done.stderr[-3000:]  # said once, by eval
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 60


def test_record_perceive_starts_a_broker_when_none_answers(tmp_path: Path) -> None:
    session = generate(QUICK_SESSION)
    url = f"mqtt://127.0.0.1:{free_port()}"
    done = cli(["record", str(tmp_path / "rec"), "--perceive", "--audio-source", f"replay:{session}",
                "--video-source", f"replay:{session}", "--duration", "6", "--linger", "1",
                "--set", f'broker.url="{url}"', "--set", 'microphone.engine="pocketsphinx"'], tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = int(done.stdout.rsplit(",", 1)[1].split()[0])
    assert recorded > 0, done.stdout  # the workers' own traffic reached the recorder


def test_secret_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([*CLI, "config", "show"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                               f"HUMAINE_ENV_AVATAR_TOKEN{FILE_SUFFIX}": str(tmp_path / "missing")})
    assert done.returncode == EXIT_CONFIG and done.stderr.count("\n") == 1 and "cannot read" in done.stderr


def test_replay_uses_the_recorder_port_setting(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    """``[replay] recorder_port`` is where the replay's stand-in EO listens: a taken one is one line."""
    session = generate(QUICK_SESSION)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli(["replay", str(session), "--set", f"replay.recorder_port={port}"], tmp_path, mosquitto.url)
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr[-2000:]
    assert problem_lines(done.stderr) == [
        f"humaine-env replay: port {port} on 127.0.0.1 for the replay's stand-in EO ([replay] recorder_port; 0: any free port) "
        "is taken (another run, or another service?); stop it or choose another port"
    ], done.stderr[-2000:]


@pytest.mark.parametrize("command", [["record", "{tmp}/rec"], ["calibrate", "--no-prompt"]])
def test_no_camera_is_unavailable_with_a_hint_every_command_takes(command: list[str], tmp_path: Path) -> None:
    """``record`` and ``calibrate`` without a camera: status 3 (cannot run here), and the hint
    names a setting every command takes, not another command's flag."""
    from hardware.video import list_cameras

    absent = max((int(c["index"]) for c in list_cameras()), default=-1) + 1  # type: ignore[call-overload]
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + ["--set", f"camera.source=webcam:{absent}"]
    done = cli(args, tmp_path)
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr[-2000:]
    lines = problem_lines(done.stderr)
    assert len(lines) == 1 and f"no camera at index {absent}" in lines[0], lines
    assert "--set camera.source=webcam:N" in lines[0] and "--source" not in lines[0]
