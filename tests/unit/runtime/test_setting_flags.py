"""Flags that set a configuration key (:mod:`workers.runtime.setting_flags`): type, choices and help
come from the section model, one function applies them, and a flag bound to a key the model does
not have fails where it is declared."""

from __future__ import annotations

import argparse
import importlib
from typing import ClassVar, Literal

import pytest
from pydantic import Field

from workers.runtime.config import Config, Section, section_model
from workers.runtime.setting_flags import DEST_PREFIX, int_or_text, setting_flag, with_setting_flags

SECTION = "flag_test_room"


class Room(Section):
    """A section of its own, so that these tests do not follow the suite's docstrings."""

    section_name: ClassVar[str] = SECTION

    host: str = "127.0.0.1"
    """Where the service listens. The rest of the docstring stays out of the help."""
    port: int = Field(7040, ge=0, le=65535)
    """Port of the service; 0: any free port."""
    share: float = 0.5
    """Part of the window the winner needs, e.g. 0.5 for 50% of it."""
    delivery: Literal["eo", "agents"] = "eo"
    """Where messages go."""
    mirrored: bool = False
    """The image is mirrored..."""
    biasing: bool = True
    """Bias recognition towards the vocabulary."""
    agents: dict[str, int] = Field(default_factory=lambda: {"Celia": 14007})
    """Seller name -> port."""
    round_id: int | str | None = None
    """Relay with this round id."""
    folder: str = ""
    """Where the rounds go; empty: under data_dir."""
    after: float = 1.0
    """...and this long after it."""
    words: list[str] = Field(default_factory=list)
    """Words to hold for."""


def room_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="room")
    setting_flag(parser, "--host", Room, "host")
    setting_flag(parser, "--port", Room, "port")
    setting_flag(parser, "--share", Room, "share")
    setting_flag(parser, "--delivery", Room, "delivery")
    setting_flag(parser, "--mirrored", Room, "mirrored")
    setting_flag(parser, "--no-biasing", Room, "biasing", const=False, help="do not bias recognition")
    setting_flag(parser, "--agent", Room, "agents", metavar="NAME=PORT")
    setting_flag(parser, "--round-id", Room, "round_id")
    setting_flag(parser, "--folder", Room, "folder", metavar="DIR")
    setting_flag(parser, "--after", Room, "after", help="seconds after it")
    return parser


def action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in parser._actions if flag in a.option_strings)


def test_type_and_choices_come_from_the_annotation() -> None:
    parser = room_parser()
    assert action(parser, "--port").type is int
    assert action(parser, "--share").type is float
    assert action(parser, "--host").type is str
    assert action(parser, "--delivery").choices == ["eo", "agents"]
    assert action(parser, "--round-id").type is int_or_text
    assert action(parser, "--port").dest == f"{DEST_PREFIX}{SECTION}.port"
    args = parser.parse_args(["--port", "8080", "--share", "0.25", "--delivery", "agents", "--round-id", "12",
                              "--agent", "Ada=15001", "--agent", "Max=15002", "--mirrored", "--no-biasing"])
    given = vars(args)
    assert given[f"{DEST_PREFIX}{SECTION}.port"] == 8080
    assert given[f"{DEST_PREFIX}{SECTION}.share"] == 0.25
    assert given[f"{DEST_PREFIX}{SECTION}.delivery"] == "agents"
    assert given[f"{DEST_PREFIX}{SECTION}.round_id"] == 12
    assert given[f"{DEST_PREFIX}{SECTION}.agents"] == {"Ada": 15001, "Max": 15002}
    assert given[f"{DEST_PREFIX}{SECTION}.mirrored"] is True
    assert given[f"{DEST_PREFIX}{SECTION}.biasing"] is False
    assert int_or_text("r3") == "r3"


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["--delivery", "post"], "invalid choice: 'post'"), (["--port", "high"], "invalid int value"),
     (["--agent", "Ada"], "expects NAME=PORT, got 'Ada'"), (["--agent", "Ada=soon"], "expects NAME=PORT, got 'Ada=soon'")],
)
def test_a_malformed_value_is_a_usage_error(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        room_parser().parse_args(argv)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


def test_help_is_the_first_sentence_with_the_default_and_the_key() -> None:
    parser = room_parser()
    assert action(parser, "--host").help == "Where the service listens. (default 127.0.0.1; [flag_test_room] host)"
    assert action(parser, "--port").help == "Port of the service; 0: any free port. (default 7040; [flag_test_room] port)"
    assert action(parser, "--mirrored").help == "The image is mirrored. (default false; [flag_test_room] mirrored = true)"
    assert action(parser, "--no-biasing").help == "do not bias recognition (default true; [flag_test_room] biasing = false)"
    assert action(parser, "--agent").help == "Seller name -> port. (repeatable; default { Celia = 14007 }; [flag_test_room] agents)"
    assert action(parser, "--round-id").help == "Relay with this round id. (default unset; [flag_test_room] round_id)"
    assert action(parser, "--folder").help == 'Where the rounds go; empty: under data_dir. (default ""; [flag_test_room] folder)'
    text = " ".join(parser.format_help().split())
    assert "e.g. 0.5 for 50% of it. (default 0.5; [flag_test_room] share)" in text  # argparse's % escaped
    assert "--port PORT" in text and "--folder DIR" in text and "--agent NAME=PORT" in text
    assert "--delivery {eo,agents}" in text and "--mirrored " in text


def test_given_flags_are_applied_and_the_others_leave_their_keys_alone() -> None:
    parser = room_parser()
    config = Config({SECTION: {"host": "0.0.0.0", "port": 9000}}, environ={})
    assert with_setting_flags(config, parser.parse_args([])) is config
    applied = with_setting_flags(config, parser.parse_args(["--port", "8080", "--mirrored", "--round-id", "r3"]))
    room = applied.section(Room)
    assert (room.port, room.host, room.mirrored, room.round_id, room.biasing) == (8080, "0.0.0.0", True, "r3", True)
    origins = applied.origins(Room)
    assert (origins["port"], origins["host"], origins["biasing"]) == ("flag", "file", "default")


def test_a_flag_is_checked_against_the_model_where_it_is_declared() -> None:
    parser = argparse.ArgumentParser()
    with pytest.raises(ValueError, match="Room: unknown key 'prot'; did you mean 'port'"):
        setting_flag(parser, "--port", Room, "prot")
    with pytest.raises(TypeError, match="no flag form"):
        setting_flag(parser, "--word", Room, "words")
    with pytest.raises(TypeError, match="default"):
        setting_flag(parser, "--port", Room, "port", default=1)
    with pytest.raises(ValueError, match="continues the key before it"):
        setting_flag(parser, "--after", Room, "after")
    assert setting_flag(parser, "--word", Room, "words", type=str, action="append").dest == f"{DEST_PREFIX}{SECTION}.words"


def test_every_commands_setting_flags_name_keys_of_the_suite() -> None:
    """Each command's parser builds (its flags' keys and docstrings hold) and every setting flag
    names a key of a registered section."""
    from humaine_env.cli import commands

    for name, command in commands().items():
        parser = argparse.ArgumentParser(prog=name)
        importlib.import_module(command.module).configure_parser(parser)
        for dest in {a.dest for a in parser._actions if a.dest.startswith(DEST_PREFIX)}:
            section, _, key = dest[len(DEST_PREFIX):].rpartition(".")
            assert key in section_model(section).model_fields, (name, dest)
