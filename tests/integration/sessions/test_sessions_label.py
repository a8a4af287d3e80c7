"""``humaine-env label``: a recorded session's bus traffic drafted into truth, corrected at the
terminal (a real process fed on stdin), written where ``eval`` reads it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sessions.format import TRUTH_FILE, Session, SessionInfo, SessionWriter
from sessions.label import draft
from tests.support.helpers import CLI
from tests.support.paths import ROOT
from workers.runtime.messages import NOBODY
from workers.runtime.topics import Topics

START = 1_700_000_000_000


def _mqtt(t_ms: int, topic: str, payload: dict[str, object]) -> dict[str, object]:
    return {"t_ms": t_ms, "kind": "mqtt", "topic": topic, "payload": {"v": 1, "source": "x", "ts": t_ms, **payload}}


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A recorded session as ``humaine-env record`` leaves it: the buyer looks at Celia and
    speaks, says "Watson, ..." while still looking at Celia, looks away; one echo, and two
    malformed payloads (left out of the draft)."""
    topics = Topics("booth")
    info = SessionInfo("booth", START, 12_000, ["Celia", "Watson"], {"Celia": {"yaw": 25.0, "pitch": 0.0}}, None, audio=False)
    folder = tmp_path / "s1"
    attention = str(topics.attention())
    with SessionWriter(folder, info) as writer:
        events = [
            _mqtt(START + 100, attention, {"type": "attention", "target": NOBODY, "since": START + 100}),
            _mqtt(START + 1000, attention, {"type": "attention", "target": "Celia", "previous": NOBODY, "since": START + 900}),
            *[_mqtt(START + t, str(topics.headpose()), {"type": "headpose", "yaw": 24.0 + t % 3, "pitch": 1.0, "roll": 0.0,
                                                        "confidence": 0.9, "frame_ts": START + t}) for t in range(1000, 8000, 200)],
            _mqtt(START + 3100, str(topics.transcript_final()), {"type": "transcript", "final": True, "utterance_id": "u1",
                   "text": "I would pay four hundred", "start": START + 1500, "end": START + 3000, "engine": "vosk", "source": "mic"}),
            _mqtt(START + 3300, str(topics.outgoing_message()), {"type": "humaine_message", "outcome": "delivered",
                   "message": {"addressee": "Celia", "text": "I would pay four hundred",
                               "utteranceStart": START + 1500, "utteranceEnd": START + 3000}}),
            _mqtt(START + 5000, str(topics.transcript_final()), {"type": "transcript", "final": True, "utterance_id": "e1",
                   "text": "our best price", "start": START + 4000, "end": START + 4900, "engine": "vosk", "source": "mic", "echo": True}),
            _mqtt(START + 6600, str(topics.transcript_final()), {"type": "transcript", "final": True, "utterance_id": "u2",
                   "text": "Watson, what about you", "start": START + 5200, "end": START + 6500, "engine": "vosk", "source": "mic"}),
            _mqtt(START + 7000, str(topics.transcript_final()), {"type": "transcript", "final": True, "text": "garbled"}),
            _mqtt(START + 7100, attention, {"type": "attention", "target": "Watson", "since": "soon"}),
            _mqtt(START + 8100, attention, {"type": "attention", "target": NOBODY, "previous": "Celia", "since": START + 8000}),
        ]
        for event in events:
            writer.add_event(event)
    return folder


def test_the_draft_is_what_the_suite_heard_and_saw(session: Path) -> None:
    truth = draft(Session(session))
    assert [(u.id, u.text, u.addressee, u.cue) for u in truth.utterances] == [
        ("u1", "I would pay four hundred", "Celia", "gaze"),  # the message sent
        ("u2", "Watson, what about you", "Celia", "name"),  # no message: attention at its middle
    ]
    assert [(g.target, g.start_ms - START, g.end_ms - START) for g in truth.gaze] == [
        (NOBODY, 100, 900), ("Celia", 900, 8000), (NOBODY, 8000, 12_000)]
    assert truth.gaze[1].yaw == pytest.approx(25.0, abs=1.0)


def _label(session: Path, *args: str, answers: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "label", str(session), *args], cwd=ROOT,
                          input=answers, capture_output=True, text=True, timeout=60, check=False)


def test_corrections_at_the_terminal_are_written(session: Path) -> None:
    answers = "\n".join([
        "",  # u1 as it is
        "a Watson", "x", "",  # u2 was for Watson (a wrong command is explained, then asked again)
        "", "d", "a -", "s 8 12", "",  # spans: keep, delete, to nobody with new times
    ]) + "\n"
    done = _label(session, answers=answers)
    assert done.returncode == 0, done.stderr
    assert "not understood" in done.stdout
    truth = Session(session).truth()
    assert truth is not None
    assert [(u.text, u.addressee, u.cue) for u in truth.utterances] == [
        ("I would pay four hundred", "Celia", "gaze"), ("Watson, what about you", "Watson", "name")]
    assert [(g.target, g.start_ms - START, g.end_ms - START) for g in truth.gaze] == [(NOBODY, 100, 900), (NOBODY, 8000, 12_000)]
    # Labelling again starts from the written truth; q keeps the rest as it is.
    again = _label(session, answers="t I would pay five hundred\n\nq\n")
    assert again.returncode == 0, again.stderr
    relabelled = Session(session).truth()
    assert relabelled is not None and relabelled.utterances[0].text == "I would pay five hundred"
    assert relabelled.utterances[1].addressee == "Watson" and len(relabelled.gaze) == 2


def test_accept_and_failures(session: Path, tmp_path: Path) -> None:
    cut = _label(session, answers="\n")  # input ends before the end: nothing written
    assert cut.returncode == 1 and not (session / TRUTH_FILE).exists()
    accepted = _label(session, "--accept")
    assert accepted.returncode == 0
    written = json.loads((session / TRUTH_FILE).read_text())
    assert len(written["utterances"]) == 2 and len(written["gaze"]) == 3
    missing = _label(tmp_path / "nowhere", "--accept")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
