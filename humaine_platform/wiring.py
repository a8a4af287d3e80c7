"""How the room is wired into the platform's EO: the EO's ``appSettings.json`` that registers
the Avatar Controller as its human-side service, and the checks of ``humaine-env
check-wiring``.

The current EO reads its human-side service from ``negotiatorsInfo`` in the ``appSettings.json``
beside ``environment-orchestrator.js`` (never from ``/initializeRound``), accepts only the names
``competition-ui`` and ``chat-ui`` there, and calls every ``type: "human"`` entry. A wiring
mistake is found at the first message of a round, where the EO exits: these checks find it
before the round.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from humaine_platform import endpoints as ep
from humaine_platform.answers import PlatformCallError
from humaine_platform.client import EOClient, Failed, HttpPoster, RetryPolicy, Timeouts
from humaine_platform.endpoints import EO_SERVICE, HUMAN_SERVICE_NAMES
from humaine_platform.models import BUYER, json_object
from humaine_platform.utility_generator import UtilityGeneratorClient

DEFAULT_RESPONSE_TIME_LIMIT_MS: Final = 4000
"""The shipped EO's ``responseTimeLimit``: how long the addressed agent may take to reply."""
DEFAULT_EO_BUDGET: Final = 50.0
"""The shipped EO's ``humanBudget.value``."""
UTILITY_GENERATOR: Final = ep.UTILITY_GENERATOR_SERVICE
DEFAULT_UTILITY_GENERATOR_PORT: Final = 7021
PROBE_TIMEOUTS: Final = Timeouts(connect_s=1.0, read_s=2.0, total_s=2.5)
PROBE_RETRIES: Final = RetryPolicy(max_attempts=1)
"""One attempt: a check says what it finds, now."""
PROBE_ROUND: Final = "humaine-env-check-wiring"
"""A round id no venue uses: ``GET /viewQueue/<it>`` proves the EO answers without touching a round."""


EVERY_INTERFACE: Final = ("0.0.0.0", "::", "")


def reachable_host(listen_host: str) -> str:
    """The address a service listening on ``listen_host`` is called at from this machine: a
    service on every interface answers on loopback (another machine needs this one's own address,
    which only the venue knows: ``check-wiring --write`` names ``[avatar] host``)."""
    return "127.0.0.1" if listen_host in EVERY_INTERFACE else listen_host


def eo_app_settings(
    human_host: str,
    human_port: int,
    *,
    environment_uuid: str,
    eo_port: int,
    human_name: str = HUMAN_SERVICE_NAMES[0],
    response_time_limit_ms: int = DEFAULT_RESPONSE_TIME_LIMIT_MS,
    can_talk_at_once: bool = True,
    human_budget: float = DEFAULT_EO_BUDGET,
    currency: str = "USD",
    utility_generator_port: int = DEFAULT_UTILITY_GENERATOR_PORT,
) -> dict[str, Any]:
    """The EO's ``appSettings.json`` with the Avatar Controller as its only human-side service
    (``role: buyer``). The agents need no entry: the EO takes them from ``/initializeRound``.
    The ``utility-generator`` entry must exist even where none runs: at the end of a round
    with a deal the EO looks it up and exits when the entry is missing (a generator that does
    not answer only leaves the utilities null)."""
    if human_name not in HUMAN_SERVICE_NAMES:
        raise ValueError(f"the current EO works only with a human-side service named {' or '.join(HUMAN_SERVICE_NAMES)}")
    return {
        "defaultPort": str(eo_port),
        "environmentUUID": environment_uuid,
        "standalone": False,
        # "currentUnit" (sic) is the EO's own spelling
        "humanBudget": {"currentUnit": currency, "value": human_budget},
        "negotiatorsInfo": [{"name": human_name, "type": "human", "role": BUYER}],
        "serviceMap": {
            EO_SERVICE: {"protocol": "http", "host": "localhost", "port": eo_port},
            UTILITY_GENERATOR: {"protocol": "http", "host": "localhost", "port": utility_generator_port},
            human_name: {"protocol": "http", "host": human_host, "port": human_port},
        },
        "responseTimeLimit": response_time_limit_ms,
        "canTalkAtOnce": can_talk_at_once,
    }


@dataclass(frozen=True)
class Check:
    """One line of ``check-wiring``: what was checked, whether it holds, and what to do if not."""

    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.name}: {self.detail}"


async def check_utility_generator(app_settings: dict[str, Any], configured: str | None) -> list[Check]:
    """The utility generator: the EO's ``serviceMap`` must name one (the EO calls it to score the
    round), and the one the room uses (``[eo] utility_generator_url``, else that entry) should
    answer; without one the room draws utilities and rates allocations with the suite's port of
    its rules."""
    entry = json_object(app_settings.get("serviceMap")).get(UTILITY_GENERATOR)
    checks = []
    if not isinstance(entry, dict):
        checks.append(Check(f"{UTILITY_GENERATOR} serviceMap", False, f"no serviceMap entry {UTILITY_GENERATOR!r}: the EO "
                                                                      "cannot score the round (it fails at the end of the post-round)"))
    url = configured or (f"{entry.get('protocol', 'http')}://{entry.get('host')}:{entry.get('port')}" if isinstance(entry, dict) else None)
    if url is None:
        return checks
    try:
        async with UtilityGeneratorClient(url, HttpPoster(timeouts=PROBE_TIMEOUTS, retry=PROBE_RETRIES)) as generator:
            await generator.generate(ep.BUYER_ROLE)
        checks.append(Check(f"{UTILITY_GENERATOR} answers", True, f"{url.rstrip('/')}{ep.GENERATE_UTILITY}/{ep.BUYER_ROLE}"))
    except PlatformCallError as exc:
        checks.append(Check(f"{UTILITY_GENERATOR} answers", False, f"{exc}; the room draws utilities and rates allocations "
                                                                   "with the suite's port of its rules meanwhile"))
    return checks


async def check_eo_reachable(eo_url: str) -> Check:
    """The EO answers HTTP (:meth:`~humaine_platform.client.EOClient.probe`)."""
    eo = EOClient(eo_url, HttpPoster(timeouts=PROBE_TIMEOUTS, retry=PROBE_RETRIES))
    try:
        probe = await eo.probe()
    finally:
        await eo.aclose()
    if not probe.reachable:
        return Check("EO reachable", False, f"{eo_url}: {probe.detail}; start the EO or fix [eo] url")
    return Check("EO reachable", True, f"{eo_url} {probe.detail}" + (" (the suite's stand-in)" if probe.standin else ""))


async def check_services_answer(app_settings: dict[str, Any]) -> list[Check]:
    """Every human-side service the EO will call answers HTTP (the EO exits when one is down)."""
    infos = app_settings.get("negotiatorsInfo")
    service_map = app_settings.get("serviceMap")
    if not isinstance(infos, list) or not isinstance(service_map, dict):
        return []
    checks = []
    poster = HttpPoster(timeouts=PROBE_TIMEOUTS, retry=PROBE_RETRIES)
    try:
        for info in infos:
            if not isinstance(info, dict) or info.get("type") != "human":
                continue
            name = str(info.get("name"))
            entry = service_map.get(name)
            if not isinstance(entry, dict):
                continue
            base = f"{entry.get('protocol', 'http')}://{entry.get('host')}:{entry.get('port')}"
            outcome = await poster.post(base, ep.HEALTH, None, method="GET")
            if isinstance(outcome, Failed) and outcome.status_code is None:
                checks.append(Check(f"{name} answers", False, f"{base}{ep.HEALTH}: {outcome.reason}; the EO exits on its "
                                                              "first call to a human-side service that is down"))
            else:
                checks.append(Check(f"{name} answers", True, f"{base}{ep.HEALTH}"))
    finally:
        await poster.aclose()
    return checks


def _json_object(file: Path) -> dict[str, Any] | Check:
    """The file's JSON object, or the failed check that says why there is none."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return Check("EO appSettings.json", False, f"{file}: {exc}")
    if not isinstance(data, dict):
        return Check("EO appSettings.json", False, f"{file}: not a JSON object")
    return data


def _uuid_check(found: object, wanted: str) -> Check:
    hint = "" if found == wanted else "; set environment_uuid (or the EO's) so they match"
    return Check("environmentUUID", found == wanted, f"EO {found!r}, room {wanted!r}{hint}")


NO_HUMAN_SIDE: Final = Check(
    "human-side service",
    False,
    f"no negotiatorsInfo entry of type 'human' named {' or '.join(HUMAN_SERVICE_NAMES)}; add "
    f'{{"name": "{HUMAN_SERVICE_NAMES[0]}", "type": "human", "role": "{BUYER}"}}',
)


@dataclass(frozen=True)
class _AvatarEntries:
    """The ``serviceMap`` entries of the EO's human-side services, read against where the
    Avatar Controller listens."""

    service_map: dict[str, Any]
    host: str
    port: int

    def points_back(self, name: str) -> bool:
        """The entry ``name`` calls the Avatar Controller (loopback by any of its names)."""
        entry = self.service_map.get(name)
        loopback = {self.host, "localhost", "127.0.0.1"} if self.host in ("127.0.0.1", "localhost") else {self.host}
        return isinstance(entry, dict) and str(entry.get("host")) in loopback and str(entry.get("port")) == str(self.port)

    def checks(self, info: dict[str, Any], ours: list[str]) -> list[Check]:
        """The role and the ``serviceMap`` entry of one human-side service; one beside the
        Avatar Controller's own (``ours``) may point elsewhere: it asks the buyer."""
        name, role = str(info.get("name")), info.get("role")
        checks = [Check(f"{name} role", role == BUYER, f"role {role!r}" + ("" if role == BUYER else f"; set role: {BUYER}"))]
        entry = self.service_map.get(name)
        if not isinstance(entry, dict):
            return [*checks, Check(f"{name} serviceMap", False, f"no serviceMap entry {name!r}; the EO cannot call it")]
        beside = bool(ours) and name not in ours
        fine = self.points_back(name) or beside
        detail = f"{entry.get('host')}:{entry.get('port')}"
        detail += "" if fine else f"; the Avatar Controller is at {self.host}:{self.port}"
        detail += " (another human-side service beside the Avatar Controller: it asks the buyer)" if beside else ""
        if name not in HUMAN_SERVICE_NAMES:
            detail += f" (the current EO calls it, but only {' or '.join(HUMAN_SERVICE_NAMES)} names are read)"
        return [*checks, Check(f"{name} serviceMap", fine, detail)]


def _confirm_check(confirm_accept: str, others: list[str]) -> Check:
    """Who answers ``/confirmAccept``: the competition-ui beside the Avatar Controller when
    another human-side service asks the buyer (the EO books a deal only when both say yes)."""
    fine = confirm_accept == "competition-ui" if others else confirm_accept != "competition-ui"
    detail = f"[avatar] confirm_accept = {confirm_accept!r}"
    if not fine and others:
        detail += f"; {', '.join(others)} asks the buyer: set it to 'competition-ui' (the EO books a deal only when both say yes)"
    elif not fine:
        detail += "; no other human-side service asks the buyer: use 'buyer' (the /buyer page and the voice)"
    return Check("who confirms deals", fine, detail)


def check_app_settings(
    path: str | Path,
    *,
    environment_uuid: str,
    avatar_host: str,
    avatar_port: int,
    confirm_accept: str | None = None,
) -> list[Check]:
    """The EO's ``appSettings.json`` registers this room: a human-side service of an accepted
    name, ``type: human``, ``role: buyer``, whose ``serviceMap`` entry points at the Avatar
    Controller, and the room's ``environmentUUID``. Two set-ups are recognised: the Avatar
    Controller alone (it asks the buyer), or beside the platform's competition-ui (registered
    as ``chat-ui``, say), which asks the buyer - then ``confirm_accept`` must be
    ``competition-ui`` (the EO books an Accept only when every human-side service says yes)."""
    file = Path(path)
    data = _json_object(file)
    if isinstance(data, Check):
        return [data]
    checks = [Check("EO appSettings.json", True, str(file)), _uuid_check(data.get("environmentUUID"), environment_uuid)]
    infos = data.get("negotiatorsInfo")
    humans = [i for i in (infos if isinstance(infos, list) else []) if isinstance(i, dict) and i.get("type") == "human"]
    names = [str(i.get("name")) for i in humans]
    if not any(name in HUMAN_SERVICE_NAMES for name in names):
        return [*checks, NO_HUMAN_SIDE]
    entries = _AvatarEntries(json_object(data.get("serviceMap")), avatar_host, avatar_port)
    ours = [name for name in names if entries.points_back(name)]
    for info in humans:
        checks += entries.checks(info, ours)
    if ours and confirm_accept is not None:
        checks.append(_confirm_check(confirm_accept, [name for name in names if name not in ours]))
    return checks
