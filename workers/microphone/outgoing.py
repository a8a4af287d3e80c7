"""The messages the transcriber publishes, addressed as the message contract says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hardware.audio import SourceKind
from workers.runtime.messages import BargeIn, Transcript, VadEvent, Word


@dataclass(frozen=True)
class Outgoing:
    """Builds the transcriber's VAD events, barge-ins and transcripts. A VAD event's and a
    barge-in's ``source`` is the worker; a transcript's is where the speech came from (mic,
    file, replay, typed), with the engine that heard it."""

    worker_id: str
    source_kind: SourceKind
    engine: str

    def vad(self, kind: Literal["speech_start", "speech_end"], utterance_id: str, at: int) -> VadEvent:
        payload = {"source": self.worker_id, "event": kind, "utterance_id": utterance_id, "at": at}
        return VadEvent.model_validate(payload)

    def barge_in(self, utterance_id: str, at: int, level_db: float, echo_db: float) -> BargeIn:
        return BargeIn.model_validate({
            "source": self.worker_id, "utterance_id": utterance_id, "at": at,
            "level_db": round(level_db, 1), "echo_db": round(echo_db, 1),
        })

    def transcript(
        self, utterance_id: str, final: bool, text: str, confidence: float, words: list[Word], span: tuple[int, int],
        echo: bool,
    ) -> Transcript:
        """``span``: the utterance's start and end on the audio clock."""
        return Transcript.model_validate(
            {
                "source": self.source_kind,
                "final": final,
                "utterance_id": utterance_id,
                "text": text,
                "confidence": confidence,
                "words": words,
                "start": span[0],
                "end": span[1],
                "engine": self.engine,
                "echo": echo,
            }
        )
