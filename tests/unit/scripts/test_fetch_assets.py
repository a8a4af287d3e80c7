"""The set-up step's fetchers start side by side; the few that build on another's asset (or
download the same file) wait for it, and the pool starts them in an order where that holds."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from scripts import fetch_assets


def test_every_prerequisite_is_a_fetcher_listed_before_the_one_that_waits_for_it() -> None:
    names = [fetch.__name__ for fetch in fetch_assets.FETCHERS]
    assert len(names) == len(set(names))
    for name, needs in fetch_assets.AFTER.items():
        assert name in names
        assert all(need in names and names.index(need) < names.index(name) for need in needs), (name, needs)


def test_fetchers_run_side_by_side_and_a_dependent_one_after_its_prerequisite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    lock = threading.Lock()
    both_running = threading.Barrier(2, timeout=10)

    def record(name: str, meet: bool = False) -> Path:
        with lock:
            events.append(f"start {name}")
        if meet:
            both_running.wait()  # would time out if the two ran one after the other
        with lock:
            events.append(f"end {name}")
        return tmp_path

    def slow_base() -> Path:
        return record("slow_base", meet=True)

    def independent() -> Path:
        return record("independent", meet=True)

    def built_on_base() -> Path:
        return record("built_on_base")

    monkeypatch.setattr(fetch_assets, "FETCHERS", [slow_base, independent, built_on_base])
    monkeypatch.setattr(fetch_assets, "AFTER", {"built_on_base": ("slow_base",)})
    monkeypatch.setattr(fetch_assets, "ASSETS", tmp_path / "assets")
    monkeypatch.setattr(fetch_assets, "ROOT", tmp_path)

    assert fetch_assets.main() == 0
    assert events.index("end slow_base") < events.index("start built_on_base")
    assert len(events) == 6


def test_a_failed_fetcher_fails_the_step_and_the_others_still_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def broken() -> Path:
        raise RuntimeError("the registry is unreachable")

    def fine() -> Path:
        ran.append("fine")
        return tmp_path

    monkeypatch.setattr(fetch_assets, "FETCHERS", [broken, fine])
    monkeypatch.setattr(fetch_assets, "AFTER", {"fine": ("broken",)})
    monkeypatch.setattr(fetch_assets, "ASSETS", tmp_path / "assets")
    monkeypatch.setattr(fetch_assets, "ROOT", tmp_path)

    assert fetch_assets.main() == 1
    assert ran == ["fine"]
