"""The ``[rounds]`` and ``[tournament]`` configuration sections: how the room starts rounds, and
the roster of a competition.

Example (``humaine-env.toml``)::

    [rounds]
    warm_up_s = 5                       # the console's durations until the operator changes them
    round_s = 600
    post_s = 30
    sellers = { Celia = "http://127.0.0.1:14007", Watson = "http://127.0.0.1:14008" }  # without a roster

    [tournament]
    buyers = ["Ada", "Ben"]
    [tournament.agents.A]
    url = "http://127.0.0.1:14007"      # an agent already running
    [tournament.agents.B]
    command = ["python", "my_agent.py", "--port", "{port}"]   # started per round on a free port

Every key can also be set with ``HUMAINE_ENV_TOURNAMENT_<KEY>`` or ``--set tournament.<key>=...``.
A roster that cannot be scheduled (fewer than two agents, no buyer, a name given twice, an agent
with neither ``url`` nor ``command``) is a configuration error naming the key.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import ClassVar, Final
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from formats.unknown import unknown
from humaine_platform.endpoints import FIRST_SAMPLE_AGENT_PORT
from workers.runtime.config import Section
from workers.runtime.messages import MAX_BUYER_CHARS, MAX_PHASE_S

PLACEHOLDERS: Final = ("port", "round", "avatar", "agent")
"""What an agent's ``command`` may name in braces: the free port it is to listen on, the round's
id, the avatar it plays and its own name on the roster."""
PORT_PLACEHOLDER: Final = "port"
MAX_NAME_CHARS: Final = MAX_BUYER_CHARS


def _name(value: str, what: str) -> str:
    """A roster name: printable, one line, bounded (it names files and table rows)."""
    text = " ".join(str(value).split())
    if not text or len(text) > MAX_NAME_CHARS or not text.isprintable():
        raise ValueError(f"{what} {value!r} must be 1 to {MAX_NAME_CHARS} printable characters")
    return text


def _twice(names: Sequence[str]) -> str | None:
    """The first name given twice (blanks and case aside), or None."""
    seen: dict[str, str] = {}
    for name in names:
        folded = " ".join(name.split()).casefold()
        if folded in seen:
            return name if seen[folded] == name else f"{seen[folded]!r} and {name!r}"
        seen[folded] = name
    return None


def checked_url(url: str) -> str:
    """``url`` if it is an ``http(s)://host[:port]`` address the room can call; ValueError saying
    what is wrong (a port that is no number fails here, not at a round's start)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"url {url!r} must start with http:// or https://")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError as exc:
        raise ValueError(f"url {url!r}: {exc}") from None
    if not parts.hostname:
        raise ValueError(f"url {url!r} names no host")
    return url


class AgentEntry(BaseModel):
    """One agent of the roster: a ``url`` where it already runs, or a ``command`` the room starts
    for each of its rounds (in ``folder``; ``{port}``, ``{round}``, ``{avatar}``, ``{agent}``
    substituted) and stops after the round's totals."""

    model_config = ConfigDict(extra="forbid")

    url: str = ""
    """``http://host:port`` of an agent that is already running."""
    command: list[str] = Field(default_factory=list)
    """The program and its arguments; must pass ``{port}`` (the free port the room chose)."""
    folder: str = ""
    """The command's working folder; empty: ``data_dir/agents/<name>``."""

    @model_validator(mode="after")
    def _one_way(self) -> AgentEntry:
        if bool(self.url) == bool(self.command):
            raise ValueError("needs either url (an agent already running) or command (started per round), not both")
        if self.url:
            checked_url(self.url)
        if self.command:
            named = {field for part in self.command for _text, field, _spec, _conv in string.Formatter().parse(part) if field}
            for field in sorted(named - set(PLACEHOLDERS)):
                raise ValueError(f"command: {unknown('placeholder', '{' + field + '}', ['{' + p + '}' for p in PLACEHOLDERS])}")
            if PORT_PLACEHOLDER not in named:
                raise ValueError("command must pass {port}: the room chooses a free port for each round")
            try:  # a format the values cannot take ("{round:d}") fails here, not at a round's start
                [part.format(port=1, round="r1", avatar="Celia", agent="a") for part in self.command]
            except (ValueError, IndexError, KeyError) as exc:
                raise ValueError(f"command: {exc}") from None
        return self


class TournamentSettings(Section):
    section_name: ClassVar[str] = "tournament"

    agents: dict[str, AgentEntry] = Field(default_factory=dict)
    """The seller agents by name (two or more): each a ``url`` or a ``command``."""
    buyers: list[str] = Field(default_factory=list)
    """The human buyers, in the order they take turns."""
    agent_host: str = "127.0.0.1"
    """The address the EO reaches the agents this room starts at (their ``host`` in the round)."""
    agent_start_s: float = Field(20.0, gt=0)
    """How long an agent started by ``command`` may take to listen on its port."""
    agent_stop_s: float = Field(5.0, gt=0)
    """How long an agent has to exit after SIGTERM before it is killed (SIGKILL)."""
    seed: int | None = None
    """The schedule's permutations (set: the same plan on every machine; unset: random)."""

    @field_validator("agents")
    @classmethod
    def _agents(cls, value: dict[str, AgentEntry]) -> dict[str, AgentEntry]:
        for name in value:
            _name(name, "agent")
        twice = _twice(list(value))
        if twice is not None:
            raise ValueError(f"agent {twice} is named twice")
        if len(value) == 1:
            raise ValueError(f"a round needs two agents, the roster has one ({next(iter(value))})")
        return value

    @field_validator("buyers")
    @classmethod
    def _buyers(cls, value: list[str], info: ValidationInfo) -> list[str]:
        names = [_name(name, "buyer") for name in value]
        twice = _twice(names)
        if twice is not None:
            raise ValueError(f"buyer {twice} is named twice")
        agents = info.data.get("agents")
        if agents and not names:
            raise ValueError("the roster has agents but no buyer")
        if names and agents is not None and not agents:
            raise ValueError("the roster has buyers but no agents ([tournament.agents.NAME] with url or command)")
        return names

    @property
    def enabled(self) -> bool:
        """A roster is configured: Next round takes the schedule's next round."""
        return bool(self.agents or self.buyers)


def sample_sellers(avatars: Sequence[str], host: str = "127.0.0.1") -> dict[str, str]:
    """Where a room without a roster finds its sellers: each avatar on the platform's sample
    sellers' port of its place (14007, 14008, ...), as competition-ui's Start names them."""
    return {name: f"http://{host}:{FIRST_SAMPLE_AGENT_PORT + place}" for place, name in enumerate(avatars)}


class RoundsSettings(Section):
    section_name: ClassVar[str] = "rounds"

    warm_up_s: float = Field(5.0, ge=0, le=MAX_PHASE_S)
    """The warm-up of a round the room starts (the console's field until the operator changes it)..."""
    round_s: float = Field(600.0, gt=0, le=MAX_PHASE_S)
    """...its negotiation..."""
    post_s: float = Field(30.0, ge=0, le=MAX_PHASE_S)
    """...and its post-round phase, seconds."""
    sellers: dict[str, str] = Field(default_factory=dict)
    """Without ``[tournament]``: the agent that plays each avatar (avatar -> ``http://host:port``);
    an avatar not named here is the platform's sample seller of its place (127.0.0.1:14007,
    14008, ...; ``run`` names the demo sellers)."""
    auto_start: bool = False
    """Start a round by itself, once the EO and the sellers answer, whenever the room has none open
    (``run`` sets it from ``[run] first_round``)."""
    start_timeout_s: float = Field(30.0, gt=0)
    """How long the EO may take to answer ``/startRound`` (it first tells every participant its
    utility)."""

    @field_validator("sellers")
    @classmethod
    def _urls(cls, value: dict[str, str]) -> dict[str, str]:
        for avatar, url in value.items():
            try:
                checked_url(url)
            except ValueError as exc:
                raise ValueError(f"{avatar}: {exc}") from None
        return value

    def durations(self) -> dict[str, float]:
        """The durations as the EO's round body spells them."""
        return {"warmUp": self.warm_up_s, "round": self.round_s, "post": self.post_s}

    def seller_urls(self, avatars: Sequence[str]) -> dict[str, str]:
        """Each avatar's seller without a roster: :attr:`sellers`, else the sample seller's address."""
        return {**sample_sellers(avatars), **{a: u for a, u in self.sellers.items() if a in avatars}}
