"""Negotiation utterances spoken by espeak-ng and Festival voices, 16 kHz mono WAV, known text.

The microphone tests and the STT benchmark use them to measure word error rate on the domain's
own vocabulary (goods, quantities, prices, the avatars' names) with and without biasing; real
human speech comes from the pocketsphinx and Asterisk corpora. The Debian Festival voices (two
diphone voices and an HTS voice trained on a recorded speaker) are the check that a recognizer
or its biasing is not tuned to espeak-ng alone. Generated on demand and cached under
``.cache/synth`` (keyed by text and voice; one utterance is :func:`sessions.speech.synthesize`,
which the generated sessions speak with too), so the repository carries the recipe, not the
audio. Run directly to (re)generate: ``python scripts/synth_speech.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/synth_speech.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from sessions.speech import CACHE, Utterance, synthesize  # noqa: E402

SENTENCES: tuple[str, ...] = (
    "celia i want two eggs and three cups of flour",
    "watson how much for a cup of sugar",
    "i offer five dollars for the chocolate",
    "that is too expensive can you do four dollars",
    "i accept your offer",
    "watson sell me two teaspoons of vanilla for one dollar",
    "i would like six ounces of blueberries",
    "no deal i reject that offer",
    "celia can i get a packet of sugar and some milk",
    "hey watson i will pay ten dollars for everything",
    "i need three eggs and one cup of milk for seven dollars",
    "how about eight dollars and fifty cents",
    "i'd like to buy five eggs for two dollars",
    "celia could you give me a dozen eggs",
    "the sugar costs three dollars fifty",
    "i need two cups of flour and a cup of milk",
    "watson what is your best price for the butter",
    "can you sell me twelve eggs for four dollars",
    "i will give you six dollars for three bags of flour",
    "that sounds fair let's do it",
    "celia i only need one packet of baking powder",
    "four ounces of chocolate please",
    "would you take nine dollars for everything",
    "hello watson how are you today",
    "i think that's a little too much for me",
    "twenty eggs and two pounds of butter",
    "my final offer is fifteen dollars",
    "thank you celia it was nice doing business",
    "could i have half a cup of sugar",
    "okay watson you have a deal",
)
"""Written as a buyer would say them, independently of the language model's templates."""

VOICES: tuple[str, ...] = ("en-us", "en-gb-x-rp+f3", "en-us+m3")
"""espeak-ng: a US male, a British female variant and a second US male timbre."""
FESTIVAL_VOICES: tuple[str, ...] = (
    "festival:kal_diphone",
    "festival:ked_diphone",
    "festival:cmu_us_slt_arctic_hts",
)
"""Festival (Debian ``festvox-kallpc16k``, ``festvox-kdlpc16k``, ``festvox-us-slt-hts``): two US
male diphone voices and a US female HTS voice."""
MIXED_VOICES: tuple[str, ...] = (*FESTIVAL_VOICES, "en-us")
"""The non-espeak voices plus one espeak-ng voice: the corpus engines are compared on."""

KOREAN_SENTENCES: tuple[str, ...] = ("안녕하세요", "감사합니다", "하나 둘 셋")
"""For proving the Vosk code path with the Korean model: a greeting, thanks, counting."""


def negotiation_corpus(out_dir: Path = CACHE, voices: tuple[str, ...] = VOICES) -> list[Utterance]:
    """Every sentence in every voice, in that order; the ones not cached yet are synthesized a
    few at a time (each is a process of its own: the set-up step's longest Python asset)."""
    from concurrent.futures import ThreadPoolExecutor

    pairs = [(text, voice) for voice in voices for text in SENTENCES]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="synth") as pool:
        return list(pool.map(lambda pair: synthesize(pair[0], pair[1], out_dir), pairs))


def korean_corpus(out_dir: Path = CACHE) -> list[Utterance]:
    return [synthesize(text, "ko", out_dir) for text in KOREAN_SENTENCES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    items = negotiation_corpus(args.out, VOICES + FESTIVAL_VOICES) + korean_corpus(args.out)
    manifest = [{"path": str(u.path), "text": u.text, "voice": u.voice} for u in items]
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"{len(items)} utterances in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
