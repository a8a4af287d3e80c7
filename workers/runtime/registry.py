"""How a package makes its commands and configuration sections known to the suite.

Each package registers what it offers under two entry-point groups of the distribution
(``pyproject.toml``): its commands (a tuple of :class:`Command`, in a ``commands`` module that
imports nothing heavy) and its configuration sections (``module:Class`` of a
:class:`~workers.runtime.config.Section`). The command line and the configuration find them
there, so neither names a package above the runtime, and neither imports a command's module or a
section's model before it is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

COMMANDS_GROUP = "humaine_env.commands"
"""Entry points whose value is a tuple of :class:`Command`."""
SECTIONS_GROUP = "humaine_env.config_sections"
"""Entry points named after a configuration section, whose value is the section's model."""


@dataclass(frozen=True)
class Command:
    """One ``humaine-env`` subcommand. Its module exposes ``configure_parser(parser)`` and
    ``main(args, config) -> int`` and is imported only when the command is chosen."""

    name: str
    module: str
    summary: str
    worker: str = ""
    """The name the command's worker publishes its status under, when not the command's own."""
    section: str | None = None
    """The configuration section the command reads: its keys are listed by ``--help``."""
    enabled_by: str = ""
    """``section.key`` of a boolean setting that switches the worker on in ``run`` (empty: always
    on): the setting is the operator's, the command line stays the same."""
    aliases: tuple[str, ...] = ()
    """Earlier spellings still taken (the command line, ``run``'s ``--only``/``--without``)."""


def registered(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, sorted by name: installers do not keep the declared order,
    so listings (``--help``, ``config init``) are alphabetical everywhere."""
    return sorted(entry_points(group=group), key=lambda entry: entry.name)
