"""``humaine-env orchestrator --auto-round`` and ``humaine-env demo-agents`` as real processes."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from humaine_platform import endpoints as ep
from humaine_platform.client import RELAY_PERMITTED_KEY
from standins.recorder import RecordingServer
from tests.support import loopback
from tests.support.helpers import CLI, free_port, wait_for
from tests.support.paths import ROOT


def spawn(data_dir: Path, *args: str) -> subprocess.Popen[str]:
    """A service of the suite in this checkout, with a data directory of the test's own (the
    stand-in reads the room's ledger there)."""
    # No broker answers at this address: the services must run without one.
    dead_broker = f'broker.url="mqtt://127.0.0.1:{free_port()}"'
    argv = [*CLI, "--set", dead_broker, "--set", 'broker.mode="external"',
            "--set", f'data_dir="{data_dir}"', *args]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        output, _ = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        return -9, output
    return process.returncode, output


@pytest.fixture
def human_side() -> Iterator[RecordingServer]:
    with RecordingServer() as server:
        yield server


def test_auto_round_with_demo_sellers_and_clean_stop(human_side: RecordingServer, tmp_path: Path) -> None:
    eo_port, celia, watson = free_port(), free_port(), free_port()
    sellers = spawn(tmp_path, "demo-agents", "--agent", f"Celia={celia}", "--agent", f"Watson={watson}",
                    "--eo-url", f"http://127.0.0.1:{eo_port}")
    eo = spawn(
        tmp_path, "orchestrator", "--port", str(eo_port), "--set", "standin.auto_round=true",
        "--warm-up-seconds", "0.2", "--round-seconds", "30",
        "--set", f"standin.agents={{Celia = {celia}, Watson = {watson}}}",
        "--set", f"standin.human_port={human_side.port}", "--set", "standin.r0_min_gap_s=0.0",
    )
    try:
        assert human_side.wait_for(1, ep.START_ROUND, timeout=30), "the auto round did not start"
        metadata = human_side.bodies(ep.SEND_ROUND_METADATA)[0]
        assert metadata["roundId"] == "r1" and metadata["durations"]["round"] == 30
        utterance = {
            "roundId": "r1", "speaker": "Human", "addressee": "Celia", "text": "Celia, 3 eggs please",
            "role": "buyer", "environmentUUID": "abcdefg", "timestamp": time.time_ns() // 1_000_000,
        }
        answer = loopback.post(f"http://127.0.0.1:{eo_port}{ep.RELAY_MESSAGE}", json=utterance, timeout=10).json()
        assert RELAY_PERMITTED_KEY in answer, answer  # the platform EO's "permitted" (the default real_eo mode)
        assert wait_for(lambda: any(b["speaker"] == "Celia" for b in human_side.bodies(ep.RECEIVE_MESSAGE)), 10)
        reply = next(b for b in human_side.bodies(ep.RECEIVE_MESSAGE) if b["speaker"] == "Celia")
        assert reply["bid"]["quantity"] == {"egg": 3} and reply["gesture"]
    finally:
        eo_code, eo_output = stop(eo)
        sellers_code, sellers_output = stop(sellers)
    assert eo_code == 0, eo_output
    assert sellers_code == 0, sellers_output
    assert f"stand-in EO on http://127.0.0.1:{eo_port}" in eo_output
    assert "Traceback" not in eo_output + sellers_output


def test_busy_port_is_one_readable_line(tmp_path: Path) -> None:
    with RecordingServer() as busy:
        code, output = stop_after_exit(spawn(tmp_path, "orchestrator", "--port", str(busy.port)))
    assert code == 3
    assert "cannot listen on 127.0.0.1" in output and "Traceback" not in output


def stop_after_exit(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        return stop(process)
    return process.returncode, output
