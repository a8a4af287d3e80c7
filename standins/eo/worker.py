"""The stand-in EO as a suite worker: its HTTP service plus a retained MQTT status, so the
suite's status table shows it like every other worker (it needs no broker to serve)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from humaine_platform import endpoints as ep
from standins.eo.auto import RoundStartError, service_urls, start_round_sync, wait_for_services
from standins.eo.round_setup import auto_round
from standins.eo.server import StandinServer
from standins.eo.settings import StandinSettings
from workers.runtime.config import Config
from workers.runtime.logs import NOTICE
from workers.runtime.worker import Worker, wait_for_stop
from workers.runtime.worker_ids import STANDIN_EO


class StandinWorker(Worker):
    name: ClassVar[str] = STANDIN_EO
    serves_http: ClassVar[bool] = True

    def __init__(self, config: Config, auto_start_round: bool = False, worker_id: str | None = None) -> None:
        """``auto_start_round`` (or ``[standin] auto_round``): the stand-in alone starts a round of
        its own once its sellers and human side answer (the room starts its rounds itself)."""
        super().__init__(config, worker_id)
        self.settings = config.section(StandinSettings)
        if not self.settings.human_token:  # the room's own Avatar Controller guarded by a token
            from avatar.settings import AvatarSettings

            avatar_token = config.section(AvatarSettings).token
            if avatar_token:
                self.settings = self.settings.model_copy(update={"human_token": avatar_token})
        self.auto_start_round = auto_start_round or self.settings.auto_round
        # binds now: a busy port fails before start-up
        self.server = StandinServer(self.settings)
        self.round_note = ""

    def health(self) -> dict[str, Any]:
        return {**super().health(), "url": self.server.url, "rounds": self.server.engine.summary()["rounds"]}

    def run(self, stop: threading.Event) -> None:
        self.server.start()
        self.report_ok(f"listening on {self.server.url}")
        # said once: how long a deal may hold a seller's relay here (the platform EO sets no bound)
        self.log.log(NOTICE, "stand-in EO: a seller's Accept waits up to %g s for the human side's %s, as the platform EO "
                     "waits without end", self.settings.confirm_wait_s, ep.CONFIRM_ACCEPT)
        if self.auto_start_round:
            self._start_round(stop)
        wait_for_stop(stop)
        self.server.stop()

    def _start_round(self, stop: threading.Event) -> None:
        missing = wait_for_services(service_urls(auto_round(self.settings)), self.settings.wait_for_services_s, stop)
        if stop.is_set():
            return
        engine = self.server.engine
        chosen = self.settings.round_id
        if chosen is not None and engine.knows(chosen):
            self.log.warning("starting round %s as [standin] round_id says, although this stand-in ran it already", chosen)
        body = auto_round(self.settings, engine.free_round_id() if chosen is None else chosen)
        if missing:
            self.log.warning("starting round %s although nothing answers at %s", body.roundId, ", ".join(missing))
        try:
            start_round_sync(self.server.url, body)
        except RoundStartError as exc:
            self.report_error(f"could not start round {body.roundId}: {exc}")
            return
        durations = body.durations
        self.round_note = (
            f"round {body.roundId} started (warm-up {durations.warmUp} s, round {durations.round} s, "
            f"post {durations.post} s)"
        )
        self.log.info("%s", self.round_note)
        self.report_ok(f"listening on {self.server.url}; {self.round_note}")
