"""``humaine-env config show|init|reference``: the configuration in effect, with where each value
comes from (secrets masked), a commented sample file of every section and key, or the same keys
as a Markdown reference (the checkout keeps it as
:data:`~workers.runtime.config_doc.REFERENCE_FILE`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workers.runtime.config import Config, ConfigError, known_sections
from workers.runtime.worker import EXIT_CONFIG


def configure_parser(parser: argparse.ArgumentParser) -> None:
    from humaine_env.cli import add_common_arguments

    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="the configuration in effect, each value with its origin (secrets masked)")
    add_common_arguments(show, in_subcommand=True, in_action=True)
    show.add_argument("sections", nargs="*", metavar="SECTION", help="only these sections (top-level keys: core)")
    writers = {
        "init": "write a commented sample file with every section and key at its default",
        "reference": "write the Markdown reference of every section and key (default, allowed values, environment variable)",
    }
    for name, summary in writers.items():
        writer = actions.add_parser(name, help=summary)
        add_common_arguments(writer, in_subcommand=True, in_action=True)
        writer.add_argument("path", nargs="?", help="file to write (default: print it)")
        writer.add_argument("--force", action="store_true", help="overwrite an existing file")


def _write(text: str, path_arg: str | None, force: bool) -> int:
    """Print ``text``, or write it to ``path_arg`` without overwriting a file unless ``force``
    (a sample written over a room's own file would lose its settings)."""
    if not path_arg:
        sys.stdout.write(text)
        return 0
    path = Path(path_arg)
    if path.exists() and not force:
        print(f"humaine-env config: {path} exists; choose another path or add --force", file=sys.stderr)
        return EXIT_CONFIG
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"humaine-env config: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {path}", file=sys.stderr)
    return 0


def main(args: argparse.Namespace, config: Config) -> int:
    from workers.runtime.config_doc import effective_toml, reference_markdown, sample_toml

    if args.action == "init":
        return _write(sample_toml(), args.path, args.force)
    if args.action == "reference":
        return _write(reference_markdown(), args.path, args.force)
    names = [("" if s == "core" else s) for s in args.sections] or None
    unknown = [s for s in args.sections if s != "core" and s not in known_sections()]
    if unknown:
        raise ConfigError(f"unknown section(s) {', '.join(unknown)}; known: core, {', '.join(sorted(known_sections()))}")
    sys.stdout.write(effective_toml(config, names))
    return 0
