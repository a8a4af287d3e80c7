"""Every MQTT topic of the suite, built by functions: nothing else spells a topic.

Topics live under ``humaine/{env}/...`` where ``env`` is the environment UUID, so several
rooms can share one broker. Each :class:`Topic` carries its QoS and retain flag, because the
delivery guarantee is a property of the message kind (QoS 0 for high-rate head pose, QoS 1 for
transcripts, messages and events), not of the code that happens to publish it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROOT = "humaine"

QOS_STREAM = 0
"""High-rate samples where a newer value replaces a lost one (head pose, interim text)."""
QOS_EVENT = 1
"""Events that must arrive (transcripts, attention changes, speaking, round state, status)."""

_SEGMENT = re.compile(r"^[A-Za-z0-9_.\-]+$")


def check_segment(value: str, what: str = "topic segment") -> str:
    """Reject values that would break the topic tree (``/``, ``+``, ``#``, empty)."""
    if not _SEGMENT.match(value):
        raise ValueError(
            f"{what} {value!r} may only contain letters, digits, '_', '.' and '-'"
        )
    return value


@dataclass(frozen=True)
class Topic:
    """A topic name (or filter, with ``+``/``#``) with its delivery semantics."""

    name: str
    qos: int
    retain: bool = False

    def __str__(self) -> str:
        return self.name

    def matches(self, concrete: str) -> bool:
        """True when ``concrete`` is matched by this topic used as a filter."""
        pattern = self.name.split("/")
        parts = concrete.split("/")
        for i, seg in enumerate(pattern):
            if seg == "#":
                return True
            if i >= len(parts):
                return False
            if seg != "+" and seg != parts[i]:
                return False
        return len(parts) == len(pattern)

    def segment(self, concrete: str, index: int) -> str:
        """The ``index``-th segment of a concrete topic (e.g. the worker id of a status)."""
        return concrete.split("/")[index]


class Topics:
    """The topic names of one environment (one room)."""

    def __init__(self, env: str) -> None:
        self.env = check_segment(env, "environment id")
        self.base = f"{ROOT}/{self.env}"

    # -- lifecycle ---------------------------------------------------------------------------
    def status(self, worker_id: str) -> Topic:
        """Retained online/offline/error state of one worker (also its MQTT last will)."""
        return Topic(f"{self.base}/status/{check_segment(worker_id, 'worker id')}", QOS_EVENT, True)

    def all_status(self) -> Topic:
        return Topic(f"{self.base}/status/+", QOS_EVENT, True)

    def probe(self, token: str) -> Topic:
        """A probe's echo: when it comes back, the broker has sent the retained messages of
        the probe's earlier subscriptions (one client's packets are handled in order). Outside
        the environment's tree, so that recorders of ``everything()`` never see it."""
        return Topic(f"{ROOT}-probe/{self.env}/{check_segment(token, 'probe token')}", QOS_STREAM)

    # -- camera ------------------------------------------------------------------------------
    def headpose(self) -> Topic:
        """Head pose samples (yaw/pitch/roll) at up to 15 Hz."""
        return Topic(f"{self.base}/camera/headpose", QOS_STREAM)

    def attention(self) -> Topic:
        """Addressee target changes; retained so a late subscriber knows the current one."""
        return Topic(f"{self.base}/camera/attention", QOS_EVENT, True)

    def camera_geometry(self) -> Topic:
        """``CameraGeometry``: the avatars' directions the camera worker uses; retained so a
        console that connects later draws them."""
        return Topic(f"{self.base}/camera/geometry", QOS_EVENT, True)

    def camera_calibration(self) -> Topic:
        """``Calibration``: the console's request to calibrate the buyer's seat and the camera
        worker's progress and result (not retained: a request must not outlive its moment)."""
        return Topic(f"{self.base}/camera/calibration", QOS_EVENT)

    # -- microphone --------------------------------------------------------------------------
    def transcript_interim(self) -> Topic:
        return Topic(f"{self.base}/speech/interim", QOS_STREAM)

    def transcript_final(self) -> Topic:
        return Topic(f"{self.base}/speech/final", QOS_EVENT)

    def vad(self) -> Topic:
        """Voice activity speech-start / speech-end events."""
        return Topic(f"{self.base}/speech/vad", QOS_EVENT)

    def barge_in(self) -> Topic:
        """The buyer talks over an avatar: the Avatar Controller stops the current speech."""
        return Topic(f"{self.base}/speech/barge_in", QOS_EVENT)

    def microphone_control(self) -> Topic:
        """Privacy pause/resume commands for the microphone worker."""
        return Topic(f"{self.base}/control/microphone", QOS_EVENT)

    # -- transcript worker -------------------------------------------------------------------
    def outgoing_message(self) -> Topic:
        """Each HUMAINE message the Rich Transcript worker built, with its delivery outcome."""
        return Topic(f"{self.base}/transcript/message", QOS_EVENT)

    # -- avatar controller -------------------------------------------------------------------
    def speaking(self, avatar: str) -> Topic:
        """Retained speaking begin/end state of one avatar (for the microphone's echo gating)."""
        return Topic(f"{self.base}/avatar/{check_segment(avatar, 'avatar name')}/speaking", QOS_EVENT, True)

    def all_speaking(self) -> Topic:
        return Topic(f"{self.base}/avatar/+/speaking", QOS_EVENT, True)

    def gesture(self, avatar: str) -> Topic:
        return Topic(f"{self.base}/avatar/{check_segment(avatar, 'avatar name')}/gesture", QOS_EVENT)

    def all_gestures(self) -> Topic:
        return Topic(f"{self.base}/avatar/+/gesture", QOS_EVENT)

    def agent_message(self) -> Topic:
        """Every message the EO forwarded to the Avatar Controller (agents' and the human's)."""
        return Topic(f"{self.base}/avatar/message", QOS_EVENT)

    def eo_verdict(self) -> Topic:
        """``EOVerdict``: the EO's verdicts on proposed messages, relayed by the Avatar Controller."""
        return Topic(f"{self.base}/eo/verdict", QOS_EVENT)

    def confirm_pending(self) -> Topic:
        """Retained ``ConfirmPending``: the seller's Accept waiting for the buyer's answer."""
        return Topic(f"{self.base}/confirm/pending", QOS_EVENT, True)

    def confirm_answer(self) -> Topic:
        """``ConfirmAnswer``: the buyer's spoken yes or no to the pending confirmation."""
        return Topic(f"{self.base}/confirm/answer", QOS_EVENT)

    def round_state(self) -> Topic:
        """Retained state of the current round (id, phase, deadlines) from the Avatar Controller."""
        return Topic(f"{self.base}/round/state", QOS_EVENT, True)

    def everything(self) -> Topic:
        """All topics of this environment (recording, debugging)."""
        return Topic(f"{self.base}/#", QOS_EVENT)
