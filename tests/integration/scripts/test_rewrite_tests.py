"""The set-up step keeps pytest's bytecode of the test modules where ``PYTHONDONTWRITEBYTECODE``
is set, so ``make test``'s workers load the rewritten modules instead of rewriting each."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.compile_bytecode import rewrite_tests, stale_test_modules


def test_collecting_once_keeps_the_rewritten_test_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text("")
    (tests / "test_sums.py").write_text("def test_sum() -> None:\n    assert sum([1, 2]) == 3\n")
    assert rewrite_tests(tmp_path) == 2
    assert stale_test_modules(tests) == []
    assert list((tests / "__pycache__").glob("test_sums.*-pytest-*.pyc"))
    assert rewrite_tests(tmp_path) == 0  # up to date: nothing is run
