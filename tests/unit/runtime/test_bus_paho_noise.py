"""paho's own ERROR lines for a broker that went away are dropped: the bus says it once, in its
own words, when reconnecting fails; a room stopped with Ctrl-C prints nothing of the kind."""

from __future__ import annotations

import logging

import pytest

import workers.runtime.mqtt.paho_client  # noqa: F401  (installs the filter on paho's logger)


@pytest.mark.parametrize("message, args", [
    ("failed to receive on socket: %s", ("[Errno 104] Connection reset by peer",)),
    ("Client is not connected. Socket: %r). ", (None,)),
])
def test_paho_lines_about_a_lost_broker_are_dropped(caplog: pytest.LogCaptureFixture, message: str, args: tuple[object, ...]) -> None:
    with caplog.at_level(logging.DEBUG, logger="paho"):
        logging.getLogger("paho").error(message, *args)
    assert caplog.records == []


def test_other_paho_errors_still_show(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="paho"):
        logging.getLogger("paho").error("Caught exception in on_message: %s", "boom")
    assert [record.getMessage() for record in caplog.records] == ["Caught exception in on_message: boom"]
