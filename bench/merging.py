"""Benchmark: utterances spoken with a pause, and complete ones, through the microphone's
segmenter and recogniser and the transcript worker's merger, on the audio's own clock.

Corpus: ``scripts/paused_speech.py``. ``--corpus halves`` (the default): hesitation pauses,
clause-boundary pauses and complete sentences, each voice of the synthetic corpus, halves
synthesised apart, pauses of 0.7 and 1.0 s. ``--corpus spliced``: the pause put inside whole
recordings (the first part keeps a sentence's unfinished pitch) of the synthetic voices and of
real human speech (Asterisk prompts, LibriVox reads, the turns of a telephone conversation,
paused after a function word), and the human recordings unpaused as complete ones; figures
also per group (synthetic, and each human source). Measurement:
``sessions/merge_check.py`` (events reach the merger when a live worker would see them, a final
when its block ends plus the recogniser's real decode time).

Prints ONE JSON line: per kind of utterance, of those the recogniser heard as two or more
finals, the share that still became one message (target >= 0.95 for hesitation pauses), and
for every message how long it waited after its last final (complete sentences: 0 ms, i.e. the
merger adds nothing; a live worker adds its own processing, measured by ``bench/transcript.py``).
``--engine`` picks the recogniser, ``--merge-hold`` the hold policy, ``--merge-turn`` how the
end-of-turn model joins it (default: the configured ones); ``human`` sums the human sources up
against the targets, ``turn_inference_ms`` is the end-of-turn model's time per final.
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
if str(ROOT) not in sys.path:  # run as `python bench/merging.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.stats import percentile  # noqa: E402
from scripts import paused_speech  # noqa: E402
from sessions import merge_check  # noqa: E402
from transcript.settings import TranscriptSettings  # noqa: E402
from workers.microphone import turn as turn_model  # noqa: E402
from workers.microphone.engines import load_recognizer  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402
from workers.runtime.config import Config  # noqa: E402

TARGET_ONE_MESSAGE = 0.95


def _kinds(report: merge_check.MergeReport) -> dict[str, Any]:
    kinds: dict[str, Any] = {}
    for kind in ("hesitation", "boundary", "complete"):
        results = report.of_kind(kind)
        if not results:
            continue
        waits = [w for r in results for w in r.wait_ms]
        kinds[kind] = {
            "items": len(results),
            "heard_split": sum(len(r.finals) > 1 for r in results),
            "one_message_share": report.one_message_share(kind),
            "messages": sum(len(r.messages) for r in results),
            "held": sum(bool(h) for r in results for h in r.held_because),
            "wait_ms": {"p50": percentile(waits, 50), "p95": percentile(waits, 95), "max": percentile(waits, 100)},
        }
    return kinds


def _human(reports: dict[str, merge_check.MergeReport]) -> dict[str, Any]:
    """The issue's targets on the human sources together: paused items (all heard as two or
    more finals) that became one message; complete items that waited, and how long."""
    human = [r for name, part in reports.items() if name.startswith("human:") for r in part.items]
    paused = [r for r in human if r.kind == "hesitation"]
    complete = [r for r in human if r.kind == "complete"]
    talk = [r for r in reports.get("human:conversation", merge_check.MergeReport()).items if r.kind == "complete"]
    waits = [w for r in complete for w in r.wait_ms]
    return {
        "paused_one_message": f"{sum(r.one_message for r in paused)}/{len(paused)}",
        "paused_heard_split": sum(len(r.finals) > 1 for r in paused),
        "complete_waited": f"{sum(any(r.held_because) for r in complete)}/{len(complete)}",
        "conversation_complete_waited": f"{sum(any(r.held_because) for r in talk)}/{len(talk)}",
        "complete_wait_ms": {"p50": percentile(waits, 50), "p95": percentile(waits, 95), "max": percentile(waits, 100)},
    }


def _failures(report: merge_check.MergeReport) -> list[dict[str, Any]]:
    """Paused items heard as two finals that left as two messages, and complete ones held."""
    return [
        {"kind": r.kind, "said": r.text, "finals": r.finals, "messages": r.messages}
        for r in report.items
        if (r.kind == "hesitation" and len(r.finals) > 1 and not r.one_message)
        or (r.kind == "complete" and any(r.held_because))
    ]


def run(
    engine: str | None, voices: tuple[str, ...] | None, merge_hold: str | None = None, corpus: str = "halves",
    failures: bool = False, merge_turn: str | None = None,
) -> dict[str, Any]:
    overrides: dict[str, Any] = {"microphone.engine": engine} if engine else {}
    if merge_hold:
        overrides["transcript.merge_hold"] = merge_hold
    if merge_turn:  # the microphone measures what the merger reads, as the live worker does
        overrides.update({"transcript.merge_turn": merge_turn, "microphone.end_of_turn": merge_turn != "off"})
    config = Config.load(None, os.environ, overrides)
    mic = config.section(MicrophoneSettings)
    settings = config.section(TranscriptSettings)
    recognizer = load_recognizer(mic, config.core.data_dir)
    if corpus == "spliced":
        items = paused_speech.spliced_corpus(paused_speech.forced_aligner(), voices)
    else:
        items = paused_speech.corpus(voices)
    started = time.perf_counter()
    groups: dict[str, list[Any]] = {}
    for item in items:  # synthetic voices together; human speech by source (prompts, reads, talk)
        groups.setdefault(item.voice.split("-")[0] if item.voice.startswith("human:") else "synthetic", []).append(item)
    reports = {name: merge_check.run(group, recognizer, mic, settings, config.core.avatars) for name, group in groups.items() if group}
    report = merge_check.MergeReport([r for part in reports.values() for r in part.items])
    kinds = _kinds(report)
    share = kinds["hesitation"]["one_message_share"]
    complete_waits = [w for r in report.of_kind("complete") for w in r.wait_ms]
    model = turn_model.load(mic.turn_model_path) if mic.end_of_turn else None
    inference = model.inference_ms if model is not None else []
    return {
        "bench": "merging",
        "corpus": corpus,
        "engine": recognizer.name,
        "merge_gap_s": settings.merge_gap_s,
        "merge_hold": settings.merge_hold,
        "merge_turn": settings.merge_turn,
        "vad_engine": mic.vad_engine,
        "hangover_ms": mic.hangover_ms,
        "human": _human(reports),
        "turn_inference_ms": {"count": len(inference), "p50": percentile(inference, 50), "p95": percentile(inference, 95)},
        "voices": sorted({i.voice for i in items}),
        "pauses_ms": list(paused_speech.PAUSES_MS),
        "kinds": kinds,
        "groups": {name: _kinds(part) for name, part in reports.items()} if len(reports) > 1 else None,
        **({"failures": _failures(report)} if failures else {}),
        "wall_s": round(time.perf_counter() - started, 1),
        "meets_targets": {
            "hesitation_one_message": share is not None and share >= TARGET_ONE_MESSAGE,
            "complete_not_held": all(w == 0 for w in complete_waits),
        },
        "targets": {"hesitation_one_message": TARGET_ONE_MESSAGE, "complete_wait_ms": 0},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=None, help="microphone engine (default: the configured one)")
    parser.add_argument("--merge-hold", choices=("unfinished", "always"), default=None, help="default: the configured one")
    parser.add_argument("--merge-turn", choices=("off", "alone", "or_text", "and_text"), default=None,
                        help="how the end-of-turn model joins the text rules (default: the configured one)")
    parser.add_argument("--voices", default="", help="comma list of voices (default: the synthetic corpus's)")
    parser.add_argument("--corpus", choices=("halves", "spliced"), default="halves",
                        help="halves synthesised apart, or pauses inside whole synthetic and human recordings")
    parser.add_argument("--failures", action="store_true", help="list the split paused items and the held complete ones")
    args = parser.parse_args(argv)
    voices = tuple(v for v in args.voices.split(",") if v) or None
    print(json.dumps(run(args.engine, voices, args.merge_hold, args.corpus, args.failures, args.merge_turn)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
