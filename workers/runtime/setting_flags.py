"""Command-line flags that set a configuration key, declared once against the section model.

A command declares ``setting_flag(parser, "--port", AvatarSettings, "port")`` instead of an
``add_argument`` plus a hand-written ``--port`` → ``avatar.port`` mapping in its ``main``. The
flag's type and choices come from the field's annotation, its help from the field's docstring
(:mod:`~workers.runtime.config_doc`), and the help always ends with the model's default and the
key, so neither can drift from the model. The flag's argparse ``dest`` names the key, so one
function, :func:`with_setting_flags`, applies every flag a command line gave: the command line
calls it before a command's ``main``, which then only reads its sections.

A flag that is not given leaves the key alone (its value stays ``None``); a given flag is a
flag-level override, exactly as ``--set section.key=value`` (``config show`` says ``flag``).
"""

from __future__ import annotations

import argparse
import functools
import operator
import types
import typing
from typing import Any

from formats.unknown import unknown
from workers.runtime.config import Config, Section
from workers.runtime.config_doc import describe, first_sentence, toml_value

DEST_PREFIX = "setting:"
"""Start of the argparse ``dest`` of a setting flag; the rest is the key (``avatar.port``)."""
PAIR_SEPARATOR = "="
"""Between a name and its value in a flag that sets a mapping (``--agent Celia=14007``)."""


def key_name(model: type[Section], key: str) -> str:
    """The key as ``--set`` spells it: ``section.key``, or ``key`` at the top level."""
    return f"{model.section_name}.{key}" if model.section_name else key


def _key_label(model: type[Section], key: str) -> str:
    """The key as the file spells it, for help texts: ``[section] key``."""
    return f"[{model.section_name}] {key}" if model.section_name else key


def _check_key(model: type[Section], key: str) -> None:
    """A flag bound to a key the model does not have fails where it is declared, not on the
    day someone gives it."""
    if key not in model.model_fields:
        raise ValueError(f"{model.__name__}: {unknown('key', key, model.model_fields)}")


def _without_none(annotation: Any) -> Any:
    """``X | None`` as ``X`` (an optional key is set by giving its flag); other types as they are."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return functools.reduce(operator.or_, members)
    return annotation


def int_or_text(text: str) -> int | str:
    """A value of an ``int | str`` key (a ``roundId``): digits are a number, anything else text.
    (pydantic keeps a string a string in such a union, so the flag has to decide.)"""
    return int(text) if text.isdigit() else text


def _scalar_type(annotation: Any) -> Any:
    """The argparse ``type`` of one value of ``annotation``, or None when there is no obvious one."""
    if annotation in (int, float, str):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and set(typing.get_args(annotation)) == {int, str}:
        return int_or_text
    return None


def _literal_choices(annotation: Any) -> list[Any] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return None


class _PairsAction(argparse.Action):
    """``--flag NAME=VALUE``, repeatable: the values given make one mapping (they replace the
    key's whole mapping, as ``--set section.key={...}`` does)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        name, value = values
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest, None) or {}), name: value})


def _pair_type(value_type: Any, metavar: str) -> Any:
    """The argparse ``type`` of one ``NAME=VALUE`` item: a (name, value) pair, or a usage error
    saying what the flag expects."""

    def pair(item: str) -> tuple[str, Any]:
        name, sep, raw = item.partition(PAIR_SEPARATOR)
        try:
            if not sep or not name or not raw:
                raise ValueError(item)
            return name, value_type(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects {metavar}, got {item!r}") from None

    return pair


def shown_default(model: type[Section], key: str) -> str:
    """The model's default of ``key`` as a help text shows it: a string bare (``127.0.0.1``),
    anything else as TOML (``7040``, ``false``, ``{ Celia = 14007 }``), ``unset`` for None."""
    value = getattr(model(), key)
    if value is None:
        return "unset"
    if isinstance(value, str) and value:
        return value
    return toml_value(value)


ELLIPSIS = "..."
"""How a docstring hands its sentence on to the next key's (``calibrate_s``: "seconds measured
per phase..."; ``calibrate_settle_s``: "...after this many seconds")."""


def _docstring_sentence(model: type[Section], key: str) -> str:
    """The field's first sentence as a help text: a sentence handed on to the next key ends with
    a full stop; one that continues the key before it means nothing alone, so the flag must say
    what it means (``help=``)."""
    said = first_sentence(describe(model, key))
    if said.startswith(ELLIPSIS):
        raise ValueError(f"{key_name(model, key)}: its docstring continues the key before it ({said!r}); give the flag a help=")
    return said.removesuffix(ELLIPSIS) + "." if said.endswith(ELLIPSIS) else said


def setting_help(model: type[Section], key: str, text: str | None = None, const: Any = None, repeatable: bool = False) -> str:
    """The help of a flag that sets ``key``: ``text`` (default: the first sentence of the field's
    docstring), then whether it may be given more than once, the model's default and the key, and
    the value a flag without an argument sets (``const``). Escaped for argparse, which formats
    help texts with ``%``."""
    said = _docstring_sentence(model, key) if text is None else text
    sets = _key_label(model, key) if const is None else f"{_key_label(model, key)} = {toml_value(const)}"
    again = "repeatable; " if repeatable else ""
    return f"{said} ({again}default {shown_default(model, key)}; {sets})".strip().replace("%", "%%")


def _no_flag_form(flag: str, model: type[Section], key: str) -> TypeError:
    return TypeError(f"{flag}: no flag form for {key_name(model, key)} ({model.model_fields[key].annotation}); pass type=")


def setting_flag(parser: argparse.ArgumentParser, flag: str, model: type[Section], key: str, *,
                 help: str | None = None, **kwargs: Any) -> argparse.Action:
    """Add ``flag`` to ``parser`` as a flag that sets ``key`` of ``model``; returns the action.

    Derived from the field unless given in ``kwargs``: a bool key becomes a flag without an
    argument that sets ``True`` (``const=False`` for a ``--no-...`` flag; any key takes
    ``const=`` to become such a flag); a ``Literal`` key takes its values as ``choices``; an
    int, float or str key its type; a ``dict[str, X]`` key a repeatable ``NAME=VALUE``; an
    ``int | str`` key a number when it is digits. ``help`` replaces the docstring's sentence
    (the default and the key are always added). The metavar is the flag's name, as argparse's
    own would be. A key the model does not have, or whose type has no flag form and no
    ``type=``, fails here.
    """
    _check_key(model, key)
    if "default" in kwargs or "dest" in kwargs:
        raise TypeError(f"{flag}: a setting flag's default is the configuration's, and its dest names the key")
    annotation = _without_none(model.model_fields[key].annotation)
    dest = DEST_PREFIX + key_name(model, key)
    if annotation is bool and "const" not in kwargs and "action" not in kwargs:
        kwargs["const"] = True
    if "const" in kwargs:
        kwargs.setdefault("action", "store_const")
        return parser.add_argument(flag, dest=dest, default=None,
                                   help=setting_help(model, key, help, kwargs["const"]), **kwargs)
    metavar = kwargs.pop("metavar", None)
    if typing.get_origin(annotation) is dict and "type" not in kwargs:
        key_type, value_type = typing.get_args(annotation)
        if key_type is not str or _scalar_type(value_type) is None:
            raise _no_flag_form(flag, model, key)
        metavar = metavar or f"NAME{PAIR_SEPARATOR}VALUE"
        return parser.add_argument(flag, dest=dest, default=None, action=_PairsAction, metavar=metavar,
                                   type=_pair_type(_scalar_type(value_type), metavar),
                                   help=setting_help(model, key, help, repeatable=True), **kwargs)
    choices = _literal_choices(annotation)
    if choices is not None:
        kwargs.setdefault("choices", choices)
        kwargs.setdefault("type", type(choices[0]))
    elif "type" not in kwargs:
        kwargs["type"] = _scalar_type(annotation)
        if kwargs["type"] is None:
            raise _no_flag_form(flag, model, key)
    if metavar is None and "choices" not in kwargs:
        metavar = flag.lstrip("-").replace("-", "_").upper()
    return parser.add_argument(flag, dest=dest, default=None, metavar=metavar, help=setting_help(model, key, help), **kwargs)


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``{"section.key": value}`` of every setting flag ``args`` holds a value for."""
    return {dest[len(DEST_PREFIX):]: value for dest, value in vars(args).items()
            if dest.startswith(DEST_PREFIX) and value is not None}


def with_setting_flags(config: Config, args: argparse.Namespace) -> Config:
    """``config`` with every setting flag given on the command line applied as a flag-level
    override; ``config`` itself when none was given."""
    given = given_settings(args)
    return config.with_overrides(given) if given else config
