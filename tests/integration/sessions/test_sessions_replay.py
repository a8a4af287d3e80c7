"""Evaluation of a generated session through the real workers (camera, microphone, transcript).

Floors come from measurement on this session (8/8 addressees right with pocketsphinx, yaw/pitch
MAE 1.35/0.82 degrees) with margin: one wrong addressee or a pose error about twice the
measured one fails. The full corpus: ``python scripts/make_corpus.py`` then ``humaine-env eval`` on its folders.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sessions.format import Session
from sessions.generate import SessionSpec, generate
from tests.support.helpers import CLI, PS_DOMAIN, free_port

REPLAY = SessionSpec("replay", "f15", "en-us", 21, fps=10.0, lines=8, bystander_voice="en-gb-x-rp+f3")
"""Eight utterances (gaze to Celia and Watson, names overriding gaze) and four remarks by
somebody behind the buyer while the buyer's lips are still, about 60 s."""
ADDRESSEE_FLOOR = 0.875
YAW_MAE_FLOOR = 2.5
PITCH_MAE_FLOOR = 2.0


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(generate(REPLAY))


def test_eval_on_a_fresh_machine_is_accurate_and_passes_on_no_bystander(session: Session, tmp_path: Path) -> None:
    """``humaine-env eval`` as a user runs it on a fresh machine: nothing listens on the
    configured broker address, so the embedded broker serves the replay through the real
    workers; one JSON line, with the floors measured on this session. With the engine the floors
    were measured with (pocketsphinx's domain model): the default Whisper's decode of one line of
    this session differs between CPUs (its near-ties), and one line is an eighth of the accuracy.

    One replay, the command's: that two replays decide the same is
    ``test_sessions_paced.py``'s (through a real mosquitto), and ``eval`` is ``replay`` and
    ``score`` (:func:`sessions.evaluate.evaluate`)."""
    engine = [arg for key, value in PS_DOMAIN.items() for arg in ("--set", f"{key}={json.dumps(value)}")]
    argv = [*CLI, "eval", str(session.path), "--mistakes", "--log-level", "WARNING",
            "--set", f'broker.url="mqtt://127.0.0.1:{free_port()}"', "--set", f'data_dir="{tmp_path}"', *engine]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    (line,) = result.stdout.strip().splitlines()
    summary = json.loads(line)
    buyer = [u for u in session.truth().utterances if u.speaker == "buyer"]
    assert summary["sessions"] == 1 and summary["utterances"] == len(buyer), summary
    unheard = [m for m in summary["mistakes"] if m["text"] is None]
    assert not unheard, unheard  # every line of the buyer's was passed on (a wrong addressee is a mistake, not a loss)
    assert summary["bystanders"] == 4 and summary["bystanders_passed_on"] == 0, summary  # their lips: the buyer's
    assert summary["addressee_accuracy"] >= ADDRESSEE_FLOOR, summary
    assert summary["yaw_mae"] <= YAW_MAE_FLOOR and summary["pitch_mae"] <= PITCH_MAE_FLOOR, summary
    assert summary["wer"] < 0.5, summary
