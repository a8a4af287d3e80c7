"""Starting and ending rounds on the EO the room is wired to, as competition-ui's Start and End do.

Three kinds of EO, told apart by a look at it: the suite's stand-in (its ``/health`` says so), the
platform's EO (``/initializeRound`` then ``/startRound {roundId}``, measured on its source), and
the platform's EO in ``standalone`` mode (``[eo] standalone``, or the ``standalone`` of the EO's
own ``appSettings.json`` given as ``[eo] app_settings``: ``/startRound`` takes the whole round and
calls every round ``"true"``). Ending a round on the stand-in ends its current phase; on the
platform's EO it is ``/endRound`` and the keep-alive that stops the EO from exiting at the
round's own end (:mod:`humaine_platform.end_round`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final, Literal

from humaine_platform import endpoints as ep
from humaine_platform.answers import PlatformCallError, RoundCallAnswer, read_answer, read_start_answer
from humaine_platform.client import EOClient, HttpPoster, RetryPolicy, Timeouts, answer_of, round_known
from humaine_platform.end_round import NOWHERE, keep_alive_body
from humaine_platform.models import AppSettings, InitializeRound, RoundId, ServiceEntry
from humaine_platform.service_map import ServiceMapError, load_app_settings, resolve_eo_url
from humaine_platform.wiring import DEFAULT_UTILITY_GENERATOR_PORT, PROBE_RETRIES, PROBE_TIMEOUTS
from workers.runtime.config import OrchestratorSettings

log = logging.getLogger(__name__)

EOKind = Literal["standin", "platform", "standalone"]
STANDALONE_ROUND_ID: Final = "true"
"""What an EO in ``standalone`` mode calls every round (its ``roundId = "true"``)."""
KIND_WORDS: Final[dict[str, str]] = {"standin": "the stand-in EO", "platform": "the platform's EO",
                                     "standalone": "the platform's EO (standalone)"}
ROUND_CALL_RETRIES: Final = RetryPolicy(max_attempts=3, backoff_s=0.1, backoff_max_s=0.3)
"""An EO that refuses connections is tried three times (a call that may have reached it, never)."""


class RoundCallRefused(Exception):
    """The EO did not take a round call; the message says which call and why, in one line."""


class EORounds:
    """The round calls to one EO (``[eo]``), the room's human-side address as it knows it."""

    def __init__(self, eo: OrchestratorSettings, start_timeout_s: float, generator_url: str | None) -> None:
        self.problem = ""
        """Why there is no EO to call (an ``app_settings`` that does not resolve), or empty."""
        try:
            self.url: str | None = resolve_eo_url(eo)
        except ServiceMapError as exc:
            self.url, self.problem = None, str(exc)
        self.app_settings = self._eo_settings(eo)
        self.standalone = eo.standalone if eo.standalone is not None else bool(self.app_settings and self.app_settings.standalone)
        self.generator_url = generator_url
        timeouts = Timeouts(connect_s=1.0, read_s=start_timeout_s, total_s=start_timeout_s + 1.0)
        base = self.url or "http://127.0.0.1"
        self.calls = EOClient(base, HttpPoster(timeouts=timeouts, retry=ROUND_CALL_RETRIES))
        # a look at the EO: it answers at once or it is taken as not there (the console looks every few seconds)
        self.looks = EOClient(base, HttpPoster(timeouts=PROBE_TIMEOUTS, retry=PROBE_RETRIES))

    @staticmethod
    def _eo_settings(eo: OrchestratorSettings) -> AppSettings | None:
        if not eo.app_settings:
            return None
        try:
            return load_app_settings(eo.app_settings)
        except ServiceMapError as exc:
            log.warning("%s; End round keeps the EO alive with what the room knows of its services", exc)
            return None

    async def look(self) -> EOKind | None:
        """What the EO is, or None when it does not answer."""
        if self.url is None:
            return None
        probe = await self.looks.probe()
        if not probe.reachable:
            return None
        return "standin" if probe.standin else "standalone" if self.standalone else "platform"

    async def knows(self, round_id: RoundId) -> bool | None:
        """Whether the EO still has round ``round_id`` (:func:`~humaine_platform.client.round_known`),
        None when it gives no word on it."""
        if self.url is None:
            return None
        return round_known(await self.looks.view_totals(round_id))

    def _where(self, path: str) -> str:
        return f"the EO at {self.calls.base_url}{path}"

    async def start(self, kind: EOKind, body: InitializeRound) -> None:
        """The platform's order: ``/initializeRound`` then ``/startRound``; one call for a
        standalone EO. :class:`RoundCallRefused` when the EO refuses or does not answer."""
        try:
            if kind == "standalone":
                where = self._where(ep.START_ROUND)
                read_start_answer(answer_of(await self.calls.start_standalone(body), where), where)
                return
            where = self._where(ep.INITIALIZE_ROUND)
            initialized = read_answer(RoundCallAnswer, answer_of(await self.calls.initialize_round(body), where), where)
            if initialized.refusal:
                raise RoundCallRefused(f"{where} refused round {body.roundId}: {initialized.refusal}")
            where = self._where(ep.START_ROUND)
            started = read_start_answer(answer_of(await self.calls.start_round(body.roundId), where), where)
        except PlatformCallError as exc:
            raise RoundCallRefused(str(exc)) from None
        if started.answer is not None and started.answer.refusal:
            raise RoundCallRefused(f"{where} refused round {body.roundId}: {started.answer.refusal}")

    async def end(self, round_id: RoundId) -> RoundCallAnswer:
        """``/endRound``; :class:`RoundCallRefused` when the EO refuses or does not answer."""
        where = self._where(ep.END_ROUND)
        try:
            ended = read_answer(RoundCallAnswer, answer_of(await self.calls.end_round(round_id), where), where)
        except PlatformCallError as exc:
            raise RoundCallRefused(str(exc)) from None
        if ended.refusal:
            raise RoundCallRefused(f"{where} refused: {ended.refusal}")
        return ended

    async def keep_alive(self, round_id: RoundId, avatars: Sequence[str], human: ServiceEntry, human_names: Sequence[str]) -> None:
        """``/initializeRound {roundId, serviceMap}`` right after ``/endRound`` on the platform's EO:
        the human-side services of the EO's own settings when the room has them (``[eo]
        app_settings``), else the room under the names the EO called it by (and the other names
        the EO works with, pointing nowhere); the utility generator the room knows.
        :class:`RoundCallRefused` when the EO does not take it."""
        settings = self.app_settings
        if settings is not None and settings.human_services():
            humans = {name: settings.serviceMap[name] for name in settings.human_services() if name in settings.serviceMap}
        else:
            humans = {name: human for name in human_names or (ep.HUMAN_SERVICE_NAMES[0],)}
            # a human-side service beside the room that it does not know of (its address is in the
            # EO's own settings, which the room was not given): named, so that the EO does not exit
            # looking it up; the round's last calls to it go nowhere
            humans.update({name: NOWHERE for name in ep.HUMAN_SERVICE_NAMES if name not in humans})
        if settings is not None and ep.UTILITY_GENERATOR_SERVICE in settings.serviceMap:
            generator = settings.serviceMap[ep.UTILITY_GENERATOR_SERVICE]
        elif self.generator_url:
            generator = ServiceEntry.of_url(self.generator_url)
        else:
            generator = ServiceEntry(host="127.0.0.1", port=DEFAULT_UTILITY_GENERATOR_PORT)
        where = self._where(ep.INITIALIZE_ROUND)
        try:
            answer_of(await self.calls.initialize_round(keep_alive_body(round_id, humans, avatars, generator)), where)
        except PlatformCallError as exc:
            raise RoundCallRefused(str(exc)) from None

    async def aclose(self) -> None:
        await self.calls.aclose()
        await self.looks.aclose()
