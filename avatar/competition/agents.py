"""The agent programs of each round: started before it on a free port, stopped after its totals.

The platform's competition manager starts each round's two agents from their working folders with
``--port`` and the round's id, and kills them once the round is scored; the room does the same for
every agent of the roster that has a ``command`` (:class:`~avatar.competition.settings.AgentEntry`).
Each program runs in a session of its own (``start_new_session``), writes its output to a log file
per round, and is recorded in the ledger as it starts (pid, port, log): an Avatar Controller that
restarts mid-round leaves it running - the EO's round goes on - and takes it over from there, and
one stopped cleanly stops it. An agent that answers at a ``url`` is only checked to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from avatar.competition.settings import AgentEntry, TournamentSettings
from avatar.competition.store import AgentRun, CompetitionStore, Launch
from humaine_platform.reachable import answers_soon
from workers.runtime.instance import pid_running
from workers.runtime.messages import now_ms
from workers.runtime.ports import free_port

log = logging.getLogger(__name__)

AGENTS_DIR: Final = "agents"
"""Under ``data_dir``: each agent's default working folder, and ``logs/`` with one file per round."""
LOGS_DIR: Final = "logs"
POLL_S: Final = 0.1
LOG_TAIL_BYTES: Final = 2000
START_SLACK_MS: Final = 5000
"""How far the start time of a process found by its pid may be from the one recorded for it
before it is taken for another program that got the same pid."""


class AgentStartError(Exception):
    """An agent could not be had for a round; the message says which and why, in one line."""


@dataclass(frozen=True)
class RunningAgent:
    """An agent program of a round, listening."""

    run_id: int
    agent: str
    port: int
    url: str


def _tail(path: Path) -> str:
    """The last line the program wrote, for the one line that says why it failed."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
            lines = [line.strip() for line in file.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def _started_ms(pid: int) -> int | None:
    """When process ``pid`` started (Linux ``/proc``), or None when that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    except (OSError, StopIteration, IndexError, ValueError):
        return None
    return round((boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")) * 1000)


def _alive(run: AgentRun) -> bool:
    """Whether the program ``run`` started still runs (not another one under its reused pid)."""
    if run.pid is None or not pid_running(run.pid):
        return False
    started = _started_ms(run.pid)
    return started is None or abs(started - run.started_ms) <= START_SLACK_MS


def _signal_name(number: int) -> str:
    """``SIGKILL`` for 9; a real-time signal (34-64), which has no name of its own, by number."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


class AgentPrograms:
    """Starts, watches and stops the agent programs of the rounds (one per room)."""

    def __init__(self, store: CompetitionStore, settings: TournamentSettings, data_dir: Path) -> None:
        self.store = store
        self.settings = settings
        self.data_dir = data_dir
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        """Programs this process started, by run id (adopted ones are known by pid alone)."""

    def folder_of(self, agent: str, entry: AgentEntry) -> Path:
        return Path(entry.folder) if entry.folder else self.data_dir / AGENTS_DIR / agent

    def log_of(self, launch: Launch, agent: str) -> Path:
        return self.data_dir / AGENTS_DIR / LOGS_DIR / f"{launch.day}-{launch.round_id}-{agent}.log"

    async def start(self, launch: Launch, agent: str, avatar: str, entry: AgentEntry) -> RunningAgent:
        """Start ``agent``'s command for ``launch``'s round, playing ``avatar``, and wait until it
        listens on its port; :class:`AgentStartError` when it cannot start, exits or does not
        listen within ``[tournament] agent_start_s`` (it is stopped then)."""
        port = free_port()
        values = {"port": port, "round": launch.round_id, "avatar": avatar, "agent": agent}
        argv = [part.format(**values) for part in entry.command]
        folder = self.folder_of(agent, entry)
        log_path = self.log_of(launch, agent)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with log_path.open("ab") as output:
                process = subprocess.Popen(argv, cwd=folder, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                           start_new_session=True)
        except OSError as exc:
            raise AgentStartError(f"agent {agent}: cannot run {argv[0]!r} in {folder}: {exc.strerror or exc}") from None
        run_id = self.store.add_agent_run(launch.id, agent, avatar, process.pid, port, str(log_path), now_ms())
        self._children[run_id] = process
        url = f"http://{self.settings.agent_host}:{port}"
        deadline = time.monotonic() + self.settings.agent_start_s
        while True:
            code = process.poll()
            if code is not None:
                self._ended(run_id, "exited", f"exit status {code}")
                tail = _tail(log_path)
                raise AgentStartError(f"agent {agent}: its command exited with status {code} before it listened on port {port}"
                                      f"{': ' + tail if tail else ''} (log: {log_path})")
            if await answers_soon(f"http://127.0.0.1:{port}"):
                log.info("agent %s plays %s in round %s: pid %s on port %s (log %s)", agent, avatar, launch.round_id, process.pid,
                         port, log_path)
                return RunningAgent(run_id, agent, port, url)
            if time.monotonic() >= deadline:
                await asyncio.to_thread(self._stop_one, run_id, process.pid, "stopped: it did not listen in time")
                raise AgentStartError(f"agent {agent}: not listening on port {port} after {self.settings.agent_start_s:g} s "
                                      f"([tournament] agent_start_s; log: {log_path})")
            await asyncio.sleep(POLL_S)

    def _ended(self, run_id: int, state: str, outcome: str) -> None:
        self._children.pop(run_id, None)
        self.store.end_agent_run(run_id, "exited" if state == "exited" else "stopped", outcome, now_ms())

    def _stop_one(self, run_id: int, pid: int | None, outcome: str) -> None:
        self._stop_together([(run_id, pid)], outcome)

    def _stop_together(self, runs: list[tuple[int, int | None]], outcome: str) -> None:
        """SIGTERM to each program's session, SIGKILL to those still running after ``[tournament]
        agent_stop_s`` (blocking, one deadline for them all)."""
        for _run_id, pid in runs:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.agent_stop_s
        running = [(run_id, pid) for run_id, pid in runs if pid is not None]
        while running and time.monotonic() < deadline:
            time.sleep(POLL_S)
            running = [(run_id, pid) for run_id, pid in running if self._running(self._children.get(run_id), pid)]
        for run_id, pid in running:
            log.warning("agent program %s did not stop in %g s; killing it", pid, self.settings.agent_stop_s)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            process = self._children.get(run_id)
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(self.settings.agent_stop_s)
        for run_id, _pid in runs:
            self._ended(run_id, "stopped", outcome)

    @staticmethod
    def _running(process: subprocess.Popen[bytes] | None, pid: int) -> bool:
        return process.poll() is None if process is not None else pid_running(pid)

    def stop_round(self, launch_id: int, why: str) -> int:
        """Stop every program still running for a round (blocking: call it off the event loop)."""
        return self.stop([r for r in self.store.agent_runs(launch_id) if r.state == "running"], why)

    def stop(self, runs: list[AgentRun], why: str) -> int:
        """Stop these programs, together; how many."""
        # one this process started, or one an earlier run of it started that still runs under its pid
        self._stop_together([(run.id, run.pid if run.id in self._children or _alive(run) else None) for run in runs],
                            f"stopped: {why}")
        return len(runs)

    def exited(self) -> list[tuple[AgentRun, str]]:
        """Programs that ended on their own since the last look, each with how."""
        found = []
        for run in self.store.running_agents():
            process = self._children.get(run.id)
            if process is not None:
                code = process.poll()
                if code is None:
                    continue
                how = f"exit status {code}" if code >= 0 else f"killed by signal {_signal_name(-code)}"
            elif _alive(run):
                continue
            else:
                how = "ended (its status is unknown: another run of the controller started it)"
            self._ended(run.id, "exited", how)
            found.append((run, how))
        return found
