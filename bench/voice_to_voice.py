"""Benchmark: the buyer's voice to the seller's voice, through the whole room as real processes.

``humaine-env run --without mic,camera`` starts the embedded broker, the stand-in EO, the demo
sellers, the Avatar Controller (speaking into WAV files at the pace of a sound card) and the
Rich Transcript worker; then ``humaine-env microphone --source replay:REC`` plays a recording of
negotiation utterances, each naming the seller it addresses, at real time into the microphone
worker, exactly as a microphone would deliver it (the default engine). Everything is measured
from the stage timestamps the messages carry (``workers.runtime.messages.Stage``) as seen on MQTT:

- per stage (p50/p95 ms): speech end → final → released by the merger → relay sent → EO answer;
- speech end → relay sent: the buyer's words reach the EO (loopback: the request's transit is
  well under a millisecond), target p95 <= 500 ms for complete utterances;
- speech end → the seller's reply received by the Avatar Controller (the EO forwards it at
  once), with the seller's own think time reported apart: ``[demo_agents] reply_delay_s`` for
  the addressed seller, ``follow_delay_s`` when nobody was addressed (the first reply counts);
- speech end → the avatar's first audio, target p95 <= 900 ms plus the seller's think time
  (and, after an Accept, the buyer's confirmation wait).

A seller's Accept waits for the buyer's yes (the Avatar Controller asks; the EO relays the
deal's words once it is answered). The bench answers each confirmation as a buyer would, a
second after it is asked (:data:`ANSWER_AFTER_S`), with a spoken "yes" as the Rich Transcript
worker delivers one (``ConfirmAnswer`` on the bus), and reports the confirmation wait (asked →
answered) apart: it is the buyer's time, not the room's, and is taken out of the reply's latency.

The recording: the synthetic negotiation corpus's sentences that name a seller
(``scripts/synth_speech.py``, several voices), each followed by enough silence for the reply to
be spoken. Prints ONE JSON line. ``--count`` utterances (default 8, ~90 s of real time).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/voice_to_voice.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.stats import LINEAR, percentile  # noqa: E402
from hardware.audio import SAMPLE_RATE  # noqa: E402
from hardware.audio_files import load_audio, write_wav  # noqa: E402
from scripts import synth_speech  # noqa: E402
from standins.demo_agents.settings import DemoAgentsSettings  # noqa: E402
from standins.recorder import free_port  # noqa: E402
from tests.support.helpers import AUTO_FIRST_ROUND, CLI, suite_config  # noqa: E402
from workers.runtime.bus import Bus  # noqa: E402
from workers.runtime.config import Config  # noqa: E402
from workers.runtime.messages import (  # noqa: E402
    ConfirmAnswer,
    ConfirmPending,
    OutgoingMessage,
    RoundState,
    Speaking,
    Stage,
    Transcript,
    now_ms,
)

CHILD_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
"""The processes run this checkout's code whatever copy of the suite is installed."""
SILENCE_AFTER_S = 15.0
"""After each utterance: the seller thinks, the avatar speaks its reply (a few seconds), and
the microphone must not hear the next utterance while an avatar still speaks (echo gating);
after an addressed reply the other seller may undercut, so two replies can follow one utterance."""
START_TIMEOUT_S = 120.0
TARGET_EO_P95_MS = 500.0
TARGET_FIRST_AUDIO_P95_MS = 900.0
"""Plus the seller's think time."""
ANSWER_AFTER_S = 1.0
"""A buyer hears the seller accept and says yes about a second later."""
BUYER_SOURCE = "v2v-buyer"


def _summary(values: list[float]) -> dict[str, Any]:
    return {"p50": percentile(values, 50, 1, LINEAR), "p95": percentile(values, 95, 1, LINEAR), "max": percentile(values, 100, 1, LINEAR),
            "n": len(values)}


def recording(path: Path, count: int) -> list[str]:
    """A WAV of ``count`` addressed utterances, each followed by silence; returns their texts."""
    addressed = [s for s in synth_speech.SENTENCES if s.split()[0] in ("celia", "watson", "hey")]
    voices = synth_speech.VOICES
    pieces, texts = [np.zeros(SAMPLE_RATE, dtype=np.int16)], []
    for index in range(count):
        text = addressed[index % len(addressed)]
        utterance = synth_speech.synthesize(text, voices[index % len(voices)])
        pieces += [load_audio(utterance.path), np.zeros(int(SAMPLE_RATE * SILENCE_AFTER_S), dtype=np.int16)]
        texts.append(text)
    write_wav(path, np.concatenate(pieces))
    return texts


def run(count: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-v2v-"))
    wav = workdir / "buyer.wav"
    texts = recording(wav, count)
    port = free_port()
    config_path = suite_config(workdir, port, speaker=f"wav:{workdir / 'speech'}")  # paced like a sound card
    config = Config.load(config_path, environ={})
    sellers = config.section(DemoAgentsSettings)
    think_s = {"addressed": sellers.reply_delay_s, "unaddressed": sellers.follow_delay_s}
    suite = subprocess.Popen(
        [*CLI, "run", "--config", str(config_path), "--without", "mic,camera", "--log-level", "WARNING", *AUTO_FIRST_ROUND],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, cwd=workdir,
        start_new_session=True, env=CHILD_ENV,
    )
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(iter(suite.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
    seen: dict[str, list[Any]] = {"outgoing": [], "speaking": [], "round": [], "finals": []}
    bus = Bus(config, "v2v-observer", persistent=False)
    topics = bus.topics
    bus.subscribe(topics.outgoing_message(), OutgoingMessage, lambda _t, m: seen["outgoing"].append(m))
    bus.subscribe(topics.all_speaking(), Speaking, lambda _t, m: seen["speaking"].append(m))
    bus.subscribe(topics.round_state(), RoundState, lambda _t, m: seen["round"].append(m))
    mic: subprocess.Popen[bytes] | None = None
    bus.subscribe(topics.transcript_final(), Transcript, lambda _t, m: seen["finals"].append(m) if m.final else None)
    confirms: list[tuple[int, int]] = []
    """Each confirmation the bench answered: (asked, answered), ms since the epoch."""

    def answer(pending: ConfirmPending) -> None:
        bus.publish(topics.confirm_answer(), ConfirmAnswer(source=BUYER_SOURCE, confirm_id=str(pending.confirm_id), accept=True,
                                                            text="yes"))
        confirms.append((pending.ts, now_ms()))

    answered: set[str] = set()

    def on_pending(_t: str, pending: ConfirmPending) -> None:
        if pending.confirm_id is not None and pending.confirm_id not in answered:
            answered.add(pending.confirm_id)
            threading.Timer(ANSWER_AFTER_S, answer, args=(pending,)).start()

    bus.subscribe(topics.confirm_pending(), ConfirmPending, on_pending)
    started = time.monotonic()
    try:
        bus.start()  # connects once the suite's embedded broker is up (paho retries)
        while not any(m.phase == "round" for m in seen["round"]):
            if suite.poll() is not None or time.monotonic() - started > START_TIMEOUT_S:
                raise SystemExit("bench/voice_to_voice.py: the suite did not start a round:\n" + "".join(output))
            time.sleep(0.1)
        mic = subprocess.Popen(
            [*CLI, "microphone", "--config", str(config_path), "--source", f"replay:{wav}", "--log-level", "WARNING"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=workdir, env=CHILD_ENV,
        )
        duration_s = len(load_audio(wav)) / SAMPLE_RATE
        deadline = time.monotonic() + duration_s + START_TIMEOUT_S
        while mic.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(SILENCE_AFTER_S / 2)  # the last reply
        bus.stop()
        return _measure(seen, confirms, texts, think_s, duration_s)
    finally:
        for process in (mic, suite):
            if process is not None and process.poll() is None:
                if process is suite:
                    os.killpg(suite.pid, signal.SIGINT)
                else:
                    process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
        bus.stop()


def _measure(seen: dict[str, list[Any]], confirms: list[tuple[int, int]], texts: list[str], think_s: dict[str, float],
             duration_s: float) -> dict[str, Any]:
    """The figures, from the stage timestamps; a reply that followed a confirmation has the
    buyer's wait (asked → answered) taken out of its latency and reported apart."""
    human = sorted(seen["outgoing"], key=lambda m: m.stages.get(Stage.RELAY_SENT, 0))
    replies = [m for m in seen["speaking"] if m.state == "begin" and Stage.RECEIVED in m.stages]
    spans: dict[str, list[float]] = {}
    to_eo: list[float] = []
    to_reply: list[float] = []
    to_audio: list[float] = []
    to_audio_less_think: list[float] = []
    confirm_waits: list[float] = []
    order = (Stage.SPEECH_END, Stage.FINAL, Stage.RELEASED, Stage.RELAY_SENT, Stage.EO_ANSWER)
    for index, message in enumerate(human):
        st = message.stages
        if message.outcome != "delivered" or Stage.SPEECH_END not in st:
            continue
        for first, then in itertools.pairwise(order):
            if first in st and then in st:
                spans.setdefault(f"{first}→{then}", []).append(float(st[then] - st[first]))
        to_eo.append(float(st[Stage.RELAY_SENT] - st[Stage.SPEECH_END]))
        next_sent = human[index + 1].stages.get(Stage.RELAY_SENT, 2**62) if index + 1 < len(human) else 2**62
        reply = next((r for r in replies if st[Stage.RELAY_SENT] <= r.stages[Stage.RECEIVED] < next_sent), None)
        if reply is not None:
            to_reply.append(float(reply.stages[Stage.RECEIVED] - st[Stage.SPEECH_END]))
            to_audio.append(float(reply.stages[Stage.FIRST_AUDIO] - st[Stage.SPEECH_END]))
            think = think_s["addressed" if message.message.get("addressee") else "unaddressed"]
            wait = sum(done - asked for asked, done in confirms if st[Stage.RELAY_SENT] <= asked <= reply.stages[Stage.RECEIVED])
            if wait:
                confirm_waits.append(float(wait))
            to_audio_less_think.append(to_audio[-1] - wait - think * 1000)
    eo_p95 = percentile(to_eo, 95, 1, LINEAR)
    audio_p95 = percentile(to_audio_less_think, 95, 1, LINEAR)
    return {
        "bench": "voice_to_voice",
        "what": "replayed buyer speech -> mic -> transcript -> stand-in EO -> demo seller -> EO -> avatar WAV",
        "utterances": len(texts),
        "recording_s": round(duration_s, 1),
        "outcomes": {o: sum(m.outcome == o for m in human) for o in sorted({m.outcome for m in human})},
        "engine": seen["finals"][0].engine if seen["finals"] else None,
        "finals": [f.text for f in seen["finals"]],
        "messages": [m.message.get("text") for m in human],
        "stages_ms": {span: _summary(values) for span, values in spans.items()},
        "speech_end_to_eo_ms": _summary(to_eo),
        "speech_end_to_reply_received_ms": _summary(to_reply),
        "speech_end_to_first_audio_ms": _summary(to_audio),
        "seller_think_ms": {kind: round(value * 1000) for kind, value in think_s.items()},
        "confirmations_answered": len(confirms),
        "confirmation_wait_ms": _summary(confirm_waits),
        "speech_end_to_first_audio_minus_think_ms": _summary(to_audio_less_think),
        "replies_spoken": len(to_audio),
        "meets_targets": {
            "eo_p95": eo_p95 is not None and eo_p95 <= TARGET_EO_P95_MS,
            "first_audio_p95": audio_p95 is not None and audio_p95 <= TARGET_FIRST_AUDIO_P95_MS,
        },
        "targets": {"eo_p95_ms": TARGET_EO_P95_MS,
                    "first_audio_p95_ms": f"{TARGET_FIRST_AUDIO_P95_MS:g} + think (+ the buyer's confirmation wait)"},
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=8, help="utterances in the recording (default 8)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.count)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
