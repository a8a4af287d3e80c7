"""Pipecat's own smart-turn v3 analyzer on recordings: run apart, by tests/integration/microphone/test_mic_turn.py.

Run with the Pipecat the set-up step installs apart (``scripts/fetch_assets.py``,
``pipecat_reference``) on ``PYTHONPATH``, never in the suite's environment. Reads an ``.npz`` of
int16 recordings at 16 kHz; prints one JSON list: for each, the probability that the turn is
complete, through Pipecat's public path (audio appended in 20 ms frames as speech, then
``analyze_end_of_turn``), with its bundled model.
"""

from __future__ import annotations

import asyncio
import json
import sys

import numpy as np


def main(path: str) -> int:
    from loguru import logger

    logger.remove()  # its banner and debug lines would mix with the answer on stdout
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    recordings = np.load(path)
    out: list[float] = []
    for name in sorted(recordings.files, key=int):
        analyzer = LocalSmartTurnAnalyzerV3()
        analyzer.set_sample_rate(16_000)
        samples = recordings[name].astype(np.int16)
        for offset in range(0, len(samples), 320):
            analyzer.append_audio(samples[offset : offset + 320].tobytes(), is_speech=True)
        _state, metrics = asyncio.run(analyzer.analyze_end_of_turn())
        out.append(float(metrics.probability))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
