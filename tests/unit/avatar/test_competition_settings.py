"""``[tournament]`` and ``[rounds]``: a roster that cannot be scheduled is one line naming the key;
the round's durations; the keep-alive that ending a round on the platform's EO sends."""

from __future__ import annotations

from typing import Any

import pytest

from avatar.competition.control import checked_durations
from avatar.competition.lineup import Refused
from avatar.competition.settings import RoundsSettings, TournamentSettings, sample_sellers
from humaine_platform.end_round import NOWHERE, keep_alive_body
from humaine_platform.models import ServiceEntry
from workers.runtime.config import Config, ConfigError

URL = "http://127.0.0.1:14007"
COMMAND = ["python", "agent.py", "--port", "{port}"]


def tournament(**data: Any) -> TournamentSettings:
    return Config(file_data={"tournament": data}, environ={}).section(TournamentSettings)


@pytest.mark.parametrize(("data", "line"), [
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}}}, "tournament.agents: a round needs two agents, the roster has one (A)"),
    ({"buyers": ["Ada", " ada"], "agents": {"A": {"url": URL}, "B": {"url": URL}}},
     "tournament.buyers: buyer 'Ada' and 'ada' is named twice"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}, "a": {"url": URL}}}, "tournament.agents: agent 'A' and 'a' is named twice"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}, "B": {}}},
     "tournament.agents.B: needs either url (an agent already running) or command (started per round), not both"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}, "B": {"url": URL, "command": COMMAND}}},
     "tournament.agents.B: needs either url (an agent already running) or command (started per round), not both"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}, "B": {"command": ["agent"]}}},
     "tournament.agents.B: command must pass {port}: the room chooses a free port for each round"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}, "B": {"command": ["agent", "{prot}"]}}},
     "tournament.agents.B: command: unknown placeholder '{prot}'; did you mean '{port}'?"),
    ({"buyers": [], "agents": {"A": {"url": URL}, "B": {"url": URL}}}, "tournament.buyers: the roster has agents but no buyer"),
    ({"buyers": ["Ada"]}, "tournament.buyers: the roster has buyers but no agents ([tournament.agents.NAME] with url or command)"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": "127.0.0.1:1"}, "B": {"url": URL}}},
     "tournament.agents.A: url '127.0.0.1:1' must start with http:// or https://"),
    ({"buyers": ["Ada"], "agents": {"A": {"url": URL}, "B": {"url": URL, "cmd": COMMAND}}},
     "tournament.agents.B.cmd: Extra inputs are not permitted"),
])
def test_a_roster_that_cannot_be_scheduled_is_one_line_naming_the_key(data: dict[str, Any], line: str) -> None:
    with pytest.raises(ConfigError) as refused:
        tournament(**data)
    assert str(refused.value) == f"invalid configuration: {line}"


def test_a_schedulable_roster_and_no_roster_at_all() -> None:
    roster = tournament(buyers=["Ada", "Ben"], agents={"A": {"url": URL}, "B": {"command": [*COMMAND, "{round}", "{avatar}"]}})
    assert roster.enabled and list(roster.agents) == ["A", "B"] and roster.agents["B"].command[-2:] == ["{round}", "{avatar}"]
    assert not tournament().enabled


def test_without_a_roster_each_avatar_has_the_sample_seller_of_its_place_unless_named() -> None:
    assert sample_sellers(["Celia", "Watson"]) == {"Celia": "http://127.0.0.1:14007", "Watson": "http://127.0.0.1:14008"}
    rounds = RoundsSettings(sellers={"Watson": "http://10.0.0.2:9000", "Nobody": "http://10.0.0.3:1"})
    assert rounds.seller_urls(["Celia", "Watson"]) == {"Celia": "http://127.0.0.1:14007", "Watson": "http://10.0.0.2:9000"}
    with pytest.raises(ValueError, match="must start with http"):
        RoundsSettings(sellers={"Celia": "10.0.0.2:9000"})


def test_the_operators_durations_over_the_rooms_and_refused_in_words() -> None:
    defaults = RoundsSettings().durations()
    assert checked_durations({"round": 90}, defaults) == {"warmUp": 5.0, "round": 90.0, "post": 30.0}
    for given, words in (({"round": 0}, "more than 0 s"), ({"warmUp": -1}, "seconds from 0"), ({"post": True}, "seconds from 0"),
                         ({"rounds": 5}, "unknown duration 'rounds'"), ({"round": 1e9}, "seconds from 0")):
        with pytest.raises(Refused, match=words):
            checked_durations(given, defaults)


def test_the_keep_alive_names_every_service_the_eos_round_loop_still_calls() -> None:
    """After ``/endRound`` the platform EO's round loop still looks up the human-side services,
    the agents (by avatar) and the utility generator: each is named, the agents nowhere."""
    room = ServiceEntry(host="10.0.0.9", port=7040)
    generator = ServiceEntry(host="127.0.0.1", port=7021)
    body = keep_alive_body("r7", {"competition-ui": room, "chat-ui": NOWHERE}, ["Celia", "Watson"], generator)
    assert body == {"roundId": "r7", "serviceMap": {
        "competition-ui": {"protocol": "http", "host": "10.0.0.9", "port": 7040},
        "chat-ui": {"protocol": "http", "host": "127.0.0.1", "port": 1},
        "Celia": {"protocol": "http", "host": "127.0.0.1", "port": 1},
        "Watson": {"protocol": "http", "host": "127.0.0.1", "port": 1},
        "utility-generator": {"protocol": "http", "host": "127.0.0.1", "port": 7021},
    }}
    assert NOWHERE.port  # a port the EO keeps in the address (it leaves a falsy one out and calls port 80)
