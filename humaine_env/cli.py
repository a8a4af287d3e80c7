"""``humaine-env``: one command-line entry point with a subcommand per worker.

Subcommands are registered by their own packages (:mod:`workers.runtime.registry`) and the
command line finds them there; a command's module is imported only when it is chosen, so
``humaine-env devices`` does not pay for loading MediaPipe. A subcommand module exposes
``configure_parser(parser)`` and ``main(args, config) -> int``. The flags it declares with
:func:`~workers.runtime.setting_flags.setting_flag` are applied here, before ``main``: the
``config`` it receives already holds them, so no command maps its flags to keys by hand.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from formats.unknown import unknown
from workers.runtime.broker import BrokerUnavailable
from workers.runtime.config import Config, ConfigError, check_level
from workers.runtime.data_dir import with_writable_data_dir
from workers.runtime.logs import console_level, setup_logging
from workers.runtime.parent import bind_to_parent
from workers.runtime.registry import COMMANDS_GROUP, Command, registered
from workers.runtime.setting_flags import with_setting_flags
from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE, WorkerUnavailable


class HintingParser(argparse.ArgumentParser):
    """argparse with the suite's did-you-mean for a mistyped choice (``--engine wisper``), as
    for every other name a user types (:func:`formats.unknown.unknown`). Subcommands' parsers
    are of this class too (``add_subparsers`` makes its children of its parser's class)."""

    def error(self, message: str) -> NoReturn:
        """One line, as every "cannot" of the suite, and where to read the rest (argparse
        prints the whole usage first)."""
        self.exit(EXIT_CONFIG, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, unknown("choice", str(value), [str(c) for c in action.choices]))

def _load_commands() -> dict[str, Command]:
    """Every command the installed packages register (:data:`COMMANDS_GROUP`), by name, in
    alphabetical order (the order of ``--help``)."""
    found: dict[str, Command] = {}
    for entry in registered(COMMANDS_GROUP):
        for command in entry.load():
            if command.name in found:
                raise RuntimeError(f"humaine-env: command {command.name!r} is registered twice ({entry.value})")
            found[command.name] = command
    return dict(sorted(found.items()))


@functools.cache
def commands() -> dict[str, Command]:
    """The subcommands, by name, as the packages register them (loaded once)."""
    found = _load_commands()
    if not found:
        raise SystemExit("humaine-env: no command is registered: install the suite first (make setup)")
    return found


@functools.cache
def command_names() -> dict[str, str]:
    """Every name a command is known by (its own and its earlier spellings) -> its name."""
    return {**{alias: name for name, command in commands().items() for alias in command.aliases},
            **{name: name for name in commands()}}


def command_named(name: str) -> str | None:
    """The command ``name`` stands for (an earlier spelling: the command's name), or None."""
    return command_names().get(name)


def status_name(command: str) -> str:
    """The worker name under which ``command`` publishes its retained status."""
    return commands()[command].worker or command


def available(name: str) -> bool:
    """True when the subcommand's module is part of this installation."""
    try:
        return importlib.util.find_spec(commands()[name].module) is not None
    except ModuleNotFoundError:
        return False


OVERRIDES_AFTER_COMMAND = "overrides_after_command"
"""argparse gives a subcommand a namespace of its own, so its ``--set`` list is kept apart
and appended to the one given before the command name."""


OVERRIDES_AFTER_ACTION = "overrides_after_action"
"""The same for a command's own subcommand (``config show --set ...``)."""


def add_common_arguments(parser: argparse.ArgumentParser, *, in_subcommand: bool = False, in_action: bool = False) -> None:
    """The flags every command takes, before or after the command name. In the subcommand
    their defaults are suppressed so that a flag given before the name is not overwritten."""
    default: object = argparse.SUPPRESS if in_subcommand else None
    parser.add_argument(
        "--config", metavar="PATH", default=default,
        help="TOML configuration file (default: $HUMAINE_ENV_CONFIG or ./humaine-env.toml)",
    )
    parser.add_argument(
        "--set", dest=OVERRIDES_AFTER_ACTION if in_action else OVERRIDES_AFTER_COMMAND if in_subcommand else "overrides",
        action="append", default=argparse.SUPPRESS if in_action else [],
        metavar="SECTION.KEY=VALUE", help="override one configuration value (repeatable); beats the file and the environment",
    )
    parser.add_argument("--log-level", metavar="LEVEL", default=default,
                        help="console detail: DEBUG, INFO, NOTICE, WARNING or ERROR (default: problems and progress only)")
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS if in_subcommand else False,
                        help="also show INFO lines (at the configured log_level) on the console")


def build_parser(chosen: str | None) -> argparse.ArgumentParser:
    parser = HintingParser(
        prog="humaine-env",
        description="The physical-environment workers of the HUMAINE negotiation platform.",
    )
    add_common_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in commands().items():
        if not available(name):
            continue
        child = sub.add_parser(name, aliases=list(command.aliases), help=command.summary, description=command.summary,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        add_common_arguments(child, in_subcommand=True)
        if name == chosen:
            importlib.import_module(command.module).configure_parser(child)
            if command.section is not None:
                from workers.runtime.config import section_model
                from workers.runtime.config_doc import keys_help

                child.epilog = keys_help(section_model(command.section))
    return parser


def _chosen_command(argv: Sequence[str]) -> str | None:
    takes_value = {"--config", "--set", "--log-level"}
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in takes_value:
            skip = True
        elif arg in command_names():
            return command_names()[arg]
        elif not arg.startswith("-"):
            return None
    return None


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every flag ``parser`` and its subcommands' parsers take."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(option for option in action.option_strings if option.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _flags(child)
    return found


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line; common flags may stand before or after the command name. A flag
    it does not know is one line with the closest one it does (``--withuot`` -> ``--without``)."""
    parser = build_parser(_chosen_command(argv))
    args, extras = parser.parse_known_args(argv)
    if extras:
        mistyped = next((arg.split("=", 1)[0] for arg in extras if arg.startswith("-")), None)
        parser.error(unknown("flag", mistyped, _flags(parser)) if mistyped else f"unrecognized arguments: {' '.join(extras)}")
    args.overrides = [*args.overrides, *getattr(args, OVERRIDES_AFTER_COMMAND, []), *getattr(args, OVERRIDES_AFTER_ACTION, [])]
    if not args.command:
        parser.print_help()
        raise SystemExit(EXIT_CONFIG)
    args.command = command_names().get(args.command, args.command)  # an earlier spelling: the command it names
    return args


def main(argv: Sequence[str] | None = None) -> int:
    bind_to_parent()
    args = parse_arguments(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.log_level:
            args.log_level = check_level(args.log_level, "--log-level")
        config = with_setting_flags(Config.load(args.config, overrides=args.overrides), args)
        setup_logging(console_level(args.log_level, args.verbose, config.core.log_level))
        config = with_writable_data_dir(config)
        module = importlib.import_module(commands()[args.command].module)
        return int(module.main(args, config) or 0)
    except ConfigError as exc:
        print(f"humaine-env {args.command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (BrokerUnavailable, WorkerUnavailable) as exc:
        print(f"humaine-env {args.command}: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
