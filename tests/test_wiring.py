"""``humaine-env check-wiring`` against the platform's real EO and its appSettings.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from orchestrator_client.recorder import RecordingServer
from tests.real_eo import RealEO, eo_tree

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "humaine_env", "check-wiring"]


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_check_wiring_passes_for_a_wired_room_and_names_each_mistake(tmp_path: Path) -> None:
    with RecordingServer() as avatar:  # answers /health like the Avatar Controller
        eo = RealEO(tmp_path / "eo", avatar.port, environment_uuid="room7").start()
        try:
            room = ["--set", f"eo.url={eo.url}", "--set", f"avatar.port={avatar.port}", "--set", "environment_uuid=room7"]
            good = check("--eo-settings", str(eo.app_settings_file), *room)
            assert good.returncode == 0, good.stdout + good.stderr
            assert "FAIL" not in good.stdout and "ok   EO reachable" in good.stdout

            other_room = check("--eo-settings", str(eo.app_settings_file), *room[:4], "--set", "environment_uuid=room8")
            assert other_room.returncode == 1 and "FAIL environmentUUID: EO 'room7', room 'room8'" in other_room.stdout

            # the EO's shipped file: no role mistake, but it points at 7040 and lists a second
            # human-side service (competition-manager) that nothing serves
            shipped = check("--eo-settings", str(eo_tree() / "appSettings.json"), *room)
            assert shipped.returncode == 1
            assert "FAIL environmentUUID" in shipped.stdout and "FAIL competition-ui serviceMap" in shipped.stdout
            assert "FAIL competition-manager answers" in shipped.stdout

            written = tmp_path / "appSettings.json"
            made = check("--write", str(written), *room)
            assert made.returncode == 0, made.stdout
            assert json.loads(written.read_text())["negotiatorsInfo"] == [
                {"name": "competition-ui", "type": "human", "role": "buyer"}
            ]
            assert eo.alive(), eo.log_tail()
        finally:
            eo.stop()
    down = check("--set", "eo.url=http://127.0.0.1:9")
    assert down.returncode == 1 and "FAIL EO reachable" in down.stdout
