"""Building the HUMAINE message of one utterance, rich extras included."""

from __future__ import annotations

from typing import Any, Final

from humaine_platform.models import BUYER, HUMAN, HumanUtterance
from transcript.fusion.addressee import AddresseeDecision
from transcript.fusion.attention import NOBODY
from transcript.merging import Utterance
from workers.runtime.messages import now_ms

GAZE_NOBODY_KEY: Final = "nobody"
"""Key of the "looking at no avatar" share in ``gazeShare`` (``""`` reads badly as a key)."""


def rich_extras(utterance: Utterance, decision: AddresseeDecision) -> dict[str, Any]:
    """Behavioural data riding along with the platform's keys (the doc allows extra keys)."""
    return {
        "addresseeSource": decision.source,
        "gazeShare": {(GAZE_NOBODY_KEY if t == NOBODY else t): v for t, v in decision.gaze_share.items()},
        "gazeCoverage": decision.gaze_coverage,
        "sttConfidence": utterance.confidence,
        "utteranceStart": utterance.start,
        "utteranceEnd": utterance.end,
        "source": utterance.source,
        "utteranceIds": utterance.utterance_ids,
        "stageTimes": utterance.stages(),
    }


def build_message(
    utterance: Utterance,
    decision: AddresseeDecision,
    environment_uuid: str,
    round_id: int | str | None,
    timestamp: int | None = None,
) -> dict[str, Any]:
    """The body for ``/relayMessage``. Validated as a :class:`HumanUtterance` when there is a
    round; without one it is only recorded (``roundId`` null), never sent."""
    body: dict[str, Any] = {
        "speaker": HUMAN,
        "addressee": decision.addressee,
        "text": utterance.text,
        "role": BUYER,
        "environmentUUID": environment_uuid,
        "timestamp": now_ms() if timestamp is None else timestamp,
        "roundId": round_id,
        **rich_extras(utterance, decision),
    }
    if round_id is not None:
        body = HumanUtterance.model_validate(body).body()
    return body
