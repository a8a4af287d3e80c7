"""Running the microphone worker over its configured file source, as the tests that check what
it logs and reports at the end of a recording do."""

from __future__ import annotations

import logging
import threading

import pytest

from workers.microphone.worker import MicrophoneWorker

RUN_TIMEOUT_S = 60.0
"""A recording of a few seconds is through the worker well within this on a loaded machine."""


def run_to_end(worker: MicrophoneWorker, caplog: pytest.LogCaptureFixture, logger: str) -> None:
    """Start ``worker``, run it until its file source ends with ``logger``'s INFO lines captured,
    and close it; fails if it does not end in :data:`RUN_TIMEOUT_S`."""
    worker.start()
    try:
        assert worker.bus.wait_connected(10)
        with caplog.at_level(logging.INFO, logger=logger):
            thread = threading.Thread(target=worker.run, args=(worker.stop_event,), daemon=True)
            thread.start()
            thread.join(RUN_TIMEOUT_S)
        assert not thread.is_alive()
    finally:
        worker.close()
