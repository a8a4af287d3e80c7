"""The order in which ``run`` stops its children (the stop itself, with real processes and
Ctrl-C: tests/e2e/humaine_env/test_suite_cli.py)."""

from __future__ import annotations

from humaine_env.supervisor import STOP_ORDER, SUITE_ORDER, stop_stages


def test_every_worker_run_starts_has_its_stage() -> None:
    assert sorted(name for stage in STOP_ORDER for name in stage) == sorted(SUITE_ORDER)


def test_each_service_stops_after_those_that_call_it() -> None:
    stages = stop_stages(list(SUITE_ORDER))
    order = {name: i for i, stage in enumerate(stages) for name in stage}
    for caller, service in [("microphone", "transcript"), ("transcript", "orchestrator"), ("orchestrator", "demo-agents"),
                            ("orchestrator", "avatar"), ("avatar", "record-rounds")]:
        assert order[caller] < order[service], stages


def test_a_worker_the_order_does_not_name_stops_first_and_absent_ones_leave_no_empty_stage() -> None:
    assert stop_stages(["avatar", "console-clock", "camera"]) == [["console-clock"], ["camera"], ["avatar"]]
    assert stop_stages([]) == []
