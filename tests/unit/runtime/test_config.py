"""Configuration precedence (file < environment < flag) and readable errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.runtime.config import BrokerSettings, Config, ConfigError, CoreSettings, inherited_flags_env


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "humaine-env.toml"
    path.write_text(text)
    return path


def test_file_then_environment_then_flag(tmp_path: Path) -> None:
    path = _write(tmp_path, 'environment_uuid = "room1"\n[broker]\nurl = "mqtt://file:1883"\nkeepalive_s = 20\nusername = "fromfile"\n')
    only_file = Config.load(path, environ={})
    assert only_file.core.environment_uuid == "room1"
    assert only_file.broker.url == "mqtt://file:1883"

    environ = {"HUMAINE_ENV_BROKER_URL": "mqtt://env:1884", "HUMAINE_ENV_BROKER_KEEPALIVE_S": "30",
               "HUMAINE_ENV_ENVIRONMENT_UUID": "room2"}
    with_env = Config.load(path, environ=environ)
    assert with_env.broker.url == "mqtt://env:1884"
    assert with_env.broker.keepalive_s == 30
    assert with_env.broker.username == "fromfile"
    assert with_env.core.environment_uuid == "room2"

    with_flag = Config.load(path, environ=environ, overrides=["broker.url=mqtt://flag:1885", "environment_uuid=room3"])
    assert with_flag.broker.url == "mqtt://flag:1885"
    assert with_flag.broker.keepalive_s == 30
    assert with_flag.core.environment_uuid == "room3"


def test_config_file_from_environment_variable(tmp_path: Path) -> None:
    path = _write(tmp_path, 'avatars = ["Ada", "Bob"]\n')
    config = Config.load(None, environ={"HUMAINE_ENV_CONFIG": str(path)})
    assert config.core.avatars == ["Ada", "Bob"]
    assert config.path == path


def test_lists_from_environment_and_flags() -> None:
    assert Config.load(None, environ={"HUMAINE_ENV_AVATARS": "Ada, Bob"}).core.avatars == ["Ada", "Bob"]
    assert Config.load(None, environ={"HUMAINE_ENV_AVATARS": '["Cy"]'}).core.avatars == ["Cy"]
    assert Config.load(None, environ={}, overrides=['avatars=["Di", "Ed"]']).core.avatars == ["Di", "Ed"]


def test_defaults_without_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = Config.load(None, environ={})
    assert config.path is None
    assert config.broker == BrokerSettings()
    assert config.core == CoreSettings()
    assert config.core.avatars == ["Celia", "Watson"]
    assert config.broker.mode == "auto"


def test_field_alias_environment_variable() -> None:
    from typing import ClassVar

    from pydantic import Field

    from workers.runtime.config import Section

    class Speech(Section):
        section_name: ClassVar[str] = "speech"
        model_path: str = Field("", json_schema_extra={"env": "SPEECH_MODEL"})

    assert Config.load(None, environ={"HUMAINE_ENV_SPEECH_MODEL": "/m"}).section(Speech).model_path == "/m"
    assert Config.load(None, environ={"HUMAINE_ENV_SPEECH_MODEL_PATH": "/n"}).section(Speech).model_path == "/n"


@pytest.mark.parametrize(
    ("text", "overrides", "expected"),
    [
        ("[broker]\nkeepalive_s = \"soon\"\n", [], "broker.keepalive_s"),
        ("[broker]\nurll = \"x\"\n", [], "broker.urll"),
        ("environment_uuid = \"a/b\"\n", [], "environment_uuid"),
        ("[broker\n", [], "not valid TOML"),
        ("", ["no-equals-sign"], "--set expects section.key=value"),
    ],
)
def test_errors_are_one_readable_line(tmp_path: Path, text: str, overrides: list[str], expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        config = Config.load(path, environ={}, overrides=overrides)
        config.core  # noqa: B018 - validation happens on access
        config.broker  # noqa: B018
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_config_file_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        Config.load(tmp_path / "nope.toml", environ={})


def test_common_flags_before_or_after_the_command() -> None:
    from humaine_env.cli import parse_arguments

    before = parse_arguments(["--log-level", "DEBUG", "--set", "a=1", "--config", "x.toml", "broker"])
    assert (before.log_level, before.overrides, before.config) == ("DEBUG", ["a=1"], "x.toml")
    after = parse_arguments(["--set", "a=1", "broker", "--set", "b=2", "--log-level", "ERROR"])
    assert (after.log_level, after.overrides, after.config) == ("ERROR", ["a=1", "b=2"], None)


def test_secrets_from_a_file_named_in_the_environment(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("s3cret\n")
    config = Config.load(None, environ={"HUMAINE_ENV_BROKER_PASSWORD_FILE": str(secret)})
    assert config.broker.password == "s3cret"
    # the variable itself wins over the file, a flag over both
    both = {"HUMAINE_ENV_BROKER_PASSWORD_FILE": str(secret), "HUMAINE_ENV_BROKER_PASSWORD": "direct"}
    assert Config.load(None, environ=both).broker.password == "direct"
    missing = Config.load(None, environ={"HUMAINE_ENV_BROKER_PASSWORD_FILE": str(tmp_path / "nope")})
    with pytest.raises(ConfigError) as error:
        missing.broker  # noqa: B018 - the section is read lazily
    assert str(error.value).startswith("HUMAINE_ENV_BROKER_PASSWORD_FILE: cannot read") and "\n" not in str(error.value)


def test_flags_inherited_by_environment_come_before_the_process_own() -> None:
    environ = inherited_flags_env(['broker.password="from-parent"', "broker.keepalive_s=40"], {})
    assert Config.load(None, environ=environ).broker.password == "from-parent"
    mine = Config.load(None, environ=environ, overrides=["broker.keepalive_s=50"])
    assert (mine.broker.password, mine.broker.keepalive_s) == ("from-parent", 50)
    # a grandchild gets the flags its parent inherited, then the parent's own
    again = inherited_flags_env(["broker.keepalive_s=60"], environ)
    assert Config.load(None, environ=again).broker.keepalive_s == 60
    with pytest.raises(ConfigError, match="HUMAINE_ENV_SET"):
        Config.load(None, environ={"HUMAINE_ENV_SET": "{not json"})


def test_every_configuration_path_says_did_you_mean(tmp_path: Path) -> None:
    """A misspelled key in the file or a flag, and a misspelled variable, fail alike: one line
    naming the closest real name (a variable was ignored without a word)."""
    from avatar.settings import AvatarSettings

    path = tmp_path / "room.toml"
    path.write_text("[avatar]\nprot = 7041\n")
    with pytest.raises(ConfigError) as error:
        Config.load(path, environ={}).section(AvatarSettings)
    assert str(error.value) == "invalid configuration: avatar.prot: unknown key 'prot'; did you mean 'port'?"
    with pytest.raises(ConfigError, match="did you mean 'port'"):
        Config.load(None, environ={}, overrides=["avatar.prot=7041"]).section(AvatarSettings)
    with pytest.raises(ConfigError) as error:
        Config.load(None, environ={"HUMAINE_ENV_BROKER_ULR": "mqtt://x"})
    assert str(error.value) == "environment: unknown variable 'HUMAINE_ENV_BROKER_ULR'; did you mean 'HUMAINE_ENV_BROKER_URL'?"
    # the real names, and the suite's own variables, pass
    fine = {"HUMAINE_ENV_BROKER_URL": "mqtt://127.0.0.1:1", "HUMAINE_ENV_AVATAR_TOKEN_FILE": str(path), "HUMAINE_ENV_SET": "[]"}
    assert Config.load(None, environ=fine).broker.url == "mqtt://127.0.0.1:1"
