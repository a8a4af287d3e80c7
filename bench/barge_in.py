"""Benchmark: barge-in on real audio. The avatars' own voices, as the Avatar Controller
synthesises them, played into the microphone path alone (any trigger is false) and with real
human speech over them at several levels above the echo (``sessions/barge_in_check.py``).

Prints ONE JSON line: false triggers over the echo-only trials (target 0), and per level of
the buyer over the echo the share detected and the delay after the buyer began (p50/p95).
``--margin-db`` / ``--min-ms`` default to the ``[microphone]`` settings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/barge_in.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.stats import LINEAR, percentile  # noqa: E402
from sessions import barge_in_check  # noqa: E402
from workers.microphone.evaluation import pocketsphinx_corpus  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402
from workers.runtime.config import Config  # noqa: E402


def run(margin_db: float, min_ms: int, echo_levels: list[float], over_levels: list[float]) -> dict[str, Any]:
    started = time.perf_counter()
    echoes = barge_in_check.avatar_voices()
    buyers = pocketsphinx_corpus()
    report = barge_in_check.run(echoes, buyers, echo_levels, over_levels, margin_db, min_ms)
    detection: dict[str, Any] = {}
    for over in over_levels:
        found, total, delays = report.detected(over)
        detection[f"+{over:g}dB"] = {
            "detected": found, "trials": total,
            "delay_ms": {"p50": percentile(delays, 50, method=LINEAR), "p95": percentile(delays, 95, method=LINEAR)},
        }
    return {
        "bench": "barge_in",
        "margin_db": margin_db,
        "min_ms": min_ms,
        "echo": f"{len(echoes)} avatar replies (both avatars' configured voices) at {echo_levels} dBFS",
        "buyers": f"{len(buyers)} human read-speech recordings (pocketsphinx test data)",
        "false_triggers": report.false_triggers(),
        "echo_only_trials": report.echo_only(),
        "detection": detection,
        "wall_s": round(time.perf_counter() - started, 1),
        "meets_targets": {"no_false_trigger": report.false_triggers() == 0},
    }


def main(argv: list[str] | None = None) -> int:
    settings = Config.load(None, os.environ, {}).section(MicrophoneSettings)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--margin-db", type=float, default=settings.barge_in_margin_db)
    parser.add_argument("--min-ms", type=int, default=settings.barge_in_min_ms)
    parser.add_argument("--echo-dbfs", default="-40,-30,-20", help="echo levels (dBFS)")
    parser.add_argument("--over-db", default="6,10,15,20", help="levels of the buyer over the echo (dB)")
    args = parser.parse_args(argv)
    levels = barge_in_check.db_levels
    print(json.dumps(run(args.margin_db, args.min_ms, levels(args.echo_dbfs), levels(args.over_db))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
