"""Accuracy of the suite on sessions with ground truth: replay, then score what came out.

Scores, all against ``truth.json`` (never against another estimator):

* addressee accuracy: each true utterance is matched to the outgoing message whose utterance
  times overlap it most; a missed utterance counts as wrong. Split by cue: ``gaze`` (no name,
  looking at the addressee), ``name`` (leading name), ``none`` (looking away, no name).
* head pose: yaw/pitch MAE of the published (smoothed) head pose against the rendered pose of
  the same frame; also over steady fixations only, where the smoothing lag does not count.
* WER of the final transcripts per recognition engine.
* latency (paced replay only): wall time from the end of speech to the delivered message, and
  where it goes: the message's stage timestamps (``workers.runtime.messages.Stage``) give the time from
  the end of speech to the final transcript, the merge hold, the wait for the relay and the EO's
  answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from formats.session_files import AUDIO_FILE, VIDEO_FILE
from sessions.coverage import SessionCoverage
from sessions.format import Session, Truth, TruthUtterance
from sessions.replay import ReplayResult
from workers.runtime.messages import Stage

STAGE_SPANS: tuple[tuple[str, str], ...] = (
    (Stage.SPEECH_END, Stage.FINAL),
    (Stage.FINAL, Stage.RELEASED),
    (Stage.RELEASED, Stage.RELAY_SENT),
    (Stage.RELAY_SENT, Stage.EO_ANSWER),
)
"""Consecutive stages whose spans ``eval`` reports (p50/p95 ms, paced replay)."""
SESSION_CLOCK_STAGES = (Stage.SPEECH_END, Stage.RELEASED, Stage.RELAY_SENT, Stage.EO_ANSWER)
"""The stages a paced replay stamps in session time: the speech on the audio clock, the rest on
the transcript worker's clock (the replay's session clock); the final's stamp is wall time."""

@dataclass
class Scores:
    """Counts and errors accumulated over sessions, turned into one JSON-able summary."""

    correct: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    references: list[str] = field(default_factory=list)
    hypotheses: list[str] = field(default_factory=list)
    yaw_err: list[float] = field(default_factory=list)
    pitch_err: list[float] = field(default_factory=list)
    yaw_err_hold: list[float] = field(default_factory=list)
    pitch_err_hold: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    stage_ms: dict[str, list[float]] = field(default_factory=dict)
    """``"a→b"`` -> the span from stage a to stage b of each delivered message."""
    wall_s: float = 0.0
    session_s: float = 0.0
    mistakes: list[dict[str, Any]] = field(default_factory=list)
    bystanders: int = 0
    """Truth utterances said by somebody behind the buyer."""
    bystanders_passed: list[dict[str, Any]] = field(default_factory=list)
    """...of which a message passed on (the words of somebody who is not the buyer)."""

    def _acc(self, *cues: str) -> float | None:
        total = sum(self.total.get(c, 0) for c in cues)
        return round(sum(self.correct.get(c, 0) for c in cues) / total, 4) if total else None

    def summary(self) -> dict[str, Any]:
        from workers.microphone.evaluation import wer

        return {
            "utterances": sum(self.total.values()),
            "addressee_accuracy": self._acc("gaze", "name", "none"),
            "addressee_accuracy_gaze": self._acc("gaze"),
            "addressee_accuracy_name": self._acc("name"),
            "addressee_accuracy_none": self._acc("none"),
            "wer": round(wer(self.references, self.hypotheses), 4) if self.references else None,
            "yaw_mae": _mae(self.yaw_err),
            "pitch_mae": _mae(self.pitch_err),
            "yaw_mae_fixations": _mae(self.yaw_err_hold),
            "pitch_mae_fixations": _mae(self.pitch_err_hold),
            "latency_p50_ms": _percentile(self.latencies_ms, 50),
            "latency_p95_ms": _percentile(self.latencies_ms, 95),
            "stages_ms": {
                span: {"p50": _percentile(v, 50), "p95": _percentile(v, 95)} for span, v in self.stage_ms.items() if v
            },
            "bystanders": self.bystanders,
            "bystanders_passed_on": len(self.bystanders_passed),
            "session_s": round(self.session_s, 1),
            "replay_wall_s": round(self.wall_s, 1),
        }


def _mae(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 2) if values else None


def _percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def score(result: ReplayResult, scores: Scores | None = None) -> Scores:
    """Add one replay's figures to ``scores``."""
    scores = scores or Scores()
    session: Session = result.session
    truth: Truth | None = session.truth()
    if truth is None:
        raise ValueError(f"{session.path}: no truth.json, nothing to evaluate against")
    scores.wall_s += result.wall_s
    scores.session_s += session.info.duration_ms / 1000
    delivered_at = {e.payload["id"]: e.t_ms for e in result.events if e.payload.get("type") == "humaine_message"}
    messages = result.messages
    for utt in truth.utterances:
        _score_utterance(utt, _best_match(utt, messages), result, scores, delivered_at)
    _score_poses(truth, result, scores)
    return scores


def _best_match(utt: TruthUtterance, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The outgoing message (envelope) whose utterance times overlap ``utt`` most (None: none does)."""
    best, best_overlap = None, 0
    for env in messages:
        m = env["message"]
        overlap = _overlap(utt.start_ms, utt.end_ms, int(m.get("utteranceStart", 0)), int(m.get("utteranceEnd", 0)))
        if overlap > best_overlap:
            best, best_overlap = env, overlap
    return best


def _score_utterance(utt: TruthUtterance, best: dict[str, Any] | None, result: ReplayResult, scores: Scores,
                     delivered_at: dict[str, int]) -> None:
    """One true utterance against the message that matched it: a bystander's by whether it was
    passed on, the buyer's by its addressee, its words and (paced) its latency (``delivered_at``:
    when each message id was received)."""
    from workers.microphone.evaluation import normalize

    name = result.session.path.name
    if utt.speaker == "bystander":
        scores.bystanders += 1
        if best is not None:
            scores.bystanders_passed.append({"session": name, "utterance": utt.id, "said": utt.text,
                                             "passed_on": best["message"]["text"]})
        return
    scores.total[utt.cue] = scores.total.get(utt.cue, 0) + 1
    got = best["message"]["addressee"] if best else None
    if got == utt.addressee:
        scores.correct[utt.cue] = scores.correct.get(utt.cue, 0) + 1
    else:
        scores.mistakes.append({"session": name, "utterance": utt.id, "cue": utt.cue, "expected": utt.addressee,
                                "got": got, "text": best["message"]["text"] if best else None})
    scores.references.append(normalize(utt.text))
    scores.hypotheses.append(normalize(str(best["message"]["text"])) if best else "")
    if best is not None and result.speed is not None and best.get("outcome") == "delivered":
        speech_end_wall = result.wall_origin_ms + (utt.end_ms - result.session.info.start_ms) / result.speed
        scores.latencies_ms.append(delivered_at[best["id"]] - speech_end_wall)
        _score_stages(best, result, result.speed, scores)


def _score_stages(best: dict[str, Any], result: ReplayResult, speed: float, scores: Scores) -> None:
    """A paced replay's delivered message: each span between its stages."""
    start_ms = result.session.info.start_ms
    stages = dict(best.get("stages") or {})
    # the speech (audio clock) and the transcript worker's stamps (its clock, the held
    # session clock) are session time: put them on the wall clock of the final's stamp
    for stage in SESSION_CLOCK_STAGES:
        if stage in stages:
            stages[stage] = result.wall_origin_ms + (stages[stage] - start_ms) / speed
    for first, then in STAGE_SPANS:
        if first in stages and then in stages:
            scores.stage_ms.setdefault(f"{first}→{then}", []).append(float(stages[then] - stages[first]))


def _score_poses(truth: Truth, result: ReplayResult, scores: Scores) -> None:
    """Each published head pose against the rendered pose of its frame."""
    poses = {t: (yaw, pitch) for t, yaw, pitch in truth.poses}
    holds = [(g.start_ms, g.end_ms) for g in truth.gaze if g.motion == "hold"]
    for hp in result.of_type("headpose"):
        true = poses.get(int(hp["frame_ts"]))
        if true is None:
            continue
        dy, dp = abs(hp["yaw"] - true[0]), abs(hp["pitch"] - true[1])
        scores.yaw_err.append(dy)
        scores.pitch_err.append(dp)
        # a fixation counts once the smoothing has settled (1 s after the turn)
        if any(s + 1000 <= hp["frame_ts"] < e for s, e in holds):
            scores.yaw_err_hold.append(dy)
            scores.pitch_err_hold.append(dp)


def evaluate(sessions: Sequence[Session], config: Any, engines: Sequence[str | None] = (None,),
             speed: float | None = None, coverage: Sequence[SessionCoverage] = ()) -> dict[str, Any]:
    """Replay every session with every engine; one summary dict (figures of the first engine at
    the top level, every engine's WER and addressee accuracy under ``engines``). With the
    sessions' ``coverage`` (:func:`sessions.coverage.check`), unreadable media are left out of
    the replay and each session's coverage is in the summary."""
    from sessions.replay import replay

    checked = {c.session: c for c in coverage}
    out: dict[str, Any] = {"sessions": len(sessions), "speed": speed if speed is not None else "max"}
    per_engine: dict[str, Any] = {}
    for n, engine in enumerate(engines):
        scores = Scores()
        used = engine or ""
        for session in sessions:
            result = replay(session, config, speed=speed, engine=engine, media=_media(checked.get(session.path.name)))
            used = next((t["engine"] for t in result.of_type("transcript") if t.get("final")), used)
            score(result, scores)
        summary = scores.summary()
        per_engine[used or "none"] = {k: summary[k] for k in ("wer", "addressee_accuracy", "addressee_accuracy_gaze",
                                                               "addressee_accuracy_name")}
        if n == 0:
            out.update(summary)
            out["mistakes"] = scores.mistakes
            out["bystanders_passed"] = scores.bystanders_passed
    out["engines"] = per_engine
    if checked:
        out["coverage"] = [c.summary() for c in coverage]
    return out


def _media(report: SessionCoverage | None) -> tuple[bool, bool]:
    """Which of a session's (audio, video) to replay: what its coverage found usable (all without one)."""
    return (True, True) if report is None else (report.usable(AUDIO_FILE), report.usable(VIDEO_FILE))
