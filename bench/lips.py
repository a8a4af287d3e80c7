"""Benchmark: the buyer's lips tell their speech from a bystander's (``[microphone] lips``).

Sessions from the project's generator (:mod:`sessions.generate`) with somebody behind the
buyer: a real face photo rendered with its jaw following the buyer's own speech (the audio's
level, syllable by syllable), and after every second line a bystander's remark in another voice,
6 dB quieter at the microphone, while the buyer's lips stay still (deal words and an avatar's
name among the remarks). Each session is replayed through the real camera, microphone and Rich
Transcript workers on a real broker (:func:`sessions.replay.replay`), once with the cue on and
once with it off, and scored against its truth (:func:`sessions.evaluate.score`):

- ``buyer``: the buyer's utterances, and how many of them came out as a message to the right
  addressee (``addressee_accuracy``): the cue must not cost any;
- ``bystanders_passed_on``: bystanders' remarks that became a message (each is somebody else's
  words sent to the agents as the buyer's);
- ``lip_spread``: the spread of the lip gap (10th to 90th percentile of ``HeadPose.mouth_open``)
  over each utterance's span, for the buyer's and the bystanders' (where ``lips_min_motion``
  must fall between).

Prints ONE JSON line. ``--sessions N`` (default 3: three faces, three voices, 36 buyer lines and
18 remarks).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/lips.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))


from bench.stats import LINEAR, percentile  # noqa: E402
from sessions.evaluate import Scores, score  # noqa: E402
from sessions.format import Session  # noqa: E402
from sessions.generate import SessionSpec, generate  # noqa: E402
from sessions.replay import ReplayResult, replay  # noqa: E402
from workers.microphone.lips import MIN_MOTION  # noqa: E402
from workers.runtime.broker import broker_for  # noqa: E402
from workers.runtime.config import Config  # noqa: E402

SPECS: tuple[SessionSpec, ...] = (
    SessionSpec("by1", "astronaut", "en-us", 31, bystander_voice="en-gb-x-rp+f3"),
    SessionSpec("by2", "f15", "en-gb-x-rp+f3", 32, bystander_voice="en-us+m3"),
    SessionSpec("by3", "f1", "en-us+m3", 33, bystander_voice="en-us"),
)


def lip_spreads(result: ReplayResult) -> dict[str, list[float]]:
    """Per truth utterance, the lip gap's 10th-90th percentile spread over its span."""
    truth = result.session.truth()
    assert truth is not None
    poses = [(int(p["frame_ts"]), float(p["mouth_open"])) for p in result.of_type("headpose") if p.get("mouth_open") is not None]
    out: dict[str, list[float]] = {"buyer": [], "bystander": []}
    for utt in truth.utterances:
        gaps = [g for t, g in poses if utt.start_ms <= t <= utt.end_ms]
        if len(gaps) >= 2:
            low, high = percentile(gaps, 10, method=LINEAR), percentile(gaps, 90, method=LINEAR)
            assert low is not None and high is not None  # two gaps at least
            out[utt.speaker].append(round(float(high - low), 3))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=len(SPECS), help=f"how many of the {len(SPECS)} sessions")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sessions = [Session(generate(spec)) for spec in SPECS[: args.sessions]]
    generated_s = time.perf_counter() - started
    line: dict[str, Any] = {"bench": "lips", "sessions": len(sessions), "min_motion": MIN_MOTION, "generate_s": round(generated_s, 1)}
    base = Config.load(None, {}, {})
    with broker_for(base) as (config, _embedded):
        for lips in (True, False):
            scores = Scores()
            spreads: dict[str, list[float]] = {"buyer": [], "bystander": []}
            for session in sessions:
                result = replay(session, config.with_overrides({"microphone.lips": lips}))
                score(result, scores)
                for who, values in lip_spreads(result).items():
                    spreads[who] += values
            summary = scores.summary()
            key = "lips_on" if lips else "lips_off"
            line[key] = {
                "buyer": summary["utterances"],
                "addressee_accuracy": summary["addressee_accuracy"],
                "wer": summary["wer"],
                "bystanders": summary["bystanders"],
                "bystanders_passed_on": summary["bystanders_passed_on"],
                "passed_on": [p["passed_on"] for p in scores.bystanders_passed],
            }
            if lips:
                line["lip_spread"] = {who: {"n": len(v), "min": min(v, default=None), "p10": percentile(v, 10, 3, LINEAR),
                                            "p50": percentile(v, 50, 3, LINEAR),
                                            "max": max(v, default=None)} for who, v in spreads.items()}
    line["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
