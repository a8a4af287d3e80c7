"""The script of a generated session: who the buyer looks at and what they say, when.

A session follows the booth's typical arc: the buyer talks to Celia, then to Watson, then looks
away (notes on the table), with utterances addressed by gaze, by a leading name (whatever they
look at), or to nobody (looking away, no name). Gaze shifts start just before speech (0.2-1 s,
as people look, then talk) or just after it starts; there is a silent looking-away period and a
silent fixation. Everything is derived from a seed, so a session is reproducible bit for bit.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sessions.format import Cue, GazeSpan, Speaker, TruthUtterance
from workers.runtime.messages import NOBODY

AWAY_POSES: tuple[tuple[float, float], ...] = ((0.0, -22.0), (3.0, -20.0), (-4.0, -23.0))
"""Looking down at the table: far (> 25 degrees) from both avatars."""
TURN_MS = 450
"""Duration of a head turn from one fixation to the next."""
GAP_MS = (1900, 2800)
"""Silence between utterances: longer than the transcript worker's merge gap plus the
microphone's hangover, so every utterance stays one message."""

GLANCE_AWAY = 0.6
"""Share of the pauses in which the buyer glances down, so the next turn needs a fresh shift."""

REQUESTS = (
    "how much for two cups of flour",
    "i need three eggs and a cup of milk",
    "can you sell me a packet of blueberries",
    "what is your price for six ounces of chocolate",
    "do you have any vanilla left",
)
OFFERS = (
    "i offer five dollars for two eggs",
    "i will pay eight dollars for the sugar and the flour",
    "how about four dollars for a teaspoon of vanilla",
    "would you take seven dollars for everything",
    "i can give you three dollars for a cup of sugar",
)
ANSWERS = (
    "i accept your offer",
    "deal i will take it",
    "that is too expensive for me",
    "no thanks i reject that offer",
)
ASIDES = (
    "let me think about it",
    "i need to check my budget",
    "hmm what else do i need",
    "okay so eggs and flour so far",
)
"""Said while looking away, to nobody in particular."""
BYSTANDER_REMARKS = (
    "watson had the cheaper flour this morning",
    "i paid six dollars for the same eggs",
    "celia, over here",
    "shall we get a coffee after this",
    "four dollars for sugar is a lot",
    "is this the negotiation booth",
)
"""Said behind the buyer by somebody else: deal words and an avatar's name among them."""


@dataclass(frozen=True)
class Line:
    """One planned utterance: spoken text (with punctuation for the synthesizer), the
    transcript-style truth text, the addressee, the cue, and where the buyer looks."""

    spoken: str
    text: str
    addressee: str
    cue: Cue
    look: str
    """Avatar looked at while speaking (``NOBODY``: away)."""
    lead_ms: int
    """The gaze shift starts this long before speech (negative: after speech starts)."""
    speaker: Speaker = "buyer"
    """``bystander``: somebody behind the buyer says it; the buyer's gaze and lips stay as they were."""


def plan_lines(seed: int, avatars: tuple[str, str] = ("Celia", "Watson")) -> list[Line]:
    """Twelve utterances: Celia by gaze, Watson by gaze, names that override gaze, asides."""
    rng = random.Random(seed)
    a, b = avatars
    bodies = list(REQUESTS + OFFERS + ANSWERS)
    rng.shuffle(bodies)
    asides = list(ASIDES)
    rng.shuffle(asides)
    # (cue, addressee, look): the Celia phase, the Watson phase, the looking-away phase
    steps: list[tuple[Cue, str, str]] = [
        ("gaze", a, a), ("gaze", a, a), ("name", b, a), ("gaze", a, a),
        ("gaze", b, b), ("gaze", b, b), ("name", a, b), ("gaze", b, b),
        ("none", NOBODY, NOBODY), ("name", b, NOBODY), ("none", NOBODY, NOBODY), ("name", a, NOBODY),
    ]
    lines: list[Line] = []
    for cue, addressee, look in steps:
        lead = rng.choice((1000, 700, 400, 200, -150))
        if cue == "none":
            body = asides.pop()
            lines.append(Line(body.capitalize() + ".", body, NOBODY, cue, look, lead))
        elif cue == "name":
            body = bodies.pop()
            lines.append(Line(f"{addressee}, {body}.", f"{addressee.lower()} {body}", addressee, cue, look, lead))
        else:
            body = bodies.pop()
            lines.append(Line(body.capitalize() + ".", body, addressee, cue, look, lead))
    return lines


def with_bystanders(lines: list[Line], seed: int, every: int = 2) -> list[Line]:
    """``lines`` with a bystander's remark after every ``every``-th one (in the pause that follows)."""
    rng = random.Random(seed * 104_729 + 3)
    remarks = list(BYSTANDER_REMARKS)
    rng.shuffle(remarks)
    out: list[Line] = []
    for n, line in enumerate(lines, start=1):
        out.append(line)
        if n % every == 0 and remarks:
            body = remarks.pop()
            out.append(Line(body.capitalize() + ".", body, NOBODY, "none", NOBODY, 0, "bystander"))
    return out


@dataclass
class Timeline:
    """Utterances with their times and the head-pose track that goes with them."""

    utterances: list[TruthUtterance]
    gaze: list[GazeSpan]
    duration_ms: int

    def pose_at(self, t_ms: int) -> tuple[float, float]:
        """Head yaw/pitch at ``t_ms`` (ms from the session start): holds, and cosine-eased turns."""
        for span in self.gaze:
            if span.start_ms <= t_ms < span.end_ms:
                if span.motion == "hold":
                    return span.yaw, span.pitch
                prev = self._before(span)
                x = (t_ms - span.start_ms) / max(1, span.end_ms - span.start_ms)
                w = 0.5 - 0.5 * math.cos(math.pi * x)
                return prev[0] + (span.yaw - prev[0]) * w, prev[1] + (span.pitch - prev[1]) * w
        last = self.gaze[-1]
        return last.yaw, last.pitch

    def _before(self, span: GazeSpan) -> tuple[float, float]:
        i = self.gaze.index(span)
        return (self.gaze[i - 1].yaw, self.gaze[i - 1].pitch) if i > 0 else (span.yaw, span.pitch)


class _GazeTrack:
    """The buyer's head through a session: holds, and turns between them (:data:`TURN_MS`)."""

    def __init__(self, targets: dict[str, tuple[float, float]], rng: random.Random) -> None:
        """``rng``: the session's own, shared with its script (a look away draws its pose from it)."""
        self.targets, self.rng = targets, rng
        yaw0, pitch0 = AWAY_POSES[0]
        self.spans: list[GazeSpan] = [GazeSpan(0, 0, NOBODY, yaw0, pitch0, "hold")]

    def pose_of(self, look: str) -> tuple[float, float]:
        return self.targets[look] if look else self.rng.choice(AWAY_POSES)

    def move(self, to: str, at: int) -> None:
        """Turn towards ``to`` starting at ``at`` (closing the current hold there)."""
        yaw, pitch = self.pose_of(to)
        current = self.spans[-1]
        if current.target == to and current.motion == "hold":
            return
        current.end_ms = max(current.start_ms, at)
        self.spans.append(GazeSpan(current.end_ms, current.end_ms + TURN_MS, to, yaw, pitch, "turn"))
        self.spans.append(GazeSpan(current.end_ms + TURN_MS, current.end_ms + TURN_MS, to, yaw, pitch, "hold"))

    def until(self, duration_ms: int) -> list[GazeSpan]:
        """The spans of a session ``duration_ms`` long (the last hold lasts to its end)."""
        self.spans[-1].end_ms = duration_ms
        for span in self.spans:
            if span.motion == "hold" and span.end_ms < span.start_ms:
                span.end_ms = span.start_ms
        return [g for g in self.spans if g.end_ms > g.start_ms]


def build_timeline(
    lines: list[Line],
    durations_ms: list[int],
    targets: dict[str, tuple[float, float]],
    seed: int,
    voice: str = "",
    bystander_voice: str = "",
) -> Timeline:
    """Place the lines in time (ms from the session start) with gaze spans around them, plus a
    silent looking-away period after the Watson phase and a silent fixation at the start."""
    rng = random.Random(seed * 7919 + 1)
    gaze = _GazeTrack(targets, rng)
    utterances: list[TruthUtterance] = []
    t = 1500
    gaze.move(lines[0].look, t - 300)
    t += 2500  # silent fixation on the first avatar before speaking
    buyer_lines = 0
    for n, (line, duration) in enumerate(zip(lines, durations_ms, strict=True)):
        if line.speaker == "bystander":  # the buyer's head stays where it is
            utterances.append(TruthUtterance(f"u{n + 1:02d}", line.text, NOBODY, "none", t, t + duration, bystander_voice,
                                             "bystander"))
            t += duration + rng.randint(*GAP_MS)
            continue
        if buyer_lines == 8:  # the looking-away period: silence while reading notes
            gaze.move(NOBODY, t)
            t += 4500
        buyer_lines += 1
        start = t + max(0, line.lead_ms)
        gaze.move(line.look, start - line.lead_ms)
        end = start + duration
        utterances.append(TruthUtterance(f"u{n + 1:02d}", line.text, line.addressee, line.cue, start, end, voice))
        if rng.random() < GLANCE_AWAY:
            gaze.move(NOBODY, end + 300)  # glance at the notes between turns
        t = end + rng.randint(*GAP_MS)
    duration = t + 1000
    return Timeline(utterances, gaze.until(duration), duration)
