"""Benchmark: doubtful quantities (``workers/microphone/quantities.py``) on negotiation speech.

The negotiation corpus (``scripts/synth_speech.py``: 30 buyer sentences) plus
:data:`EXTRA` sentences with the quantities Whisper tiny.en confuses ("six teaspoons", "fifteen
eggs"), each by every voice (three espeak-ng, three Festival), through the microphone pipeline
(decodes shared with ``bench/names.py``'s cache). Every quantity heard (a number followed by a
word) is *right* when the reference has the same number before the same word (singular), else
*wrong*; prints one JSON line: quantities heard, right and wrong, how many of each were flagged,
by reason, and every wrong one with its flags.

``--grid``: instead, every unit of the domain after every count from one to twelve ("I need
six teaspoons of sugar."), by the benchmark's mixed voices unless ``--voices`` says otherwise; the
line adds ``tens_invented``: quantities heard as a tens number where a count of two to nine was
said ("60 spoons" for "six teaspoons").

``.venv/bin/python bench/quantities.py [--voices all] [--min-conf 0.5] [--grid]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/quantities.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.names import decode_all  # noqa: E402
from scripts.synth_speech import FESTIVAL_VOICES, MIXED_VOICES, SENTENCES, VOICES  # noqa: E402
from workers.microphone.normalize import normalize_text, normalize_words  # noqa: E402
from workers.microphone.quantities import doubtful_quantities, singular  # noqa: E402

EXTRA: tuple[str, ...] = (
    "I need six teaspoons of sugar.",
    "Can I have four teaspoons of vanilla?",
    "I want fifteen eggs.",
    "Give me thirteen ounces of chocolate.",
    "Sixteen eggs and two cups of milk, please.",
    "I would like nine teaspoons of baking powder.",
)
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
GRID_UNITS: tuple[tuple[str, str], ...] = (
    ("cup", "of sugar"), ("ounce", "of chocolate"), ("teaspoon", "of vanilla"), ("tablespoon", "of butter"),
    ("packet", "of sugar"), ("pound", "of flour"), ("bag", "of flour"), ("egg", ""),
)
"""Every unit of the domain (and the countable goods) with what follows it in the grid."""
GRID_COUNTS = range(1, 13)


def grid() -> tuple[str, ...]:
    """ "I need {count} {unit} {of goods}." for every count of :data:`GRID_COUNTS` and unit."""
    from formats.spoken_amounts import number_words

    return tuple(
        f"I need {number_words(n)} {unit if n == 1 else unit + 's'}{' ' + after if after else ''}."
        for unit, after in GRID_UNITS for n in GRID_COUNTS
    )


def quantities(text: str) -> list[tuple[str, str]]:
    """(number, singular word after it) of every quantity in a normalised text."""
    words = [re.sub(r"[^a-z0-9.$]", "", w.lower()).rstrip(".") for w in text.split()]
    return [(w, singular(words[i + 1])) for i, w in enumerate(words[:-1]) if _NUMBER.match(w) and words[i + 1]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="all")
    parser.add_argument("--min-conf", type=float, default=0.5)
    parser.add_argument("--grid", action="store_true", help="every unit after every count from one to twelve")
    args = parser.parse_args(argv)
    if args.grid and args.voices == "all":
        args.voices = ",".join(MIXED_VOICES)
    voices = VOICES + FESTIVAL_VOICES if args.voices == "all" else tuple(v for v in args.voices.split(",") if v)
    items = [(s, "") for s in (grid() if args.grid else (*SENTENCES, *EXTRA))]
    heard = decode_all(voices, None, None, items)
    counts: Counter[str] = Counter()
    wrong_list: list[dict[str, object]] = []
    for h in heard:
        reference = Counter(quantities(normalize_text(h.said)))
        words = normalize_words(list(h.words))
        flagged = {d.text.lower().rstrip(".,"): d for d in doubtful_quantities(words, args.min_conf)}
        for number, unit in quantities(" ".join(w.word for w in words)):
            key = next((k for k in flagged if k.split()[0] == number and singular(re.sub(r"[^a-z]", "", k.split()[1])) == unit), None)
            doubt = flagged.get(key) if key else None
            ok = reference[(number, unit)] > 0
            kind = "right" if ok else "wrong"
            counts[kind] += 1
            said_counts = {float(n) for n, _ in reference}
            if not ok and float(number) % 10 == 0 and float(number) / 10 in said_counts and float(number) >= 20:
                counts["tens_invented"] += 1
            if doubt is not None:
                counts[f"{kind}_flagged"] += 1
                for r in doubt.reasons:
                    counts[f"{kind}_flagged_{r}"] += 1
            if not ok:
                wrong_list.append({"said": h.said, "heard": f"{number} {unit}", "voice": h.voice,
                                   "flags": list(doubt.reasons) if doubt else [], "maybe": doubt.maybe if doubt else ""})
    print(json.dumps({"utterances": len(heard), "voices": list(voices), "min_conf": args.min_conf, **dict(sorted(counts.items())),
                      "wrong_heard": wrong_list}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
