"""One utterance's questions to the end-of-turn model (:class:`UtteranceTurn`): the audio it
hears, the early answer reused when its pause ended the utterance, none for a forced cut. The
real model on real recordings is in tests/integration/microphone/test_mic_turn.py."""

from __future__ import annotations

from concurrent.futures import Future
from typing import cast

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE
from workers.microphone.turn import EndOfTurn, UtteranceTurn

MS = SAMPLE_RATE // 1000


class FakeModel:
    """Answers the length of the audio it was given, in ms, over 10,000; records each call."""

    def __init__(self) -> None:
        self.heard: list[int] = []

    def probability(self, samples: NDArray[np.int16]) -> float:
        self.heard.append(len(samples) // MS)
        return len(samples) / MS / 10_000

    def submit(self, samples: NDArray[np.int16]) -> Future[float]:
        future: Future[float] = Future()
        future.set_result(self.probability(samples))
        return future


def utterance(model: FakeModel, tail_ms: int = 0) -> UtteranceTurn:
    turn = UtteranceTurn(cast(EndOfTurn, model), start_ms=1_000, tail_ms=tail_ms)
    for _ in range(10):
        turn.accept(np.zeros(100 * MS, np.int16))  # one second heard, from 1,000 ms
    return turn


def test_it_hears_the_utterance_up_to_the_tail_after_the_speech_end() -> None:
    model = FakeModel()
    assert utterance(model, tail_ms=200).complete(speech_end_ms=1_500, forced=False) == 0.07
    assert model.heard == [700]


def test_the_early_answer_is_the_final_one_when_that_pause_ended_the_utterance() -> None:
    model = FakeModel()
    turn = utterance(model)
    turn.ask_early(speech_end_ms=1_600, silent_ms=100)
    assert turn.complete(speech_end_ms=1_600, forced=False) == 0.06
    assert model.heard == [600]  # asked once
    assert turn.complete(speech_end_ms=1_900, forced=False) == 0.09  # the speaker went on
    assert model.heard == [600, 900]


def test_it_does_not_ask_early_before_the_tail_is_heard_nor_about_a_forced_cut() -> None:
    model = FakeModel()
    turn = utterance(model, tail_ms=300)
    turn.ask_early(speech_end_ms=1_600, silent_ms=100)
    assert model.heard == []
    assert turn.complete(speech_end_ms=1_600, forced=True) is None
    assert model.heard == []
