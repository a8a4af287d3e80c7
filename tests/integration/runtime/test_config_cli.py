"""``humaine-env config show|init``, unknown sections, and the keys each command's ``--help``
lists: all generated from the settings models, so they cannot drift from them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.helpers import CLI
from tests.support.paths import ROOT
from workers.runtime.config import Config, ConfigError, section_models, section_targets, tomllib
from workers.runtime.config_doc import MASK, sample_toml
from workers.runtime.worker import EXIT_CONFIG


def run_cli(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60, env=environ, cwd=cwd)


def test_every_model_is_registered_under_its_own_name() -> None:
    assert [m.section_name for m in section_models()] == list(section_targets())


def test_the_sample_loads_back_as_the_defaults(tmp_path: Path) -> None:
    text = sample_toml()
    path = tmp_path / "humaine-env.toml"
    path.write_text(text, encoding="utf-8")
    data = tomllib.loads(text)
    config = Config.load(path, environ={})
    for model in section_models():
        assert config.section(model) == model(), model.section_name
        keys = data.get(model.section_name, {}) if model.section_name else data
        unset = {name for name in model.model_fields if getattr(model(), name) is None}
        # every key is written (active), except those whose default is "unset"
        assert set(model.model_fields) - unset == {k for k in keys if k in model.model_fields}, model.section_name
        for name in unset:
            assert f"# {name} = (unset)" in text
    assert "# `auto`: use the broker at `url`" in text  # descriptions come from the docstrings


def test_init_writes_the_sample_and_does_not_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "room.toml"
    done = run_cli("config", "init", str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_text(encoding="utf-8") == sample_toml()
    again = run_cli("config", "init", str(target))
    assert again.returncode == EXIT_CONFIG and again.stderr.count("\n") == 1 and "--force" in again.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[avatr]\nport = 26040\n", "unknown section '[avatr]'; did you mean '[avatar]'?"),
        ("avatar_port = 26040\n", "unknown top-level key 'avatar_port'; did you mean 'avatars'?"),
    ],
)
def test_an_unknown_section_is_refused_in_one_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "humaine-env.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown"):
        Config.load(path, environ={})
    done = run_cli("--config", str(path), "config", "show")
    assert done.returncode == EXIT_CONFIG
    assert done.stderr.splitlines() == [f"humaine-env config: config file {path}: {said}"], done.stderr
    assert done.stdout == ""


def test_an_unknown_section_in_a_flag_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown section 'avatr'; did you mean 'avatar'"):
        Config.load(None, environ={}, overrides=["avatr.port=1"])


def test_show_says_where_each_value_comes_from_and_masks_secrets(tmp_path: Path) -> None:
    path = tmp_path / "humaine-env.toml"
    path.write_text('environment_uuid = "room-7"\n[avatar]\nport = 26040\ntoken = "file-secret"\n', encoding="utf-8")
    secret = tmp_path / "password"
    secret.write_text("env-secret\n", encoding="utf-8")
    done = run_cli(
        "--config", str(path), "config", "--set", "avatar.port=26041", "show", "--set", "broker.keepalive_s=20",
        env={"HUMAINE_ENV_BROKER_PASSWORD_FILE": str(secret), "HUMAINE_ENV_CAMERA_FPS": "15"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert 'environment_uuid = "room-7"  # file' in lines
    assert "port = 26041  # flag" in lines
    assert f'token = "{MASK}"  # file' in lines
    assert f'password = "{MASK}"  # environment (HUMAINE_ENV_BROKER_PASSWORD_FILE)' in lines
    assert "fps = 15.0  # environment (HUMAINE_ENV_CAMERA_FPS)" in lines
    assert "keepalive_s = 20  # flag" in lines
    assert 'url = "mqtt://127.0.0.1:1883"  # default' in lines
    assert "secret" not in done.stdout
    assert {"[broker]", "[avatar]", "[camera]", "[replay]"} <= set(lines)
    only = run_cli("config", "show", "avatar", "--config", str(path))
    assert "[avatar]" in only.stdout and "[broker]" not in only.stdout


@pytest.mark.parametrize(
    ("command", "key"),
    [("mic", "hangover_ms = 400"), ("avatar", "port = 7040"), ("run", "log_file = "), ("replay", "recorder_port = 0"),
     ("orchestrator", "port = 14010"), ("demo-agents", "agents = { Celia = 14007, Watson = 14008 }")],
)
def test_help_lists_the_section_keys(command: str, key: str) -> None:
    done = run_cli(command, "--help")
    assert done.returncode == 0, done.stderr
    assert "configuration keys" in done.stdout
    assert any(line.strip().startswith(key) for line in done.stdout.splitlines()), done.stdout
