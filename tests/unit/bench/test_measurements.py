"""The measurements page is the benchmarks' own lines, laid out: the committed page is what the
generator makes of the committed store, and a recorded line keeps its command and machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import record, report
from tests.support.paths import ROOT


def test_the_committed_page_is_generated_from_the_committed_store() -> None:
    expected = report.render(report.read_records(ROOT / report.MEASUREMENTS))
    committed = (ROOT / report.REPORT).read_text(encoding="utf-8")
    assert committed == expected, f"{report.REPORT} does not show {report.MEASUREMENTS}: run `{report.REGENERATE}`"


def _record(command: str, at: str, result: dict[str, object]) -> dict[str, object]:
    host = {"cpu": "Test CPU", "logical_cores": 2, "load_average": [0.5, 0.25, 0.1]}
    return record.record(command, at, host, result)


def test_each_command_shows_its_latest_run_flattened_in_command_order() -> None:
    records = [
        _record("python bench/b.py", "2025-01-01T00:00:00Z", {"p95_ms": 9}),
        _record("python bench/a.py", "2025-01-01T00:00:00Z", {"engine": "old", "wer": 0.5}),
        _record("python bench/a.py", "2025-01-02T00:00:00Z", {"engine": "x", "wer": 0.1, "ms": {"p50": 1.0}}),
        _record("python bench/a.py", "2025-01-02T00:00:00Z", {"engine": "y", "wer": 0.25, "ms": {"p50": 2}, "rows": [1, 2]}),
    ]
    page = report.render(records)
    assert page.index("## `python bench/a.py`") < page.index("## `python bench/b.py`")
    assert "| figure | x | y |" in page  # the key that tells one run's lines apart heads them
    assert "| `ms.p50` | 1.0 | 2 |" in page  # numbers exactly as printed
    assert "| `rows` |  | [1, 2] |" in page
    assert "old" not in page and "Earlier runs in the store: 1." in page
    assert "Test CPU, 2 logical cores, load average 0.5 / 0.25 / 0.1" in page
    assert report.render([*records[1:], records[0]]) == page  # the order of commands in the store does not matter


def test_a_cell_cannot_break_its_table() -> None:
    assert report.cell("a|b\nc") == "a\\|b c"
    assert report.cell(["for $3.80", "<unk>"]) == '["for \\$3.80", "&lt;unk>"]'
    assert report.cell(True) == "true" and report.cell(None) == "null"


def test_only_json_objects_are_recorded() -> None:
    assert record.json_object('{"bench": "turn"}\n') == {"bench": "turn"}
    assert record.json_object("loading the model...\n") is None
    assert record.json_object("[1, 2]\n") is None


def test_the_command_is_the_one_to_run_from_the_checkout() -> None:
    assert record.command_line(ROOT / "bench" / "turn.py", ["--repeat", "3"]) == "python bench/turn.py --repeat 3"
    assert record.command_line(ROOT / "bench" / "stt.py", ["--voices", "a b"]) == "python bench/stt.py --voices 'a b'"


def test_a_broken_store_is_refused_with_its_line(tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    store.write_text(json.dumps(_record("python bench/a.py", "t", {})) + "\nnot json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=":2:"):
        report.read_records(store)


def test_the_machine_says_what_a_reader_needs_to_weigh_a_figure() -> None:
    host = record.machine()
    assert host["cpu"] and host["logical_cores"] >= 1 and len(host["load_average"]) == 3
