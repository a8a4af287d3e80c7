"""The measurements page, generated from the benchmarks' own JSON lines.

The store of record, :data:`MEASUREMENTS`, holds one JSON object per line, appended by
``bench/record.py`` as a benchmark prints its figures::

    {"command": "python bench/turn.py --repeat 3", "at": "2025-01-01T12:00:00Z",
     "machine": {"cpu": "...", "logical_cores": 2, "load_average": [1.5, 1.2, 1.0]},
     "result": {...the benchmark's JSON line...}}

A run that prints several lines (``bench/stt.py``: one per engine) gives several records with the
same ``command`` and ``at`` (when the run started). :func:`render` turns the store into
:data:`REPORT`: per command (sorted), its most recent run as a table, nested keys flattened with
dots and every value as the benchmark printed it. Figures are copied, never typed, so the page
says nothing the store does not; a unit test checks that the committed page is this module's
output from the committed store.

Usage: ``python bench/report.py`` (or ``make measurements``) rewrites :data:`REPORT`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: the store and the page are named relative to it."""
MEASUREMENTS = "bench/measurements.jsonl"
"""The store of record: every run ``bench/record.py`` kept, oldest first."""
REPORT = "docs/measurements.md"
"""The page generated from :data:`MEASUREMENTS`."""
REGENERATE = "make measurements"
"""The command that rewrites :data:`REPORT` (the Makefile runs this module)."""
RECORD = "python bench/record.py"
"""How a benchmark's run is recorded (followed by the benchmark's own command line)."""

Record = Mapping[str, Any]


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every record of the store at ``path``, in file order (an absent store has none)."""
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not {"command", "at", "machine", "result"} <= record.keys():
            raise ValueError(f"{path}:{number}: a record has command, at, machine and result")
        records.append(record)
    return records


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``value``'s leaves by dotted key (``{"a": {"b": 1}}`` gives ``{"a.b": 1}``); lists stay
    whole, as one cell."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    if not value:
        return {prefix: value} if prefix else {}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def cell(value: Any) -> str:
    """A value as the benchmark printed it (strings bare, the rest as JSON), safe in a table: no
    line break, and no character Markdown would take for a cell's end, a tag or math."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace("$", "\\$")


def latest_runs(records: Iterable[Record]) -> dict[str, list[Record]]:
    """Per command (sorted), the records of its most recent run (those with its latest ``at``)."""
    by_command: dict[str, list[Record]] = {}
    for record in records:
        by_command.setdefault(str(record["command"]), []).append(record)
    latest = {}
    for command in sorted(by_command):
        last = max(str(r["at"]) for r in by_command[command])
        latest[command] = [r for r in by_command[command] if r["at"] == last]
    return latest


def _labels(flats: Sequence[Mapping[str, Any]]) -> list[str]:
    """Column headings for the lines of one run: the first key whose text tells them all apart
    (``engine`` for ``bench/stt.py``), else their order."""
    if len(flats) == 1:
        return ["value"]
    for key in flats[0]:
        values = [flat.get(key) for flat in flats]
        if all(isinstance(v, str) for v in values) and len(set(values)) == len(values):
            return [cell(v) for v in values]
    return [f"line {n}" for n in range(1, len(flats) + 1)]


def _machine(machine: Mapping[str, Any]) -> str:
    load = machine.get("load_average") or []
    loads = " / ".join(str(x) for x in load)
    return (f"{machine.get('cpu', 'an unknown CPU')}, {machine.get('logical_cores', '?')} logical cores, "
            f"load average {loads or '?'} (1 / 5 / 15 min) at the start")


def _table(run: Sequence[Record]) -> list[str]:
    flats = [flatten(r["result"]) for r in run]
    keys = list(dict.fromkeys(key for flat in flats for key in flat))
    lines = ["| figure | " + " | ".join(_labels(flats)) + " |", "|---" * (len(flats) + 1) + "|"]
    for key in keys:
        values = [cell(flat[key]) if key in flat else "" for flat in flats]
        lines.append(f"| `{key}` | " + " | ".join(values) + " |")
    return lines


def render(records: Sequence[Record]) -> str:
    """The measurements page for ``records`` (the store's content): deterministic, so that the
    committed page can be compared with it."""
    runs = latest_runs(records)
    lines = [
        "# Measurements",
        "",
        f"Generated by `{REGENERATE}` from `{MEASUREMENTS}`, the store of record that",
        f"`{RECORD} bench/NAME.py ARGS` appends to: one record per JSON line a benchmark printed, with its",
        "command, when the run started (UTC) and the machine, whose load average at the start says how",
        "busy it was. Each section is the most recent run of one command; what a figure means is in the",
        "benchmark's own docstring, and the command reproduces it.",
    ]
    if not runs:
        lines += ["", "No run is recorded yet."]
    counts: dict[str, set[str]] = {}
    for record in records:
        counts.setdefault(str(record["command"]), set()).add(str(record["at"]))
    for command, run in runs.items():
        first = run[0]
        earlier = len(counts[command]) - 1
        lines += [
            "",
            f"## `{command}`",
            "",
            f"Run at {first['at']} on {_machine(first['machine'])}."
            + (f" Earlier runs in the store: {earlier}." if earlier else ""),
            "",
            *_table(run),
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.parse_args(argv)
    text = render(read_records(ROOT / MEASUREMENTS))
    (ROOT / REPORT).parent.mkdir(parents=True, exist_ok=True)
    (ROOT / REPORT).write_text(text, encoding="utf-8")
    print(f"wrote {REPORT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
