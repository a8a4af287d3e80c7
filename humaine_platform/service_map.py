"""Where the EO and the agents are: the ``[eo]`` config section or a HUMAINE ``appSettings.json``.

The platform's own services find each other through the ``serviceMap`` of an
``appSettings.json``; reading the same file lets a venue configure addresses once. An explicit
``[eo] url`` wins over the file, so a test or a demo can point anywhere without editing it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from humaine_platform.endpoints import DEFAULT_EO_PORT, UTILITY_GENERATOR_SERVICE
from humaine_platform.models import AppSettings, describe_error
from workers.runtime.config import OrchestratorSettings

DEFAULT_EO_URL = f"http://127.0.0.1:{DEFAULT_EO_PORT}"


class ServiceMapError(Exception):
    """An address could not be resolved; the message says what is missing and how to fix it."""


def load_app_settings(path: str | Path) -> AppSettings:
    """Read and validate an ``appSettings.json``."""
    file = Path(path)
    if not file.is_file():
        raise ServiceMapError(
            f"appSettings file {file} not found; set [eo] app_settings to an existing file or set [eo] url"
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ServiceMapError(f"appSettings file {file} is not readable JSON: {exc}") from None
    try:
        return AppSettings.model_validate(data)
    except ValidationError as exc:
        raise ServiceMapError(f"appSettings file {file} is invalid: {describe_error(exc)}") from None


def service_url(settings: AppSettings, name: str) -> str:
    """The base URL of service ``name`` in the ``serviceMap``."""
    entry = settings.serviceMap.get(name)
    if entry is None:
        known = ", ".join(sorted(settings.serviceMap)) or "none"
        raise ServiceMapError(f"service {name!r} is not in the serviceMap (known: {known})")
    return entry.url


def resolve_eo_url(eo: OrchestratorSettings) -> str:
    """``[eo] url`` if set; else the ``[eo] service`` entry of ``[eo] app_settings``; else the
    platform's default address on this machine."""
    if eo.url:
        return eo.url.rstrip("/")
    if eo.app_settings:
        return service_url(load_app_settings(eo.app_settings), eo.service).rstrip("/")
    return DEFAULT_EO_URL


def resolve_utility_generator_url(eo: OrchestratorSettings) -> str | None:
    """``[eo] utility_generator_url`` if set; else the utility generator's entry of ``[eo]
    app_settings`` when it has one; else None: no utility generator is known, and the buyer's
    assistant rates allocations with the suite's own port of its rules
    (:mod:`humaine_platform.buyer_utility`)."""
    if eo.utility_generator_url:
        return eo.utility_generator_url.rstrip("/")
    if eo.app_settings:
        settings = load_app_settings(eo.app_settings)
        if UTILITY_GENERATOR_SERVICE in settings.serviceMap:
            return service_url(settings, UTILITY_GENERATOR_SERVICE).rstrip("/")
    return None


def agent_urls(settings: AppSettings, names: list[str]) -> dict[str, str]:
    """Base URLs of the named agents, for direct ``/receiveMessage`` fan-out. A name matches a
    ``serviceMap`` key exactly, case-insensitively, or as ``agent-<name>``."""
    by_lower = {key.lower(): key for key in settings.serviceMap}
    found: dict[str, str] = {}
    for name in names:
        for candidate in (name.lower(), f"agent-{name.lower()}"):
            key = by_lower.get(candidate)
            if key is not None:
                found[name] = settings.serviceMap[key].url.rstrip("/")
                break
        else:
            known = ", ".join(sorted(settings.serviceMap)) or "none"
            raise ServiceMapError(
                f"agent {name!r} is not in the serviceMap (known: {known}); add it or set [transcript] agent_urls"
            )
    return found
