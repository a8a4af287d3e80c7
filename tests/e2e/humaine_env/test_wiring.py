"""``humaine-env check-wiring`` against the platform's real EO and its appSettings.json."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from standins.recorder import RecordingServer
from tests.support.helpers import CLI
from tests.support.paths import ROOT
from tests.support.real_eo import RealEO, eo_tree
from tests.support.real_utility_generator import RealUtilityGenerator

CHECK_WIRING = [*CLI, "check-wiring"]


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CHECK_WIRING, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_check_wiring_passes_for_a_wired_room_and_names_each_mistake(tmp_path: Path) -> None:
    generator = RealUtilityGenerator(tmp_path / "utility-generator").start()
    with RecordingServer() as avatar:  # answers /health like the Avatar Controller
        eo = RealEO(tmp_path / "eo", avatar.port, environment_uuid="room7", utility_generator_port=generator.port).start()
        try:
            room = ["--set", f"eo.url={eo.url}", "--set", f"avatar.port={avatar.port}", "--set", "environment_uuid=room7",
                    "--set", f"eo.utility_generator_url={generator.url}"]
            good = check("--eo-settings", str(eo.app_settings_file), *room)
            assert good.returncode == 0, good.stdout + good.stderr
            assert "FAIL" not in good.stdout and "ok   EO reachable" in good.stdout

            assert "ok   utility-generator answers" in good.stdout and "ok   who confirms deals" in good.stdout
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
            generator.stop()
    down = check("--set", "eo.url=http://127.0.0.1:9")
    assert down.returncode == 1 and "FAIL EO reachable" in down.stdout


def test_check_wiring_recognises_the_platform_competition_ui_beside_the_avatar_controller(tmp_path: Path) -> None:
    """The EO calls every human-side service; with the platform's competition-ui on a tablet
    and the Avatar Controller registered as chat-ui, competition-ui asks the buyer, so ours must
    only acknowledge (``confirm_accept = "competition-ui"``)."""
    generator = RealUtilityGenerator(tmp_path / "utility-generator").start()
    with RecordingServer() as avatar, RecordingServer() as tablet:
        settings = tmp_path / "appSettings.json"
        data = json.loads(json.dumps(RealEO(tmp_path, avatar.port, environment_uuid="room7",
                                            utility_generator_port=generator.port).app_settings()))
        data["negotiatorsInfo"] = [{"name": "competition-ui", "type": "human", "role": "buyer"},
                                   {"name": "chat-ui", "type": "human", "role": "buyer"}]
        data["serviceMap"]["chat-ui"] = {"protocol": "http", "host": "localhost", "port": avatar.port}
        data["serviceMap"]["competition-ui"] = {"protocol": "http", "host": "localhost", "port": tablet.port}
        settings.write_text(json.dumps(data))
        room = ["--eo-settings", str(settings), "--set", "eo.url=http://127.0.0.1:9", "--set", f"avatar.port={avatar.port}",
                "--set", "environment_uuid=room7"]
        asking = check(*room)  # the default, confirm_accept = "buyer": both would ask the buyer
        assert "FAIL who confirms deals" in asking.stdout and "set it to 'competition-ui'" in asking.stdout
        assert "ok   competition-ui serviceMap" in asking.stdout and "it asks the buyer" in asking.stdout
        beside = check(*room, "--set", 'avatar.confirm_accept="competition-ui"')
        assert "ok   who confirms deals" in beside.stdout and "ok   utility-generator answers" in beside.stdout
        fails = [line for line in beside.stdout.splitlines() if line.startswith("FAIL")]
        assert len(fails) == 1 and fails[0].startswith("FAIL EO reachable"), beside.stdout  # no EO runs in this test
    generator.stop()
