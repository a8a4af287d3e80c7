"""The platform's real utility generator (Node.js) as a process of the test session.

The set-up step caches its tree with its ``node_modules`` (``scripts/fetch_assets.py``). It needs no
configuration of its own (``recipe.json`` and ``distribution_parameters/`` are ``require``d from
beside ``utility-generator.js``), so it runs from the cached tree itself, on a free port, bound to
127.0.0.1 by the loopback preload. The suite's port of its buyer rules
(``humaine_platform.buyer_utility``) is held equal to it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from humaine_platform import endpoints as ep
from scripts.platform_services import utility_generator
from tests.support import loopback
from tests.support.helpers import free_port, wait_for
from tests.support.real_eo import NodeProcess, loopback_preload

SCRIPT = "utility-generator.js"


def utility_generator_tree() -> Path:
    """The cached utility generator's tree (fetched by the set-up step's own function when missing)."""
    return utility_generator()


@dataclass
class RealUtilityGenerator(NodeProcess):
    """One utility generator process on 127.0.0.1; its log goes to ``workdir``."""

    workdir: Path
    port: int = field(default_factory=free_port)
    level: int = 1
    """The generator's ``--level``: 2 logs every body it gets (a lot)."""
    process: subprocess.Popen[bytes] | None = None
    http: httpx.Client | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "utility-generator.log"

    def command(self) -> list[str]:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed (scripts/setup.sh installs nodejs)")
        return [node, "-r", str(loopback_preload()), SCRIPT, "--port", str(self.port), "--level", str(self.level)]

    def start(self, timeout: float = 20.0) -> RealUtilityGenerator:
        tree = utility_generator_tree()
        command = self.command()
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            # cwd: the tree, where its GET /checkAllocation reads ./test_data
            self.process = subprocess.Popen(command, cwd=tree, stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: self.answers() or not self.alive(), timeout=timeout) or not self.alive():
            self.stop()
            raise RuntimeError(f"the real utility generator did not start on {self.url}:\n{self.log_tail()}")
        self.http = loopback.client(base_url=self.url, timeout=10.0)
        return self

    def answers(self) -> bool:
        try:
            return loopback.get(f"{self.url}{ep.GENERATE_UTILITY}/{ep.BUYER_ROLE}", timeout=0.5).status_code == 200
        except httpx.HTTPError:
            return False


    # -- its routes ---------------------------------------------------------------------------------
    def _client(self) -> httpx.Client:
        assert self.http is not None, "start() first"
        return self.http

    def generate_utility(self, role: str = "buyer") -> dict[str, Any]:
        """``GET /generateUtility/<role>``: ``{"currencyUnit", "utility": {...}}``."""
        answer = self._client().get(f"{ep.GENERATE_UTILITY}/{role}")
        answer.raise_for_status()
        return answer.json()

    def calculate_utility(self, utility: dict[str, Any], products: dict[str, Any], role: str = "buyer") -> httpx.Response:
        """``POST /calculateUtility/<role>`` with competition-ui's body (the answer unread: some are errors)."""
        body = {"currencyUnit": "USD", "utility": utility, "bundle": {"products": products}}
        return self._client().post(f"{ep.CALCULATE_UTILITY}/{role}", json=body)

    def check_allocation(self, ingredients: dict[str, Any], products: dict[str, Any]) -> httpx.Response:
        """``POST /checkAllocation`` with competition-ui's body."""
        return self._client().post(ep.CHECK_ALLOCATION, json={"ingredients": ingredients, "allocation": {"products": products}})

    def stop(self) -> None:
        if self.http is not None:
            self.http.close()
            self.http = None
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
