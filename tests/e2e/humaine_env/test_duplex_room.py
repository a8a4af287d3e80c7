"""The full-duplex room on a real sound server: the buyer is heard while an avatar speaks.

A private PulseAudio plays the room: the avatars speak through its null sink ``room_speaker``
(``--speaker soundcard:room_speaker``), and its pipe source ``room_mic`` is the microphone, which
hears the buyer and, through a small room's response, whatever the loudspeaker plays
(:class:`~tests.support.pulse.LoudspeakerEcho`). The room runs as real processes (``humaine-env
run`` with the stand-in EO and the demo sellers, and ``humaine-env mic --source mic:room_mic``),
and the microphone worker cancels the echo with the sink's monitor as its reference.

The buyer asks a question, both sellers answer it (the canceller learns the room on their answers),
the buyer asks Celia something, and while she answers makes an offer. The offer reaches the EO as
said, the barge-in stops Celia, Watson waits until the buyer has finished, and nothing the sellers
said becomes a message of the buyer's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from hardware.audio_files import load_audio
from sessions.speech import synthesize
from tests.support.helpers import AUTO_FIRST_ROUND, CLI, collect, free_port, start_run, suite_config, wait_for, wait_for_line
from tests.support.pulse import MIC, SPEAKER, LoudspeakerEcho, PipeFeeder, PrivatePulse
from workers.microphone.evaluation import normalize
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import BargeIn, OutgoingMessage, RoundState, Speaking, Status, VadEvent
from workers.runtime.topics import Topics
from workers.runtime.worker_ids import MICROPHONE

GREETING = "celia can i get a packet of sugar and some milk"
"""The first exchange: both sellers answer it, and the canceller learns the room on their answers
(a day's first seconds of loudspeaker sound are its own warm-up)."""
QUESTION = "celia could you give me a dozen eggs"
OFFER = "i offer five dollars for the chocolate"
PAUSE_S = 2.0
"""The buyer's pause after the sellers' answers before asking again: longer than what the test's
room loop (monitor capture, pipe) adds to the echo's way to the microphone on a loaded machine,
which no speaking event accounts for."""
BUYER_AFTER_S = 0.8
"""The buyer starts this long after Celia's answer begins to sound."""
HEARD_S = 30.0
"""Generous: a loaded machine decodes each utterance in a few seconds at worst."""


def _speech(text: str) -> np.ndarray:
    return load_audio(synthesize(text, "en-us").path)


def _mic(config_path: Path, pulse: PrivatePulse, cwd: Path) -> tuple[subprocess.Popen[str], list[str]]:
    popen = subprocess.Popen([*CLI, "--log-level", "INFO", "mic", "--config", str(config_path), "--source", f"mic:{MIC}"],
                             env=pulse.env, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    output: list[str] = []
    stdout = popen.stdout
    assert stdout is not None
    threading.Thread(target=lambda: output.extend(iter(stdout.readline, "")), daemon=True).start()
    return popen, output


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


def test_the_buyer_is_heard_while_an_avatar_speaks(private_pulse: PrivatePulse, tmp_path: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port, speaker=f"soundcard:{SPEAKER}")
    with private_pulse.pointed_at():  # run and its workers play on the private server
        suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    mic, mic_output = _mic(config_path, private_pulse, tmp_path)
    room = LoudspeakerEcho(private_pulse.server).start()
    feeder = PipeFeeder(private_pulse.fifo, room).start()
    buses: list[Bus] = []
    try:
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        config = Config.load(config_path, environ={})
        topics = Topics(config.core.environment_uuid)
        bus, rounds = collect(config, topics.round_state(), RoundState, "duplex-rounds")
        buses.append(bus)
        bus, speaking = collect(config, topics.all_speaking(), Speaking, "duplex-speaking")
        buses.append(bus)
        bus, outgoing = collect(config, topics.outgoing_message(), OutgoingMessage, "duplex-outgoing")
        buses.append(bus)
        bus, barges = collect(config, topics.barge_in(), BargeIn, "duplex-barges")
        buses.append(bus)
        bus, statuses = collect(config, topics.status(MICROPHONE), Status, "duplex-statuses")
        buses.append(bus)
        bus, vad = collect(config, topics.vad(), VadEvent, "duplex-vad")
        buses.append(bus)
        assert wait_for(lambda: any(r.phase == "round" for r in rounds), 90), "".join(output[-40:])
        assert wait_for(lambda: any(s.state == "online" and "listening" in s.detail for s in statuses), 120), "".join(mic_output)
        assert any("echo cancelled: reference" in line and f"{SPEAKER}.monitor" in line for line in mic_output), "".join(mic_output)

        feeder.say(_speech(GREETING))

        def both_answered() -> bool:
            ended = {s.avatar for s in speaking if s.state == "end" and s.message_id}
            return ended >= {"Celia", "Watson"}

        assert wait_for(both_answered, HEARD_S), ([o.message for o in outgoing], [(s.avatar, s.state) for s in speaking])
        answered = {s.message_id for s in speaking if s.message_id}
        time.sleep(PAUSE_S)
        feeder.say(_speech(QUESTION))

        def celia_answers() -> Speaking | None:
            return next((s for s in speaking if s.avatar == "Celia" and s.state == "begin" and s.message_id
                         and s.message_id not in answered), None)

        assert wait_for(celia_answers, HEARD_S), ([o.message for o in outgoing], "".join(mic_output[-30:]))
        answer = celia_answers()
        assert answer is not None
        time.sleep(BUYER_AFTER_S)
        assert not any(s.state == "end" and s.message_id == answer.message_id for s in speaking), \
            ([(s.state, s.text, s.cut) for s in speaking], "".join(mic_output[-30:]))
        feeder.say(_speech(OFFER))

        def offer() -> OutgoingMessage | None:
            return next((o for o in outgoing if "chocolate" in str(o.message.get("text", "")).lower()), None)

        assert wait_for(offer, HEARD_S), ([o.message for o in outgoing], "".join(mic_output[-30:]), "".join(output[-40:]))
        made = offer()
        assert made is not None and made.outcome == "delivered", made
        assert normalize(str(made.message["text"])) == normalize(OFFER), made.message  # as said: "I offer $5 for the chocolate."

        # the buyer talked over Celia: the barge-in came while she spoke, she stopped short, and
        # Watson's answer waited for the buyer to finish
        assert barges, "no barge-in while Celia spoke"
        assert wait_for(lambda: any(s.avatar == "Celia" and s.state == "end" and s.message_id == answer.message_id
                                    and s.cut for s in speaking), 10), [s for s in speaking if s.avatar == "Celia"]
        barge = barges[-1]
        ended = next((v for v in vad if v.event == "speech_end" and v.utterance_id == barge.utterance_id), None)
        assert ended is not None, vad
        later = [s for s in speaking if s.state == "begin" and s.message_id and s.message_id not in answered | {answer.message_id}]
        assert all(s.at >= ended.at for s in later), (ended, later)
        # and nothing the sellers said came back as the buyer's: three utterances, three messages
        assert [o.outcome for o in outgoing] == ["delivered"] * 3, [o.message.get("text") for o in outgoing]
        assert room.captured_s > 1.0  # the microphone really heard the loudspeaker
        assert mic.poll() is None and suite.poll() is None
    finally:
        for bus in buses:
            bus.stop()
        feeder.stop()
        room.stop()
        _stop(mic)
        _stop(suite)

