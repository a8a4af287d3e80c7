"""Run one benchmark and keep what it measured, with the command that measured it.

``python bench/record.py bench/turn.py --repeat 3`` runs ``python bench/turn.py --repeat 3`` from
the checkout, passes its output through as it comes, and appends one record per JSON line it
prints to the store of record (:data:`bench.report.MEASUREMENTS`): the command, when the run
started (UTC, the same for every line of the run), the machine (CPU model, logical cores, load
average at the start: a figure measured while something else kept the cores busy reads
accordingly) and the line itself. A line that is not a JSON object is passed through and not
recorded. The exit status is the benchmark's.

Run benchmarks one at a time: two at once measure each other.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/record.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.report import MEASUREMENTS  # noqa: E402

CPUINFO = Path("/proc/cpuinfo")


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (``platform`` names only the architecture
    elsewhere)."""
    try:
        for line in CPUINFO.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine() -> dict[str, Any]:
    """What a reader needs to weigh a figure: the CPU, how many logical cores, and how busy they
    were when the run started (load average over 1, 5 and 15 minutes)."""
    return {
        "cpu": cpu_model(),
        "logical_cores": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def command_line(script: Path, args: list[str]) -> str:
    """The command as a reader re-runs it from the checkout: ``python bench/NAME.py ARGS``."""
    try:
        shown = script.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        shown = str(script)
    return shlex.join(["python", shown, *args])


def json_object(line: str) -> dict[str, Any] | None:
    """``line`` as a JSON object, or None for anything else (progress text, a bare value)."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def record(command: str, at: str, host: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {"command": command, "at": at, "machine": host, "result": result}


def run(script: Path, args: list[str], store: Path) -> int:
    """Run the benchmark, echo its stdout, append a record per JSON object line to ``store``;
    its exit status (128 + the signal when a signal ended it)."""
    command = command_line(script, args)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    host = machine()
    kept = 0
    # Unbuffered, so that its lines come through while it runs, not all at its end.
    environ = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen([sys.executable, str(script.resolve()), *args], cwd=ROOT, env=environ,
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                result = json_object(line)
                if result is not None:
                    with store.open("a", encoding="utf-8") as out:
                        out.write(json.dumps(record(command, at, host, result), ensure_ascii=False) + "\n")
                    kept += 1
            status = proc.wait()
        except KeyboardInterrupt:
            # The benchmark got the same Ctrl-C (one process group); what it printed is kept.
            proc.wait()
            status = 130
    shown = store.relative_to(ROOT) if store.is_relative_to(ROOT) else store
    print(f"record: {kept} line(s) of `{command}` kept in {shown}", file=sys.stderr)
    return 128 - status if status < 0 else status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("benchmark", type=Path, help="the benchmark's script, e.g. bench/turn.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark's own arguments")
    options = parser.parse_args(argv)
    if not options.benchmark.is_file():
        parser.error(f"no benchmark at {options.benchmark}")
    return run(options.benchmark, options.args, ROOT / MEASUREMENTS)


if __name__ == "__main__":
    sys.exit(main())
