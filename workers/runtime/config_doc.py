"""Configuration as text, generated from the section models so that it never drifts from them:
a commented sample file (``humaine-env config init``), the effective values with their origins
(``config show``), the key list of ``COMMAND --help`` and the Markdown reference
(``config reference``, committed as :data:`REFERENCE_FILE`).

Each key's comment is its field's docstring (see :class:`~workers.runtime.config.Section`); values are
written as TOML, nested models as inline tables, unset optional keys as a comment."""

from __future__ import annotations

import json
import math
import re
import textwrap
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from workers.runtime.config import (
    CONFIG_ENV_VAR,
    DEFAULT_CONFIG_FILE,
    ENV_PREFIX,
    FILE_SUFFIX,
    Config,
    Section,
    environment_names,
    is_secret,
    section_models,
)

MASK = "********"
"""What ``config show`` prints for a secret that is set."""
COMMENT_WIDTH = 96
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
REFERENCE_FILE = "docs/configuration.md"
"""Where the checkout keeps :func:`reference_markdown` (relative to its root); a unit test
compares the two, so the page cannot fall behind the models."""
REFERENCE_COMMAND = f"humaine-env config reference {REFERENCE_FILE} --force"
"""The command that rewrites :data:`REFERENCE_FILE` from the models."""


def toml_value(value: Any) -> str:
    """``value`` as a TOML value (inline tables for mappings and models)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="python", exclude_none=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (str, Path)):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, Mapping):
        items = [f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items() if v is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, (list, tuple, set)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_key(key: str) -> str:
    return key if BARE_KEY.match(key) else json.dumps(key)


def _plain(text: str) -> str:
    """A docstring as plain prose: reST literals and roles without their markup."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return " ".join(text.replace("``", "`").split())


def describe(model: type[Section], field_name: str) -> str:
    """The key's description, plus its choices when it has a fixed set (and the description
    does not already name them all)."""
    text = _description(model, field_name)
    choices = _choices(model.model_fields[field_name].annotation)
    if choices and not all(f'"{c}"' in text or f"`{c}`" in text for c in choices):
        text = (text + " " if text else "") + f"One of: {', '.join(choices)}."
    return text


def _description(model: type[Section], field_name: str) -> str:
    """The field's docstring as plain prose, without the choices :func:`describe` may add (the
    reference lists those on a line of their own)."""
    return _plain(model.model_fields[field_name].description or "")


def _choices(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    return []


SENTENCE_END = re.compile(r"(.+?(?<!\be\.g)(?<!\bi\.e)\.)(\s|$)")
"""A full stop followed by a blank or the end, unless it closes "e.g." or "i.e." inside a sentence."""


def first_sentence(text: str) -> str:
    """The text up to its first full stop (not an abbreviation's) followed by a blank or the end."""
    match = SENTENCE_END.match(text)
    return match.group(1) if match else text


def _comment(text: str, indent: str = "") -> list[str]:
    return [f"{indent}# {line}" for line in textwrap.wrap(text, COMMENT_WIDTH)] if text else []


def _header(model: type[Section]) -> str:
    return f"[{model.section_name}]" if model.section_name else "# top-level keys"


def _section_doc(model: type[Section]) -> str:
    """The model's own docstring as plain prose; empty when it only inherits :class:`Section`'s."""
    return _plain(model.__doc__) if model.__doc__ and model.__doc__ != Section.__doc__ else ""


def _default(model: type[Section], field_name: str) -> str | None:
    """The key's default as TOML, or None when the key is unset by default."""
    value = getattr(model(), field_name)
    return None if value is None else toml_value(value)


def sample_toml() -> str:
    """A sample configuration file with every section and key at its default, each commented."""
    lines = [
        "# humaine-env configuration: every section and key with its default value.",
        "# Generated by `humaine-env config init` from the settings models; delete what you do not change.",
        f"# Every key can also be set with {ENV_PREFIX}<SECTION>_<KEY> (add _FILE to read it from a file)",
        "# or `--set section.key=value`; `humaine-env config show` prints the values in effect.",
    ]
    for model in section_models():
        lines += ["", _header(model)]
        lines += _comment(_section_doc(model))
        for field_name in model.model_fields:
            lines += _comment(describe(model, field_name))
            default = _default(model, field_name)
            lines.append(f"# {field_name} = (unset)" if default is None else f"{field_name} = {default}")
    return "\n".join(lines) + "\n"


def effective_toml(config: Config, names: list[str] | None = None) -> str:
    """The configuration in effect, each value with where it came from; secrets masked."""
    where = f"file {config.path}" if config.path else "no file"
    lines = [f"# humaine-env configuration in effect ({where}); each value says where it comes from:",
             "# default, file, environment (the variable) or flag (--set)."]
    for model in section_models():
        if names is not None and model.section_name not in names:
            continue
        values = config.section(model)
        origins = config.origins(model)
        lines += ["", _header(model)]
        for field_name in model.model_fields:
            value = getattr(values, field_name)
            origin = origins[field_name]
            if value is None:
                lines.append(f"# {field_name} = (unset)  # {origin}")
                continue
            shown = toml_value(MASK) if is_secret(model, field_name) and value else toml_value(value)
            lines.append(f"{field_name} = {shown}  # {origin}")
    return "\n".join(lines) + "\n"


def keys_help(model: type[Section]) -> str:
    """The keys of one section for ``COMMAND --help``: name, default, first sentence."""
    name = model.section_name
    where = f"[{name}]" if name else "top-level"
    set_as = f"{name}.KEY" if name else "KEY"
    env = f"{ENV_PREFIX}{name.upper()}_KEY" if name else f"{ENV_PREFIX}KEY"
    lines = [f"configuration keys, {where} (in the file, {env}, or --set {set_as}=VALUE):"]
    defaults = model()
    for field_name in model.model_fields:
        value = getattr(defaults, field_name)
        shown = "(unset)" if value is None else toml_value(value)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        lines.append(f"  {field_name} = {shown}")
        lines += textwrap.wrap(first_sentence(describe(model, field_name)), COMMENT_WIDTH - 6,
                               initial_indent="      ", subsequent_indent="      ")
    lines.append("`humaine-env config show` prints the values in effect; `config init` writes a sample file.")
    return "\n".join(lines)



def _code(text: str) -> str:
    """``text`` as a Markdown code span, fenced with enough backticks for those it holds."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _key_reference(model: type[Section], field_name: str) -> list[str]:
    """One key of the reference: its heading (the name ``--set`` takes, unique across sections so
    that every key has its own anchor), default, allowed values, environment variables and whole
    description."""
    dotted = f"{model.section_name}.{field_name}" if model.section_name else field_name
    default = _default(model, field_name)
    facts = [f"- Default: {'unset' if default is None else _code(default)}"]
    choices = _choices(model.model_fields[field_name].annotation)
    if choices:
        facts.append(f"- Allowed values: {', '.join(_code(c) for c in choices)}")
    facts.append(f"- Environment: {' or '.join(_code(v) for v in environment_names(model, field_name))}")
    if is_secret(model, field_name):
        facts.append("- Secret: `config show` masks it; set it in the environment or a file, not on a command line")
    description = _description(model, field_name)
    return ["", f"### {_code(dotted)}", "", *facts, *(["", description] if description else [])]


def reference_markdown() -> str:
    """The configuration reference as Markdown: every section with its keys, their defaults,
    allowed values, environment variables and full descriptions; the same text as
    :func:`sample_toml`, laid out for reading (:data:`REFERENCE_FILE`)."""
    lines = [
        "# Configuration reference",
        "",
        "Every section and key of the configuration file, generated from the settings models (the text of",
        f"`humaine-env config init`); regenerate it with `{REFERENCE_COMMAND}`.",
        "",
        "A key is set, from weakest to strongest, by its default, the TOML file (`--config PATH`,",
        f"`{CONFIG_ENV_VAR}` or `./{DEFAULT_CONFIG_FILE}`), its environment variable (add `{FILE_SUFFIX}` to the",
        "variable's name to read the value from a file) or `--set section.key=value`.",
        "`humaine-env config show` prints the values in effect and where each comes from.",
    ]
    for model in section_models():
        title = f"`[{model.section_name}]`" if model.section_name else "Top-level keys"
        lines += ["", f"## {title}"]
        doc = _section_doc(model)
        if doc:
            lines += ["", doc]
        for field_name in model.model_fields:
            lines += _key_reference(model, field_name)
    return "\n".join(lines) + "\n"
