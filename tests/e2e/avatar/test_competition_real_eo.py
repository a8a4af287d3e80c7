"""A competition run from the room on the platform's real EO (not standalone) and its real utility
generator: three agents on the roster, started per round by their ``command``, and two buyers.

Next round on the console in Chromium starts each round with utilities the generator drew; the six
rounds of the cycle run in the order the schedule says; what each agent received in ``/setUtility``
keeps the fairness rule (each pair meets twice, with utilities and avatars swapped; both buyers
play the same buyer utilities); ``/operator/standings.json`` equals the means computed from the
EO's own totals, to the cent. The EO's totals are read from a second human-side service the EO
calls beside the Avatar Controller (as a venue's competition-ui would be): what the EO sends, not
what the room made of it. The Avatar Controller is stopped and started between two rounds and
loses nothing of the schedule or the standings. End round on a seventh round ends it early; the
EO is still running after that round's own end, and the round's totals reach the standings.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from avatar.books.ledger import LEDGER_FILE, read_ledger
from avatar.harness import Observer
from avatar.operator import CONSOLE_PATH
from avatar.operator.routes import STANDINGS_JSON_PATH
from humaine_platform import endpoints as ep
from standins.recorder import Behavior, RecordingServer
from tests.support import loopback
from tests.support.books_room import AvatarProcess
from tests.support.helpers import UI_TIMEOUT_MS, free_port, wait_for
from tests.support.paths import ROOT
from tests.support.real_eo import RealEO
from tests.support.real_utility_generator import RealUtilityGenerator
from workers.runtime.config import Config
from workers.runtime.messages import RoundState

AGENT = ROOT / "tests" / "support" / "tournament_agent.py"
MARGINS = {"A": 1.0, "B": 0.5, "C": 0.25}
BUYERS = ("Ada", "Ben")
AVATARS = ("Celia", "Watson")
DURATIONS = {"warmUp": 1, "round": 4, "post": 1}
"""Each scheduled round: the buyer's one utterance and the agent's Accept take about a second."""
LAST_ROUND = {"warmUp": 1, "round": 8, "post": 1}
"""The seventh round, ended early by the operator about 2 s into its negotiation."""
CYCLE = 6
"""Three agents, two buyers: lcm(3 pairs x 2 meetings, 2 buyers) rounds."""
WITNESS = "chat-ui"
"""The EO's second human-side service: it records what the EO sends (the totals above all)."""


def _config(path: Path, data_dir: Path, mosquitto_url: str, environment: str, port: int, eo: RealEO,
            generator: RealUtilityGenerator) -> Path:
    agents = "".join(
        f"[tournament.agents.{name}]\ncommand = {json.dumps([sys.executable, str(AGENT), '--port', '{port}', '--round', '{round}', '--agent', '{agent}', '--eo', eo.url, '--margin', str(margin)])}\n"  # noqa: E501
        for name, margin in MARGINS.items())
    path.write_text(
        f'environment_uuid = "{environment}"\ndata_dir = "{data_dir}"\n'
        f'[broker]\nurl = "{mosquitto_url}"\nmode = "external"\n'
        f'[avatar]\nport = {port}\nspeaker = "wav-fast:{data_dir / "speech"}"\nconfirm_accept = "auto"\n'
        '[avatar.voices.Celia]\nengine = "espeak"\n[avatar.voices.Watson]\nengine = "espeak"\n'
        f'[eo]\nurl = "{eo.url}"\napp_settings = "{eo.app_settings_file}"\nutility_generator_url = "{generator.url}"\n'
        f"[rounds]\nwarm_up_s = {DURATIONS['warmUp']}\nround_s = {DURATIONS['round']}\npost_s = {DURATIONS['post']}\n"
        f"[tournament]\nbuyers = {json.dumps(list(BUYERS))}\nseed = 48\n{agents}"
    )
    return path


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[dict[str, Any]]:
    generator = RealUtilityGenerator(tmp_path / "utility-generator").start()
    witness = RecordingServer(behaviors={ep.CONFIRM_ACCEPT: Behavior(answer={"status": ep.CONFIRM_ACCEPT_STATUS})}).start()
    port = free_port()
    eo = RealEO(tmp_path / "eo", human_port=port, utility_generator_port=generator.port, beside={WITNESS: witness.port})
    try:
        yield {"generator": generator, "witness": witness, "eo": eo, "port": port}
    finally:
        alive = eo.alive()
        eo.stop()
        witness.stop()
        generator.stop()
        assert alive, f"the platform's EO exited:\n{eo.log_tail()}"


def _console(browser: Any, url: str) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(url + CONSOLE_PATH)
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    return page


def _received(data_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """What each agent was told in each round, from the agent programs' logs: round -> avatar ->
    {"agent", "utility"} (their ``/setUtility``: the EO names the avatar it plays)."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for log in (data_dir / "agents" / "logs").glob("*.log"):
        for line in log.read_text().splitlines():
            said = json.loads(line)
            if said["path"] == ep.SET_UTILITY:
                body = said["body"]
                found.setdefault(str(said["round"]), {})[body["name"]] = {"agent": said["agent"], "utility": body["utility"]}
    return found


def _say(eo: RealEO, environment: str, round_id: str, addressee: str) -> None:
    body = {"roundId": round_id, "speaker": "Human", "addressee": addressee, "text": f"{addressee}, an egg?", "role": "buyer",
            "environmentUUID": environment, "timestamp": int(time.time() * 1000)}
    assert loopback.post(eo.url + ep.RELAY_MESSAGE, json=body, timeout=30).status_code == 200


def _play(console: Page, observer: Observer, platform: dict[str, Any], environment: str, number: int) -> str:
    """Next round on the console; the buyer asks the first seat's seller, who accepts; the EO's totals."""
    round_id = f"r{number}"
    console.get_by_role("button", name="Next round").click()
    expect(console.locator("#round-control-status")).to_contain_text(f"round {round_id}:", timeout=UI_TIMEOUT_MS)
    observer.wait(RoundState, timeout=30, where=lambda m: m.round_id == round_id and m.phase == "round")
    seat0 = console.locator("#round-control-status").text_content() or ""
    _say(platform["eo"], environment, round_id, AVATARS[0])
    witness: RecordingServer = platform["witness"]
    assert wait_for(lambda: any(b.get("roundId") == round_id for b in witness.bodies(ep.RECEIVE_ROUND_TOTALS)), 30), seat0
    observer.wait(RoundState, timeout=15, where=lambda m: m.round_id == round_id and m.phase == "ended")
    return round_id


def test_a_competition_on_the_platforms_eo_from_the_console(
    platform: dict[str, Any], mosquitto: Any, tmp_path: Path, browser: Any, artifacts_dir: Path
) -> None:
    eo: RealEO = platform["eo"]
    witness: RecordingServer = platform["witness"]
    eo.start()  # its appSettings.json exists from now on: the room is given it ([eo] app_settings)
    data_dir = tmp_path / "data"
    environment = eo.environment_uuid
    config_path = _config(tmp_path / "room.toml", data_dir, mosquitto.url, environment, platform["port"], eo, platform["generator"])
    observer = Observer(Config.load(config_path, environ={})).start()
    avatar = AvatarProcess(config_path, platform["port"], tmp_path / "avatar.log").start()
    try:
        console = _console(browser, avatar.url)
        expect(console.locator("#round-driver")).to_have_text("rounds on the platform's EO", timeout=UI_TIMEOUT_MS)
        expect(console.locator("#next-up")).to_contain_text(f"next: {BUYERS[0]} — ", timeout=UI_TIMEOUT_MS)
        expect(console.locator("#next-up")).to_contain_text("6 left in cycle 1")

        played: list[str] = []
        for number in range(1, CYCLE + 1):
            if number == 4:  # the Avatar Controller stopped and started between two rounds
                before = loopback.get(avatar.url + STANDINGS_JSON_PATH, timeout=10).json()
                next_up = console.locator("#next-up").text_content()
                assert avatar.stop(signal.SIGTERM) == 0
                avatar.start()
                console.reload()
                expect(console.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
                expect(console.locator("#next-up")).to_have_text(next_up or "", timeout=UI_TIMEOUT_MS)
                assert loopback.get(avatar.url + STANDINGS_JSON_PATH, timeout=10).json() == before
            played.append(_play(console, observer, platform, environment, number))
        assert played == [f"r{n}" for n in range(1, CYCLE + 1)]
        console.screenshot(path=str(artifacts_dir / "competition-console-after-a-cycle.png"))

        # the rounds ran in the schedule's order: its buyers taking turns, the agents it named
        assert wait_for(lambda: _states(data_dir)[:CYCLE] == ["played"] * CYCLE, 10), _states(data_dir)  # settled each second
        schedule = json.loads(_cli_plan(config_path))
        told = _received(data_dir)
        for slot in schedule["rounds"][:CYCLE]:
            assert slot["state"] == "played" and slot["round"] == played[slot["seq"] - 1]
            assert slot["buyer"] == BUYERS[(slot["seq"] - 1) % 2]
            assert [told[slot["round"]][s["avatar"]]["agent"] for s in slot["seats"]] == [s["agent"] for s in slot["seats"]]
        assert schedule["fair"]["1"] == [] and all(problems == [] for problems in schedule["fair"].values())

        # fairness, from what the agents received: each pair twice, utilities and avatars swapped
        meetings: dict[frozenset[str], list[dict[str, Any]]] = {}
        for round_id in played:
            seats = told[round_id]
            meetings.setdefault(frozenset(s["agent"] for s in seats.values()), []).append(seats)
        assert sorted(sorted(pair) for pair in meetings) == [["A", "B"], ["A", "C"], ["B", "C"]]
        for twins in meetings.values():
            assert len(twins) == 2
            first, second = twins
            for avatar_first, avatar_second in (AVATARS, AVATARS[::-1]):
                agent = first[avatar_first]["agent"]
                assert second[avatar_second]["agent"] == agent  # the avatar it plays alternates
            for seat in AVATARS:  # each avatar's utility stays; the agents holding it swap
                assert first[seat]["utility"] == second[seat]["utility"]
                assert first[seat]["agent"] != second[seat]["agent"]
        # every buyer played the same buyer utilities (the EO's /setUtility to the human side)
        human = {b["roundId"]: b["utility"] for b in witness.bodies(ep.SET_UTILITY)}
        by_buyer = {buyer: sorted(json.dumps(human[slot["round"]], sort_keys=True) for slot in schedule["rounds"][:CYCLE]
                                  if slot["buyer"] == buyer) for buyer in BUYERS}
        assert by_buyer[BUYERS[0]] == by_buyer[BUYERS[1]] and len(set(by_buyer[BUYERS[0]])) == 3
        # the utilities came from the generator: no two seller utilities of a round alike
        assert all(seats[AVATARS[0]]["utility"] != seats[AVATARS[1]]["utility"] for seats in told.values())

        # the standings are the means of the EO's own totals, to the cent
        expected = _expected_standings(witness.bodies(ep.RECEIVE_ROUND_TOTALS), told, schedule)
        standings = loopback.get(avatar.url + STANDINGS_JSON_PATH, timeout=10).json()
        assert {a["name"]: (a["rounds"], a["utility_mean"], a["welfare_mean"]) for a in standings["agents"]} == expected["agents"]
        assert {b["name"]: (b["rounds"], b["utility_total"]) for b in standings["buyers"]} == expected["buyers"]
        assert standings["unscored"] == []
        for name in MARGINS:
            expect(console.locator(f"#standings-agents tr[data-name='{name}'] td").nth(1)).to_have_text("4")

        # the seventh round, ended early: the EO stays up past the round's own end, its totals come
        console.fill("#d-round", str(LAST_ROUND["round"]))
        console.get_by_role("button", name="Next round").click()
        expect(console.locator("#round-control-status")).to_contain_text("round r7:", timeout=UI_TIMEOUT_MS)
        started = time.monotonic()
        observer.wait(RoundState, timeout=30, where=lambda m: m.round_id == "r7" and m.phase == "round")
        _say(eo, environment, "r7", AVATARS[0])
        time.sleep(1.0)
        console.get_by_role("button", name="End round").click()
        expect(console.locator("#round-control-status")).to_contain_text("round r7 ended", timeout=UI_TIMEOUT_MS)
        observer.wait(RoundState, timeout=10, where=lambda m: m.round_id == "r7" and m.phase == "ended")
        own_end = LAST_ROUND["warmUp"] + LAST_ROUND["round"] + LAST_ROUND["post"]
        assert wait_for(lambda: any(b.get("roundId") == "r7" for b in witness.bodies(ep.RECEIVE_ROUND_TOTALS)), own_end + 30)
        assert time.monotonic() - started >= own_end - 1  # at the round's own end, not at End
        time.sleep(2.0)
        assert eo.alive(), eo.log_tail()
        assert wait_for(lambda: sum(a["rounds"] for a in loopback.get(avatar.url + STANDINGS_JSON_PATH, timeout=10).json()["agents"])
                        == 2 * (CYCLE + 1), 15)
        console.screenshot(path=str(artifacts_dir / "competition-console-seventh-round.png"))
    finally:
        if avatar.process is not None:
            avatar.stop()
        observer.stop()
        (artifacts_dir / "competition-avatar.log").write_text(avatar.log_path.read_text(errors="replace"))


def _states(data_dir: Path) -> list[str]:
    """The schedule's rounds' states, in order, as the room's ledger has them."""
    ledger = read_ledger(data_dir / LEDGER_FILE)
    if ledger is None:
        return []
    try:
        return [row[0] for row in ledger.query("SELECT state FROM schedule ORDER BY id")]
    finally:
        ledger.close()


def _cli_plan(config_path: Path) -> str:
    import subprocess

    from tests.support.helpers import CLI

    done = subprocess.run([*CLI, "tournament", "plan", "--json", "--config", str(config_path)], capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout


def _expected_standings(totals: list[dict[str, Any]], told: dict[str, dict[str, dict[str, Any]]],
                        schedule: dict[str, Any]) -> dict[str, dict[str, tuple[Any, ...]]]:
    """The means the platform ranks by, computed here from the EO's ``/receiveRoundTotals``."""
    buyers = {slot["round"]: slot["buyer"] for slot in schedule["rounds"] if slot["round"]}
    per_agent: dict[str, list[tuple[float, float]]] = {name: [] for name in MARGINS}
    per_buyer: dict[str, list[float]] = {name: [] for name in BUYERS}
    for body in totals:
        round_id, by_name = body["roundId"], body["roundTotals"]

        def value(name: str, by_name: dict[str, Any] = by_name) -> float:
            entry = by_name.get(name)
            return 0.0 if entry is None else float(entry["utility"]["value"])

        welfare = value("Human") + sum(value(avatar) for avatar in AVATARS)
        for avatar in AVATARS:
            per_agent[told[round_id][avatar]["agent"]].append((value(avatar), welfare))
        per_buyer[buyers[round_id]].append(value("Human"))
    return {
        "agents": {name: (len(s), round(sum(u for u, _ in s) / len(s), 2), round(sum(w for _, w in s) / len(s), 2))
                   for name, s in per_agent.items()},
        "buyers": {name: (len(v), round(sum(v), 2)) for name, v in per_buyer.items()},
    }
