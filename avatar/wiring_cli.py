"""``humaine-env check-wiring``: is the room wired into the EO? One line per check, exit 0 when
all hold (1 when one fails, 2 for a configuration error).

It checks that the EO answers at ``[eo] url`` (or the ``serviceMap`` of ``[eo] app_settings``),
and - given the EO's own ``appSettings.json`` (``--eo-settings``, or ``[eo] app_settings``) -
that it registers the Avatar Controller as its human-side service (an accepted name, ``type:
human``, ``role: buyer``, a ``serviceMap`` entry pointing at ``[avatar] host:port``), that every
human-side service it lists answers (the EO exits on the first ``/confirmAccept`` to one that is
down), and that its ``environmentUUID`` is this room's. ``--write PATH`` writes such a file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from humaine_platform.models import json_object
from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--eo-settings", metavar="PATH",
                        help="the EO's appSettings.json (default: [eo] app_settings)")
    parser.add_argument("--write", metavar="PATH",
                        help="write an appSettings.json for the EO that registers this room, then check it")
    parser.add_argument("--eo-port", type=int, default=None, help="the EO's port for --write (default: from [eo] url, or 14010)")


def main(args: argparse.Namespace, config: Config) -> int:
    from urllib.parse import urlparse

    from avatar.settings import AvatarSettings
    from humaine_platform.endpoints import DEFAULT_EO_PORT, HUMAN_SERVICE_NAMES
    from humaine_platform.service_map import ServiceMapError, resolve_eo_url
    from humaine_platform.wiring import (
        DEFAULT_UTILITY_GENERATOR_PORT,
        Check,
        check_app_settings,
        check_eo_reachable,
        check_services_answer,
        check_utility_generator,
        eo_app_settings,
    )
    from workers.runtime.config import OrchestratorSettings
    from workers.runtime.worker import EXIT_CONFIG

    eo = config.section(OrchestratorSettings)
    avatar = config.section(AvatarSettings)
    uuid = config.core.environment_uuid
    try:
        eo_url = resolve_eo_url(eo)
    except ServiceMapError as exc:
        print(f"humaine-env check-wiring: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    settings_path = args.write or args.eo_settings or eo.app_settings
    if args.write:
        port = args.eo_port or urlparse(eo_url).port or DEFAULT_EO_PORT
        generator = urlparse(eo.utility_generator_url).port if eo.utility_generator_url else None
        data = eo_app_settings(avatar.host, avatar.port, environment_uuid=uuid, eo_port=port,
                               utility_generator_port=generator or DEFAULT_UTILITY_GENERATOR_PORT)
        Path(args.write).write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.write}: human-side service {HUMAN_SERVICE_NAMES[0]} at {avatar.host}:{avatar.port}")
    checks = [asyncio.run(check_eo_reachable(eo_url))]
    if settings_path:
        checks += check_app_settings(settings_path, environment_uuid=uuid, avatar_host=avatar.host, avatar_port=avatar.port,
                                     confirm_accept=avatar.confirm_accept)
        eo_settings = _read_json(settings_path)
        checks += asyncio.run(check_services_answer(eo_settings))
        checks += asyncio.run(check_utility_generator(eo_settings, eo.utility_generator_url or None))
    else:
        checks.append(Check("EO appSettings.json", False, "not given: pass --eo-settings PATH (the EO's own file) "
                                                          "or set [eo] app_settings"))
    for check in checks:
        print(check.line())
    return 0 if all(c.ok for c in checks) else 1


def _read_json(path: str) -> dict[str, Any]:
    """The file's JSON object, or an empty one (its own check says what is wrong with it)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return json_object(data)
