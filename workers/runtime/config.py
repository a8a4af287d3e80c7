"""Configuration: one TOML file, overridden by ``HUMAINE_ENV_...`` environment variables,
overridden by command-line flags (file < env < flag).

The file is split into sections (``[broker]``, ``[eo]``, ``[avatar]``, ...). Each package
declares the model of its own section as a :class:`Section` subclass and asks for it with
``config.section(Model)``, so the runtime does not need to know every worker's options.

Environment variables map onto sections: ``HUMAINE_ENV_BROKER_URL`` sets ``[broker] url``,
``HUMAINE_ENV_ENVIRONMENT_UUID`` sets the top-level ``environment_uuid``. A field may declare
a shorter alias with ``Field(json_schema_extra={"env": "VOSK_MODEL"})``. Flags use
``--set section.key=value``, or a command's own flag for the key, which does the same
(:mod:`workers.runtime.setting_flags`).

Secrets never need the command line, where every user of the machine can read them (``ps``):
``HUMAINE_ENV_AVATAR_TOKEN=...``, or ``HUMAINE_ENV_AVATAR_TOKEN_FILE=/run/secrets/token`` to read
the value from a file (any key; trailing newlines dropped). ``run`` hands its own ``--set``
flags to its children in :data:`SET_ENV_VAR`, not on their command lines.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import sys
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from formats.unknown import unknown
from workers.runtime.registry import SECTIONS_GROUP, registered
from workers.runtime.topics import check_segment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ENV_PREFIX = "HUMAINE_ENV_"
CONFIG_ENV_VAR = f"{ENV_PREFIX}CONFIG"
SET_ENV_VAR = f"{ENV_PREFIX}SET"
"""A JSON list of ``section.key=value`` flags, applied before the process's own ``--set``."""
FILE_SUFFIX = "_FILE"
DEFAULT_CONFIG_FILE = "humaine-env.toml"
def _listen_host(value: str) -> str:
    if not value.strip():
        raise ValueError("host must not be empty (use 127.0.0.1, or 0.0.0.0 for every interface)")
    return value.strip()


ListenHost = Annotated[str, AfterValidator(_listen_host)]
"""The address a service of the suite listens on (``host`` keys): an empty one is refused with
what to write instead, surrounding blanks are dropped."""

DEFAULT_AVATARS = ("Celia", "Watson")


LITERAL_VALUE = re.compile(r"'([^']*)'")
"""The allowed values in pydantic's wording of a ``Literal`` ("'auto', 'whisper' or 'vosk'")."""

CORE_SECTIONS: dict[str, str] = {
    "": "workers.runtime.config:CoreSettings",
    "broker": "workers.runtime.config:BrokerSettings",
    "eo": "workers.runtime.config:OrchestratorSettings",
}
"""The runtime's own sections (``""``: the top-level keys). Every other section is registered by
the package that reads it (:data:`~workers.runtime.registry.SECTIONS_GROUP`)."""


@functools.cache
def section_targets() -> dict[str, str]:
    """Every section of the file and its model as ``module:Class``, the runtime's first, then the
    registered ones in their declared order. The file is checked against these names (a
    misspelled section fails like a misspelled key), a command imports only the models it uses,
    and ``humaine-env config`` imports them all to show the effective values or write a sample
    file (``tests/integration/runtime/test_config_cli.py`` checks each model's own ``section_name`` against its key)."""
    targets = dict(CORE_SECTIONS)
    for entry in registered(SECTIONS_GROUP):
        targets.setdefault(entry.name, entry.value)
    return targets


LOG_LEVELS = ("DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL")
"""NOTICE (between INFO and WARNING): the progress lines a quiet console still shows."""


class ConfigError(Exception):
    """A configuration problem, with a message meant for the operator (no traceback)."""


_DEFINED: dict[str, type[Section]] = {}
"""Section models by name, as they are defined (a model outside :func:`section_targets` is
known once imported)."""


class Section(BaseModel):
    """Base of every configuration section; unknown keys are typos and fail loudly. Each
    field's docstring is its description (``config init`` and ``COMMAND --help`` print it); a
    field with ``json_schema_extra={"secret": True}`` is masked by ``config show``."""

    model_config = ConfigDict(extra="forbid", validate_default=True, use_attribute_docstrings=True)
    section_name: ClassVar[str] = ""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _DEFINED[cls.section_name] = cls


def known_sections() -> set[str]:
    """Names of every section a file may have."""
    return {name for name in (*section_targets(), *_DEFINED) if name}


def section_models() -> list[type[Section]]:
    """Every model of :func:`section_targets`, in its order (imports them all)."""
    models = []
    for target in section_targets().values():
        module, _, name = target.partition(":")
        models.append(getattr(importlib.import_module(module), name))
    return models


def section_model(name: str) -> type[Section]:
    """The model of section ``name`` (``""``: the top-level keys)."""
    if name in _DEFINED:
        return _DEFINED[name]
    targets = section_targets()
    if name not in targets:
        raise ConfigError(unknown("section", name, known_sections()))
    module, _, attr = targets[name].partition(":")
    return typing.cast(type[Section], getattr(importlib.import_module(module), attr))


def is_secret(model: type[Section], field_name: str) -> bool:
    extra = model.model_fields[field_name].json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("secret"))


def check_level(level: str, where: str) -> str:
    """``level`` upper-cased, or a :class:`ConfigError` naming the levels there are."""
    upper = str(level).strip().upper()
    if upper not in LOG_LEVELS:
        raise ConfigError(f"{where}: unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
    return upper


class CoreSettings(Section):
    """Top-level keys shared by every worker."""

    section_name: ClassVar[str] = ""

    environment_uuid: str = "abcdefg"
    """The HUMAINE ``environmentUUID``; also names this room's MQTT topic tree."""
    avatars: list[str] = Field(default_factory=lambda: list(DEFAULT_AVATARS), min_length=1, max_length=8)
    """The seller agents' names, as the avatars that speak for them."""
    log_level: str = "INFO"
    """What is logged: to ``[run] log_file``, and to the console with ``--verbose`` (without it
    the console shows only warnings and errors, plus one line per utterance, reply and round
    event). DEBUG, INFO, WARNING or ERROR."""
    data_dir: Path = Path(".cache/humaine-env")
    """Models, caches and session logs."""

    @field_validator("environment_uuid")
    @classmethod
    def _topic_safe(cls, value: str) -> str:
        return check_segment(value, "environment_uuid")

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        try:
            return check_level(value, "log_level")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("avatars")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            check_segment(name, "avatar name")
        return value


class BrokerSettings(Section):
    section_name: ClassVar[str] = "broker"

    url: str = "mqtt://127.0.0.1:1883"
    """``mqtt://host:port`` or ``mqtts://host:port`` (TLS)."""
    mode: typing.Literal["auto", "external", "embedded"] = "auto"
    """``auto``: use the broker at ``url``; if nothing answers there and it is on this machine,
    start the embedded broker. ``external``: only ever use ``url``. ``embedded``: always start it."""
    username: str = ""
    """Required by the embedded broker when it listens beyond loopback; every worker uses it."""
    password: str = Field("", json_schema_extra={"secret": True})
    """Set it with ``HUMAINE_ENV_BROKER_PASSWORD`` or ``..._PASSWORD_FILE``, not on a command line."""
    tls_ca: str = ""
    """CA file for ``mqtts://``."""
    tls_cert: str = ""
    """Client certificate file, when the broker asks for one."""
    tls_key: str = ""
    """The client certificate's key file."""
    tls_insecure: bool = False
    """Do not check the broker's certificate name (tests only)."""
    keepalive_s: int = 15
    """MQTT keep-alive: a dead connection is noticed within about 1.5 times this."""
    reconnect_min_s: float = 0.5
    """First wait before reconnecting to a lost broker..."""
    reconnect_max_s: float = 8.0
    """...doubling up to this."""
    connect_wait_s: float = Field(60.0, gt=0)
    """A worker that has never reached the broker says it is waiting at once, and after this
    long exits (status 69; ``run`` and a service manager start it again). Once connected, a
    lost broker is waited for without end."""
    max_payload_bytes: int = 256 * 1024
    """Larger payloads are dropped on receipt with a log line."""
    takeover: bool = False
    """Start a worker even when another instance of it is online for this environment (its
    retained status names it): the running one stops. Without it the second one refuses."""


class OrchestratorSettings(Section):
    """Where the Environment Orchestrator is: a URL, or a HUMAINE ``appSettings.json``."""

    section_name: ClassVar[str] = "eo"

    url: str = ""
    """The EO's address, e.g. ``http://localhost:14010``; empty with ``app_settings`` empty: no
    EO (``run`` then starts the stand-in EO and the demo sellers)."""
    app_settings: str = ""
    """Path of a HUMAINE ``appSettings.json``; its ``serviceMap`` entry ``service`` names the EO."""
    service: str = "environment-orchestrator"
    """The ``serviceMap`` entry of ``app_settings`` that names the EO."""
    utility_generator_url: str = ""
    """The platform's utility generator, e.g. ``http://localhost:7021``: the buyer's page has it
    check and rate the buyer's allocation. Empty: the ``utility-generator`` entry of
    ``app_settings`` when there is one, else the suite's own port of its rules."""
    standalone: bool | None = None
    """Whether the EO runs with ``"standalone": true`` in its own settings: the room then starts a
    round with the whole body on ``/startRound`` (competition-ui's way; that EO calls every round
    ``"true"``) instead of ``/initializeRound`` and ``/startRound``. Unset: the ``standalone`` of
    ``app_settings`` when it is the EO's own file, else false."""
    verify_round: bool = True
    """Ask the EO whether it runs the round (``GET /viewQueue/{roundId}``) before relaying a
    message: the current EO exits on a ``/relayMessage`` for a round it does not know (after
    a restart, say), and an EO that does not answer then never gets a message late."""


S = TypeVar("S", bound=Section)


def _coerce_env_value(raw: str, annotation: Any) -> Any:
    """Turn an environment string into what the field expects for list/dict fields;
    scalars stay strings and pydantic's coercion does the rest."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, dict) or annotation in (list, dict):
        text = raw.strip()
        if text.startswith(("[", "{")):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return raw


def parse_flag_value(raw: str) -> Any:
    """``--set a.b=VALUE``: VALUE is read as TOML when it parses (numbers, booleans, lists,
    quoted strings), else taken as a plain string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _read_secret(variable: str, path: str) -> str:
    """The content of the file ``variable`` names, without trailing newlines."""
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{variable}: cannot read {path}: {reason}") from None


def _inherited_flags(environ: Mapping[str, str]) -> list[str]:
    """The ``--set`` flags a parent passed in :data:`SET_ENV_VAR`."""
    raw = environ.get(SET_ENV_VAR)
    if not raw:
        return []
    try:
        flags = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{SET_ENV_VAR} is not valid JSON: {exc}") from None
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise ConfigError(f"{SET_ENV_VAR} must be a JSON list of section.key=value strings")
    return flags


def inherited_flags_env(flags: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment entry that hands ``flags`` to a child process (see :data:`SET_ENV_VAR`),
    after those this process inherited itself (``environ``)."""
    return {SET_ENV_VAR: json.dumps([*_inherited_flags(environ), *flags])}


def environment_names(model: type[Section], field_name: str) -> list[str]:
    """The environment variables that set ``field_name`` of ``model``, first match wins."""
    name = model.section_name
    keys = [f"{ENV_PREFIX}{(name + '_') if name else ''}{field_name}".upper()]
    extra = model.model_fields[field_name].json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get("env"), str):
        keys.insert(0, f"{ENV_PREFIX}{extra['env']}".upper())
    return keys


def _unknown_top_level(key: str) -> str:
    """A top-level key the suite does not have: the closest top-level key, or, when sections have
    a key of that name (``port``), those keys as they are set (``avatar.port``)."""
    owners = sorted(f"{model.section_name}.{key}" for model in section_models() if model.section_name and key in model.model_fields)
    if owners:
        return f"unknown top-level key {key!r}; did you mean {' or '.join(repr(o) for o in owners)}?"
    return unknown("top-level key", key, CoreSettings.model_fields)


def _check_sections(data: Mapping[str, Any], overrides: Mapping[str, Any], path: Path | None) -> None:
    """A misspelled section (``[avatr]``) or top-level key fails as a misspelled key does,
    in the file and in ``--set`` alike."""
    known = known_sections()
    core = CoreSettings.model_fields
    for key, value in data.items():
        if isinstance(value, Mapping):
            if key not in known:
                raise ConfigError(f"config file {path}: {unknown('section', f'[{key}]', [f'[{k}]' for k in known])}")
        elif key not in core:
            raise ConfigError(f"config file {path}: {_unknown_top_level(key)}")
    for key in overrides:
        section, dot, _ = key.partition(".")
        if dot and section not in known:
            raise ConfigError(f"--set {key}: {unknown('section', section, known)}")
        if not dot and key not in core:
            raise ConfigError(f"--set {key}: {_unknown_top_level(key)}")


def _known_environment_names() -> set[str]:
    """Every ``HUMAINE_ENV_...`` variable a key can be set with (``..._FILE`` too), and the
    suite's own (:data:`CONFIG_ENV_VAR`, :data:`SET_ENV_VAR`, the parent's pid)."""
    from workers.runtime.parent import PARENT_ENV

    names = {CONFIG_ENV_VAR, SET_ENV_VAR, PARENT_ENV}
    for model in [*section_models(), *_DEFINED.values()]:
        for field_name in model.model_fields:
            for key in environment_names(model, field_name):
                names |= {key, key + FILE_SUFFIX}
    return names


def _check_environment(environ: Mapping[str, str]) -> None:
    """A misspelled ``HUMAINE_ENV_...`` variable fails as a misspelled key does (it would
    otherwise be ignored without a word: ``HUMAINE_ENV_BROKER_ULR``)."""
    from workers.runtime.parent import PARENT_ENV

    ours = [name for name in environ if name.startswith(ENV_PREFIX) and name not in (CONFIG_ENV_VAR, SET_ENV_VAR, PARENT_ENV)]
    if not ours:
        return  # the usual case, and every child of ``run``: no section model needs importing
    known = _known_environment_names()
    for name in sorted(ours):
        if name not in known:
            raise ConfigError(f"environment: {unknown('variable', name, known)}")


class Config:
    """The merged configuration of one process."""

    def __init__(
        self,
        file_data: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
        path: Path | None = None,
    ) -> None:
        self.path = path
        self._file = dict(file_data or {})
        self._environ = dict(os.environ if environ is None else environ)
        self._overrides: dict[str, Any] = dict(overrides or {})
        self._cache: dict[type[Section], Section] = {}

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        overrides: Iterable[str] | Mapping[str, Any] = (),
    ) -> Config:
        """Read the TOML file (``path``, else ``$HUMAINE_ENV_CONFIG``, else ./humaine-env.toml
        when it exists) and remember env and flag overrides."""
        env = dict(os.environ if environ is None else environ)
        chosen = path or env.get(CONFIG_ENV_VAR) or None
        file_path: Path | None = None
        data: dict[str, Any] = {}
        if chosen:
            file_path = Path(chosen)
            if not file_path.is_file():
                raise ConfigError(
                    f"config file {file_path} not found; pass an existing file to --config "
                    f"or create one (see docs/running.md, 'Configuration')"
                )
        elif Path(DEFAULT_CONFIG_FILE).is_file():
            file_path = Path(DEFAULT_CONFIG_FILE)
        if file_path is not None:
            try:
                data = tomllib.loads(file_path.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"config file {file_path} is not valid TOML: {exc}") from None
        if isinstance(overrides, Mapping):
            flat = dict(overrides)
        else:
            flat = {}
            for item in [*_inherited_flags(env), *overrides]:
                key, sep, value = item.partition("=")
                if not sep or not key.strip():
                    raise ConfigError(f"--set expects section.key=value, got {item!r}")
                flat[key.strip()] = parse_flag_value(value.strip())
        _check_sections(data, flat, file_path)
        _check_environment(env)
        return cls(data, env, flat, file_path)

    def origins(self, model: type[Section]) -> dict[str, str]:
        """Where each key of ``model`` gets its value: ``default``, ``file``, ``environment``
        (naming the variable) or ``flag`` (the last one wins, as in :meth:`section`)."""
        name = model.section_name
        from_file = self._file.get(name, {}) if name else self._file
        environment = self._environment_variables(model)
        prefix = f"{name}." if name else ""
        found: dict[str, str] = {}
        for field_name in model.model_fields:
            origin = "default"
            if isinstance(from_file, Mapping) and field_name in from_file:
                origin = "file"
            if field_name in environment:
                origin = f"environment ({environment[field_name][0]})"
            if f"{prefix}{field_name}" in self._overrides:
                origin = "flag"
            found[field_name] = origin
        return found

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """A copy with more flag-level overrides (``"section.key": value``)."""
        merged = {**self._overrides, **overrides}
        return Config(self._file, self._environ, merged, self.path)

    # -- access -----------------------------------------------------------------------------
    def section(self, model: type[S]) -> S:
        """The validated section ``model`` (file < environment < flags)."""
        cached = self._cache.get(model)
        if cached is not None:
            return typing.cast(S, cached)
        name = model.section_name
        values: dict[str, Any] = {}
        if name:
            from_file = self._file.get(name, {})
            if not isinstance(from_file, Mapping):
                raise ConfigError(f"[{name}] in {self.path} must be a table")
            values.update(from_file)
        else:
            values.update({k: v for k, v in self._file.items() if k in model.model_fields})
        values.update(self._from_environment(model))
        prefix = f"{name}." if name else ""
        for key, value in self._overrides.items():
            if key.startswith(prefix) and (name or "." not in key):
                values[key[len(prefix):]] = value
        try:
            built = model.model_validate(values)
        except ValidationError as exc:
            def problem(err: Any) -> str:
                where = ".".join(str(p) for p in ((name,) if name else ()) + tuple(err["loc"]))
                if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
                    return f"{where}: {unknown('key', str(err['loc'][0]), model.model_fields)}"
                if err["type"] == "literal_error" and isinstance(err.get("input"), str):
                    return f"{where}: {unknown('value', err['input'], LITERAL_VALUE.findall(err['ctx']['expected']))}"
                if err["type"] == "value_error" and err.get("ctx", {}).get("error") is not None:
                    return f"{where}: {err['ctx']['error']}"  # the model's own words, without pydantic's "Value error, "
                return f"{where}: {err['msg']}"

            raise ConfigError(f"invalid configuration: {'; '.join(problem(err) for err in exc.errors())}") from None
        self._cache[model] = built
        return built

    def _environment_variables(self, model: type[Section]) -> dict[str, tuple[str, bool]]:
        """Field name -> the environment variable that sets it, and whether that variable
        names a file to read the value from (``..._FILE``)."""
        found: dict[str, tuple[str, bool]] = {}
        for field_name in model.model_fields:
            for key in environment_names(model, field_name):
                if key in self._environ:
                    found[field_name] = (key, False)
                    break
                if key + FILE_SUFFIX in self._environ:
                    found[field_name] = (key + FILE_SUFFIX, True)
                    break
        return found

    def _from_environment(self, model: type[Section]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for field_name, (variable, is_file) in self._environment_variables(model).items():
            raw = _read_secret(variable, self._environ[variable]) if is_file else self._environ[variable]
            try:
                found[field_name] = _coerce_env_value(raw, model.model_fields[field_name].annotation)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{variable} is not valid JSON: {exc}") from None
        return found

    @property
    def core(self) -> CoreSettings:
        return self.section(CoreSettings)

    @property
    def broker(self) -> BrokerSettings:
        return self.section(BrokerSettings)
