"""The transcriber's messages as the contract addresses them (:class:`Outgoing`)."""

from __future__ import annotations

from workers.microphone.outgoing import Outgoing
from workers.runtime.messages import Word


def test_vad_events_and_barge_ins_come_from_the_worker_transcripts_from_where_the_speech_came_from() -> None:
    out = Outgoing("microphone-2", "replay", "whisper")
    vad = out.vad("speech_start", "u1", 1_234)
    assert (vad.source, vad.event, vad.utterance_id, vad.at) == ("microphone-2", "speech_start", "u1", 1_234)
    barge = out.barge_in("u1", 1_500, level_db=-20.04, echo_db=-31.26)
    assert (barge.source, barge.level_db, barge.echo_db) == ("microphone-2", -20.0, -31.3)
    words = [Word(word="hi", start=1_300, end=1_400, conf=0.9)]
    final = out.transcript("u1", True, "hi", 0.9, words, (1_234, 1_600), echo=False)
    assert (final.source, final.engine, final.utterance_id, final.start, final.end) == ("replay", "whisper", "u1", 1_234, 1_600)
    assert final.final and final.words == words and not final.echo
