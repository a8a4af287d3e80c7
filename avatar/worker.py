"""The Avatar Controller as a worker: MQTT bus + speaker + HTTP service, stopped like the others."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from avatar.app import PageSources
from avatar.books.ledger import LEDGER_FILE
from avatar.buyer.routes import BUYER_PATH
from avatar.competition.control import RoundControl
from avatar.competition.settings import RoundsSettings, TournamentSettings
from avatar.controller import AvatarController
from avatar.operator import CONSOLE_PATH
from avatar.room_ledger import open_ledger_or_memory
from avatar.server import AvatarServer
from avatar.settings import AvatarSettings
from hardware.speaker import Speaker, WavSink
from hardware.speaker_sinks import open_sink
from hardware.speech_process import SpeechProcess
from humaine_platform.models import ServiceEntry
from humaine_platform.service_map import ServiceMapError, resolve_eo_url
from humaine_platform.wiring import reachable_host
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.logs import NOTICE
from workers.runtime.worker import Worker, wait_for_stop
from workers.runtime.worker_ids import AVATAR as AVATAR_WORKER

SPEECH_DIR = "speech"
"""Where, under ``data_dir``, speech goes as WAV files when there is no sound card."""


class AvatarWorker(Worker):
    """Serves the EO's human-side endpoints until stopped.

    Construction checks everything that can be missing (espeak-ng, the voices, the audio
    device or WAV directory, the port) and raises :class:`hardware.speaker.SpeakerError` or
    :class:`avatar.server.ServerError` with a readable line before anything connects."""

    name: ClassVar[str] = AVATAR_WORKER
    serves_http: ClassVar[bool] = True

    def __init__(self, config: Config, worker_id: str | None = None) -> None:
        super().__init__(config, worker_id)
        self.settings = config.section(AvatarSettings)
        engines = SpeechProcess() if self.settings.speech_process else None  # its child starts at check()
        sink = open_sink(self.settings.speaker, fallback_dir=config.core.data_dir / SPEECH_DIR)
        if isinstance(sink, WavSink) and sink.instead_of:
            self.log.log(NOTICE, "no sound card (%s): the avatars' speech goes to WAV files in %s", sink.instead_of,
                         config.core.data_dir / SPEECH_DIR)
        speaker = Speaker(sink, engines=engines)
        self.ledger = open_ledger_or_memory(config.core.data_dir / LEDGER_FILE)
        try:
            eo_url: str | None = resolve_eo_url(config.section(OrchestratorSettings))
        except ServiceMapError:
            eo_url = None  # no EO to hold the books against (said where the room needs one)
        self.controller = AvatarController(
            self.settings, config.core.avatars, self.bus, speaker, source=self.worker_id, ledger=self.ledger, eo_url=eo_url
        )
        self.rounds = RoundControl(
            self.ledger, config.core.avatars, rounds=config.section(RoundsSettings), tournament=config.section(TournamentSettings),
            eo=config.section(OrchestratorSettings), data_dir=config.core.data_dir,
            human=ServiceEntry(host=reachable_host(self.settings.host), port=self.settings.port),
            alert=self.controller.alert, refresh=self.controller.refresh_round,
        )
        try:
            self.controller.check()
            pages = PageSources(config, self.bus, lambda: self.bus.connected, self.rounds)
            self.server = AvatarServer(self.controller, self.settings.host, self.settings.port, pages)
            self.rounds.serve_at(ServiceEntry(host=reachable_host(self.settings.host), port=self.server.port))
        except BaseException:
            speaker.close()  # a worker that cannot start leaves no speech process behind
            raise

    def serve(self) -> None:
        """Start the HTTP service, then say ``online`` (only now can the EO reach us)."""
        self.server.start()
        self.report_ok(f"listening on {self.server.url}")

    def run(self, stop: threading.Event) -> None:
        self.serve()
        if self.settings.display:
            self.log.info("operator console: %s%s", self.server.url, CONSOLE_PATH)
            self.log.info("buyer's page: %s%s", self.server.url, BUYER_PATH)
        try:
            wait_for_stop(stop)
        finally:
            self.server.stop()

    def close(self) -> None:
        super().close()
        self.ledger.close()

    def health(self) -> dict[str, Any]:
        figures = super().health()
        if hasattr(self, "controller"):
            figures.update(self.controller.health())
        return figures
