"""``humaine-env run``: the whole suite in one process group, stopped by one Ctrl-C.

Each worker runs as its own child process so that a crash of one never takes the others
down: a child that dies is started again with backoff; a child that exits with
:data:`EXIT_UNAVAILABLE` (no camera, no model...) has said why and is left alone. The broker
is resolved first (one is started here when none answers: see :mod:`workers.runtime.broker`) and every child is
pointed at it.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict, Field, field_validator

from avatar.competition.settings import RoundsSettings, TournamentSettings
from formats import written
from formats.unknown import unknown
from humaine_env.cli import available, command_named, commands, status_name
from humaine_env.terminal import BuyerPrompt, feed_line, keyboard_feed
from humaine_platform.models import Bid
from humaine_platform.wiring import reachable_host
from workers.runtime.broker import StartedBroker, broker_for
from workers.runtime.bus import Bus
from workers.runtime.config import (
    Config,
    ConfigError,
    OrchestratorSettings,
    Section,
    check_level,
    inherited_flags_env,
    parse_flag_value,
    section_model,
)
from workers.runtime.logs import console_level, level_number, line_level, relay_line, setup_logging
from workers.runtime.messages import (
    PHASE_NAMES,
    AgentMessageSeen,
    ConfirmPending,
    Envelope,
    OutgoingMessage,
    RoundState,
    Status,
)
from workers.runtime.origins import own_status, vouched
from workers.runtime.parent import PARENT_ENV
from workers.runtime.ports import taken_port
from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE, STOP_DEADLINE_S, install_stop_signals
from workers.runtime.worker_ids import AVATAR, CAMERA, DEMO_AGENTS, MICROPHONE, RECORD_ROUNDS, STANDIN_EO, TRANSCRIPT

log = logging.getLogger(__name__)

RESTART_BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)
STABLE_AFTER_S = 30.0
"""A child that ran this long before dying restarts with the shortest backoff again."""
STATUS_WAIT_S = 30.0
"""How long the start-up table waits for every worker's first status (MediaPipe and the
speech models take several seconds to load on a small machine)."""
KILL_GRACE_S = 3.0
"""Extra time a child gets past its own stop deadline before it is killed: children stop
together and share the CPU while they do."""
KILL_AFTER_S = STOP_DEADLINE_S + KILL_GRACE_S
"""How long after SIGTERM ``run`` kills a child that has not ended."""
ROOM_WORKERS = (AVATAR, TRANSCRIPT, RECORD_ROUNDS, MICROPHONE, CAMERA)
"""The room's own workers, in start order: services that others call first, then the recorder
of the rounds (before anything is said), sensors last. The commands of the avatar, the
transcript, the microphone and the camera are named by their workers' ids."""
STAND_INS = (STANDIN_EO, DEMO_AGENTS)
"""Started before the room when no EO is configured: the stand-in EO and the demo sellers."""
SUITE_ORDER = STAND_INS + ROOM_WORKERS
STOP_ORDER = ((CAMERA, MICROPHONE), (TRANSCRIPT,), (STANDIN_EO,), (DEMO_AGENTS,), (AVATAR,), (RECORD_ROUNDS,))
"""The stages in which ``run`` stops its children, each stage gone before the next gets its
SIGTERM: what starts a turn first (the senses, the transcript), then each service after every
service that calls it, so that a call in flight is answered rather than cut. The EO finishes
its requests while the sellers and the Avatar Controller still answer (a pending Accept is
answered by the buyer's page, not lost with a stopped controller); the recorder of the rounds
last, so it keeps the last of them."""
FINAL_EXITS = {0: "done", EXIT_CONFIG: "configuration error", EXIT_UNAVAILABLE: "unavailable here"}
"""Exit codes a restart cannot change: the child has said why in one line."""
CONSOLE_LINES_PER_S = 5.0
CONSOLE_BURST = 20
"""The conversation's lines on the terminal: a buyer and two sellers say far fewer."""


class RunSettings(Section):
    """What ``humaine-env run`` starts, and where its log goes."""

    section_name: ClassVar[str] = "run"

    workers: list[str] = Field(default_factory=list)
    """Workers to start; empty means every worker this installation has."""
    exclude: list[str] = Field(default_factory=list)
    """Workers not to start (as ``--without``)."""
    log_file: str = ""
    """Everything every worker logs at ``log_level``, one file for the suite, rotated at
    ``log_max_bytes`` (the console shows only problems and the conversation); empty: none."""
    log_max_bytes: int = Field(5_000_000, ge=10_000)
    """Size at which the log file is rotated..."""
    log_backups: int = Field(3, ge=0)
    """...keeping this many earlier files (``humaine-env.log.1`` ...)."""
    first_round: Literal["console", "auto"] = "console"
    """``console``: the first round waits for the operator's Next round on the operator console,
    so the operator names its buyer first (when this suite has a console: the Avatar Controller
    with ``[avatar] display``; without one it starts by itself). ``auto``: the room starts it by
    itself as soon as the EO and the sellers answer (demos, tests)."""


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str] | None = None
    """The child's whole environment (None: this process's)."""
    console: bool = False
    stdin: int | None = None
    """A file descriptor for the child's standard input (the buyer's keyboard, fed by the
    supervisor: :mod:`humaine_env.terminal`); None: the terminal's when ``console``, else none."""
    process: subprocess.Popen[bytes] | None = None
    relay: threading.Thread | None = None
    """Reads the child's stderr into this process's log (see :func:`relay_stderr`)."""
    restarts: int = 0
    started: float = 0.0
    next_start: float = 0.0
    finished: bool = False

    def start(self) -> None:
        """Start the child; it ends when this process ends, even by ``kill -9`` (see
        :mod:`workers.runtime.parent`)."""
        stdin = self.stdin if self.stdin is not None else None if self.console else subprocess.DEVNULL
        env = {**(self.env if self.env is not None else os.environ), PARENT_ENV: str(os.getpid())}
        self.process = subprocess.Popen(self.argv, stdin=stdin, stderr=subprocess.PIPE, env=env)
        self.started = time.monotonic()
        self.relay = threading.Thread(target=relay_stderr, args=(self.name, self.process), name=f"{self.name}-stderr", daemon=True)
        self.relay.start()


def relay_stderr(name: str, process: subprocess.Popen[bytes]) -> None:
    """Every line the child writes to stderr goes through this process's logging: all of it
    to ``[run] log_file``, to the console only what its level lets through (the children log
    at the lower of the two thresholds, and the console stays quiet)."""
    assert process.stderr is not None
    level = 0
    for raw in process.stderr:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            continue
        level = line_level(line, level)
        relay_line(f"run.{name}", line, level)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", help="comma-separated workers to run (default: all available)")
    parser.add_argument("--without", default="", help="comma-separated workers not to run")


def eo_configured(config: Config) -> bool:
    """True when the room is wired to a real Environment Orchestrator."""
    eo = config.section(OrchestratorSettings)
    return bool(eo.url or eo.app_settings)


def switched_on(name: str, config: Config) -> bool:
    """Whether a worker whose command names a switch (``Command.enabled_by``) is on."""
    switch = commands()[name].enabled_by
    if not switch:
        return True
    section, _, key = switch.partition(".")
    return bool(getattr(config.section(section_model(section)), key))


def choose_workers(args: argparse.Namespace, settings: RunSettings, with_stand_ins: bool, config: Config | None = None) -> list[str]:
    """The workers to start: ``--only`` or ``[run] workers`` as named, else every available one
    of the suite (switched on, with ``config``), less ``--without`` and ``[run] exclude``."""
    only = [w.strip() for w in (args.only or "").split(",") if w.strip()]
    without = [w.strip() for w in args.without.split(",") if w.strip()]
    known = [name for name in SUITE_ORDER if name in commands()]
    named: dict[str, list[str]] = {}
    for where, given in (("--only", only), ("--without", without), ("[run] workers", settings.workers),
                         ("[run] exclude", settings.exclude)):
        named[where] = []
        for name in given:
            found = command_named(name)  # an earlier spelling (mic) is the worker it names
            if found not in known:
                raise ConfigError(f"{where}: {unknown('worker', name, known)}")
            named[where].append(found)
    wanted = named["--only"] or named["[run] workers"]
    excluded = set(named["--without"]) | set(named["[run] exclude"])
    default = SUITE_ORDER if with_stand_ins else ROOM_WORKERS
    names = wanted or [name for name in default if available(name) and (config is None or switched_on(name, config))]
    return [n for n in names if n not in excluded]


def first_round_by_itself(config: Config, names: Sequence[str]) -> bool:
    """Whether the first round starts by itself: ``[run] first_round = "auto"``, or
    no operator console among ``names`` to press Next round on (no Avatar Controller, or one
    without its pages: ``[avatar] display = false``)."""
    from avatar.settings import AvatarSettings

    if config.section(RunSettings).first_round == "auto":
        return True
    return not (AVATAR in names and config.section(AvatarSettings).display)


def seller_ports(avatars: Sequence[str]) -> dict[str, int]:
    """The demo sellers of a room: each avatar on the platform's sample sellers' ports, in order."""
    from standins.eo.settings import DEFAULT_AGENT_PORTS

    first = min(DEFAULT_AGENT_PORTS.values())
    return {name: first + place for place, name in enumerate(avatars)}


def _inline_table(ports: Mapping[str, int]) -> str:
    return "{ " + ", ".join(f"{name} = {port}" for name, port in ports.items()) + " }"


def stand_in_overrides(config: Config) -> dict[str, str]:
    """Settings that wire the stand-in EO, the demo sellers and the room together: one EO
    address for everyone, the sellers' ports known to the EO and to the room (whose Next round
    names them in each round), the Avatar Controller as the EO's human-side service."""
    from avatar.settings import AvatarSettings
    from standins.demo_agents.settings import DemoAgentsSettings
    from standins.eo.settings import StandinSettings

    standin = config.section(StandinSettings)
    sellers = config.section(DemoAgentsSettings)
    avatar = config.section(AvatarSettings)
    ports = sellers.agents
    overrides: dict[str, str] = {}
    if config.origins(DemoAgentsSettings)["agents"] == "default":
        ports = seller_ports(config.core.avatars)  # the room's own names (``[core] avatars``)
        overrides["demo_agents.agents"] = _inline_table(ports)
    host = reachable_host(sellers.host)
    if config.origins(RoundsSettings)["sellers"] == "default":  # the sellers are where the demo sellers listen
        overrides["rounds.sellers"] = "{ " + ", ".join(f'{name} = "http://{host}:{port}"' for name, port in ports.items()) + " }"
    return {
        **overrides,
        "eo.url": f'"http://127.0.0.1:{standin.port}"',
        "standin.agents": _inline_table(ports),
        "standin.human_port": str(avatar.port),
    }


def room_overrides(config: Config, names: Sequence[str]) -> dict[str, str]:
    """Who starts the first round by itself (:func:`first_round_by_itself`): the Avatar
    Controller, on any EO (``[rounds] auto_start``); in a suite without it, nobody else could, so
    the stand-in EO starts its own (``[standin] auto_round``)."""
    by_itself = first_round_by_itself(config, names)
    if by_itself and AVATAR not in names and STANDIN_EO in names:
        return {"rounds.auto_start": "false", "standin.auto_round": "true"}
    return {"rounds.auto_start": "true" if by_itself else "false"}


def stand_ins_line(config: Config) -> str:
    """The start-up line of a suite with the stand-in EO, saying how its first round starts
    (``config`` with :func:`room_overrides` applied: what the Avatar Controller itself reads)."""
    from standins.eo.settings import StandinSettings

    by_itself = config.section(RoundsSettings).auto_start or config.section(StandinSettings).auto_round
    first = "a round starts automatically" if by_itself else "press Next round on the operator console to start the first round"
    return f"humaine-env: no EO configured: stand-in EO at {config.section(OrchestratorSettings).url}, demo sellers; {first}"


def display_url(config: Config, path: str | None = None) -> str:
    """The address of a page of the Avatar Controller (the display page unless ``path``), with
    the room's token when it has one: an address that opens the page (the browser keeps the
    token for the room's other pages)."""
    from avatar.auth import TOKEN_QUERY
    from avatar.display.routes import DISPLAY_PATH
    from avatar.settings import AvatarSettings

    avatar = config.section(AvatarSettings)
    host = reachable_host(avatar.host)
    query = f"?{urlencode({TOKEN_QUERY: avatar.token})}" if avatar.token else ""
    return f"http://{host}:{avatar.port}{DISPLAY_PATH if path is None else path}{query}"


def child_argv(name: str, args: argparse.Namespace, broker_url: str, extra: dict[str, str], log_level: str = "") -> list[str]:
    """The command line of one child. The user's own ``--set`` flags are not on it (they may
    hold a secret, and a command line is public): :func:`child_env` passes them."""
    argv = [sys.executable, "-m", "humaine_env", name]
    if args.config:
        argv += ["--config", args.config]
    if log_level or args.log_level:
        argv += ["--log-level", log_level or args.log_level]
    argv += ["--set", f'broker.url="{broker_url}"', "--set", 'broker.mode="external"']
    for key, value in extra.items():
        argv += ["--set", f"{key}={value}"]
    return argv


def owned_ports(config: Config, names: list[str]) -> list[tuple[str, str, int]]:
    """``(worker, host, port)`` of every port the chosen workers will listen on."""
    from avatar.settings import AvatarSettings
    from standins.demo_agents.settings import DemoAgentsSettings
    from standins.eo.settings import StandinSettings

    ports: list[tuple[str, str, int]] = []
    if AVATAR in names:
        avatar = config.section(AvatarSettings)
        ports.append(("the Avatar Controller ([avatar] port)", avatar.host, avatar.port))
    if STANDIN_EO in names:
        standin = config.section(StandinSettings)
        ports.append(("the stand-in EO ([standin] port)", standin.host, standin.port))
    if DEMO_AGENTS in names:
        sellers = config.section(DemoAgentsSettings)
        ports += [(f"demo seller {name} ([demo_agents] agents.{name})", sellers.host, port)
                  for name, port in sellers.agents.items() if port]
    return ports


def child_env(args: argparse.Namespace) -> dict[str, str]:
    return {**os.environ, **inherited_flags_env(args.overrides, os.environ)}


def setup_run_logging(args: argparse.Namespace, config: Config, settings: RunSettings) -> str:
    """The console as for every command, plus ``[run] log_file``; returns the level the
    children log at (the lower of the console's and the file's)."""
    log_level = check_level(args.log_level or config.core.log_level, "log_level")
    console = console_level(args.log_level, getattr(args, "verbose", False), config.core.log_level)
    if not settings.log_file:
        return logging.getLevelName(console)
    setup_logging(console, log_file=settings.log_file, file_level=log_level,
                  max_bytes=settings.log_max_bytes, backups=settings.log_backups)
    return logging.getLevelName(min(console, level_number(log_level)))


def main(args: argparse.Namespace, config: Config) -> int:
    with_stand_ins = not eo_configured(config)
    settings = config.section(RunSettings)
    names = choose_workers(args, settings, with_stand_ins, config)
    children_level = setup_run_logging(args, config, settings)
    extra = stand_in_overrides(config) if with_stand_ins and any(n in STAND_INS for n in names) else {}
    extra.update(room_overrides(config, names))
    config = config.with_overrides({k: parse_flag_value(v) for k, v in extra.items()})
    config.section(TournamentSettings)  # a roster that cannot be scheduled stops run here, in one line (status 2)
    extra["data_dir"] = json.dumps(str(config.core.data_dir))  # resolved once (workers.runtime.data_dir), said once
    taken = taken_port(owned_ports(config, names))
    if taken:
        print(f"humaine-env run: {taken}", file=sys.stderr, flush=True)
        return EXIT_UNAVAILABLE
    with broker_for(config) as (config, started):
        code = _run_suite(args, config, names, extra, with_stand_ins, started, children_level)
    if code is None:
        print("humaine-env: stopped", flush=True)
        return 0
    return code


def _run_suite(
    args: argparse.Namespace, config: Config, names: list[str], extra: dict[str, str], with_stand_ins: bool,
    started: StartedBroker | None, children_level: str = "",
) -> int | None:
    """Start the children against the resolved broker, print the start-up lines and the
    table, supervise until Ctrl-C (None) or until no child is left running (its exit status,
    said in one line: see :func:`_none_left`), stop them all."""
    stop = threading.Event()
    install_stop_signals(stop.set)
    console_taker = MICROPHONE if MICROPHONE in names and sys.stdin is not None and sys.stdin.isatty() else None
    keyboard = keyboard_feed() if console_taker else None  # (ours, the microphone worker's)
    env = child_env(args)
    children = [Child(n, child_argv(n, args, config.broker.url, extra, children_level), env,
                      console=(n == console_taker), stdin=keyboard[1] if keyboard and n == console_taker else None)
                for n in names]

    bus = Bus(config, f"supervisor-{os.getpid()}", persistent=False)
    lines = RoomLines(bus, {status_name(name) for name in names}, ConsoleLines(), typed=keyboard is not None)
    bus.subscribe(bus.topics.round_state(), RoundState, RoundPrinter())
    bus.start()

    _print_start_lines(config, names, with_stand_ins, started)
    if not children:
        print("humaine-env: no workers are available in this installation yet", flush=True)
    for child in children:
        child.start()
    _print_table(children, lines.statuses, stop)
    prompt = _buyer_prompt(config, keyboard[0]) if keyboard is not None else None
    try:
        return _supervise_until_stopped(children, stop, bus, started)
    finally:
        if prompt is not None:
            prompt.stop()
        _stop_children(children)
        bus.stop()
        for fd in keyboard or ():
            os.close(fd)


def _print_start_lines(config: Config, names: Sequence[str], with_stand_ins: bool, started: StartedBroker | None) -> None:
    """The broker, the stand-ins and the pages of the Avatar Controller, before the table."""
    print(f"humaine-env: MQTT broker {config.broker.url}{f' ({started.description})' if started else ''}", flush=True)
    if with_stand_ins and STANDIN_EO in names:
        print(stand_ins_line(config), flush=True)
    if AVATAR in names:
        from avatar.buyer.routes import BUYER_PATH
        from avatar.operator import CONSOLE_PATH

        print(f"humaine-env: display page {display_url(config)}", flush=True)
        print(f"humaine-env: buyer's page {display_url(config, BUYER_PATH)} (a tablet or phone in the buyer's hand)", flush=True)
        print(f"humaine-env: operator console {display_url(config, CONSOLE_PATH)}", flush=True)


def _buyer_prompt(config: Config, feed: int) -> BuyerPrompt:
    """The buyer types at ``run``'s terminal: each line goes to the microphone worker's
    pseudo-terminal ``feed`` (see :mod:`humaine_env.terminal`)."""
    first, *others = config.core.avatars
    print(f"humaine-env: type what the buyer says ('@{first} ...', '{others[0] if others else first}, ...'); "
          "Ctrl-C stops the suite", flush=True)
    prompt = BuyerPrompt(functools.partial(feed_line, feed))
    prompt.start()
    return prompt


def _supervise_until_stopped(children: list[Child], stop: threading.Event, bus: Bus, started: StartedBroker | None) -> int | None:
    """Restart what dies until Ctrl-C (None) or until no child is left running (its exit status)."""
    bus_lost = False
    while not stop.wait(0.2):
        if started is not None:
            started.check()
        _supervise(children)
        ended = _none_left(children)
        if ended is not None:
            return ended
        if not bus.alive and not bus_lost:
            bus_lost = True
            log.error("run's own MQTT connection died: utterance and reply lines stop here (the workers go on)")
    return None


def describe_utterance(message: OutgoingMessage) -> str:
    """One readable line per buyer utterance and what became of it."""
    body = message.message
    addressee = body.get("addressee") or "nobody"
    how = body.get("addresseeSource", "")
    outcome = message.outcome + (f": {message.reason}" if message.reason else "")
    return f'buyer → {addressee}{f" (by {how})" if how and how != "none" else ""}: "{_clip(str(body.get("text", "")))}"  [{outcome}]'


SHOWN_TEXT_CHARS = 300
"""Longest text quoted in the console (an agent may send pages)."""


class ReplyBody(BaseModel):
    """The parts of a forwarded message the console shows, typed: a hostile but well-formed
    body (a bid whose ``quantity`` is a string) fails here, at the bus, in one rate-limited
    line, instead of in the printer."""

    model_config = ConfigDict(extra="allow")

    speaker: str = ""
    text: str = ""
    bid: Bid | None = None
    gesture: str | list[str] | None = None


AGENT_MESSAGE: Final[str] = AgentMessageSeen.model_fields["type"].default
""":class:`AgentMessageSeen`'s ``type``, read from it rather than spelled again."""


class ShownReply(Envelope):
    """:class:`AgentMessageSeen` read for the console: the same message, its body typed. A
    subclass could not retype ``message`` without an ignore, so ``type`` is checked here."""

    type: str = AGENT_MESSAGE
    message: ReplyBody

    @field_validator("type")
    @classmethod
    def _agent_message(cls, value: str) -> str:
        if value != AGENT_MESSAGE:
            raise ValueError(f"not an {AGENT_MESSAGE}")
        return value


def describe_reply(message: ShownReply) -> str | None:
    """One readable line per agent reply the EO forwarded (the buyer's own echo is skipped)."""
    body = message.message
    if not body.speaker or body.speaker == "Human":
        return None
    line = f'{body.speaker[:40]} → buyer: "{_clip(body.text)}"'
    bid = body.bid
    if bid is not None:
        quantity = written.goods(bid.quantity)
        line += f"  [{bid.type}{': ' + quantity if quantity else ''}"
        line += f" for {written.money(bid.price.value, bid.price.unit)}]" if bid.price else "]"
    gesture = body.gesture
    if gesture:
        line += f"  gesture: {', '.join(gesture) if isinstance(gesture, list) else gesture}"
    return _clip(line, 2 * SHOWN_TEXT_CHARS)


def describe_confirmation(pending: ConfirmPending, typed: bool = True) -> str | None:
    """The seller's Accept the buyer is asked to confirm, with how to answer at this terminal
    (None: nothing waits). The Accept itself is only shown once the EO books it."""
    if pending.confirm_id is None:
        return None
    deal = f" {pending.deal}" if pending.deal else ""
    return f"{pending.seller or 'a seller'} accepts{deal}: deal? {'type' if typed else 'say'} yes or no"


def _clip(text: str, limit: int = SHOWN_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class ConsoleLines:
    """The conversation's lines on ``run``'s terminal, at most :data:`CONSOLE_LINES_PER_S` a second
    (bursts of :data:`CONSOLE_BURST`): whatever floods the bus (a peer in a loop, hostile
    payloads), the terminal stays readable, and what was left out is said in one line."""

    def __init__(self, rate: float = CONSOLE_LINES_PER_S, burst: int = CONSOLE_BURST,
                 seconds: Callable[[], float] = time.monotonic) -> None:
        """``seconds``: the clock the bucket refills by (monotonic seconds)."""
        self.rate, self.burst = rate, burst
        self._seconds = seconds
        self._tokens = float(burst)
        self._at = seconds()
        self._dropped = 0
        self._lock = threading.Lock()

    def say(self, line: str) -> None:
        with self._lock:
            now = self._seconds()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens < 1:
                self._dropped += 1
                return
            self._tokens -= 1
            dropped, self._dropped = self._dropped, 0
        if dropped:
            print(f"humaine-env: {dropped} conversation line(s) not shown (more than {self.rate:g} a second)", flush=True)
        print(line, flush=True)


class RoomLines:
    """The conversation on ``run``'s terminal: the buyer's utterances, the agents' replies and the
    deals the buyer is asked about, each only when one of this room's workers said it - a worker
    of ``room`` whose retained status (kept here from its own topic) names the very process that
    published the message (:func:`workers.runtime.origins.vouched`). A message that merely claims
    a room worker's ``source`` prints no forged "buyer → Celia … [delivered]" line."""

    def __init__(self, bus: Bus, room: set[str], console: ConsoleLines, typed: bool = True) -> None:
        """``typed``: the buyer answers a confirmation at this terminal (else by voice)."""
        self.topics, self.room, self.console, self.typed = bus.topics, room, console, typed
        self.statuses: dict[str, Status] = {}
        """Each worker's retained status, as published on its own topic (the start-up table reads them)."""
        bus.subscribe(bus.topics.all_status(), Status, self.on_status)
        bus.subscribe(bus.topics.outgoing_message(), OutgoingMessage, self.on_utterance)
        bus.subscribe(bus.topics.agent_message(), ShownReply, self.on_reply)
        bus.subscribe(bus.topics.confirm_pending(), ConfirmPending, self.on_confirmation)

    def on_status(self, topic: str, status: Status) -> None:
        if own_status(self.topics, topic, status):
            self.statuses[status.worker] = status

    def said_here(self, message: Envelope) -> bool:
        """Whether a worker of this room said ``message`` (from the process its status names)."""
        return message.source in self.room and vouched(message, self.statuses.get(message.source))

    def on_utterance(self, _topic: str, message: OutgoingMessage) -> None:
        if self.said_here(message):
            self.console.say(describe_utterance(message))

    def on_reply(self, _topic: str, message: ShownReply) -> None:
        line = describe_reply(message)
        if line and self.said_here(message):
            self.console.say(line)

    def on_confirmation(self, _topic: str, pending: ConfirmPending) -> None:
        line = describe_confirmation(pending, typed=self.typed)
        if line and self.said_here(pending):
            self.console.say(line)


ROUND_PHASES = PHASE_NAMES


def describe_round(state: RoundState) -> str:
    """One line per round event, whoever drives the round (the stand-in or the platform's EO:
    the Avatar Controller publishes the state from the EO's calls either way)."""
    line = f"round {state.round_id}: {ROUND_PHASES.get(state.phase, state.phase)}"
    if state.phase_deadline and state.phase_started and state.phase_deadline > state.phase_started:
        line += f" ({(state.phase_deadline - state.phase_started) / 1000:.0f} s)"
    return line


class RoundPrinter:
    """Prints a line when the round or its phase changes (the state is retained and refreshed:
    the same phase again is not news)."""

    def __init__(self) -> None:
        self.last: tuple[object, str] | None = None

    def __call__(self, _topic: str, state: RoundState) -> None:
        key = (state.round_id, state.phase)
        if key == self.last or (self.last is None and state.round_id is None):
            return
        self.last = key
        print(describe_round(state), flush=True)


def _supervise(children: list[Child]) -> None:
    now = time.monotonic()
    for child in children:
        if child.finished or child.process is None:
            continue
        code = child.process.poll()
        if code is None:
            continue
        if child.next_start == 0.0:
            if code in FINAL_EXITS:
                child.finished = True
                # a worker that cannot run here has said why, at the level its reason deserves
                # (no webcam on a laptop is a notice, a missing model an error): not again
                level = logging.WARNING if code == EXIT_CONFIG else logging.INFO
                log.log(level, "%s exited (%s) and will not be restarted", child.name, FINAL_EXITS[code])
                continue
            if now - child.started > STABLE_AFTER_S:
                child.restarts = 0
            delay = RESTART_BACKOFF_S[min(child.restarts, len(RESTART_BACKOFF_S) - 1)]
            child.next_start = now + delay
            log.warning("%s died with exit code %s; restarting in %.0f s", child.name, code, delay)
        elif now >= child.next_start:
            child.restarts += 1
            child.next_start = 0.0
            child.start()


def _none_left(children: list[Child]) -> int | None:
    """When every child has ended for good (none running, none to restart), ``run`` has nothing
    left to supervise: it says so in one line on stderr and exits - with status 3 when a child
    could not run here (another instance online, no device...), 2 for a configuration error, 0
    when all were done. Seen: a second ``run`` of the same environment, whose every worker
    refused as a duplicate, stayed up with no workers for ever."""
    if not children or not all(c.finished for c in children):
        return None
    codes = {c.name: c.process.returncode if c.process is not None else 0 for c in children}
    worst = EXIT_UNAVAILABLE if EXIT_UNAVAILABLE in codes.values() else EXIT_CONFIG if EXIT_CONFIG in codes.values() else 0
    ended = ", ".join(f"{name}: {FINAL_EXITS.get(code, code)}" for name, code in codes.items())
    print(f"humaine-env run: no worker is left running ({ended}); stopping", file=sys.stderr, flush=True)
    return worst


def _print_table(children: list[Child], statuses: dict[str, Status], stop: threading.Event) -> None:
    deadline = time.monotonic() + STATUS_WAIT_S
    while time.monotonic() < deadline and not stop.is_set():
        if all(_settled(_reported(c, statuses)) or (c.process and c.process.poll() is not None) for c in children):
            break
        time.sleep(0.1)
    rows = []
    for child in children:
        status = _reported(child, statuses)
        code = child.process.poll() if child.process else None
        if code is not None:
            state = f"exited ({code})"
        elif status is not None:
            state = status.state + (f": {status.detail}" if status.detail else "")
        else:
            state = "starting"
        rows.append((child.name, str(child.process.pid if child.process else "-"), state))
    width = max([len(r[0]) for r in rows] + [6])
    print(f"{'worker':<{width}}  {'pid':>7}  state", flush=True)
    for name, pid, state in rows:
        print(f"{name:<{width}}  {pid:>7}  {state}", flush=True)


def _settled(status: Status | None) -> bool:
    """A worker that serves says ``starting`` until it listens (``Worker.serves_http``)."""
    return status is not None and status.state != "starting"


def _reported(child: Child, statuses: dict[str, Status]) -> Status | None:
    """The status this very child published: a retained one left by an earlier process (a
    killed run, another machine) is not this child's."""
    status = statuses.get(status_name(child.name))
    if status is None or child.process is None:
        return None
    if status.pid != child.process.pid or status.host != socket.gethostname():
        return None
    return status


def stop_stages(names: Sequence[str]) -> list[list[str]]:
    """``names`` in the order they stop, a stage at a time (see :data:`STOP_ORDER`); a worker
    the order does not name stops in the first stage."""
    staged = {name for stage in STOP_ORDER for name in stage}
    stages = [[n for n in names if n not in staged]] + [[n for n in names if n in stage] for stage in STOP_ORDER]
    return [stage for stage in stages if stage]


def _stop_children(children: list[Child]) -> None:
    by_name = {c.name: c for c in children}
    for stage in stop_stages(list(by_name)):
        log.info("stopping %s", ", ".join(stage))
        _stop_together([by_name[name] for name in stage])


def _stop_together(children: list[Child]) -> None:
    running = [c.process for c in children if c.process is not None and c.process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + KILL_AFTER_S
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("pid %s did not stop in %.1f s; killing it", process.pid, KILL_AFTER_S)
            process.kill()
            process.wait()
