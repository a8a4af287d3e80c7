"""Next round from the room: the schedule's rounds on the stand-in EO with agents started per round
by their command, and every refusal in one line that uses nothing of the schedule.

The room is a real Avatar Controller (in-process, on its own port) with a real stand-in EO and
real agent programs (``tests/support/tournament_agent.py``, started by the room's ``command``);
the refusals are the round control alone against an EO that answers (or none), an agent that
does not, a command that exits, a utility generator that is down.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from avatar.books.records import day_of
from avatar.competition.control import RoundControl
from avatar.competition.settings import AgentEntry, RoundsSettings, TournamentSettings
from avatar.competition.store import CompetitionStore
from avatar.harness import LocalAvatar
from avatar.operator.routes import END_ROUND_PATH, NEXT_ROUND_PATH
from avatar.room_ledger import open_ledger
from humaine_platform.models import ServiceEntry
from standins.eo import StandinServer, StandinSettings
from standins.recorder import RecordingServer
from tests.support import loopback
from tests.support.helpers import free_port, run_async, wait_for
from tests.support.paths import ROOT
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.instance import pid_running
from workers.runtime.messages import now_ms

AGENT = ROOT / "tests" / "support" / "tournament_agent.py"
DURATIONS = {"warmUp": 0.0, "round": 1.5, "post": 0.0}
BUYERS = ["Ada", "Ben"]


def agent_command(eo_url: str, margin: float) -> list[str]:
    return [sys.executable, str(AGENT), "--port", "{port}", "--round", "{round}", "--agent", "{agent}", "--eo", eo_url,
            "--margin", str(margin)]


@pytest.fixture
def room(make_config: Callable[..., Config], mosquitto: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A room with a roster of three agents started per round, on the stand-in EO."""
    eo_port, avatar_port = free_port(), free_port()
    eo_url = f"http://127.0.0.1:{eo_port}"
    agents = {name: {"command": agent_command(eo_url, margin)} for name, margin in (("A", 1.0), ("B", 0.5), ("C", 0.25))}
    config = make_config(mosquitto.url, **{
        "avatar.port": avatar_port, "avatar.speaker": f"wav-fast:{tmp_path / 'wav'}", "avatar.confirm_accept": "auto",
        "avatar.eo_books_check_s": 0.5,
        "eo.url": eo_url, "tournament.buyers": BUYERS, "tournament.agents": agents, "tournament.seed": 4,
    })
    eo = StandinServer(StandinSettings(port=eo_port, human_port=avatar_port, rules="real_eo")).start()
    local = LocalAvatar(config).start()
    room = {"config": config, "eo": eo, "avatar": local}
    try:
        yield room
    finally:
        local.stop()
        room["eo"].stop()


def _next(url: str, durations: dict[str, float] = DURATIONS) -> dict[str, Any]:
    answer = loopback.post(url + NEXT_ROUND_PATH, json={"durations": durations}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_schedules_rounds_start_their_agents_and_stop_them_after_the_totals_through_a_restart(room: dict[str, Any]) -> None:
    config, local = room["config"], room["avatar"]
    alerts: list[tuple[str, str]] = []
    local.controller.on_alert(lambda kind, text: alerts.append((kind, text)))
    store = CompetitionStore(local.controller.ledger)
    roster = local.worker.rounds.competition.roster
    planned = store.slots(roster) if roster else []
    assert len(planned) == 6 and {s.state for s in planned} == {"planned"}  # planned when the controller starts
    played = []
    for number in (1, 2):
        started = _next(local.url)
        schedule = store.slots(roster)
        slot = schedule[number - 1]
        assert started["roundId"] == f"r{number}" and started["buyer"] == BUYERS[(number - 1) % 2] == slot.slot.buyer
        assert [s["agent"] for s in started["seats"]] == [seat.agent for seat in slot.slot.seats]
        assert wait_for(lambda rid=started["roundId"]: local.controller.ledger.round_for(rid) is not None, 10)
        rnd = local.controller.ledger.round_for(started["roundId"])
        assert rnd is not None and rnd.buyer == slot.slot.buyer
        assert wait_for(lambda rid=started["roundId"]: (local.controller.ledger.round_for(rid).totals is not None), 20)
        launch = store.launch_of(local.controller.ledger.round_for(started["roundId"]))
        assert launch is not None
        # its agent programs are stopped after the totals, by the room
        assert wait_for(lambda lid=launch.id: all(r.state == "stopped" for r in store.agent_runs(lid)), 15), store.agent_runs(launch.id)
        runs = store.agent_runs(launch.id)
        assert sorted(r.agent for r in runs) == sorted(seat.agent for seat in slot.slot.seats)
        for run in runs:
            told = Path(run.log).read_text()
            assert '"path": "/setUtility"' in told and f'"name": "{run.avatar}"' in told, told
        played.append(started)
    assert wait_for(lambda: [s.state for s in store.slots(roster)][:2] == ["played", "played"], 10)

    # the controller restarted between two rounds: the schedule goes on where it was
    before = local.worker.rounds.view()
    standings = local.worker.rounds.standings().body()
    assert [a["rounds"] for a in standings["agents"]] != [0, 0, 0]
    local.stop()
    again = LocalAvatar(config).start()
    room["avatar"] = again
    try:
        assert again.worker.rounds.view()["next"] == before["next"]
        assert again.worker.rounds.standings().body() == standings
        third = _next(again.url)
        assert third["roundId"] == "r3" and third["buyer"] == before["next"]["buyer"]
        again_alerts: list[tuple[str, str]] = []
        again.controller.on_alert(lambda kind, text: again_alerts.append((kind, text)))
        # an agent program that dies mid-round is said on the console
        ledger = again.controller.ledger
        assert wait_for(lambda: ledger.round_for("r3") is not None and ledger.round_for("r3").phase == "round", 10)
        launch = CompetitionStore(ledger).launch_of(ledger.round_for("r3"))
        victim = next(r for r in CompetitionStore(ledger).agent_runs(launch.id) if r.state == "running")
        os.kill(victim.pid, signal.SIGKILL)
        assert wait_for(lambda: any(kind == "agent_exited" for kind, _ in again_alerts), 10), again_alerts
        text = next(text for kind, text in again_alerts if kind == "agent_exited")
        assert f"agent {victim.agent} ({victim.avatar}) exited during round r3: killed by signal SIGKILL" in text
    finally:
        again.stop()
        room["avatar"] = local  # stopped already: the fixture's stop is a second one
        local.stop = lambda: None  # type: ignore[method-assign]
    assert not alerts


def test_a_round_the_eo_loses_is_played_again_at_the_end_of_the_schedule_once(room: dict[str, Any]) -> None:
    """The stand-in restarts mid-round and forgets it: the room marks it lost, stops its agents,
    and puts the scheduled round back at the end of the schedule; the next round is the next one."""
    local = room["avatar"]
    alerts: list[tuple[str, str]] = []
    local.controller.on_alert(lambda kind, text: alerts.append((kind, text)))
    store = CompetitionStore(local.controller.ledger)
    roster = local.worker.rounds.competition.roster or ""
    first, second = store.slots(roster)[:2]
    started = _next(local.url, {"warmUp": 0.0, "round": 60.0, "post": 0.0})
    ledger = local.controller.ledger
    assert wait_for(lambda: ledger.round_for("r1") is not None and ledger.round_for("r1").phase == "round", 10)
    assert wait_for(lambda: (local.controller.health()["books_check"] or {}).get("found") in ("agree", "no totals yet"), 10)
    settings = room["eo"].settings
    room["eo"].stop()
    room["eo"] = StandinServer(settings).start()  # the EO restarted: it knows no round
    assert wait_for(lambda: ledger.round_for("r1").phase == "lost", 15), ledger.round_for("r1")
    assert wait_for(lambda: any("is played again at the end of the schedule" in text for _, text in alerts), 10), alerts
    launch = store.launch_of(ledger.round_for("r1"))
    assert wait_for(lambda: all(r.state == "stopped" for r in store.agent_runs(launch.id)), 15)
    schedule = store.slots(roster)
    assert store.slot(first.id).state == "lost"  # type: ignore[union-attr]
    assert schedule[-1].put_back_from == first.id and schedule[-1].slot == first.slot and schedule[-1].state == "planned"
    following = _next(local.url)
    assert following["roundId"] == "r2" and following["buyer"] == second.slot.buyer == started["buyer"].replace("Ada", "Ben")


def test_the_agents_of_a_round_outlive_a_controller_stopped_mid_round_and_the_next_one_stops_them(room: dict[str, Any]) -> None:
    """The EO's round goes on while the Avatar Controller restarts: its agent programs too; the
    controller started next takes them over (by pid) and stops them after the round's totals."""
    config, local = room["config"], room["avatar"]
    _next(local.url, {"warmUp": 0.0, "round": 60.0, "post": 30.0})
    store = CompetitionStore(local.controller.ledger)
    assert wait_for(lambda: _phase(local, "r1") == "round", 10)
    launch = store.launch_of(local.controller.ledger.round_for("r1"))
    pids = [r.pid for r in store.agent_runs(launch.id)]
    local.stop()
    local.stop = lambda: None  # type: ignore[method-assign]
    assert all(pid is not None and pid_running(pid) for pid in pids)  # left running with their round
    again = LocalAvatar(config).start()
    room["avatar"] = again
    ended = loopback.post(again.url + END_ROUND_PATH, timeout=30)  # the stand-in: the negotiation ends...
    assert ended.status_code == 200, ended.text
    assert wait_for(lambda: _phase(again, "r1") == "post", 10)
    assert loopback.post(again.url + END_ROUND_PATH, timeout=30).status_code == 200  # ...and the post-round: the totals
    assert wait_for(lambda: again.controller.ledger.round_for("r1").totals is not None, 10)
    store = CompetitionStore(again.controller.ledger)
    assert wait_for(lambda: all(r.state == "stopped" for r in store.agent_runs(launch.id)), 15), store.agent_runs(launch.id)
    assert wait_for(lambda: not any(pid_running(pid) for pid in pids if pid is not None), 10)


def _phase(local: LocalAvatar, round_id: str) -> str | None:
    found = local.controller.ledger.round_for(round_id)
    return None if found is None else found.phase


def _control(tmp_path: Path, eo_url: str, agents: dict[str, AgentEntry], generator: str = "") -> RoundControl:
    ledger = open_ledger(tmp_path / "ledger.sqlite3")
    return RoundControl(ledger, ["Celia", "Watson"], rounds=RoundsSettings(),
                        tournament=TournamentSettings(buyers=BUYERS, agents=agents, agent_start_s=3.0),
                        eo=OrchestratorSettings(url=eo_url, utility_generator_url=generator), data_dir=tmp_path,
                        human=ServiceEntry(host="127.0.0.1", port=free_port()))


def _unused(control: RoundControl) -> None:
    """Nothing of the schedule was used: every round planned, no start recorded, no program left."""
    store = control.store
    assert {s.state for s in store.slots(control.competition.roster or "")} <= {"planned"}
    assert store.free_round_id(day_of(now_ms())) == "r1"
    assert store.running_agents() == []


@pytest.mark.parametrize(("agents", "generator", "words"), [
    ({"A": {"url": "http://127.0.0.1:{dead}"}, "B": {"url": "http://127.0.0.1:{dead}"}}, "",
     "does not answer at http://127.0.0.1:"),
    ({"A": AgentEntry(command=[sys.executable, "-c", "import sys; print('no model file'); sys.exit(3)", "{port}"]),
      "B": AgentEntry(command=[sys.executable, "-c", "import sys; print('no model file'); sys.exit(3)", "{port}"])}, "",
     "its command exited with status 3 before it listened on port"),
    ({"A": AgentEntry(command=[sys.executable, "-c", "import time; time.sleep(60)", "{port}"]),
      "B": AgentEntry(command=[sys.executable, "-c", "import time; time.sleep(60)", "{port}"])}, "",
     "not listening on port"),
    ({"A": {"url": "http://127.0.0.1:{dead}"}, "B": {"url": "http://127.0.0.1:{dead}"}}, "http://127.0.0.1:{dead}",
     "no buyer utility: the utility generator at http://127.0.0.1:"),
], ids=["agent-down", "command-exits", "command-never-listens", "generator-down"])
def test_next_round_refuses_in_one_line_naming_the_cause_and_uses_nothing(
    tmp_path: Path, agents: dict[str, AgentEntry | dict[str, str]], generator: str, words: str
) -> None:
    dead = str(free_port())  # an address nothing listens at, filled in here
    agents = {name: AgentEntry(url=e["url"].replace("{dead}", dead)) if isinstance(e, dict) else e for name, e in agents.items()}
    with RecordingServer() as eo:  # an EO that answers (the platform's: no stand-in mark)
        control = _control(tmp_path, eo.url, agents, generator.replace("{dead}", dead))

        async def twice() -> list[Any]:
            try:
                return [await control.next_round(), await control.next_round()]
            finally:
                await control.close()

        answers = run_async(twice())
        for answer in answers:
            assert not answer.ok and words in answer.reason and "\n" not in answer.reason, answer
        _unused(control)
        assert not any(path.endswith("/initializeRound") for path in (r.path for r in eo.received))
    if "command" in words:
        logs = list((tmp_path / "agents" / "logs").glob("*.log"))
        assert logs and all("no model file" in log.read_text() for log in logs)
        assert "no model file" in answers[0].reason  # the last line it wrote, in the refusal


def test_next_round_refuses_when_the_eo_does_not_answer(tmp_path: Path) -> None:
    control = _control(tmp_path, f"http://127.0.0.1:{free_port()}", {"A": AgentEntry(url="http://127.0.0.1:1"),
                                                                        "B": AgentEntry(url="http://127.0.0.1:1")})

    async def once() -> Any:
        try:
            return await control.next_round()
        finally:
            await control.close()

    answer = run_async(once())
    assert not answer.ok and answer.reason.startswith("the EO at http://127.0.0.1:") and "does not answer" in answer.reason
    _unused(control)
