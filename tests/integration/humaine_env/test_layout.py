"""The layout's floors hold (docs/architecture.md#the-floors): no import runs back up a floor, no two
modules import each other, and the command line finds the commands its packages register
without importing their modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from humaine_env.cli import commands
from tests.support.paths import ROOT
from workers.runtime.config import section_models, section_targets

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_the_import_contracts_of_the_floors_are_kept() -> None:
    result = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_every_package_registers_its_commands_and_each_resolves() -> None:
    found = commands()
    packages = {command.module.split(".")[0] for command in found.values()}
    assert packages == {"humaine_env", "workers", "transcript", "avatar", "standins", "sessions"}
    assert {"run", "camera", "microphone", "transcript", "avatar", "orchestrator", "demo-agents", "check-wiring", "config"} <= set(found)
    for command in found.values():
        module = __import__(command.module, fromlist=["main"])
        assert callable(module.main) and callable(module.configure_parser), command.name
        if command.section is not None:
            assert command.section in section_targets(), command.name


def test_every_section_model_is_registered_under_its_own_name() -> None:
    assert [model.section_name for model in section_models()] == list(section_targets())
    assert list(section_targets())[:3] == ["", "broker", "eo"]


def test_the_command_line_lists_every_command_without_importing_any() -> None:
    """``humaine-env --help`` loads only the packages' small ``commands`` modules: not a worker,
    not the supervisor, not MediaPipe or FastAPI."""
    probe = (
        "import sys, json, contextlib, io\n"
        "from humaine_env.cli import build_parser\n"
        "with contextlib.redirect_stdout(io.StringIO()): build_parser(None).format_help()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(result.stdout))
    ours = {m for m in loaded if m.split(".")[0] in {"hardware", "workers", "transcript", "humaine_platform", "avatar",
                                                       "standins", "humaine_env", "sessions"}}
    heavy = {m for m in loaded if m.split(".")[0] in {"mediapipe", "cv2", "fastapi", "uvicorn", "faster_whisper", "ctranslate2"}}
    assert not heavy, heavy
    registrations = {m for m in ours if m.endswith(".commands")}
    parents = {r.rsplit(".", i)[0] for r in registrations for i in range(1, r.count(".") + 1)}
    beyond = ours - registrations - parents - {"humaine_env.cli"}
    beyond = {m for m in beyond if not m.startswith("workers.runtime.")}
    assert not beyond, beyond
