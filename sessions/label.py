"""A first draft of ``truth.json`` for a recorded session, from what the suite heard and saw.

Labelling a real session by hand from nothing is slow; correcting a draft is quick. The draft
takes, from the session's bus traffic (``events.jsonl``):

* one utterance per final transcript (echoes of the avatars left out), with its times and
  text; its addressee is the one the Rich Transcript worker sent the message to when a
  message overlaps it, else the camera's attention at its middle; its cue is ``name`` when
  the text starts with an avatar's name, ``gaze`` when it has an addressee, else ``none``;
* one gaze span per period between attention changes, ``hold`` on the target the camera
  reported, with the median head pose of the span.

Everything in it is what the suite itself concluded, so a draft accepted without checking
measures nothing: ``humaine-env label`` walks through it for the person who was there (or who
watches the recording) to correct.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from sessions.format import Cue, GazeSpan, Session, Truth, TruthUtterance
from workers.runtime.messages import NOBODY

ATTENTION, TRANSCRIPT, HEADPOSE, MESSAGE = "attention", "transcript", "headpose", "humaine_message"
"""Payload ``type`` values read from the recording."""


def draft(session: Session) -> Truth:
    """The draft truth of ``session`` (see the module docstring)."""
    payloads = [(int(e.get("t_ms", 0)), e["payload"]) for e in session.events() if isinstance(e.get("payload"), dict)]
    end_ms = session.info.start_ms + session.info.duration_ms
    changes = _attention_changes(payloads)
    gaze = _gaze_spans(changes, _poses(payloads), end_ms)
    messages = [p["message"] for _, p in payloads if p.get("type") == MESSAGE and isinstance(p.get("message"), dict)]
    utterances: list[TruthUtterance] = []
    for payload in _finals(payloads):
        start, end = int(payload["start"]), int(payload["end"])
        text = str(payload.get("text", "")).strip()
        addressee = _message_addressee(messages, start, end)
        if addressee is None:
            addressee = _attention_at(changes, (start + end) // 2)
        cue: Cue = "name" if _leading_name(text, session.info.avatars) else ("gaze" if addressee else "none")
        utterances.append(TruthUtterance(str(payload.get("utterance_id", len(utterances))), text, addressee, cue, start, end))
    return Truth(utterances=utterances, gaze=gaze)


def _finals(payloads: Iterable[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    finals: dict[str, dict[str, Any]] = {}
    for _, p in payloads:
        timed = isinstance(p.get("start"), int) and isinstance(p.get("end"), int)  # else not a transcript we sent
        if p.get("type") == TRANSCRIPT and timed and p.get("final") and not p.get("echo") and str(p.get("text", "")).strip():
            finals[str(p.get("utterance_id"))] = p  # a repeated final replaces the earlier one
    return sorted(finals.values(), key=lambda p: int(p["start"]))


def _attention_changes(payloads: Iterable[tuple[int, dict[str, Any]]]) -> list[tuple[int, str]]:
    """(since, target) of each attention change, in time order."""
    changes: list[tuple[int, str]] = []
    for _, p in payloads:
        if p.get("type") == ATTENTION and isinstance(p.get("since"), int):
            since, target = int(p.get("since", 0)), str(p.get("target", NOBODY))
            if not changes or changes[-1][1] != target:
                changes.append((since, target))
    return sorted(changes)


def _poses(payloads: Iterable[tuple[int, dict[str, Any]]]) -> list[tuple[int, float, float]]:
    return sorted(
        (int(p.get("frame_ts", t)), float(p["yaw"]), float(p["pitch"]))
        for t, p in payloads
        if p.get("type") == HEADPOSE and all(isinstance(p.get(k), (int, float)) for k in ("yaw", "pitch"))
    )


def _gaze_spans(changes: Sequence[tuple[int, str]], poses: Sequence[tuple[int, float, float]], end_ms: int) -> list[GazeSpan]:
    spans: list[GazeSpan] = []
    if not changes:  # no camera: no gaze to draft
        return spans
    for (start, target), following in zip(changes, [*changes[1:], (end_ms, "")], strict=True):
        stop = max(start, following[0])
        inside = [(yaw, pitch) for t, yaw, pitch in poses if start <= t < stop]
        yaw = statistics.median(y for y, _ in inside) if inside else 0.0
        pitch = statistics.median(p for _, p in inside) if inside else 0.0
        spans.append(GazeSpan(start, stop, target, round(yaw, 1), round(pitch, 1), "hold"))
    return [s for s in spans if s.end_ms > s.start_ms]


def _attention_at(changes: Sequence[tuple[int, str]], t_ms: int) -> str:
    current = NOBODY
    for since, target in changes:
        if since > t_ms:
            break
        current = target
    return current


def _message_addressee(messages: Iterable[dict[str, Any]], start: int, end: int) -> str | None:
    # a typed line has no duration: the message that holds its instant is its own
    best, best_overlap = None, 0 if end > start else -1
    for m in messages:
        overlap = min(end, int(m.get("utteranceEnd", 0))) - max(start, int(m.get("utteranceStart", 0)))
        if overlap > best_overlap:
            best, best_overlap = m, overlap
    return str(best.get("addressee") or NOBODY) if best is not None else None


def _leading_name(text: str, avatars: Iterable[str]) -> bool:
    first = re.split(r"[\s,.!?:;]+", text.strip(), maxsplit=1)[0].lower()
    return any(first == name.lower() for name in avatars)
