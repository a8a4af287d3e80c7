"""The quiet console and the log file: levels of relayed lines, the file's format, the round
lines of ``run``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from humaine_env.supervisor import RoundPrinter, describe_round
from workers.runtime.logs import NOTICE, QUIET_CONSOLE, console_level, line_level, relay_line, setup_logging
from workers.runtime.messages import RoundState


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


@pytest.mark.parametrize(
    ("line", "previous", "expected"),
    [
        ("01:02:03 INFO    workers.runtime.bus: connected", 0, logging.INFO),
        ("01:02:03 NOTICE  workers.microphone.engines: loading", 0, NOTICE),
        ("01:02:03 ERROR   humaine.microphone: cannot run: x", 0, logging.ERROR),
        ("humaine-env camera: no camera at index 0", 0, logging.WARNING),
        ("Traceback (most recent call last):", 0, logging.WARNING),
        ('  File "x.py", line 1, in <module>', logging.WARNING, logging.WARNING),
        ("    more of an INFO record", logging.INFO, logging.INFO),
        ("W0000 00:00:1795395494.965970    2234 inference_feedback_manager.cc:114] Feedback", 0, logging.INFO),
        ("E0000 00:00:1795395494.965970    2234 gl_context.cc:1] no display", 0, logging.ERROR),
        ("INFO: Created TensorFlow Lite XNNPACK delegate for CPU.", 0, logging.INFO),
    ],
)
def test_the_level_of_a_child_line(line: str, previous: int, expected: int) -> None:
    assert line_level(line, previous) == expected


def test_console_level() -> None:
    assert console_level(None, False, "INFO") == QUIET_CONSOLE
    assert console_level(None, True, "DEBUG") == logging.DEBUG
    assert console_level("ERROR", True, "DEBUG") == logging.ERROR
    assert console_level(None, False, "ERROR") == logging.ERROR


def test_console_is_quiet_and_the_file_keeps_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], restore_logging: None
) -> None:
    path = tmp_path / "logs" / "run.log"
    setup_logging(QUIET_CONSOLE, log_file=path, file_level="DEBUG", max_bytes=10_000, backups=2)
    log = logging.getLogger("humaine.test")
    log.info("routine")
    log.log(NOTICE, "loading")
    relay_line("run.mic", "01:02:03 INFO    workers.runtime.bus: connected", logging.INFO)
    relay_line("run.camera", "humaine-env camera: no camera", logging.WARNING)
    console = capsys.readouterr().err.splitlines()
    assert [ln.split(" ", 1)[1] for ln in console[:1]] == ["NOTICE  humaine.test: loading"]
    assert console[1:] == ["humaine-env camera: no camera"]
    written = path.read_text(encoding="utf-8").splitlines()
    assert len(written) == 4
    assert written[0].endswith("INFO    humaine.test: routine") and written[0][:4].isdigit()  # dated
    assert written[2].endswith("01:02:03 INFO    workers.runtime.bus: connected") and written[2][:4].isdigit()
    assert written[3].endswith("WARNING run.camera: humaine-env camera: no camera")
    for i in range(400):  # rotated, never larger than the bound (plus one line)
        log.warning("line %d %s", i, "x" * 80)
    assert path.stat().st_size <= 10_200 and path.with_name("run.log.1").is_file() and path.with_name("run.log.2").is_file()
    assert not path.with_name("run.log.3").exists()


def test_round_lines_say_each_change_once(capsys: pytest.CaptureFixture[str]) -> None:
    printer = RoundPrinter()
    printer("t", RoundState(source="avatar", round_id=None))
    warmup = RoundState(source="avatar", round_id="r1", phase="warmup", phase_started=1_000, phase_deadline=31_000)
    printer("t", warmup)
    printer("t", warmup)  # refreshed, not news
    printer("t", RoundState(source="avatar", round_id="r1", phase="round", phase_started=31_000, phase_deadline=631_000))
    printer("t", RoundState(source="avatar", round_id="r1", phase="ended"))
    assert capsys.readouterr().out.splitlines() == [
        "round r1: warm-up (30 s)", "round r1: negotiation (600 s)", "round r1: round over",
    ]
    assert describe_round(RoundState(source="avatar", round_id=7, phase="post")) == "round 7: post-round"


def test_a_flood_of_conversation_lines_is_bounded_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    """20,000 forged utterances on the bus: the terminal shows a burst, then one line saying how
    many were left out, not 20,000 lines."""
    from humaine_env.supervisor import CONSOLE_BURST, ConsoleLines

    now = [100.0]
    console = ConsoleLines(seconds=lambda: now[0])
    for i in range(20_000):
        console.say(f"buyer → Celia: forged {i}")
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == CONSOLE_BURST
    now[0] += 0.3  # the bucket refills: the next line comes with the count of the left-out ones
    console.say("buyer → Celia: real")
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"humaine-env: {20_000 - CONSOLE_BURST} conversation line(s) not shown (more than 5 a second)",
                     "buyer → Celia: real"]
