"""``check-wiring``'s reading of the EO's ``appSettings.json``, line by line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from humaine_platform.wiring import NO_HUMAN_SIDE, check_app_settings, eo_app_settings


def _lines(tmp_path: Path, data: Any, host: str = "127.0.0.1", confirm_accept: str | None = None) -> list[str]:
    path = tmp_path / "appSettings.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    checks = check_app_settings(path, environment_uuid="room", avatar_host=host, avatar_port=7040, confirm_accept=confirm_accept)
    return [c.line() for c in checks]


def test_the_written_file_passes_every_check(tmp_path: Path) -> None:
    data = eo_app_settings("localhost", 7040, environment_uuid="room", eo_port=7000)
    lines = _lines(tmp_path, data, confirm_accept="buyer")
    assert not [line for line in lines if line.startswith("FAIL")], lines
    assert "ok   who confirms deals: [avatar] confirm_accept = 'buyer'" in lines


def test_an_unreadable_file_or_one_without_a_human_side_says_so_and_stops(tmp_path: Path) -> None:
    (unreadable,) = _lines(tmp_path, "not json")
    assert unreadable.startswith("FAIL EO appSettings.json")
    assert _lines(tmp_path, [1])[0].endswith("not a JSON object")
    lines = _lines(tmp_path, {"environmentUUID": "other", "negotiatorsInfo": "none"})
    assert lines[1] == "FAIL environmentUUID: EO 'other', room 'room'; set environment_uuid (or the EO's) so they match"
    assert lines[2:] == [NO_HUMAN_SIDE.line()]


def test_a_second_human_side_service_asks_the_buyer_and_wrong_roles_and_names_are_named(tmp_path: Path) -> None:
    data = {
        "environmentUUID": "room",
        "negotiatorsInfo": [{"name": "competition-ui", "type": "human", "role": "buyer"},
                            {"name": "chat-ui", "type": "human", "role": "seller"},
                            {"name": "tablet", "type": "human", "role": "buyer"}],
        "serviceMap": {"chat-ui": {"host": "127.0.0.1", "port": 7040}, "competition-ui": {"host": "10.0.0.9", "port": 80}},
    }
    lines = _lines(tmp_path, data, confirm_accept="buyer")
    assert "FAIL chat-ui role: role 'seller'; set role: buyer" in lines
    assert "ok   competition-ui serviceMap: 10.0.0.9:80 (another human-side service beside the Avatar Controller: " \
           "it asks the buyer)" in lines
    assert "FAIL tablet serviceMap: no serviceMap entry 'tablet'; the EO cannot call it" in lines
    assert lines[-1].startswith("FAIL who confirms deals: [avatar] confirm_accept = 'buyer'; competition-ui, tablet asks")
    elsewhere = _lines(tmp_path, data, host="10.0.0.2")
    assert "FAIL chat-ui serviceMap: 127.0.0.1:7040; the Avatar Controller is at 10.0.0.2:7040" in elsewhere
    data["serviceMap"]["tablet"] = {"host": "h", "port": 1}
    assert any(line.endswith("(the current EO calls it, but only competition-ui or chat-ui names are read)")
               for line in _lines(tmp_path, data))
