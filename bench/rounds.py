"""Round control benchmark: prints ONE JSON line.

* **Next round -> warm-up shown.** The room (``humaine-env avatar``, its own process, on a real
  mosquitto) on the platform's real EO with its real utility generator and a roster of three agents
  started per round by their ``command`` (``tests/support/tournament_agent.py``): from the console's
  ``POST /operator/round/next`` until the console's feed shows the round's warm-up (the schedule's
  next round, its utilities drawn by the generator, its two agent programs started and listening,
  ``/initializeRound`` and ``/startRound`` on the EO, its metadata back to the room). Each round is
  short and the next starts once its totals are in, as at the venue. p50/p95/max ms over
  ``--rounds``. Target: p95 <= 2000 ms.
* **Planning** the schedule of 20 agents and 40 buyers (760 rounds) and storing it in a ledger on
  disk, as ``humaine-env tournament plan`` does: the fastest of ``--repeat`` runs, ms. Target: <= 1000 ms.
* **Standings** recomputed from a ledger with ``--finished`` scored rounds of a roster (what the
  console does on each round's totals): the fastest of ``--repeat`` runs, ms. Target: <= 50 ms.

Usage: ``.venv/bin/python bench/rounds.py [--rounds N] [--finished R] [--repeat K]`` (needs mosquitto
and the platform's services the set-up step caches).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# run as `python bench/rounds.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from websockets.sync.client import connect as ws_connect

from avatar.books.ledger import LEDGER_FILE
from avatar.books.records import day_of
from avatar.competition.settings import AgentEntry, TournamentSettings
from avatar.competition.store import CompetitionStore, SeatPlan
from avatar.competition.tournament import Tournament
from avatar.operator.routes import CONSOLE_FEED_PATH, NEXT_ROUND_PATH
from avatar.room_ledger import open_ledger
from bench.stats import HIGHER, percentile
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.helpers import MosquittoBroker, free_port, wait_for
from tests.support.real_eo import RealEO
from tests.support.real_utility_generator import RealUtilityGenerator
from workers.runtime.messages import now_ms

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "humaine_env"]
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
"""Processes started here run this checkout's code, whatever copy of the suite is installed."""
AGENT = ROOT / "tests" / "support" / "tournament_agent.py"
DURATIONS = {"warmUp": 0.5, "round": 1.0, "post": 0.2}
AVATARS = ("Celia", "Watson")
BIG_AGENTS = 20
BIG_BUYERS = 40
START_TIMEOUT_S = 60.0


class Feed:
    """The console's feed, read on a thread: each round event with the time it arrived."""

    def __init__(self, url: str) -> None:
        self.ws = ws_connect(url, max_size=None)
        self.ws.recv(timeout=10)  # the snapshot
        self.rounds: list[tuple[float, dict[str, Any]]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                event = json.loads(self.ws.recv())
                if event.get("type") == "round":
                    with self._cond:
                        self.rounds.append((time.perf_counter(), event))
                        self._cond.notify_all()
        except Exception:
            return

    def wait(self, round_id: str, phase: str, timeout: float = 30.0) -> float:
        """When the feed first showed ``round_id`` in ``phase`` (perf_counter seconds)."""
        with self._cond:
            found = self._cond.wait_for(lambda: any(e["round_id"] == round_id and e["phase"] == phase for _, e in self.rounds),
                                        timeout)
            if not found:
                raise TimeoutError(f"round {round_id} never showed {phase} on the console")
            return next(at for at, e in self.rounds if e["round_id"] == round_id and e["phase"] == phase)

    def close(self) -> None:
        self.ws.close()


def _config(path: Path, tmp: Path, broker_url: str, port: int, eo: RealEO, generator: RealUtilityGenerator) -> Path:
    agents = "".join(
        f"[tournament.agents.{name}]\ncommand = "
        f"{json.dumps([sys.executable, str(AGENT), '--port', '{port}', '--round', '{round}', '--agent', '{agent}', '--eo', eo.url])}\n"
        for name in ("A", "B", "C"))
    path.write_text(
        f'environment_uuid = "{eo.environment_uuid}"\ndata_dir = "{tmp / "data"}"\n'
        f'[broker]\nurl = "{broker_url}"\nmode = "external"\n'
        f'[avatar]\nport = {port}\nspeaker = "wav-fast:{tmp / "wav"}"\nconfirm_accept = "auto"\n'
        f'[eo]\nurl = "{eo.url}"\nutility_generator_url = "{generator.url}"\n'
        f'[tournament]\nbuyers = ["Ada", "Ben"]\n{agents}'
    )
    return path


def next_round_to_warm_up(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        broker = MosquittoBroker(tmp / "mosquitto").start()
        generator = RealUtilityGenerator(tmp / "utility-generator").start()
        port = free_port()
        eo = RealEO(tmp / "eo", human_port=port, utility_generator_port=generator.port).start()
        config = _config(tmp / "room.toml", tmp, broker.url, port, eo, generator)
        avatar = subprocess.Popen([*CLI, "avatar", "--config", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  cwd=tmp, env=CHILD_ENV)
        url = f"http://127.0.0.1:{port}"
        try:
            if not wait_for(lambda: _answers(url), START_TIMEOUT_S):
                raise RuntimeError("the Avatar Controller did not start")
            feed = Feed(f"ws://127.0.0.1:{port}{CONSOLE_FEED_PATH}")
            shown: list[float] = []
            with loopback.client(timeout=60) as http:
                for number in range(1, rounds + 1):
                    started = time.perf_counter()
                    answer = http.post(url + NEXT_ROUND_PATH, json={"durations": DURATIONS})
                    if answer.status_code != 200:
                        raise RuntimeError(f"Next round refused: {answer.text}")
                    shown.append((feed.wait(f"r{number}", "warmup") - started) * 1000)
                    feed.wait(f"r{number}", "ended", timeout=60)  # the next round starts once this one's totals are in
            feed.close()
            alive = eo.alive()
        finally:
            avatar.send_signal(signal.SIGTERM)
            avatar.wait(30)
            eo.stop()
            generator.stop()
            broker.stop()
    return {"rounds": rounds, "p50_ms": round(statistics.median(shown), 1), "p95_ms": percentile(shown, 95, 1, HIGHER),
            "max_ms": round(max(shown), 1), "eo_alive": alive}


def _answers(url: str) -> bool:
    try:
        return loopback.get(url + ep.HEALTH, timeout=1).status_code == 200
    except Exception:
        return False


def _roster(agents: int, buyers: int) -> TournamentSettings:
    return TournamentSettings(agents={f"agent{i}": AgentEntry(url=f"http://127.0.0.1:{15000 + i}") for i in range(agents)},
                              buyers=[f"buyer{i}" for i in range(buyers)], seed=1)


def planning_ms(repeat: int) -> tuple[float, int]:
    """The fastest plan-and-store of the big roster's first cycle, and its number of rounds."""
    best, count = float("inf"), 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as name:
            ledger = open_ledger(Path(name) / LEDGER_FILE)
            try:
                started = time.perf_counter()
                count = len(Tournament(CompetitionStore(ledger), _roster(BIG_AGENTS, BIG_BUYERS), AVATARS).plan())
                best = min(best, (time.perf_counter() - started) * 1000)
            finally:
                ledger.close()
    return round(best, 1), count


def standings_ms(finished: int, repeat: int) -> float:
    """The fastest standings of a roster's ``finished`` scored rounds (a ledger on disk)."""
    with tempfile.TemporaryDirectory() as name:
        ledger = open_ledger(Path(name) / LEDGER_FILE)
        try:
            tournament = Tournament(CompetitionStore(ledger), _roster(BIG_AGENTS, BIG_BUYERS), AVATARS)
            store = tournament.store
            for slot in tournament.plan()[:finished]:
                seats = [SeatPlan(avatar, seat.agent, "http://127.0.0.1:1", seat.utility) for avatar, seat in zip(AVATARS, slot.slot.seats,
                                                                                                               strict=True)]
                round_id = store.free_round_id(day_of(now_ms()))
                store.add_launch(round_id, now_ms(), slot.slot.buyer, slot.id, seats, {}, DURATIONS, "platform")
                key = ledger.begin_round(round_id, DURATIONS, 50.0, "USD", "warmup", now_ms(), None).key
                ledger.set_totals(key, {"Human": {"utility": {"value": 12.5}}, "Celia": {"utility": {"value": 1.25}},
                                        "Watson": {"utility": {"value": 0.5}}}, now_ms())
                store.set_slot(slot.id, "played")
            best = float("inf")
            for _ in range(repeat):
                started = time.perf_counter()
                table = tournament.standings()
                best = min(best, (time.perf_counter() - started) * 1000)
            assert sum(a.rounds for a in table.agents) == 2 * finished
        finally:
            ledger.close()
    return round(best, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds started with Next round")
    parser.add_argument("--finished", type=int, default=300, help="scored rounds the standings are computed from")
    parser.add_argument("--repeat", type=int, default=5, help="runs of the planning and of the standings")
    args = parser.parse_args()
    plan_ms, plan_rounds = planning_ms(args.repeat)
    results = {
        "bench": "rounds",
        "next_round_to_warm_up": next_round_to_warm_up(args.rounds),
        "plan_ms": plan_ms,
        "plan_agents": BIG_AGENTS,
        "plan_buyers": BIG_BUYERS,
        "plan_rounds": plan_rounds,
        "standings_ms": standings_ms(args.finished, args.repeat),
        "standings_rounds": args.finished,
    }
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
