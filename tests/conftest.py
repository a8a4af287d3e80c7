"""Shared fixtures: real brokers (mosquitto and the embedded one) and configurations."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.avatar import AvatarRunner
from tests.support.helpers import CHROMIUM, CHROMIUM_ARGS, MosquittoBroker, free_port
from tests.support.paths import ROOT
from tests.support.pulse import PrivatePulse, delay_line_installed, pulseaudio_binary
from workers.runtime.broker import EmbeddedBroker
from workers.runtime.config import Config

ARTIFACTS = ROOT / "test-artifacts"
# Processes the tests start (``python -m humaine_env`` in a temporary folder) run this checkout's
# code, not whatever copy of the suite is installed in the environment.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
_env_counter = itertools.count()


TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test's tier is the folder it lives in: ``tests/<tier>/<package>/test_*.py``."""
    for item in items:
        tier = item.path.relative_to(TESTS).parts[0]
        assert tier in TIERS, f"{item.nodeid}: a test lives in one of tests/{{{','.join(TIERS)}}}/"
        item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def root_logger_restored() -> Iterator[None]:
    """A command's ``main()`` run in-process sets up logging as its own process would: a
    handler on the stderr of the moment, which here is this test's captured stream, closed once
    the test ends. Left on the root logger it makes later tests on this worker print "Logging
    error" walls; so what a test added is removed (pytest's own capture handlers come and go
    with each phase and are left to pytest), and the root's level is put back."""
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in before and not type(handler).__module__.startswith("_pytest."):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.fixture(scope="session")
def mosquitto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MosquittoBroker]:
    """A real mosquitto for the whole test session, on a free port."""
    broker = MosquittoBroker(tmp_path_factory.mktemp("mosquitto")).start()
    yield broker
    broker.stop()


@pytest.fixture
def own_mosquitto(tmp_path: Path) -> Iterator[MosquittoBroker]:
    """A mosquitto of this test alone, for tests that stop, kill and restart the broker."""
    broker = MosquittoBroker(tmp_path / "mosquitto", save_every_change=True).start()
    yield broker
    broker.stop()


def _private_pulse(workdir: Path, room: bool = False) -> Iterator[PrivatePulse]:
    if pulseaudio_binary() is None:
        pytest.skip("pulseaudio is not installed (Debian: pulseaudio)")
    if room and not delay_line_installed():
        pytest.skip("the room's echo path, LADSPA's delay line, is not installed (Debian: ladspa-sdk)")
    server = PrivatePulse(workdir, room=room).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def private_pulse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivatePulse]:
    """A private PulseAudio per test module (its tests may unplug its microphone): the null sink
    ``room_speaker`` and the pipe source ``room_mic`` (tests/support/pulse.py)."""
    yield from _private_pulse(tmp_path_factory.mktemp("pulse"))


@pytest.fixture
def pulse_room(tmp_path: Path) -> Iterator[PrivatePulse]:
    """A private PulseAudio that is a whole room (``PrivatePulse(room=True)``): the loudspeaker
    ``room_speaker`` sounding into the air the microphone ``room_air_mic`` records."""
    yield from _private_pulse(tmp_path / "pulse", room=True)


@pytest.fixture(scope="session")
def embedded_broker() -> Iterator[EmbeddedBroker]:
    """The suite's embedded (amqtt) broker on a free port."""
    broker = EmbeddedBroker(free_port())
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., Config]:
    """``make_config(broker_url, **{"section.key": value})``: a Config for one test, with an
    environment id of its own so tests sharing a broker never see each other's messages."""

    def make(broker_url: str = "mqtt://127.0.0.1:1883", overrides: dict[str, Any] | None = None, **more: Any) -> Config:
        env_id = f"test{os.getpid()}x{next(_env_counter)}"
        values: dict[str, Any] = {
            "environment_uuid": env_id,
            "broker.url": broker_url,
            "broker.mode": "external",
            "broker.reconnect_min_s": 0.2,
            "broker.reconnect_max_s": 1.0,
            "data_dir": str(tmp_path / "data"),
            # the controllers tests start in-process share the process's speech engines (a voice
            # loads once); the supervised speech child is tested on its own
            # (tests/integration/hardware/test_speech_process.py) and in every test that starts a controller as a
            # process (tests/e2e/avatar/test_books_real_eo.py, run)
            "avatar.speech_process": False,
        }
        values.update(overrides or {})
        values.update(more)
        return Config(file_data={}, environ={}, overrides=values)

    return make


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def mesh() -> Iterator[Any]:
    """One single-face FaceMesh, built as the camera worker builds it (about a second to build;
    static-image mode keeps no state between calls, so tests can share it)."""
    from workers.camera.facemesh import FaceMeshDetector

    with FaceMeshDetector(max_faces=1, static_image_mode=True) as detector:
        yield detector


@pytest.fixture(scope="session")
def scanner() -> Iterator[Any]:
    """The camera's scan for every face in view (stateless too), shared by the camera tests."""
    from workers.camera.scanner import FaceScanner

    face_scanner = FaceScanner()
    yield face_scanner
    face_scanner.close()


@pytest.fixture
def start_avatar(mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path) -> Iterator[AvatarRunner]:
    """``start_avatar(**settings)``: Avatar Controllers started in-process on the session's
    mosquitto (each with an observer), all stopped when the test ends."""
    runner = AvatarRunner(mosquitto.url, make_config, tmp_path / "wav")
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium per test process, started when a test first needs it: a Chromium
    and Playwright's driver take 2 s of CPU to start and stop, and thirteen modules use them.
    Tests take it through :func:`browser`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The process's Chromium; every context (and page) a test opened is closed when it ends.
    A page left open goes on drawing: the display's avatars animate at the screen's rate and its
    socket retries the server the test stopped. Left open, they took a Chromium to 45 % of a core
    by the end of a run."""
    yield chromium
    for context in list(chromium.contexts):
        with contextlib.suppress(Exception):  # a context the test closed, or a page that crashed
            context.close()
