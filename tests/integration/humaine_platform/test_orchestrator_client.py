"""The EO client against real HTTP servers on 127.0.0.1: delivery, retries, timeouts, errors."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from humaine_platform import endpoints as ep
from humaine_platform.client import (
    Blocked,
    Delivered,
    EOClient,
    Failed,
    HttpPoster,
    Outcome,
    RetryPolicy,
    Timeouts,
    Undelivered,
    combine,
    fan_out,
)
from humaine_platform.models import HumanUtterance
from humaine_platform.service_map import (
    DEFAULT_EO_URL,
    ServiceMapError,
    agent_urls,
    load_app_settings,
    resolve_eo_url,
)
from standins.recorder import Behavior, RecordingServer, free_port
from workers.runtime.config import OrchestratorSettings

FAST = Timeouts(connect_s=0.5, read_s=1.0, write_s=0.5, pool_s=0.5, total_s=1.2)
"""Short enough for the timeout tests (their EO answers after 1.5 s or more), long enough for a
loopback answer on a loaded machine."""
PERMITTED = {"status": "Acknowledged", "allResponses": [{"status": "Acknowledged"}]}
"""The current EO's answer to a permitted message (a blocked one has no ``allResponses``)."""
QUEUE_R1 = f"{ep.VIEW_QUEUE}/r1"


def eo_like(**behaviors: Behavior) -> RecordingServer:
    """A recording server answering like the current EO running round r1."""
    defaults = {ep.RELAY_MESSAGE: Behavior(answer=PERMITTED), QUEUE_R1: Behavior(answer=[])}
    return RecordingServer(behaviors={**defaults, **behaviors})


def _utterance(text: str = "Celia, I want to buy 2 eggs for $3") -> HumanUtterance:
    return HumanUtterance(
        addressee="Celia", text=text, environmentUUID="abcdefg", timestamp=1795303932403, roundId="r1"
    )


def _client(url: str, **retry: float) -> EOClient:
    return EOClient(url, HttpPoster(timeouts=FAST, retry=RetryPolicy(**retry)))  # type: ignore[arg-type]


async def _relay(url: str, message: HumanUtterance, deadline_s: float = 5.0, **retry: float) -> Outcome:
    client = _client(url, **retry)
    try:
        return await client.relay_message(message, deadline=time.monotonic() + deadline_s)
    finally:
        await client.aclose()


def test_relay_body_is_the_platform_format_after_the_round_check() -> None:
    with eo_like() as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance()))
        assert isinstance(outcome, Delivered) and outcome.attempts == 2  # the round check, then the message
        assert outcome.answer == PERMITTED
        assert [(r.method, r.path) for r in eo.received] == [("GET", QUEUE_R1), ("POST", ep.RELAY_MESSAGE)]
        assert eo.bodies(ep.RELAY_MESSAGE) == [
            {"speaker": "Human", "addressee": "Celia", "text": "Celia, I want to buy 2 eggs for $3",
             "role": "buyer", "environmentUUID": "abcdefg", "timestamp": 1795303932403, "roundId": "r1"}
        ]


def test_eo_down_then_up_is_delivered_once() -> None:
    port = free_port()
    eo = eo_like()
    eo.port = port
    starter = threading.Timer(0.6, eo.start)
    starter.start()
    try:
        outcome = asyncio.run(_relay(eo.url, _utterance(), deadline_s=5.0))
        starter.join()
        assert isinstance(outcome, Delivered), outcome  # the round check waited for the EO to come up
        assert outcome.latency_ms < 5000
        time.sleep(0.3)
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 1
    finally:
        starter.cancel()
        eo.stop()


def test_eo_down_past_deadline_fails_without_reaching() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    outcome = asyncio.run(_relay(url, _utterance(), deadline_s=0.8))
    assert isinstance(outcome, Failed) and not outcome.reached and outcome.expired
    assert "deadline" in outcome.reason and "cannot connect" in outcome.reason
    assert time.monotonic() - started < 3.0


def test_bounded_attempts_when_eo_stays_down() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    outcome = asyncio.run(_relay(url, _utterance(), deadline_s=30.0, max_attempts=3, backoff_s=0.01))
    assert isinstance(outcome, Failed) and outcome.attempts == 3 and not outcome.reached and not outcome.expired


def test_slow_eo_times_out_without_duplicate() -> None:
    with eo_like(**{ep.RELAY_MESSAGE: Behavior(delay_s=1.5)}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance(), deadline_s=5.0))
        assert isinstance(outcome, Failed) and outcome.reached and outcome.attempts == 2 and outcome.uncertain
        assert "no answer" in outcome.reason
        time.sleep(1.7)  # let the slow answer finish: still one request
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 1


def test_eo_500_is_a_failure_not_retried() -> None:
    with eo_like(**{ep.RELAY_MESSAGE: Behavior(status=500, answer={"error": "boom"})}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance()))
        assert isinstance(outcome, Failed) and outcome.reached and outcome.status_code == 500
        assert "HTTP 500" in outcome.reason and "boom" in outcome.reason
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 1


def test_malformed_reply_is_a_failure_not_retried() -> None:
    with eo_like(**{ep.RELAY_MESSAGE: Behavior(raw=b"<html>oops")}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance()))
        assert isinstance(outcome, Failed) and outcome.reached
        assert "not JSON" in outcome.reason and "oops" in outcome.reason
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 1


def test_blocked_answer_carries_rationale() -> None:
    answer = {"status": "Acknowledged", "permitted": False, "rationale": "Human speaking too soon"}
    with eo_like(**{ep.RELAY_MESSAGE: Behavior(answer=answer)}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance()))
        assert isinstance(outcome, Blocked) and outcome.rationale == "Human speaking too soon"


def test_the_current_eos_plain_acknowledgement_is_a_block() -> None:
    """The current EO answers a blocked message with the same status as a permitted one; only
    ``allResponses`` tells them apart. The reason reaches the human-side service instead."""
    with eo_like(**{ep.RELAY_MESSAGE: Behavior(answer={"status": "Acknowledged"})}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance()))
        assert isinstance(outcome, Blocked) and outcome.rationale == ""


@pytest.mark.parametrize(
    ("queue", "reason"),
    [
        (Behavior(status=500, raw=b"<!DOCTYPE html>TypeError"), "unknown to the EO"),
        (Behavior(answer=None, raw=b""), "not started"),
    ],
)
def test_a_round_the_eo_does_not_run_is_never_relayed(queue: Behavior, reason: str) -> None:
    with eo_like(**{QUEUE_R1: queue}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance()))
        assert isinstance(outcome, Undelivered) and reason in outcome.reason, outcome
        assert eo.bodies(ep.RELAY_MESSAGE) == []


def test_the_deadline_bounds_the_whole_request() -> None:
    """An EO that stops answering: the attempt ends at the deadline, not after its own
    timeout, and is recorded as possibly delivered (it was written)."""
    slow = Timeouts(connect_s=0.3, read_s=5.0, write_s=5.0, pool_s=0.3, total_s=6.0)
    with eo_like(**{ep.RELAY_MESSAGE: Behavior(delay_s=3.0)}) as eo:
        async def go() -> Outcome:
            client = EOClient(eo.url, HttpPoster(timeouts=slow))
            try:
                return await client.relay_message(_utterance(), deadline=time.monotonic() + 0.8)
            finally:
                await client.aclose()

        started = time.monotonic()
        outcome = asyncio.run(go())
        assert time.monotonic() - started < 1.5
        assert isinstance(outcome, Failed) and outcome.uncertain and not outcome.expired


def test_a_silent_eo_gets_no_message_only_the_round_check() -> None:
    """When the EO does not answer the round check (paused), the message itself is never
    written: nothing can reach the EO after the deadline."""
    with eo_like(**{QUEUE_R1: Behavior(delay_s=2.0, answer=[])}) as eo:
        outcome = asyncio.run(_relay(eo.url, _utterance(), deadline_s=0.6))
        assert isinstance(outcome, Undelivered) and "did not answer the round check" in outcome.reason
        time.sleep(1.6)
        assert eo.bodies(ep.RELAY_MESSAGE) == []


def test_round_and_queue_calls() -> None:
    with RecordingServer() as eo:
        async def calls() -> list:
            client = _client(eo.url)
            try:
                return [
                    await client.start_round("r1"),
                    await client.view_queue("r1"),
                    await client.view_totals("r 1"),
                ]
            finally:
                await client.aclose()

        outcomes = asyncio.run(calls())
        assert all(isinstance(o, Delivered) for o in outcomes)
        assert eo.bodies(ep.START_ROUND) == [{"roundId": "r1"}]
        assert [(r.method, r.path) for r in eo.received[1:]] == [("GET", QUEUE_R1), ("GET", f"{ep.VIEW_TOTALS}/r 1")]


def test_fan_out_to_agents_reports_each() -> None:
    with RecordingServer() as celia:
        watson_url = f"http://127.0.0.1:{free_port()}"

        async def go() -> dict:
            poster = HttpPoster(timeouts=FAST, retry=RetryPolicy(max_attempts=2, backoff_s=0.01))
            try:
                return await fan_out(poster, {"Celia": celia.url, "Watson": watson_url}, _utterance())
            finally:
                await poster.aclose()

        outcomes = asyncio.run(go())
        assert isinstance(outcomes["Celia"], Delivered) and isinstance(outcomes["Watson"], Failed)
        assert celia.bodies(ep.RECEIVE_MESSAGE) == [_utterance().body()]
        combined = combine(outcomes)
        assert isinstance(combined, Failed) and "Watson" in combined.reason and "delivered to Celia" in combined.reason
        assert isinstance(combine({"Celia": outcomes["Celia"]}), Delivered)


def test_service_map_resolution(tmp_path: Path) -> None:
    settings_file = tmp_path / "appSettings.json"
    settings_file.write_text(json.dumps({"serviceMap": {
        "environment-orchestrator": {"protocol": "http", "host": "localhost", "port": 14010},
        "Celia": {"protocol": "http", "host": "localhost", "port": 14007},
        "agent-watson": {"protocol": "http", "host": "10.0.0.2", "port": 14008},
    }}))
    assert resolve_eo_url(OrchestratorSettings(app_settings=str(settings_file))) == "http://localhost:14010"
    assert resolve_eo_url(OrchestratorSettings(url="http://eo:1/", app_settings=str(settings_file))) == "http://eo:1"
    assert resolve_eo_url(OrchestratorSettings()) == DEFAULT_EO_URL
    loaded = load_app_settings(settings_file)
    assert agent_urls(loaded, ["Celia", "Watson"]) == {"Celia": "http://localhost:14007", "Watson": "http://10.0.0.2:14008"}
    with pytest.raises(ServiceMapError, match="'Bob' is not in the serviceMap"):
        agent_urls(loaded, ["Bob"])
    with pytest.raises(ServiceMapError, match="'eo-x' is not in the serviceMap"):
        resolve_eo_url(OrchestratorSettings(app_settings=str(settings_file), service="eo-x"))
    with pytest.raises(ServiceMapError, match="not found"):
        resolve_eo_url(OrchestratorSettings(app_settings=str(tmp_path / "missing.json")))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"serviceMap": {"environment-orchestrator": {"host": "x"}}}))
    with pytest.raises(ServiceMapError, match="port"):
        load_app_settings(bad)
