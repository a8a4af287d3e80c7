"""``humaine-env avatar`` as a user (or ``humaine-env run``) starts it: a real process."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from humaine_env.supervisor import KILL_AFTER_S
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, captured
from tests.support.helpers import CLI, free_port, wait_for
from workers.runtime.worker import EXIT_UNAVAILABLE


def run_cli(mosquitto: Any, data_dir: Path, *args: str) -> subprocess.Popen[str]:
    """The avatar as a user starts it, writing its books in ``data_dir`` (the default, the
    checkout's ``.cache/humaine-env``, is the user's own)."""
    return subprocess.Popen(
        [*CLI, "--set", f'broker.url="{mosquitto.url}"', "--set", 'broker.mode="external"',
         "--set", 'environment_uuid="avatarcli"', "--set", f'data_dir="{data_dir}"', "avatar", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_serves_speaks_to_wav_and_stops_on_sigterm(mosquitto: Any, tmp_path: Path) -> None:
    port = free_port()
    process = run_cli(mosquitto, tmp_path / "data", "--port", str(port), "--speaker", f"wav:{tmp_path}")
    url = f"http://127.0.0.1:{port}"
    try:
        def up() -> bool:
            try:
                return loopback.get(url + "/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        # it loads its voices before it listens: seconds alone, more on a machine another run shares
        assert wait_for(up, timeout=60), process.stderr.read() if process.poll() is not None else "not up"
        reply = captured("/receiveMessage (from agent)")
        assert loopback.post(url + ep.RECEIVE_MESSAGE, json=reply, timeout=HTTP_TIMEOUT).status_code == 200
        assert wait_for(lambda: loopback.get(url + "/health", timeout=1).json()["spoken"] == 1, timeout=20)
        assert len(list(tmp_path.glob("*-Celia-*.wav"))) == 1
    finally:
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = process.wait(10)
        stopped_in = time.monotonic() - started
    assert code == 0
    # before run would kill it: the stop is 0.4 s on a quiet machine, and was 3.1 s under a whole
    # test run sharing two cores (its threads and the speech process end in turn)
    assert stopped_in < KILL_AFTER_S


def test_missing_sound_card_or_busy_port_is_one_line(mosquitto: Any, tmp_path: Path) -> None:
    # no output device on this machine: says so and what to do, exits "unavailable"
    process = run_cli(mosquitto, tmp_path / "data", "--port", str(free_port()), "--speaker", "soundcard:no-such-device")
    _, err = process.communicate(timeout=20)
    assert process.returncode == EXIT_UNAVAILABLE
    assert err.strip().count("\n") == 0 and "wav:DIR" in err and "Traceback" not in err

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = run_cli(mosquitto, tmp_path / "data", "--port", str(port), "--speaker", f"wav:{tmp_path}")
        _, err = process.communicate(timeout=20)
    assert process.returncode == EXIT_UNAVAILABLE
    assert f"127.0.0.1:{port}" in err and "--port" in err and "Traceback" not in err
