"""The set-up step's bytecode: the suite's folders as pyproject.toml installs them, compiled even
where ``PYTHONDONTWRITEBYTECODE`` is set, and compiled again only when a source changed."""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
from pathlib import Path

import pytest

from scripts.compile_bytecode import PACKAGES_OWN_TESTS, ROOT, compile_folders, stale_test_modules, suite_folders


def test_every_package_of_the_checkout_is_compiled() -> None:
    """Every top-level Python package here (what pyproject.toml installs, and the scripts,
    benchmarks and tests beside it), and nothing that is not one (``.cache``, ``docs``)."""
    packages = {path.parent for path in ROOT.glob("*/__init__.py")}
    assert set(suite_folders()) == packages
    assert {"workers", "humaine_env", "scripts", "tests"} <= {folder.name for folder in packages}


def test_bytecode_is_written_where_the_interpreter_writes_none_and_kept_until_the_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    package = tmp_path / "pkg"
    (package / "inner").mkdir(parents=True)
    source = package / "inner" / "module.py"
    source.write_text("ANSWER = 42\n")
    (package / "py2_test_data.py").write_text("print 'not Python 3'\n")
    compiled = Path(importlib.util.cache_from_source(str(source)))

    compile_folders([package], workers=1)
    assert compiled.is_file()
    written = compiled.stat().st_mtime_ns

    compile_folders([package], workers=1)  # up to date: left alone
    assert compiled.stat().st_mtime_ns == written

    source.write_text("ANSWER = 43\n")  # the same size: the source's time tells the change
    later = source.stat().st_mtime + 2
    os.utime(source, (later, later))
    compile_folders([package], workers=1)
    namespace: dict[str, object] = {}
    exec(marshal.loads(compiled.read_bytes()[16:]), namespace)  # our own bytecode
    assert namespace["ANSWER"] == 43


def test_an_installed_package_is_compiled_but_for_its_own_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing imports ``numpy/_core/tests``: the environment's compile leaves such folders out,
    and only below site-packages (a checkout inside a folder named ``tests`` is compiled whole)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    site = tmp_path / "tests" / "venv" / "site-packages"
    modules = {name: site / "pkg" / name for name in ("module.py", "sub/tests/test_module.py", "test/helpers.py", "testing.py")}
    for source in modules.values():
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("ANSWER = 42\n")

    compile_folders([site], workers=1, skip=PACKAGES_OWN_TESTS)
    compiled = {name for name, source in modules.items() if Path(importlib.util.cache_from_source(str(source))).is_file()}
    assert compiled == {"module.py", "testing.py"}


def test_test_modules_without_pytests_own_bytecode_or_older_than_it_are_rewritten(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "unit" / "__pycache__").mkdir(parents=True)
    module, conftest, helper = tests / "unit" / "test_a.py", tests / "conftest.py", tests / "unit" / "helpers.py"
    for source in (module, conftest, helper):
        source.write_text("ANSWER = 42\n")
    assert stale_test_modules(tests) == [conftest, module]  # helpers are not test modules

    kept = tests / "unit" / "__pycache__" / "test_a.cpython-311-pytest-9.2.0.pyc"
    kept.write_bytes(b"")
    later = module.stat().st_mtime + 2
    os.utime(kept, (later, later))
    assert stale_test_modules(tests) == [conftest]
    os.utime(module, (later + 2, later + 2))  # edited since
    assert stale_test_modules(tests) == [conftest, module]
