"""``humaine-env tournament``: the competition of ``[tournament]``'s roster, at the terminal.

``plan`` plans the fair schedule when none is stored (the same the console's Next round would
plan) and prints it, with each round's state and, once played, its round id; ``standings`` prints
the agents' mean utility and mean social welfare and the buyers' totals from the EO's round
totals. Both read and write the room's ledger under ``data_dir``, the one the Avatar Controller
keeps: the console and this command show the same schedule.
"""

from __future__ import annotations

import argparse
import json
import sys

from workers.runtime.config import Config

ACTIONS = ("plan", "standings")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="plan: the schedule (planned now when none is stored); "
                                                        "standings: the standings so far")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    output.add_argument("--csv", action="store_true", help="standings as CSV (as /operator/standings.csv)")


def main(args: argparse.Namespace, config: Config) -> int:
    from avatar.books.database import LedgerError
    from avatar.books.ledger import LEDGER_FILE
    from avatar.competition.settings import TournamentSettings
    from avatar.competition.store import CompetitionStore
    from avatar.competition.tournament import ScheduleError, Tournament
    from avatar.room_ledger import open_ledger
    from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE

    settings = config.section(TournamentSettings)
    if args.action == "plan" and not settings.enabled:
        print("humaine-env tournament: no roster: set [tournament] buyers and agents (docs/configuration.md)", file=sys.stderr)
        return EXIT_CONFIG
    try:
        ledger = open_ledger(config.core.data_dir / LEDGER_FILE)
    except LedgerError as exc:
        print(f"humaine-env tournament: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    try:
        store = CompetitionStore(ledger)
        tournament = Tournament(store, settings, config.core.avatars)
        if args.action == "standings":
            table = tournament.standings()
            if args.csv:
                sys.stdout.write(table.csv_text())
            elif args.json:
                print(json.dumps(table.body(), indent=2))
            else:
                _print_standings(table)
            return 0
        try:
            slots = tournament.plan()
        except ScheduleError as exc:
            print(f"humaine-env tournament: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        rounds = {slot.id: launch.round_id for slot, launch in store.launches_of_slots(tournament.roster or "")}
        fairness = tournament.fairness()
        if args.json:
            print(json.dumps({"fair": {str(c): p for c, p in fairness.items()}, "rounds": [
                {"seq": n, "cycle": s.cycle, "state": s.state, "buyer": s.slot.buyer, "buyer_utility": s.slot.buyer_utility,
                 "seats": [{"avatar": a, "agent": x.agent, "utility": x.utility} for a, x in zip(config.core.avatars, s.slot.seats,
                                                                                              strict=False)],
                 "replay_of": s.put_back_from, "round": rounds.get(s.id)} for n, s in enumerate(slots, 1)]}, indent=2))
            return 0
        agents, buyers = list(settings.agents), settings.buyers
        print(f"competition: {len(agents)} agents ({', '.join(agents)}), {len(buyers)} buyers ({', '.join(buyers)})")
        for cycle, problems in fairness.items():
            print(f"cycle {cycle}: fair: " + ("yes" if not problems else "no: " + "; ".join(problems)))
        avatars = config.core.avatars
        header = " ".join(f"{a:<16}" for a in avatars)
        print(f"{'#':>4}  {'cycle':>5}  {'state':<8} {'round':<6} {'buyer':<16} {header} buyer utility")
        for n, s in enumerate(slots, 1):
            seats = " ".join(f"{x.agent + ' (' + x.utility + ')':<16}" for x in s.slot.seats)
            replay = f" (again: #{s.put_back_from})" if s.put_back_from else ""
            print(f"{n:>4}  {s.cycle:>5}  {s.state:<8} {rounds.get(s.id, '-')!s:<6} {s.slot.buyer:<16} {seats} {s.slot.buyer_utility}"
                  f"{replay}")
        return 0
    finally:
        ledger.close()


def _print_standings(table: object) -> None:
    from avatar.competition.standings import Standings

    assert isinstance(table, Standings)
    print("agents, by mean utility:")
    print(f"  {'agent':<16} {'rounds':>6} {'utility':>9} {'welfare':>9}")
    for a in table.agents:
        print(f"  {a.name:<16} {a.rounds:>6} {a.utility_mean:>9.2f} {a.welfare_mean:>9.2f}")
    print("agents, by mean social welfare: " + ", ".join(f"{a.name} {a.welfare_mean:.2f}" for a in table.by_welfare))
    print("buyers:")
    for b in table.buyers:
        print(f"  {b.name:<16} {b.rounds:>6} {b.utility_total:>9.2f}")
    for u in table.unscored:
        print(f"unscored: round {u.round} ({u.buyer}): {u.reason}")
