"""``run``'s terminal while the buyer types: the supervisor owns it, so that a log line never
lands on top of a half-typed buyer line.

Without a microphone the buyer types at ``run``'s terminal, and the same terminal shows the
conversation, round events and problems, printed whenever they happen. When the microphone
worker read the keyboard itself, a line printed meanwhile split what the buyer was typing in two
(seen: "Celia, I'd li round r2: negotiation ke 2 eggs"). Here the supervisor reads the line
with GNU readline on its own terminal and hands each finished line to the microphone worker
through a pseudo-terminal (the worker sees a terminal, as before); every line the supervisor
prints goes through :class:`LineSafeStream`, which clears the input line, prints, and has
readline draw the prompt and the partial input again, the cursor where it was.

Only with a terminal on standard input: with none (CI, a service, ``stdin`` closed) nothing here
is used and ``run`` prints as it always did.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pty
import select
import sys
import termios
import threading
from collections.abc import Callable
from typing import Any, TextIO

from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

PROMPT = "buyer> "
STOP_POLL_S = 0.2
"""How often a plain line read (no line editing) looks whether ``run`` is stopping."""
JOIN_S = 1.0
CLEAR_LINE = "\r\x1b[K"
"""Back to the start of the line, and erase it (the prompt and the partial input)."""
END_OF_INPUT = b"\x04"
"""What the terminal sends for Ctrl-D: the microphone worker's typed input ends."""


def keyboard_feed() -> tuple[int, int] | None:
    """A pseudo-terminal for the microphone worker's standard input: ``(ours, theirs)``. Its
    echo is off (the supervisor's terminal shows what is typed, once). None where no
    pseudo-terminal can be had: the worker then reads the terminal itself, as it used to."""
    try:
        ours, theirs = pty.openpty()
    except OSError as exc:
        log.warning("no pseudo-terminal for typed input (%s): lines printed while the buyer types may cut the typed line",
                    exc.strerror or exc)
        return None
    attrs = termios.tcgetattr(theirs)
    attrs[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(theirs, termios.TCSANOW, attrs)
    os.set_blocking(ours, False)  # a worker that does not read (a microphone after all) never blocks us
    return ours, theirs


def _readline_c() -> Any | None:
    """GNU readline's C functions that redraw the input line (``rl_on_new_line``,
    ``rl_redisplay``), which the ``readline`` module does not expose; None without them."""
    try:
        import readline

        lib = ctypes.CDLL(readline.__file__)
        lib.rl_on_new_line, lib.rl_redisplay  # noqa: B018 - present, or AttributeError
        return lib
    except (ImportError, OSError, AttributeError):
        return None


class LineSafeStream:
    """A text stream for the supervisor's output while the prompt is up: whole lines are printed
    above the input line, which is drawn again after them."""

    def __init__(self, inner: TextIO, prompt: BuyerPrompt) -> None:
        self.inner = inner
        self.prompt = prompt
        self._partial = ""

    def write(self, text: str) -> int:
        with self.prompt.lock:
            self._partial += text
            if "\n" not in self._partial:
                return len(text)
            lines, _, self._partial = self._partial.rpartition("\n")
            self.prompt.print_above(self.inner, lines + "\n")
        return len(text)

    def flush(self) -> None:
        """A terminal that is gone (its window closed) fails every flush with EIO; that must not
        stop the caller (``StreamHandler.setStream`` flushes before it swaps streams)."""
        with contextlib.suppress(OSError, ValueError):
            self.inner.flush()

    def fileno(self) -> int:
        """The real terminal's: ``input()`` uses readline only when standard output is a terminal."""
        return self.inner.fileno()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class BuyerPrompt:
    """Reads the buyer's lines at the terminal and hands each to ``deliver`` (None at the end of
    input); see the module docstring. :meth:`start` takes the terminal over, :meth:`stop` gives
    it back as it was, whatever readline left it in."""

    def __init__(self, deliver: Callable[[str | None], None], prompt: str = PROMPT) -> None:
        self.deliver = deliver
        self.prompt = prompt
        self.lock = threading.RLock()
        self.reading = False
        """The prompt is on screen, waiting for the buyer (lines printed now are redrawn under)."""
        self._c = _readline_c()
        self._stopping = threading.Event()
        self._pending = b""
        """Read but not yet handed on: the rest after a line's end (several lines pasted at once)."""
        self.line_editing = False
        """Standard input and output are both terminals: GNU readline edits the line and draws it
        again under printed lines. Otherwise (``run > run.log``) lines are read from the file
        descriptor itself (see :meth:`_plain_line`)."""
        self._saved: tuple[TextIO, TextIO, list[tuple[logging.StreamHandler[Any], Any]], list[Any] | None] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        import readline

        self.line_editing = _is_terminal(sys.stdin) and _is_terminal(sys.stdout)
        readline.parse_and_bind("set enable-bracketed-paste off")  # nothing to undo in the terminal afterwards
        try:
            attrs: list[Any] | None = termios.tcgetattr(sys.stdin.fileno())
        except (termios.error, ValueError, OSError):
            attrs = None
        streams = tuple(s for s in (sys.stdout, sys.stderr) if _is_terminal(s))  # a file gets no prompt to keep whole
        handlers = []
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream in streams:
                handlers.append((handler, handler.stream))
                handler.setStream(LineSafeStream(handler.stream, self))
        self._saved = (sys.stdout, sys.stderr, handlers, attrs)
        if sys.stdout in streams:
            sys.stdout = LineSafeStream(sys.stdout, self)
        if sys.stderr in streams:
            sys.stderr = LineSafeStream(sys.stderr, self)
        self._thread = threading.Thread(target=self._read, name="buyer-prompt", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            with self.lock:
                self.reading = True
            try:
                line = input(self.prompt) if self.line_editing else self._plain_line()
            except (EOFError, OSError, ValueError):
                line = None
            finally:
                with self.lock:
                    self.reading = False
            if self._stopping.is_set():
                return
            self.deliver(line)
            if line is None:
                return

    def _plain_line(self) -> str | None:
        """One line from standard input's file descriptor, the prompt on the terminal's standard
        error. Not ``input()``: without a terminal on standard output it reads through Python's
        buffered ``sys.stdin``, and this daemon thread, blocked there, held its lock when the
        interpreter shut down - Python then aborted ``run`` ("could not acquire lock for
        <stdin> at interpreter shutdown", status 134) instead of exiting 0. Returns None at
        the end of input or when :meth:`stop` is called."""
        if _is_terminal(sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(self.prompt)
                sys.stderr.flush()
        fd = sys.stdin.fileno()
        while b"\n" not in self._pending and not self._stopping.is_set():
            ready, _, _ = select.select([fd], [], [], STOP_POLL_S)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:  # the end of input: what was typed without a line end, then nothing
                rest, self._pending = self._pending, b""
                return rest.decode("utf-8", errors="replace") or None
            self._pending += chunk
        if self._stopping.is_set():
            return None
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("utf-8", errors="replace")

    def print_above(self, out: TextIO, text: str) -> None:
        """Print ``text`` (whole lines) above the input line, then draw it again (hold :attr:`lock`)."""
        import readline

        if not self.reading:
            out.write(text)
            out.flush()
            return
        out.write(CLEAR_LINE + text)
        out.flush()
        if self._c is not None:
            self._c.rl_on_new_line()  # readline: the cursor is on a fresh line now
            self._c.rl_redisplay()  # prompt, partial input, cursor at its place
        else:
            out.write(self.prompt + readline.get_line_buffer())
            out.flush()

    def stop(self) -> None:
        """Give the terminal back: the streams, the log handlers and the terminal's settings.

        The log handlers are given their streams back *before* :attr:`lock` is taken, never
        under it: a thread that logs holds its handler's lock and then waits for :attr:`lock`
        in :meth:`LineSafeStream.write`, so taking them the other way round (``setStream``
        takes the handler's lock) deadlocked ``run``'s Ctrl-C whenever a worker's line was
        being relayed at that moment. A terminal that is gone (its window closed) costs the
        last clearing of the input line, nothing else."""
        if self._saved is None:
            return
        self._stopping.set()
        if self._thread is not None and not self.line_editing:
            self._thread.join(JOIN_S)  # out of the read before the interpreter shuts down
        stdout, stderr, handlers, attrs = self._saved
        self._saved = None
        for handler, stream in handlers:
            handler.setStream(stream)
        sys.stdout, sys.stderr = stdout, stderr
        with self.lock:
            if self.reading:
                with contextlib.suppress(OSError, ValueError):
                    stdout.write(CLEAR_LINE)
                    stdout.flush()
        if attrs is not None:
            with contextlib.suppress(termios.error, ValueError, OSError):
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, attrs)


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed
        return False


def feed_line(fd: int, line: str | None) -> None:
    """One typed line (None: the end of input) to the microphone worker's pseudo-terminal; a
    worker that does not read it (a real microphone) costs the line, said once."""
    data = END_OF_INPUT if line is None else (line.replace("\n", " ") + "\n").encode("utf-8", errors="replace")
    try:
        os.write(fd, data)
    except BlockingIOError:
        _notes.warning("unread", "the microphone worker is not reading typed lines (it listens to a microphone): line dropped")
    except OSError as exc:
        _notes.warning(("feed", exc.errno), "typed line not handed to the microphone worker: %s", exc.strerror or exc)
