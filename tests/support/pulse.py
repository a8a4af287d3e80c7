"""A private PulseAudio for tests: a real server process with its own runtime folder and socket,
a null sink ``room_speaker`` (the room's loudspeaker) and a pipe source ``room_mic`` (its
microphone, fed from a FIFO at real time by :class:`PipeFeeder`).

With ``room=True`` the server is a whole room instead, its acoustics inside the server: the
loudspeaker ``room_speaker`` sounds into the air at the microphone (the null sink ``room_air``,
:data:`ECHO_DELAY_MS` later and :data:`ECHO_GAIN` down), the buyer speaks into the same air
(:class:`BuyerVoice`), and the microphone ``room_air_mic`` records it. The loudspeaker is a
filter sink over the air (LADSPA's delay line, Debian ``ladspa-sdk``): the air pulls its sound
in the same pass as it mixes the buyer's, so the echo keeps the server's own clock and a fixed
delay, as a real room's does, whatever the test's threads and the machine's load do. (A
``module-loopback`` between two sinks did not: each underrun on a loaded machine added its
length to the echo's delay for good, 34 then 48 then 77 ms in one half minute.)

It runs as root too (CI containers, this machine): ``-n`` loads no default script, so no module
needs a desktop session; ``--daemonize=no`` keeps it our child; ``--use-pid-file=no`` and its own
``HOME`` / runtime folder keep it from meeting any other server; ``auth-anonymous=1`` lets every
client of the socket in. Processes the test starts get :attr:`PrivatePulse.env`; the test
process itself reaches it inside :meth:`PrivatePulse.pointed_at`.
"""

from __future__ import annotations

import errno
import fcntl
import os
import queue
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
AIR = "room_air"
"""The room's air (``room=True``): what the microphone hears, the loudspeaker and the buyer mixed."""
AIR_MIC = "room_air_mic"
"""The room's microphone (``room=True``): a 48 kHz stereo source recording :data:`AIR`."""
ECHO_DELAY_MS = 50
"""How much later the loudspeaker sounds than its monitor captures what it plays (``room=True``):
a sound card's output buffer and a metre or two of air."""
LADSPA_DELAY = ("delay", "delay_5s")
"""The LADSPA plugin and label of the room's echo path (``ladspa-sdk``'s simple delay line)."""
ECHO_GAIN = 0.5
"""The loudspeaker's sound at the microphone, as a fraction of what it plays (-6 dB: a small
room, the loudspeaker a metre or two from the microphone)."""
PIPE_RATE = 48_000
PIPE_CHANNELS = 2
CHUNK_S = 0.02
"""The feeder writes this much audio at a time (what a sound card's period would be)."""
PIPE_BYTES = 4096
"""The FIFO's capacity (the kernel's smallest, a page: 21 ms of the pipe's audio). The default,
64 KiB, filled while nothing recorded and then stayed full: a third of a second between the
feeder and the server that no latency figure showed, so every capture time was that much late."""
CATCH_UP_S = 0.5
"""A feeder this late (a loaded machine kept its thread waiting) writes what is due at once, as a
microphone's own buffer holds what it sampled meanwhile; later than this, nobody was recording
(the source unloaded, or not yet read) and that audio is gone, as a real one's would be."""
START_TIMEOUT_S = 15.0
CLIENT_VARIABLES = ("PULSE_SERVER", "PULSE_RUNTIME_PATH", "XDG_RUNTIME_DIR", "PULSE_COOKIE")


def pulseaudio_binary() -> str | None:
    return shutil.which("pulseaudio")


def delay_line_installed() -> bool:
    """Whether the room's echo path (:data:`LADSPA_DELAY`) is where PulseAudio looks for it."""
    folders = os.environ.get("LADSPA_PATH") or "/usr/lib/ladspa:/usr/local/lib/ladspa:/usr/lib/x86_64-linux-gnu/ladspa"
    return any((Path(folder) / f"{LADSPA_DELAY[0]}.so").exists() for folder in folders.split(":") if folder)


class PrivatePulse:
    """The server, started by :meth:`start` and killed by :meth:`stop`."""

    def __init__(self, workdir: Path, room: bool = False) -> None:
        self.workdir = workdir
        self.room = room
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
        script.write_text(f"load-module module-native-protocol-unix socket={self.socket} auth-anonymous=1\n"
                          + (self._room_modules() if self.room else self._device_modules()))
        server_env = {**self.env, "HOME": str(self.workdir), "XDG_CONFIG_HOME": str(self.workdir / "config")}
        del server_env["PULSE_SERVER"]
        flags = ["-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--system=no",
                 "--realtime=no", "--high-priority=no", "--log-target=stderr", "--log-level=notice", "-F", str(script)]
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen([binary, *flags], env=server_env, stdout=log_file, stderr=log_file,
                                            start_new_session=True)
        raise_priority(self.process.pid)
        if not wait_for(lambda: self.answers() or self.process is None or self.process.poll() is not None,
                        START_TIMEOUT_S, 0.05) or not self.answers():
            self.stop()
            raise RuntimeError(f"pulseaudio did not start: {self.log_path.read_text()[-2000:]}")
        if self.room:
            self._set_echo_gain()
        return self

    def _device_modules(self) -> str:
        return (f"load-module module-null-sink sink_name={SPEAKER} rate={PIPE_RATE} channels={PIPE_CHANNELS} "
                f"format=s16le sink_properties=device.description=Room_speaker\n"
                f"load-module module-pipe-source {self.mic_module_args}\n"
                f"set-default-sink {SPEAKER}\nset-default-source {MIC}\n")

    @staticmethod
    def _room_modules() -> str:
        """The air a null sink; the loudspeaker a filter sink over it that delays its sound by
        :data:`ECHO_DELAY_MS` (the delay line all wet), its monitor what it plays; the microphone
        a source that records the air."""
        plugin, label = LADSPA_DELAY
        return (f"load-module module-null-sink sink_name={AIR} rate={PIPE_RATE} channels={PIPE_CHANNELS} "
                f"format=s16le sink_properties=device.description=Room_air\n"
                f"load-module module-ladspa-sink sink_name={SPEAKER} sink_master={AIR} plugin={plugin} label={label} "
                f"control={ECHO_DELAY_MS / 1000},1 sink_properties=device.description=Room_speaker\n"
                f"load-module module-remap-source source_name={AIR_MIC} master={AIR}.monitor "
                f"source_properties=device.description=Room_microphone\n"
                f"set-default-sink {SPEAKER}\nset-default-source {AIR_MIC}\n")

    def _set_echo_gain(self) -> None:
        """The loudspeaker's sound reaches the air :data:`ECHO_GAIN` down: the filter sink's
        volume, which it shares with its way into the air, while its monitor (what it plays) is
        taken before it. PulseAudio's volumes are cubic: the amplitude is the volume cubed."""
        import pulsectl

        with pulsectl.Pulse("tests", server=self.server) as pulse:
            speaker = pulse.get_sink_by_name(SPEAKER)
            pulse.volume_set_all_chans(speaker, ECHO_GAIN ** (1 / 3))

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
    real time, catching up on a short delay (:data:`CATCH_UP_S`) but never on a long one (the
    server reads the pipe only while something records from the source). When the source is unloaded (the FIFO goes) it
    waits for it to come back and goes on."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self._chunk = int(PIPE_RATE * CHUNK_S)
        self._pending: deque[NDArray[np.int16]] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.reopened = 0
        self.flowing_s = 0.0
        """Audio written at pace since the source last stopped reading (what a test waits for
        before speaking: the server reads the pipe only once the source is recorded from)."""
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

    def _next_chunk(self) -> NDArray[np.int16]:
        with self._lock:
            if self._pending:
                return self._pending.popleft()
        return np.zeros(self._chunk * PIPE_CHANNELS, dtype=np.int16)

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
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
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
                started, written_s, self.flowing_s = time.monotonic(), 0.0, 0.0
                continue
            written_s += CHUNK_S
            behind = time.monotonic() - (started + written_s)
            self.flowing_s += CHUNK_S
            if behind > CATCH_UP_S:  # nothing recorded (the source unloaded, not yet read): that time is gone
                started += behind
                self.flowing_s = 0.0
            self._stop.wait(max(0.0, started + written_s - time.monotonic()))
        if fd is not None:
            os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class BuyerVoice:
    """The buyer speaking into the room's air (``room=True``): each utterance given to :meth:`say`
    is played into :data:`AIR` after the previous one, on a thread, at the server's pace."""

    def __init__(self, server: str, rate: int = 16_000) -> None:
        self.server = server
        self.rate = rate
        self._said: queue.Queue[NDArray[np.int16] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="buyer-voice", daemon=True)

    def start(self) -> BuyerVoice:
        self._thread.start()
        return self

    def say(self, samples: NDArray[np.int16]) -> None:
        self._said.put(samples)

    def _run(self) -> None:
        import pasimple

        with pasimple.PaSimple(pasimple.PA_STREAM_PLAYBACK, pasimple.PA_SAMPLE_S16LE, 1, self.rate, app_name="tests",
                               stream_name="the buyer", server_name=self.server, device_name=AIR) as stream:
            while (samples := self._said.get()) is not None:
                stream.write(samples.astype(np.int16).tobytes())
                stream.drain()

    def stop(self) -> None:
        self._said.put(None)
        self._thread.join(10)


AUDIO_NICE = -11
"""The priority a desktop's sound server takes (PulseAudio's ``high-priority``): the room's audio
processes run at it where allowed (as root: CI, the venue PC's service), so a loaded machine
delays the suite's work, not the room's sound."""


def raise_priority(pid: int = 0) -> None:
    """Run process ``pid`` (0: this one) at :data:`AUDIO_NICE` when allowed; otherwise as it is."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, AUDIO_NICE)
    except OSError:
        pass
