"""The stand-in EO as a suite worker: its HTTP service plus a retained MQTT status, so the
suite's status table shows it like every other worker (it needs no broker to serve)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from standins.eo.auto import RoundStartError, service_urls, start_round_sync, wait_for_services
from standins.eo.round_setup import auto_round
from standins.eo.server import StandinServer
from standins.eo.settings import StandinSettings
from workers.runtime.config import Config
from workers.runtime.worker import Worker, wait_for_stop


class StandinWorker(Worker):
    name: ClassVar[str] = "orchestrator"
    serves_http: ClassVar[bool] = True

    def __init__(self, config: Config, auto_start_round: bool = False, worker_id: str | None = None) -> None:
        super().__init__(config, worker_id)
        self.settings = config.section(StandinSettings)
        if not self.settings.human_token:  # the room's own Avatar Controller guarded by a token
            from avatar.settings import AvatarSettings

            avatar_token = config.section(AvatarSettings).token
            if avatar_token:
                self.settings = self.settings.model_copy(update={"human_token": avatar_token})
        self.auto_start_round = auto_start_round or self.settings.auto_round
        self.server = StandinServer(self.settings)  # binds now: a busy port fails before start-up
        self.round_note = ""

    def health(self) -> dict[str, Any]:
        engine = self.server.app.state.orchestrator
        return {**super().health(), "url": self.server.url, "rounds": engine.summary()["rounds"]}

    def run(self, stop: threading.Event) -> None:
        self.server.start()
        self.report_ok(f"listening on {self.server.url}")
        if self.auto_start_round:
            self._start_round(stop)
        wait_for_stop(stop)
        self.server.stop()

    def _start_round(self, stop: threading.Event) -> None:
        body = auto_round(self.settings)
        missing = wait_for_services(service_urls(body), self.settings.wait_for_services_s, stop)
        if stop.is_set():
            return
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
