"""A private PulseAudio for tests: a real server process with its own runtime folder and socket,
a null sink ``room_speaker`` (the room's loudspeaker) and a pipe source ``room_mic`` (its
microphone, fed from a FIFO at real time by :class:`PipeFeeder`).

It runs as root too (CI containers, this machine): ``-n`` loads no default script, so no module
needs a desktop session; ``--daemonize=no`` keeps it our child; ``--use-pid-file=no`` and its own
``HOME`` / runtime folder keep it from meeting any other server; ``auth-anonymous=1`` lets every
client of the socket in. Processes the test starts get :attr:`PrivatePulse.env`; the test
process itself reaches it inside :meth:`PrivatePulse.pointed_at`.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hardware.audio_files import resample
from tests.support.helpers import wait_for

SPEAKER = "room_speaker"
MIC = "room_mic"
PIPE_RATE = 48_000
PIPE_CHANNELS = 2
CHUNK_S = 0.02
"""The feeder writes this much audio at a time (what a sound card's period would be)."""
START_TIMEOUT_S = 15.0
CLIENT_VARIABLES = ("PULSE_SERVER", "PULSE_RUNTIME_PATH", "XDG_RUNTIME_DIR", "PULSE_COOKIE")


def pulseaudio_binary() -> str | None:
    return shutil.which("pulseaudio")


class PrivatePulse:
    """The server, started by :meth:`start` and killed by :meth:`stop`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.runtime = workdir / "run"
        self.socket = self.runtime / "native"
        self.fifo = workdir / f"{MIC}.fifo"
        self.server = f"unix:{self.socket}"
        self.env: dict[str, str] = {
            **os.environ,
            "PULSE_SERVER": self.server,
            "PULSE_RUNTIME_PATH": str(self.runtime),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "PULSE_COOKIE": str(workdir / "cookie"),
        }
        """The environment of a process that should use this server (and no other)."""
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "pulseaudio.log"

    @property
    def mic_module_args(self) -> str:
        return (f"source_name={MIC} file={self.fifo} format=s16le rate={PIPE_RATE} channels={PIPE_CHANNELS} "
                f"source_properties=device.description=Room_microphone")

    def start(self) -> PrivatePulse:
        binary = pulseaudio_binary()
        assert binary, "pulseaudio is not installed"
        self.runtime.mkdir(parents=True, exist_ok=True)
        self.runtime.chmod(0o700)
        script = self.workdir / "server.pa"
        script.write_text(
            f"load-module module-native-protocol-unix socket={self.socket} auth-anonymous=1\n"
            f"load-module module-null-sink sink_name={SPEAKER} rate={PIPE_RATE} channels={PIPE_CHANNELS} "
            f"format=s16le sink_properties=device.description=Room_speaker\n"
            f"load-module module-pipe-source {self.mic_module_args}\n"
            f"set-default-sink {SPEAKER}\nset-default-source {MIC}\n"
        )
        server_env = {**self.env, "HOME": str(self.workdir), "XDG_CONFIG_HOME": str(self.workdir / "config")}
        del server_env["PULSE_SERVER"]
        flags = ["-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--system=no",
                 "--realtime=no", "--high-priority=no", "--log-target=stderr", "--log-level=notice", "-F", str(script)]
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen([binary, *flags], env=server_env, stdout=log_file, stderr=log_file,
                                            start_new_session=True)
        if not wait_for(lambda: self.answers() or self.process is None or self.process.poll() is not None,
                        START_TIMEOUT_S, 0.05) or not self.answers():
            self.stop()
            raise RuntimeError(f"pulseaudio did not start: {self.log_path.read_text()[-2000:]}")
        return self

    def answers(self) -> bool:
        import pulsectl

        try:
            with pulsectl.Pulse("tests", server=self.server) as pulse:
                pulse.server_info()
            return True
        except pulsectl.PulseError:
            return False

    def _module_index(self, name: str, needle: str) -> int | None:
        import pulsectl

        with pulsectl.Pulse("tests", server=self.server) as pulse:
            for module in pulse.module_list():
                if module.name == name and needle in (module.argument or ""):
                    return int(module.index)
        return None

    def unload_mic(self) -> None:
        """Unplug the microphone: the pipe source goes (and its FIFO with it)."""
        import pulsectl

        index = self._module_index("module-pipe-source", f"source_name={MIC}")
        assert index is not None, "room_mic is not loaded"
        with pulsectl.Pulse("tests", server=self.server) as pulse:
            pulse.module_unload(index)

    def load_mic(self) -> None:
        """Plug it back in: the same pipe source, the same name."""
        import pulsectl

        with pulsectl.Pulse("tests", server=self.server) as pulse:
            pulse.module_load("module-pipe-source", self.mic_module_args)

    @contextmanager
    def pointed_at(self) -> Iterator[None]:
        """The test process's own libpulse (``pulsectl``, ``pasimple``, the sound server code
        under test) uses this server inside the block; the environment is restored after."""
        saved = {name: os.environ.get(name) for name in CLIENT_VARIABLES}
        os.environ.update({name: self.env[name] for name in CLIENT_VARIABLES})
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def stop(self) -> None:
        """SIGTERM, and SIGKILL when it does not go within a few seconds."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


class PipeFeeder:
    """Writes into the pipe source at real time from a thread: silence, or the utterances given
    to :meth:`say` (16 kHz mono int16, made 48 kHz stereo), as a microphone delivers sound: at
    real time, never faster to make up for a write that waited (the server reads the pipe only
    while something records from the source). When the source is unloaded (the FIFO goes) it
    waits for it to come back and goes on."""

    def __init__(self, fifo: Path, room: LoudspeakerEcho | None = None) -> None:
        self.fifo = fifo
        self.room = room
        """What the microphone also hears of the room's loudspeaker (None: nothing)."""
        self._chunk = int(PIPE_RATE * CHUNK_S)
        self._pending: deque[NDArray[np.int16]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.reopened = 0
        self._thread = threading.Thread(target=self._run, name="pipe-feeder", daemon=True)

    def start(self) -> PipeFeeder:
        self._thread.start()
        return self

    def say(self, samples: NDArray[np.int16], rate: int = 16_000) -> float:
        """Queue ``samples`` after whatever is queued; returns how many seconds of queued audio
        come before them (when they start, from now, as the feeder keeps pace)."""
        up = resample(samples, rate, PIPE_RATE) if rate != PIPE_RATE else samples
        stereo = np.repeat(up.astype(np.int16)[:, None], PIPE_CHANNELS, axis=1).reshape(-1)
        with self._lock:
            ahead = sum(len(c) for c in self._pending) / PIPE_CHANNELS / PIPE_RATE
            for offset in range(0, len(stereo), self._chunk * PIPE_CHANNELS):
                self._pending.append(stereo[offset : offset + self._chunk * PIPE_CHANNELS])
        return ahead

    def idle(self) -> bool:
        with self._lock:
            return not self._pending

    def _next_chunk(self) -> NDArray[np.int16]:
        with self._lock:
            chunk = self._pending.popleft() if self._pending else np.zeros(self._chunk * PIPE_CHANNELS, dtype=np.int16)
        if self.room is None:
            return chunk
        mixed = chunk.astype(np.int32)
        mixed[: len(chunk)] += self.room.take(len(chunk))
        return np.clip(mixed, -32768, 32767).astype(np.int16)

    def _open(self) -> int | None:
        """The FIFO opened for writing, once the source (its reader) is there."""
        while not self._stop.is_set():
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENXIO):
                    raise
                self._stop.wait(0.02)
                continue
            os.set_blocking(fd, True)
            return fd
        return None

    def _run(self) -> None:
        fd = self._open()
        started = time.monotonic()
        written_s = 0.0
        while fd is not None and not self._stop.is_set():
            chunk = self._next_chunk()
            try:
                os.write(fd, chunk.tobytes())
            except OSError:  # EPIPE: the source was unloaded
                os.close(fd)
                fd = self._open()
                self.reopened += 1
                started, written_s = time.monotonic(), 0.0
                continue
            written_s += CHUNK_S
            behind = time.monotonic() - (started + written_s)
            if behind > CHUNK_S:  # a microphone never catches up in a burst: what it missed is gone
                started += behind
            self._stop.wait(max(0.0, started + written_s - time.monotonic()))
        if fd is not None:
            os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


ROOM_RESPONSE = ((0.004, 0.5), (0.011, 0.2), (0.023, -0.12), (0.041, 0.06))
"""The loudspeaker heard at the microphone: the direct sound after 4 ms and three reflections
(delay in seconds, gain): a small room, the loudspeaker about 1.5 m away."""
ECHO_KEPT_S = 0.1
"""At most this much of the loudspeaker waits for the feeder: a feeder that fell behind hears the
room as it is now, not a backlog."""


class LoudspeakerEcho:
    """The room's acoustics for a pipe source: what the null sink plays (captured from its monitor,
    48 kHz stereo, as a microphone across the room would hear it) through :data:`ROOM_RESPONSE`,
    for :class:`PipeFeeder` to mix into what it writes."""

    def __init__(self, server: str, sink: str = SPEAKER) -> None:
        self.server = server
        self.monitor = f"{sink}.monitor"
        self._taps = [(round(delay * PIPE_RATE) * PIPE_CHANNELS, gain) for delay, gain in ROOM_RESPONSE]
        self._history = np.zeros(self._taps[-1][0] + PIPE_CHANNELS, dtype=np.float64)
        self._heard: deque[NDArray[np.int16]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.captured_s = 0.0
        self._thread = threading.Thread(target=self._run, name="loudspeaker-echo", daemon=True)

    def start(self) -> LoudspeakerEcho:
        self._thread.start()
        return self

    def _echo(self, played: NDArray[np.int16]) -> NDArray[np.int16]:
        signal_ = np.concatenate((self._history, played.astype(np.float64)))
        start = len(self._history)
        out = np.zeros(len(played))
        for lag, gain in self._taps:
            out += gain * signal_[start - lag : start - lag + len(played)]
        self._history = signal_[-len(self._history):]
        return np.clip(np.round(out), -32768, 32767).astype(np.int16)

    def _run(self) -> None:
        import pasimple

        chunk_bytes = int(PIPE_RATE * CHUNK_S) * PIPE_CHANNELS * 2
        with pasimple.PaSimple(pasimple.PA_STREAM_RECORD, pasimple.PA_SAMPLE_S16LE, PIPE_CHANNELS, PIPE_RATE,
                               app_name="tests", stream_name="loudspeaker echo", server_name=self.server,
                               device_name=self.monitor, fragsize=chunk_bytes) as stream:
            while not self._stop.is_set():
                played = np.frombuffer(stream.read(chunk_bytes), dtype=np.int16)
                echo = self._echo(played)
                with self._lock:
                    self._heard.append(echo)
                    while sum(len(c) for c in self._heard) > ECHO_KEPT_S * PIPE_RATE * PIPE_CHANNELS:
                        self._heard.popleft()
                    self.captured_s += CHUNK_S

    def take(self, count: int) -> NDArray[np.int16]:
        """The next ``count`` interleaved samples of the echo (silence for what has not come)."""
        out = np.zeros(count, dtype=np.int16)
        filled = 0
        with self._lock:
            while filled < count and self._heard:
                piece = self._heard.popleft()
                used = min(len(piece), count - filled)
                out[filled : filled + used] = piece[:used]
                if used < len(piece):
                    self._heard.appendleft(piece[used:])
                filled += used
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
