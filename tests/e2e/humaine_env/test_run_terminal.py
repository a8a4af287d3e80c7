"""``run``'s terminal with typed input: a line printed while the buyer types goes above the
half-typed line, which is drawn again after it and completed as if nothing happened; with no
standard input at all, ``run`` says why in one line and no traceback."""

from __future__ import annotations

import io
import logging
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import tomllib

from avatar.operator.routes import END_ROUND_PATH
from humaine_env.terminal import PROMPT, BuyerPrompt, LineSafeStream
from tests.support import loopback
from tests.support.helpers import AUTO_FIRST_ROUND, CLI, free_port, suite_config, wait_for

PARTIAL, REST = "Celia, I would li", "ke 2 eggs"
_CSI = re.compile(r"\x1b\[[0-9;?]*([A-Za-z])")


def screen(raw: str, width: int = 200) -> list[str]:
    """What a terminal shows for ``raw``: printable text, CR, LF, backspace, erase-to-end-of-line
    (the rest of the escape sequences move nothing the test looks at)."""
    lines: list[list[str]] = [[]]
    col = 0
    i = 0
    while i < len(raw):
        match = _CSI.match(raw, i)
        if match:
            if match.group(1) == "K":
                del lines[-1][col:]
            i = match.end()
            continue
        ch = raw[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append([])
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch.isprintable() and col < width:
            line = lines[-1]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return ["".join(line).rstrip() for line in lines]


def test_a_line_printed_while_the_buyer_types_does_not_break_the_typed_line(tmp_path: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    text = config_path.read_text().replace("warm_up_s = 0.5\n", "warm_up_s = 0.5\nround_s = 600\n")
    config_path.write_text(text)
    avatar_url = f"http://127.0.0.1:{tomllib.loads(text)['avatar']['port']}"
    ours, theirs = pty.openpty()
    suite = subprocess.Popen(
        [*CLI, "run", "--config", str(config_path), "--without", "camera", *AUTO_FIRST_ROUND], stdin=theirs, stdout=theirs, stderr=theirs,
        cwd=tmp_path, start_new_session=True, env={**os.environ, "TERM": "xterm", "COLUMNS": "200", "LINES": "50"},
    )
    os.close(theirs)
    chunks: list[str] = []

    def read() -> None:
        while True:
            try:
                data = os.read(ours, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data.decode("utf-8", errors="replace"))

    threading.Thread(target=read, daemon=True).start()
    output = lambda: "".join(chunks)  # noqa: E731
    try:
        assert wait_for(lambda: PROMPT in output(), timeout=90), output()
        assert wait_for(lambda: "round r1: negotiation" in output(), timeout=60), output()
        os.write(ours, PARTIAL.encode())
        assert wait_for(lambda: PARTIAL in screen(output())[-1], timeout=10), screen(output())[-3:]

        # a round event is printed while the line is half typed
        assert loopback.post(avatar_url + END_ROUND_PATH, timeout=15).json()["ok"]
        assert wait_for(lambda: "round r1: post-round" in output(), timeout=15), output()
        time.sleep(0.3)
        shown = screen(output())
        assert any(line.startswith("round r1: post-round") for line in shown), shown[-6:]  # a line of its own
        assert shown[-1] == PROMPT + PARTIAL, shown[-6:]  # the half-typed line, drawn again below it
        assert not any("round r1" in line and "Celia" in line for line in shown), shown[-6:]

        os.write(ours, (REST + "\r").encode())  # the buyer finishes the line and presses Enter
        assert wait_for(lambda: "I would like 2 eggs" in output() and "buyer → Celia" in output(), timeout=30), output()[-2000:]
    finally:
        # the terminal goes first (the prompt's reader ends on it), then Ctrl-C; run once hung
        # here (see test_the_prompt_gives_the_terminal_back_while_another_thread_is_logging)
        os.close(ours)
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(30)
    assert "Traceback" not in output()


def test_a_laptop_round_with_a_decline_is_quiet_and_keeps_typed_lines_whole(tmp_path: Path) -> None:
    """A laptop: no webcam, no microphone - the documented fallbacks. The buyer types an offer,
    the seller accepts, the terminal asks, the buyer types "no". Not one WARNING or ERROR line on
    the terminal, every typed line whole on its own line, and Ctrl-C ends with status 0."""
    config_path = suite_config(tmp_path, free_port())
    offer = "@Celia I will buy 2 eggs for 9 dollars"
    ours, theirs = pty.openpty()
    suite = subprocess.Popen(
        [*CLI, "run", "--config", str(config_path), "--set", 'camera.source="webcam:97"', *AUTO_FIRST_ROUND],
        stdin=theirs, stdout=theirs, stderr=theirs, cwd=tmp_path, start_new_session=True,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "200", "LINES": "50"},
    )
    os.close(theirs)
    chunks: list[str] = []
    threading.Thread(target=lambda: _drain(ours, chunks), daemon=True).start()
    output = lambda: "".join(chunks)  # noqa: E731
    try:
        assert wait_for(lambda: "round r1: negotiation" in output(), timeout=90), output()
        os.write(ours, (offer + "\r").encode())
        assert wait_for(lambda: "deal? type yes or no" in output(), timeout=60), output()[-3000:]
        assert "Celia accepts 2 eggs for $" in output()
        os.write(ours, b"no\r")
        assert wait_for(lambda: "declined Celia's deal" in output(), timeout=30), output()[-3000:]
        os.killpg(suite.pid, signal.SIGINT)
        assert suite.wait(30) == 0, output()[-3000:]
    finally:
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGKILL)
            suite.wait(10)
        os.close(ours)
    shown = screen(output())
    problems = [line for line in shown if " WARNING " in line or " ERROR " in line or "Traceback" in line]
    assert not problems, problems
    assert any("no camera at index 97" in line and " NOTICE " in line for line in shown), shown
    # each typed line whole on a line of its own: at most the prompt before it, nothing after
    # (the terminal may echo a line typed before the prompt is redrawn, as a person typing fast)
    for typed in (offer, "no"):
        assert any(line in (typed, PROMPT + typed) for line in shown), (typed, shown[-20:])
    assert not [line for line in shown if offer[:12] in line and line not in (offer, PROMPT + offer)], shown[-20:]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_with_its_output_in_a_file_takes_typed_lines_and_stops_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    """``run > run.log`` from a terminal, as an operator keeping a log starts it: the buyer's
    typed line still reaches the room, and a stop ends with status 0 - no "Fatal Python error"
    from a thread still reading standard input at shutdown (it was status 134, 14 stops of 14)."""
    config_path = suite_config(tmp_path, free_port())
    log_path = tmp_path / "run.log"
    ours, theirs = pty.openpty()
    with log_path.open("w") as log_file:
        suite = subprocess.Popen(
            [*CLI, "run", "--config", str(config_path), "--without", "camera", *AUTO_FIRST_ROUND], stdin=theirs,
            stdout=log_file, stderr=theirs, cwd=tmp_path, start_new_session=True, env={**os.environ, "TERM": "xterm"},
        )
    os.close(theirs)
    chunks: list[str] = []
    threading.Thread(target=lambda: _drain(ours, chunks), daemon=True).start()
    try:
        assert wait_for(lambda: "round r1: negotiation" in log_path.read_text(), timeout=90), log_path.read_text()
        os.write(ours, b"@Celia I would like 2 eggs\r")
        assert wait_for(lambda: "buyer → Celia" in log_path.read_text(), timeout=30), log_path.read_text()[-2000:]
        os.killpg(suite.pid, stop)
        assert suite.wait(30) == 0, "".join(chunks)[-2000:]
    finally:
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGKILL)
            suite.wait(10)
        os.close(ours)
    terminal = "".join(chunks)
    assert "Fatal Python error" not in terminal and "Traceback" not in terminal, terminal[-2000:]
    assert PROMPT not in log_path.read_text()  # the prompt is the terminal's, never the log's


def _drain(fd: int, chunks: list[str]) -> None:
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            return
        if not data:
            return
        chunks.append(data.decode("utf-8", errors="replace"))


def test_run_without_any_standard_input_says_why_in_one_line(tmp_path: Path) -> None:
    """CI runs as root with no standard input: the microphone cannot fall back to typing, says
    so, and ``run`` ends with the documented status rather than waiting for a keyboard."""
    config_path = suite_config(tmp_path, free_port())
    result = subprocess.run([*CLI, "run", "--config", str(config_path), "--only", "mic"], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path, preexec_fn=lambda: os.close(0))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "no terminal for typed input" in result.stderr and PROMPT not in result.stdout, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_the_prompt_gives_the_terminal_back_while_another_thread_is_logging(monkeypatch) -> None:
    """Ctrl-C at ``run`` stops the prompt while the workers' lines are still being relayed: a
    thread that holds a log handler's lock (inside ``Handler.handle``) and is about to print
    through the prompt must not stop :meth:`BuyerPrompt.stop` (seen: ``run`` hung on Ctrl-C,
    its main thread in ``setStream`` under the prompt's lock, a relay thread in the prompt's
    stream under the handler's)."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    prompt = BuyerPrompt(lambda _line: None)
    ended = threading.Event()

    def typed(_prompt: str = "") -> str:
        ended.wait()  # the buyer types nothing until the test ends, then closes the terminal
        raise EOFError

    monkeypatch.setattr("builtins.input", typed)
    monkeypatch.setattr("humaine_env.terminal._is_terminal", lambda _stream: True)  # the buyer's terminal, in a test
    try:
        prompt.start()
        assert isinstance(handler.stream, LineSafeStream)
        relayed = threading.Event()

        def relay() -> None:
            handler.acquire()  # as Handler.handle holds it while the line is emitted
            try:
                deadline = time.monotonic() + 1.0
                while time.monotonic() < deadline and prompt.lock.acquire(blocking=False):
                    prompt.lock.release()  # wait (at most 1 s) for stop() to hold the prompt's lock, if it ever does
                    time.sleep(0.001)
                handler.stream.write("run.mic: stopping\n")
                relayed.set()
            finally:
                handler.release()

        relay_thread = threading.Thread(target=relay, daemon=True)
        relay_thread.start()
        stopper = threading.Thread(target=prompt.stop, daemon=True)
        stopper.start()
        stopper.join(10)
        assert not stopper.is_alive(), "BuyerPrompt.stop deadlocked with a thread that was logging"
        relay_thread.join(10)
        assert relayed.is_set()
        assert handler.stream is out and sys.stdout is out
        assert "run.mic: stopping" in out.getvalue()
    finally:
        ended.set()
        root.removeHandler(handler)
