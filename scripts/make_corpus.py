"""Generate the ground-truth session corpus (cached under .cache/sessions; the README's "Recorded sessions" describes it).

``python scripts/make_corpus.py [--out DIR]`` prints one line per session folder.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/make_corpus.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from sessions.generate import CACHE, CORPUS, generate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="corpus: %(message)s")
    for spec in CORPUS:
        print(generate(spec, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
