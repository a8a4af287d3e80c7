"""Fault injection, disks: the session log on a full disk (``/dev/full`` answers every write
with ENOSPC, as a full filesystem does) and on a directory that cannot be created."""

from __future__ import annotations

import errno
import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from formats.session_files import SESSIONS_DIR
from humaine_platform import endpoints as ep
from standins.recorder import RecordingServer
from tests.support.helpers import CHILD_ENV, CLI, MosquittoBroker, wait_for
from tests.support.room import Collector, Room
from tests.support.room import transcript_process as transcript_process
from transcript.session_log import SessionLog, read_session_log
from transcript.worker import TranscriptWorker
from workers.runtime.config import Config
from workers.runtime.messages import Status, now_ms

FULL_DISK = Path("/dev/full")
UTTERANCES = ("Celia one egg", "Watson two eggs", "Celia three eggs", "Watson four eggs")


def test_session_log_on_a_full_disk_reports_once_and_never_raises() -> None:
    errors: list[str] = []
    session_log = SessionLog(FULL_DISK, errors.append)
    for i in range(5):
        session_log.write("final", text=f"line {i}")
    assert len(errors) == 1 and "No space left on device" in errors[0], errors
    assert session_log.lines == 0 and session_log.error == errors[0]


def test_transcript_worker_relays_on_a_full_disk_with_an_error_status(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eo = RecordingServer().start()
    config = make_config(mosquitto.url, **{"eo.url": eo.url, "transcript.merge_gap_s": 0})
    room = Room(config)
    statuses = Collector()
    room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
    room.round("r1", "round")
    caplog.set_level(logging.INFO)
    # the disk filled up: the worker's session log is on it, with the worker's own error report
    monkeypatch.setattr(SessionLog, "create", classmethod(
        lambda cls, _directory, _prefix, on_error=None, on_recovered=None: cls(FULL_DISK, on_error, on_recovered)))
    worker = TranscriptWorker(config)
    worker.start()
    thread = threading.Thread(target=worker.run, args=(worker.stop_event,), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: worker.rounds.state is not None, 10)
        for i, text in enumerate(UTTERANCES):
            t = now_ms()
            room.say(text, t - 900, t - 100 - i, source="typed")
            assert wait_for(lambda n=i: len(eo.bodies(ep.RELAY_MESSAGE)) == n + 1, 10), f"utterance {i} not relayed"
        assert [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)] == list(UTTERANCES)
        assert wait_for(lambda: any(s.state == "error" and "No space left" in s.detail for s in statuses.items), 10)
        assert thread.is_alive()
        disk_lines = [r for r in caplog.records if "session log" in r.getMessage()]
        assert len(disk_lines) == 1 and not any(r.exc_info for r in caplog.records)
    finally:
        worker.stop()
        thread.join(5)
        worker.close()
        room.close()
        eo.stop()


def test_unwritable_data_dir_is_one_line_and_an_error_status_not_an_exit(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    """The data directory cannot hold the session folder (a file stands where it should be, as
    a disk that became read-only after the start refuses it): the worker says so
    once, publishes ``error`` and relays; it neither exits nor crash-loops. (A ``data_dir`` that
    cannot be written at all at the start is replaced by a temporary one: test_full_loop.py.)"""
    blocker = tmp_path / "data"
    blocker.mkdir()
    (blocker / SESSIONS_DIR).write_text("not a directory")
    eo = RecordingServer().start()
    config = make_config(mosquitto.url, **{"eo.url": eo.url})
    env = config.core.environment_uuid
    room = Room(config)
    statuses = Collector()
    room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
    room.round("r1", "round")
    process = subprocess.Popen(
        [*CLI, "transcript", "--set", f'environment_uuid="{env}"',
         "--set", f'broker.url="{mosquitto.url}"', "--set", 'broker.mode="external"',
         "--set", f'data_dir="{blocker}"', "--set", f'eo.url="{eo.url}"'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CHILD_ENV, stdin=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: any(s.state == "error" and s.pid == process.pid for s in statuses.items), 20), \
            [(s.state, s.detail) for s in statuses.items]
        (status,) = [s for s in statuses.items if s.state == "error" and s.pid == process.pid][:1]
        assert "session log" in status.detail and "File exists" in status.detail  # mkdir meets the file
        t = now_ms()
        room.say("Celia one egg", t - 900, t - 100, source="typed")
        assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) == 1, 10)
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=10)
        assert process.returncode == 0
        assert "Traceback" not in err
        assert sum("session log" in line and "not written" in line for line in err.splitlines()) == 1, err
        # and, at the stop, how many records never reached the disk
        assert sum("could not be written before the worker stopped" in line for line in err.splitlines()) == 1, err
    finally:
        if process.poll() is None:
            process.kill()
        room.close()
        eo.stop()


def test_pocketsphinx_model_is_built_elsewhere_when_the_cache_cannot_be_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A read-only data directory made the microphone crash-loop while writing its language
    model; it now builds it in a temporary folder and says so in one line."""
    from workers.microphone.engine_pocketsphinx import domain_lm_path

    blocker = tmp_path / "data"
    blocker.write_text("not a directory")
    caplog.set_level(logging.WARNING)
    path = domain_lm_path(blocker / "cache")
    assert path.is_file() and not str(path).startswith(str(blocker))
    lines = [r.getMessage() for r in caplog.records if "pocketsphinx cache" in r.getMessage()]
    assert len(lines) == 1 and "Not a directory" in lines[0], lines


@contextmanager
def small_disk(path: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path``: a disk that really fills up, and empties again."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; removing it frees the disk."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_session_log_resumes_when_the_disk_has_room_again(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        errors: list[str] = []
        recovered = threading.Event()
        session_log = SessionLog(disk / "sessions" / "s.jsonl", errors.append, recovered.set, retry_s=0.2)
        session_log.write("final", text="before")
        filler = fill(disk)
        while_full = [f"while full {i} " + "x" * 200 for i in range(50)]  # more than the file's last page takes
        for text in while_full:
            session_log.write("final", text=text)
        assert len(errors) == 1 and "No space left on device" in errors[0], errors
        filler.unlink()
        assert recovered.wait(5), "the log never resumed"
        session_log.write("final", text="after")
        session_log.close()
        texts = [r["text"] for r in read_session_log(session_log.path)]
        assert texts == ["before", *while_full, "after"], texts  # in order, none lost
        assert session_log.error == "" and len(errors) == 1


def test_transcript_worker_goes_back_online_when_the_disk_is_freed(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    """A full disk stopped the session log for good and the status stayed ``error``. Now the log
    resumes (with what happened meanwhile) and the status is ``online`` again, each in one line."""
    with small_disk(tmp_path / "disk") as disk:
        eo = RecordingServer().start()
        config = make_config(mosquitto.url, data_dir=str(disk))
        room = Room(config)
        statuses = Collector()
        room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
        room.round("r1", "round")
        worker = transcript_process(config, eo.url, mosquitto.url)
        said: list[str] = []

        def say(text: str) -> None:
            t = now_ms()
            room.say(text, t - 900, t - 100 - len(said), source="typed")
            said.append(text)
            assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) == len(said), 10), f"{text!r} not relayed"

        def state() -> str:
            mine = [s for s in statuses.items if s.pid == worker.pid]
            return mine[-1].state if mine else ""

        try:
            assert wait_for(lambda: state() == "online", 20)
            say("Celia one egg")
            filler = fill(disk)
            for i in range(10):
                say(f"Watson {i + 2} eggs")
                if state() == "error":
                    break
            assert wait_for(lambda: state() == "error", 5)
            filler.unlink()
            freed = time.monotonic()
            assert wait_for(lambda: state() == "online", 10), "the status stayed error"
            back_in = time.monotonic() - freed
            say("Celia the last egg")
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=10)
            assert worker.returncode == 0 and "Traceback" not in err, err
            assert sum("session log" in line and "not written" in line for line in err.splitlines()) == 1, err
            assert sum("is written again" in line for line in err.splitlines()) == 1, err
            (log_file,) = (disk / "sessions").glob("*.jsonl")
            records = list(read_session_log(log_file))
            assert [r["message"]["text"] for r in records if r["kind"] == "message"] == said  # nothing missing
            assert [r["outcome"] for r in records if r["kind"] == "outcome"] == ["delivered"] * len(said)
            assert back_in < 10, back_in
        finally:
            if worker.poll() is None:
                worker.kill()
            room.close()
            eo.stop()
