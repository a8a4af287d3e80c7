"""Avatar Controller benchmark: prints ONE JSON line.

* Time to first audio: ``POST /receiveMessage`` (a short seller reply) → the first sample of
  its speech handed to the output, over real HTTP on loopback, with the real speaker (each
  avatar's default engine: Festival for Celia, Piper for Watson) writing a WAV paced like a
  sound card. p50/p95, overall and per avatar. Target p95 ≤ 150 ms per avatar.
* Real-time factor per avatar's engine: rendering time over audio time, into a fast WAV sink.
* HTTP answer latency while an avatar speaks: a mix of the EO's calls (``/receiveLog``, the
  human's ``/receiveMessage``, ``/setUtility``, ``/startRound``) sent back to back on one
  keep-alive connection during a long utterance. p50/p99. Target p99 ≤ 20 ms.
* RSS of the process (controller + broker client + espeak-ng), MB; with the speech engines in
  their child process (``--speech-process on``, the default as in ``[avatar] speech_process``),
  the child's RSS too, and the CPU time both spent over the timed replies and the load.

Usage: ``.venv/bin/python bench/avatar.py [--count N] [--load-seconds S] [--speech-process on|off]``
(needs mosquitto, espeak-ng).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# run as `python bench/avatar.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from avatar.harness import LocalAvatar, Observer
from avatar.settings import AvatarSettings
from avatar.ssml import prepare
from bench.stats import percentile
from hardware.speaker import Speaker, WavSink
from hardware.speech_process import SpeechProcess
from humaine_platform import endpoints as ep
from tests.support.helpers import MosquittoBroker
from workers.runtime.config import Config
from workers.runtime.messages import Speaking

TRAFFIC = json.loads((Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "eo-observed-traffic.json")
                     .read_text())["human-ui"]
REPLIES = [
    "How about if I sell you two eggs for three fifty.",
    "I can do two cups of flour for a dollar twenty.",
    "That is my best price on the chocolate.",
    "Deal, three packets of blueberries for four dollars.",
]
LONG_REPLY = " ".join(
    ["I hear you, and I promise these are the freshest eggs and the finest vanilla in town,"] * 4
)
SPEECH_TIMEOUT_S = 60.0


def body(key: str, **changes: object) -> dict[str, object]:
    data = json.loads(json.dumps(TRAFFIC[key]["body"]))
    data.update(changes)
    return data


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int | None) -> float:
    """User + system CPU time of process ``pid`` so far (0 for none)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def real_time_factors(config: Config, speech_process: bool) -> dict[str, dict[str, object]]:
    """Per avatar's voice: rendering time over audio time for the replies, into a fast WAV sink
    (the engine's own speed; the first phrase's share of it is what TTFA measures)."""
    settings = config.section(AvatarSettings)
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        speaker = Speaker(WavSink(tmp, realtime=False), engines=SpeechProcess() if speech_process else None)
        try:
            for name in ("Celia", "Watson"):
                voice = settings.voice_for(name)
                used = speaker.check_voice(voice)
                speaker.speak(prepare("Hello.").ssml, voice)
                spent = audio = 0.0
                for reply in REPLIES:
                    result = speaker.speak(prepare(reply).ssml, voice)
                    spent += (result.ended_at or 0.0) - result.requested_at
                    audio += result.duration_s
                out[name] = {"engine": used.engine, "voice": used.voice, "rtf": round(spent / max(audio, 1e-3), 3)}
        finally:
            speaker.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=15, help="replies per avatar timed for time-to-first-audio")
    parser.add_argument("--load-seconds", type=float, default=6.0, help="how long to send requests while speaking")
    parser.add_argument("--speech-process", choices=("on", "off"), default="on",
                        help="speech engines in a supervised child process (on, the default) or in the controller's")
    args = parser.parse_args()
    speech_process = args.speech_process == "on"

    with tempfile.TemporaryDirectory() as tmp:
        broker = MosquittoBroker(Path(tmp) / "mosquitto").start()
        config = Config(file_data={}, environ={}, overrides={
            "environment_uuid": "benchavatar",
            "data_dir": str(Path(tmp) / "data"),  # the room's ledger of a benchmark is the benchmark's
            "broker.url": broker.url,
            "broker.mode": "external",
            "avatar.port": 0,
            "avatar.speaker": f"wav:{Path(tmp) / 'wav'}",
            "avatar.queue_max": 4,
            "avatar.speech_process": speech_process,
        })
        observer = Observer(config, "bench-observer").start()
        started = time.monotonic()
        local = LocalAvatar(config).start()
        start_s = time.monotonic() - started  # voices loaded (in the child, or here)
        engines = local.controller.speaker.engines
        child = engines.pid if isinstance(engines, SpeechProcess) else None
        cpu_at, child_cpu_at, wall_at = time.process_time(), cpu_s(child), time.monotonic()
        try:
            with httpx.Client(base_url=local.url, timeout=10.0) as http:
                http.post(ep.SEND_ROUND_METADATA, json=body("/sendRoundMetadata"))
                http.post(ep.START_ROUND, json=body("/startRound"))
                # warm-up: first synthesis loads the voice data
                http.post(ep.RECEIVE_MESSAGE, json=body("/receiveMessage (from agent)", text="Hello."))
                local.controller.wait_spoken(1, SPEECH_TIMEOUT_S)

                ttfa_ms: list[float] = []
                by_avatar: dict[str, list[float]] = {"Celia": [], "Watson": []}
                for i in range(args.count * 2):
                    done = len(local.controller.speech.spoken())
                    speaker = "Celia" if i % 2 == 0 else "Watson"
                    reply = body("/receiveMessage (from agent)", speaker=speaker, text=REPLIES[i % len(REPLIES)])
                    sent = time.monotonic()
                    http.post(ep.RECEIVE_MESSAGE, json=reply).raise_for_status()
                    if not local.controller.wait_spoken(done + 1, SPEECH_TIMEOUT_S):
                        raise RuntimeError("reply was not spoken")
                    first = local.controller.speech.spoken()[-1].result.first_audio_at
                    ttfa_ms.append((first - sent) * 1000)
                    by_avatar[speaker].append((first - sent) * 1000)
                voices = {name: local.controller.speaker.check_voice(config.section(AvatarSettings).voice_for(name))
                          for name in by_avatar}

                # HTTP answers while Watson speaks a long reply
                begun = len(observer.of(Speaking, state="begin"))
                long_reply = body("/receiveMessage (from agent)", speaker="Watson", text=LONG_REPLY)
                http.post(ep.RECEIVE_MESSAGE, json=long_reply).raise_for_status()
                observer.wait(Speaking, begun + 1, timeout=SPEECH_TIMEOUT_S, state="begin")
                calls = [
                    (ep.RECEIVE_LOG, body("/receiveLog")),
                    (ep.RECEIVE_MESSAGE, body("/receiveMessage (from Human)")),
                    (ep.SET_UTILITY, body("/setUtility")),
                    (ep.START_ROUND, body("/startRound")),
                ]
                answer_ms: list[float] = []
                deadline = time.monotonic() + args.load_seconds
                i = 0
                while time.monotonic() < deadline:
                    path, payload = calls[i % len(calls)]
                    start = time.perf_counter()
                    http.post(path, json=payload).raise_for_status()
                    answer_ms.append((time.perf_counter() - start) * 1000)
                    i += 1
                still_speaking = not local.controller.speech.idle()
                rss = rss_mb()  # the controller's, before the real-time factors load a second set of voices
                child_rss = rss_mb(child) if child is not None else 0.0
                cpu = time.process_time() - cpu_at
                child_cpu = cpu_s(child) - child_cpu_at
                wall = time.monotonic() - wall_at
                restarts = engines.restarts if isinstance(engines, SpeechProcess) else 0
        finally:
            local.stop()
            observer.stop()
            broker.stop()

    rtf = real_time_factors(config, speech_process)
    result = {
        "bench": "avatar",
        "speech_process": speech_process,
        "start_s": round(start_s, 2),
        "ttfa_ms_p50": round(statistics.median(ttfa_ms), 1),
        "ttfa_ms_p95": percentile(ttfa_ms, 95, 1),
        "ttfa_ms_max": round(max(ttfa_ms), 1),
        "ttfa_samples": len(ttfa_ms),
        "ttfa_by_avatar": {name: {"engine": voices[name].engine, "voice": voices[name].voice,
                                  "p50": round(statistics.median(values), 1), "p95": percentile(values, 95, 1)}
                           for name, values in by_avatar.items()},
        "rtf_by_avatar": rtf,
        "answer_ms_p50_while_speaking": round(statistics.median(answer_ms), 2),
        "answer_ms_p99_while_speaking": percentile(answer_ms, 99, 2),
        "answer_requests": len(answer_ms),
        "speaking_throughout": still_speaking,
        "rss_mb": round(rss, 1),
        "speech_child_rss_mb": round(child_rss, 1),
        "cpu_s": round(cpu, 2),
        "speech_child_cpu_s": round(child_cpu, 2),
        "cpu_window_s": round(wall, 1),
        "speech_child_restarts": restarts,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "targets": {"ttfa_ms_p50": 150, "ttfa_ms_p95": 300, "ttfa_by_avatar_p95": 150, "answer_ms_p99": 20},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
