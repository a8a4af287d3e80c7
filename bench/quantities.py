"""Benchmark: doubtful quantities (``workers/microphone/quantities.py``) on negotiation speech.

The negotiation corpus (``scripts/synth_speech.py``: 30 buyer sentences) plus
:data:`EXTRA` sentences with the quantities Whisper tiny.en confuses ("six teaspoons", "fifteen
eggs"), each by every voice (three espeak-ng, three Festival), through the microphone pipeline
(decodes shared with ``bench/names.py``'s cache). Every quantity heard (a number followed by a
word) is *right* when the reference has the same number before the same word (singular), else
*wrong*; prints one JSON line: quantities heard, right and wrong, how many of each were flagged,
by reason, and every wrong one with its flags.

``.venv/bin/python bench/quantities.py [--voices all] [--min-conf 0.5]``
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
from scripts.synth_speech import FESTIVAL_VOICES, SENTENCES, VOICES  # noqa: E402
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


def quantities(text: str) -> list[tuple[str, str]]:
    """(number, singular word after it) of every quantity in a normalised text."""
    words = [re.sub(r"[^a-z0-9.$]", "", w.lower()).rstrip(".") for w in text.split()]
    return [(w, singular(words[i + 1])) for i, w in enumerate(words[:-1]) if _NUMBER.match(w) and words[i + 1]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="all")
    parser.add_argument("--min-conf", type=float, default=0.5)
    args = parser.parse_args(argv)
    voices = VOICES + FESTIVAL_VOICES if args.voices == "all" else tuple(v for v in args.voices.split(",") if v)
    items = [(s, "") for s in (*SENTENCES, *EXTRA)]
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
