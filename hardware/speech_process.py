"""The speech engines in a supervised child process, so that a native crash cannot take their
caller down.

Piper (onnxruntime), Festival (a pipe to a ``festival`` process) and espeak-ng (ctypes) are
native code: a segfault or an abort in one of them ends the process it runs in. In the Avatar
Controller that process also answers the Environment Orchestrator, which exits when the service
it waits for dies. :class:`SpeechProcess` keeps the engines - a real
:class:`~hardware.speech_engines.EngineSet` - in ONE child process and gives the speaker proxy
engines with the same contract (``sample_rate``, ``synthesize(ssml, settings, on_audio)``):
``on_audio`` is called in the caller's process with the same chunks and events a local engine
hands over.

Why ``subprocess`` running this module, not ``multiprocessing`` with "spawn": spawn re-imports
the parent's ``__main__`` in the child (``humaine-env``'s CLI, a benchmark, pytest), which is
exactly the heavy import the child must not pay, and its pickled start-up state ties the child
to how the parent was started. A plain interpreter started on this module imports the engines'
modules only, and the voices it is asked for. The two talk over a private ``socketpair`` (not
the child's standard streams, which native libraries may write on): length-prefixed pickles,
each side trusting the other (same user, same code).

* **Back-pressure**: the child writes each chunk as it is synthesised and blocks when the
  socket's buffer is full; the parent reads the next chunk only when ``on_audio`` has taken the
  last one (the speaker paces it at playback speed). What is in flight is the socket's buffer.
* **Cancel**: when ``on_audio`` returns False the parent sends ``cancel`` and returns at once;
  the child's reader thread flags the utterance, its next chunk ends the synthesis, and what
  was still in flight for it is discarded when the next request reads its own answer.
* **Supervision**: a child that dies (signal, segfault) or sends nothing for :data:`STALL_S`
  while an utterance is synthesised (it is then killed) makes the current call raise
  :class:`~hardware.speech_types.SpeakerError` - a failed utterance, not a cancelled one: the
  speech queue counts it and speaks the next message. One WARNING says so (at most one per
  :data:`WARNING_EVERY_S`, with a count of the others). The next call starts a fresh child
  (after the first failure it is started at once; when it keeps dying, after a backoff of
  :data:`BACKOFF_FIRST_S` doubling up to :data:`BACKOFF_MAX_S`), which loads every voice
  resolved so far before it speaks: the caller does not notice.
* **Lifetime**: the child ends when its socket reaches end-of-file - :meth:`SpeechProcess.close`,
  or the parent's death, even by ``kill -9`` - and checks its parent every
  :data:`PARENT_POLL_S` in case another process inherited the parent's end. Every child of
  ours is waited for (no zombies); Ctrl-C in a terminal does not reach it (the parent closes it).

Errors of the engines themselves (an unknown voice, Festival refusing a text) reach the caller
as :class:`~hardware.speech_types.SpeakerError` with the same text; the child's log lines are
logged again in the parent under their own logger names (the fallback line of
:meth:`~hardware.speech_engines.EngineSet.resolve` included, once per voice).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import pickle
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardware.speech_types import SpeakerError, SpeechEvent, VoiceSettings

if TYPE_CHECKING:
    from hardware.speech_engines import EngineSet

log = logging.getLogger(__name__)

STALL_S = 20.0
"""How long an utterance may go without a message from the child before the child counts as
hung and is killed. Generous: a chunk comes every 40 ms with espeak-ng, and Festival's and
Piper's slowest phrase renders in about a second on two busy cores; Festival's own render
timeout is 30 s, and a reply silent for 20 s is stale anyway (``[avatar] stale_after_s``)."""
LOAD_TIMEOUT_S = 90.0
"""How long a child may take to start and load a voice (Piper: 0.5-1.5 s, Festival: 0.2 s;
more on a machine busy starting everything else)."""
CLOSE_WAIT_S = 3.0
"""How long :meth:`SpeechProcess.close` waits for the child to end on its own before killing it."""
CLOSE_LOCK_WAIT_S = 1.0
"""How long :meth:`SpeechProcess.close` waits for a call in flight before ending the child under it."""
BACKOFF_FIRST_S = 0.5
"""Wait before starting a child after the second failure in a row (doubling at each further one)."""
BACKOFF_MAX_S = 8.0
"""Longest wait before starting a child: a crash loop costs the utterances, not the CPU."""
WARNING_EVERY_S = 60.0
"""At most one warning about a lost child per this long; the next one counts those left out."""
PARENT_POLL_S = 1.0
"""How often the child checks that its parent is still the process that started it."""

_HEADER = struct.Struct("!I")
_ROOT = str(Path(__file__).resolve().parent.parent)
"""The directory holding the ``hardware`` package: first on the child's path, so it runs this code."""
_LIVE: weakref.WeakSet[SpeechProcess] = weakref.WeakSet()
AudioCallback = Callable[[bytes, list[SpeechEvent]], bool]


# -- the wire -----------------------------------------------------------------------------------
class _Channel:
    """Whole messages over a stream socket: a 4-byte length, then a pickle. ``send`` is safe
    from several threads; ``recv`` belongs to one."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()
        self.broken = False
        """A read stopped half-way through a message: the stream cannot be trusted any more."""

    def send(self, message: tuple[Any, ...]) -> None:
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        with self._send_lock:
            self.sock.sendall(_HEADER.pack(len(data)) + data)

    def recv(self, timeout: float | None) -> Any:
        """The next message. Raises :class:`EOFError` when the peer is gone and
        :class:`TimeoutError` when no byte came for ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        done = False
        try:
            (size,) = _HEADER.unpack(self._exact(_HEADER.size, first=True))
            message = pickle.loads(self._exact(size))
            done = True
            return message
        finally:
            self.broken = self.broken or not done

    def _exact(self, size: int, first: bool = False) -> bytearray:
        buffer = bytearray(size)
        view = memoryview(buffer)
        got = 0
        while got < size:
            count = self.sock.recv_into(view[got:])
            if count == 0:
                raise EOFError("end of stream" if first and got == 0 else "end of stream inside a message")
            got += count
        return buffer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


# -- the parent's side ----------------------------------------------------------------------------
class _Lost(Exception):
    """The child cannot answer: it ``ended``, or was ``silent`` for ``waited`` seconds."""

    def __init__(self, kind: str, waited: float = 0.0) -> None:
        super().__init__(kind)
        self.kind = kind
        self.waited = waited


class _Child:
    """One child process and our end of its socket."""

    def __init__(self, log_level: int) -> None:
        ours, theirs = socket.socketpair()
        code = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "from hardware.speech_process import child_main; child_main(sys.argv[2:])")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code, _ROOT, str(theirs.fileno()), str(os.getpid()), str(log_level)],
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), close_fds=True,
            )
        except OSError as exc:
            ours.close()
            raise SpeakerError(f"cannot start the speech engines' process ({sys.executable}): {exc}") from None
        finally:
            theirs.close()
        self.channel = _Channel(ours)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def how_it_ended(self) -> str:
        code = self.process.returncode
        if code is None:
            return "is still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"was killed by {name}"
        return f"exited with status {code}"

    def end_now(self) -> None:
        """Kill and reap it (safe from another thread: the socket is shut down, not closed)."""
        with contextlib.suppress(OSError):
            self.channel.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(CLOSE_WAIT_S)

    def kill(self) -> None:
        self.end_now()
        self.channel.close()

    def stop(self) -> None:
        """Ask it to end (it closes its engines: Festival's process, temporary files), then reap it."""
        with contextlib.suppress(OSError):
            self.channel.sock.settimeout(CLOSE_WAIT_S)
            self.channel.send(("close",))
        # a child blocked writing audio nobody reads any more gets EPIPE and ends as well
        with contextlib.suppress(OSError):
            self.channel.sock.shutdown(socket.SHUT_RDWR)
        try:
            self.process.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            log.warning("the speech engines' process %d did not end within %.0f s: killing it", self.pid, CLOSE_WAIT_S)
            self.end_now()
        self.channel.close()


class _RemoteEngine:
    """What the speaker sees of an engine in the child: its sample rate and ``synthesize``."""

    def __init__(self, owner: SpeechProcess, sample_rate: int) -> None:
        self._owner = owner
        self.sample_rate = sample_rate

    def check_voice(self, settings: VoiceSettings) -> None:
        """Raise :class:`SpeakerError` when ``settings`` cannot be spoken (loads it in the child)."""
        self._owner.resolve(settings)

    def synthesize(self, ssml: str, settings: VoiceSettings, on_audio: AudioCallback) -> None:
        self._owner._synthesize(self.sample_rate, ssml, settings, on_audio)


class SpeechProcess:
    """An :class:`~hardware.speech_engines.EngineSet` in a supervised child process (see the
    module's docstring). Hand it to :class:`hardware.speaker.Speaker` as ``engines``.

    One call at a time (a lock serialises them, as the speaker does anyway); ``on_audio`` must
    not call back into this object. The child starts at the first :meth:`resolve`."""

    def __init__(self, stall_s: float = STALL_S, load_timeout_s: float = LOAD_TIMEOUT_S) -> None:
        self.stall_s = stall_s
        self.load_timeout_s = load_timeout_s
        self.restarts = 0
        """Children lost so far (each replaced by a fresh one at the next call)."""
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._child: _Child | None = None
        self._resolved: dict[VoiceSettings, tuple[_RemoteEngine, VoiceSettings]] = {}
        self._engines: dict[tuple[str, str, int], _RemoteEngine] = {}
        self._wanted: list[VoiceSettings] = []
        """Every voice resolved so far, in order: each new child loads them before it speaks."""
        self._ids = itertools.count(1)
        self._pending_load: int | None = None
        """The request id of the voices a fresh child is loading (answer not read yet)."""
        self._failures = 0
        """Children lost in a row (reset by an utterance that completes): sets the backoff."""
        self._lost_at = float("-inf")
        self._warned_at = float("-inf")
        self._unwarned = 0
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        """The child's process id (``None`` before the first voice, after :meth:`close`)."""
        child = self._child
        return child.pid if child is not None else None

    # -- the EngineSet interface -----------------------------------------------------------------
    def resolve(self, settings: VoiceSettings) -> tuple[_RemoteEngine, VoiceSettings]:
        """The engine that speaks ``settings`` and the settings it speaks with, as
        :meth:`EngineSet.resolve <hardware.speech_engines.EngineSet.resolve>` decides in the child
        (the voice's own, or its espeak-ng fallback with one warning line). Loads the voice now."""
        with self._lock:
            known = self._resolved.get(settings)
            if known is not None:
                return known
            child = self._ready()
            request = next(self._ids)
            try:
                self._send(child, ("load", request, [settings], False))
                _, _, results = self._recv(child, request, self.load_timeout_s)
            except _Lost as lost:
                raise self._fail(child, lost, "while loading a voice") from None
            used, rate, error = results[0]
            if error is not None:
                raise SpeakerError(error)
            engine = self._engines.setdefault((used.engine, used.voice, rate), _RemoteEngine(self, rate))
            self._resolved[settings] = (engine, used)
            if settings not in self._wanted:
                self._wanted.append(settings)
            return engine, used

    def close(self) -> None:
        """End the child (it closes its engines first); later calls raise :class:`SpeakerError`."""
        self._closed.set()
        _LIVE.discard(self)
        if self._lock.acquire(timeout=CLOSE_LOCK_WAIT_S):
            try:
                child, self._child = self._child, None
                if child is not None:
                    child.stop()
            finally:
                self._lock.release()
        else:  # a call is stuck in flight: end the child under it (that call then returns the error)
            child = self._child
            if child is not None:
                child.end_now()

    # -- speaking ------------------------------------------------------------------------------
    def _synthesize(self, sample_rate: int, ssml: str, settings: VoiceSettings, on_audio: AudioCallback) -> None:
        with self._lock:
            child = self._ready()
            request = next(self._ids)
            try:
                self._send(child, ("speak", request, ssml, settings, sample_rate))
                while True:
                    message = self._recv(child, request, self.stall_s)
                    if message[0] == "end":
                        self._failures = 0
                        if message[2] is not None:
                            raise SpeakerError(message[2])
                        return
                    go_on = False
                    try:
                        go_on = bool(on_audio(message[2], message[3]))
                    finally:
                        if not go_on:  # cancelled, or on_audio raised: the child stops, its rest is discarded
                            with contextlib.suppress(_Lost):
                                self._send(child, ("cancel", request))
                    if not go_on:
                        return
            except _Lost as lost:
                raise self._fail(child, lost, "while speaking") from None

    # -- the child's life ------------------------------------------------------------------------
    def _ready(self) -> _Child:
        """The running child, started (and its voices loaded) if need be. Caller holds the lock."""
        if self._closed.is_set():
            raise SpeakerError("the speech engines are closed")
        child = self._child
        if child is not None and child.channel.broken:  # a read was interrupted half-way
            child.kill()
            child = self._child = None
            self._pending_load = None
        if child is not None and not child.alive():  # died between utterances: nothing lost yet
            self._fail(child, _Lost("ended"), "between utterances")
            child = self._child
        if child is None:
            child = self._spawn()
        if self._pending_load is not None:
            try:
                self._recv(child, self._pending_load, self.load_timeout_s)
            except _Lost as lost:
                raise self._fail(child, lost, "while loading its voices") from None
            self._pending_load = None
        return child

    def _backoff(self) -> float:
        return 0.0 if self._failures <= 1 else min(BACKOFF_FIRST_S * 2 ** (self._failures - 2), BACKOFF_MAX_S)

    def _spawn(self) -> _Child:
        """A new child, asked at once to load every voice resolved so far (answer read by :meth:`_ready`)."""
        delay = self._backoff() - (time.monotonic() - self._lost_at)
        if delay > 0 and self._closed.wait(delay):
            raise SpeakerError("the speech engines are closed")
        child = self._child = _Child(logging.getLogger().getEffectiveLevel())
        self._pending_load = None
        if self._wanted:
            request = next(self._ids)
            self._pending_load = request
            try:  # quiet: the fallback lines were said when the voices were first resolved
                self._send(child, ("load", request, list(self._wanted), True))
            except _Lost as lost:
                raise self._fail(child, lost, "as it started") from None
        return child

    def _fail(self, child: _Child, lost: _Lost, during: str) -> SpeakerError:
        """Reap a lost child, say so (rate-limited) and start the next one when no backoff is
        due; the error the interrupted call raises."""
        child.kill()
        if self._child is child:
            self._child = None
            self._pending_load = None
        if self._closed.is_set():
            return SpeakerError("the speech engines are closed")
        what = f"stopped answering for {lost.waited:g} s" if lost.kind == "silent" else child.how_it_ended()
        line = f"the speech engines' process (pid {child.pid}) {what} {during}"
        self._failures += 1
        self._lost_at = time.monotonic()
        self.restarts += 1
        self._warn(f"{line}; starting a new one")
        if self._backoff() == 0.0:  # the first loss: have the next child ready for the next utterance
            with contextlib.suppress(SpeakerError):
                self._spawn()
        return SpeakerError(f"{line}; a new one speaks the next utterance")

    def _warn(self, line: str) -> None:
        now = time.monotonic()
        if now - self._warned_at < WARNING_EVERY_S:
            self._unwarned += 1
            return
        more = f" ({self._unwarned} more since the last such warning)" if self._unwarned else ""
        log.warning("%s%s", line, more)
        self._warned_at, self._unwarned = now, 0

    # -- messages ----------------------------------------------------------------------------------
    def _send(self, child: _Child, message: tuple[Any, ...]) -> None:
        try:
            child.channel.sock.settimeout(self.stall_s)
            child.channel.send(message)
        except TimeoutError:
            raise _Lost("silent", self.stall_s) from None
        except OSError:
            raise _Lost("ended") from None

    def _recv(self, child: _Child, request: int, timeout: float) -> Any:
        """The next message answering ``request``; the child's log lines are logged here, and
        what a cancelled request still had in flight is dropped."""
        while True:
            if not child.alive():  # gone: what it left in the socket is not worth playing
                raise _Lost("ended")
            try:
                message = child.channel.recv(timeout)
            except TimeoutError:
                raise _Lost("silent", timeout) from None
            except (EOFError, OSError, pickle.UnpicklingError):
                raise _Lost("ended") from None
            if message[0] == "log":
                _, name, level, text = message
                logging.getLogger(name).log(level, "%s", text)
            elif message[1] == request:
                return message


@atexit.register
def _close_all() -> None:
    """Children of a parent that ends normally close their engines (Festival) cleanly."""
    for process in list(_LIVE):
        process.close()


# -- the child's side ---------------------------------------------------------------------------
class _ParentGone(Exception):
    """Writing to the parent failed: it closed us, or died."""


class _Forward(logging.Handler):
    """The child's log records, sent to the parent to be logged there."""

    def __init__(self, send: Callable[[tuple[Any, ...]], None]) -> None:
        super().__init__()
        self._send = send
        self.quiet = False
        """While reloading voices for a new child: only errors (the rest was said the first time)."""
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if self.quiet and record.levelno < logging.ERROR:
            return
        with contextlib.suppress(Exception):
            self._send(("log", record.name, record.levelno, self.format(record)))


class _Server:
    """The child: a reader thread takes the parent's messages (``cancel`` and end-of-file act at
    once), the main thread loads voices and speaks, one request at a time."""

    def __init__(self, channel: _Channel, parent_pid: int, log_level: int) -> None:
        self.channel = channel
        self.parent_pid = parent_pid
        self.commands: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self.cancelled: float = 0
        """The highest request id the parent cancelled (ids only grow)."""
        self.forward = _Forward(self._send)
        root = logging.getLogger()
        root.handlers[:] = [self.forward]
        root.setLevel(log_level)
        self._ending = threading.Lock()

    def _send(self, message: tuple[Any, ...]) -> None:
        try:
            self.channel.send(message)
        except OSError:
            raise _ParentGone from None

    def run(self) -> None:
        threading.Thread(target=self._read, name="speech-child-read", daemon=True).start()
        threading.Thread(target=self._watch_parent, name="speech-child-parent", daemon=True).start()
        from hardware.speech_engines import EngineSet

        engines = EngineSet()
        while True:
            message = self.commands.get()
            try:
                if message[0] == "load":
                    self._load(engines, *message[1:])
                elif message[0] == "speak":
                    self._speak(engines, *message[1:])
                else:  # "exit"
                    return
            except _ParentGone:
                return

    def _read(self) -> None:
        while True:
            try:
                message = self.channel.recv(None)
            except (EOFError, OSError, pickle.UnpicklingError):
                message = ("close",)
            if message[0] == "cancel":
                self.cancelled = max(self.cancelled, message[1])
            elif message[0] == "close":
                self._end()
                return
            else:
                self.commands.put(message)

    def _watch_parent(self) -> None:
        while os.getppid() == self.parent_pid:
            time.sleep(PARENT_POLL_S)
        self._end()

    def _end(self) -> None:
        """Stop what is being spoken and leave the main loop (a normal exit closes the engines:
        Festival's process, its temporary files); end hard if that takes too long."""
        if not self._ending.acquire(blocking=False):
            return
        self.cancelled = float("inf")
        with contextlib.suppress(OSError):
            self.channel.sock.shutdown(socket.SHUT_RDWR)  # a write blocked on a full socket fails now
        self.commands.put(("exit",))
        timer = threading.Timer(CLOSE_WAIT_S * 2 / 3, os._exit, (0,))
        timer.daemon = True
        timer.start()

    def _load(self, engines: EngineSet, request: int, voices: list[VoiceSettings], quiet: bool) -> None:
        results: list[tuple[VoiceSettings | None, int, str | None]] = []
        self.forward.quiet = quiet
        try:
            for settings in voices:
                try:
                    engine, used = engines.resolve(settings)
                    results.append((used, int(engine.sample_rate), None))
                except SpeakerError as exc:
                    results.append((None, 0, str(exc)))
                except Exception as exc:  # a bug or a broken install: the parent gets it as a SpeakerError
                    log.exception("loading the voice %s failed", settings.voice)
                    results.append((None, 0, f"loading the voice {settings.voice!r} failed: {type(exc).__name__}: {exc}"))
        finally:
            self.forward.quiet = False
        self._send(("loaded", request, results))

    def _speak(self, engines: EngineSet, request: int, ssml: str, settings: VoiceSettings, sample_rate: int) -> None:
        error: str | None = None
        if self.cancelled < request:
            try:
                engine, used = engines.resolve(settings)
                if engine.sample_rate != sample_rate:
                    raise SpeakerError(f"the voice {used.voice!r} now speaks at {engine.sample_rate} Hz (it spoke at {sample_rate})")

                def on_audio(pcm: bytes, events: list[SpeechEvent]) -> bool:
                    self._send(("audio", request, pcm, events))
                    return self.cancelled < request

                engine.synthesize(ssml, used, on_audio)
            except _ParentGone:
                raise
            except SpeakerError as exc:
                error = str(exc)
            except Exception as exc:
                log.exception("speaking with %s %s failed", settings.engine, settings.voice)
                error = f"the speech engine {settings.engine} failed: {type(exc).__name__}: {exc}"
        self._send(("end", request, error))


def child_main(argv: list[str]) -> None:
    """The child's entry point: ``FD PARENT_PID LOG_LEVEL`` (see :class:`_Child`)."""
    fd, parent_pid, log_level = (int(arg) for arg in argv[:3])
    os.dup2(2, 1)  # a native library printing on standard output must not write into the parent's
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent closes us
    channel = _Channel(socket.socket(fileno=fd))
    if os.getppid() != parent_pid:  # the parent died while we started
        return
    _Server(channel, parent_pid, log_level).run()


if __name__ == "__main__":
    child_main(sys.argv[1:])
