"""The platform's real Environment Orchestrator (Node.js) as a process of the test session.

The set-up step caches the EO's tree with its ``node_modules`` (``scripts/fetch_assets.py``).
The EO reads ``appSettings.json`` from beside ``environment-orchestrator.js`` (``require``), so
each instance gets a folder of its own: the EO's few source files copied, ``node_modules``
symlinked, and its own ``appSettings.json`` that registers the human-side service under test.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from humaine_platform.endpoints import VIEW_QUEUE
from humaine_platform.wiring import PROBE_ROUND, eo_app_settings
from scripts.platform_services import LOOPBACK_PRELOAD, environment_orchestrator
from tests.support import loopback
from tests.support.helpers import free_port, wait_for

EO_SCRIPT = "environment-orchestrator.js"
EO_SOURCES = (EO_SCRIPT, "enforce-rules.js", "package.json")


def eo_tree() -> Path:
    """The cached EO tree, fetched when missing by the set-up step's own function (the tests
    use the same fetchers, so a missing tree is fetched the same way)."""
    return environment_orchestrator()


def loopback_preload() -> Path:
    """``scripts/loopback-preload.js``: makes the platform's services bind 127.0.0.1 only."""
    return LOOPBACK_PRELOAD


class NodeProcess:
    """What the tests ask of any of the platform's Node.js services they start: is it alive,
    and the end of its log (for the message of a failed test)."""

    process: subprocess.Popen[bytes] | None
    log_file: Path

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class RealEO(NodeProcess):
    """One EO process on 127.0.0.1 whose human-side service is ``human_host:human_port``."""

    workdir: Path
    human_port: int
    human_host: str = "127.0.0.1"
    environment_uuid: str = "abcdefg"
    response_time_limit_ms: int = 4000
    can_talk_at_once: bool = True
    human_budget: float = 50.0
    port: int = field(default_factory=free_port)
    utility_generator_port: int = field(default_factory=free_port)
    """Nothing listens there: the utilities of the round totals are null, as at a venue
    whose utility generator is away."""
    standalone: bool = False
    """The EO's ``standalone`` mode: ``/startRound`` takes the whole round, every round is "true"."""
    beside: dict[str, int] = field(default_factory=dict)
    """More human-side services the EO calls with everything (name -> port on 127.0.0.1), as a
    venue's competition-ui beside the Avatar Controller: a test's witness of what the EO sends."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "eo.log"

    @property
    def app_settings_file(self) -> Path:
        return self.workdir / "appSettings.json"

    def app_settings(self) -> dict[str, Any]:
        settings = eo_app_settings(
            self.human_host,
            self.human_port,
            environment_uuid=self.environment_uuid,
            eo_port=self.port,
            response_time_limit_ms=self.response_time_limit_ms,
            can_talk_at_once=self.can_talk_at_once,
            human_budget=self.human_budget,
            utility_generator_port=self.utility_generator_port,
        )
        settings["standalone"] = self.standalone
        for name, port in self.beside.items():
            settings["negotiatorsInfo"].append({"name": name, "type": "human", "role": "buyer"})
            settings["serviceMap"][name] = {"protocol": "http", "host": "127.0.0.1", "port": port}
        return settings

    def _prepare(self) -> None:
        tree = eo_tree()
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in EO_SOURCES:
            shutil.copy2(tree / name, self.workdir / name)
        modules = self.workdir / "node_modules"
        if not modules.exists():
            modules.symlink_to(tree / "node_modules", target_is_directory=True)
        self.app_settings_file.write_text(json.dumps(self.app_settings(), indent=2))

    def start(self, timeout: float = 20.0) -> RealEO:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed (scripts/setup.sh installs nodejs)")
        self._prepare()
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                [node, "-r", str(loopback_preload()), EO_SCRIPT, "--port", str(self.port), "--level", "1"],
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if not wait_for(lambda: self.answers() or not self.alive(), timeout=timeout) or not self.alive():
            self.stop()
            raise RuntimeError(f"the real EO did not start on {self.url}:\n{self.log_tail()}")
        return self

    def answers(self) -> bool:
        try:
            loopback.get(f"{self.url}{VIEW_QUEUE}/{PROBE_ROUND}", timeout=0.5)
        except httpx.HTTPError:
            return False
        return True


    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
