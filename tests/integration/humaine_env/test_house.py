"""The house's rules that a reader can count (docs/architecture.md#the-rooms): no room so large a
newcomer cannot hold it, types checked end to end, one place that builds HTTP clients. They are
measured on the package code; tests, benchmarks and scripts aside."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PACKAGES: tuple[str, ...] = tuple(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"])
"""The package code: what `[tool.mypy] files` checks, and what every count here measures."""
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60
MAX_TYPE_IGNORES = 10
MAX_HTTPX_CLIENT_MODULES = 1
MYPY = Path(sys.executable).with_name("mypy")


def package_files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def definitions(kinds: tuple[type[ast.AST], ...]) -> Iterator[tuple[int, str]]:
    """Each definition of ``kinds`` with its length in lines and where it is."""
    for path in package_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, kinds):
                assert isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                yield length, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"


def test_no_class_is_longer_than_a_room() -> None:
    too_long = sorted(d for d in definitions((ast.ClassDef,)) if d[0] > MAX_CLASS_LINES)
    assert not too_long, too_long


def test_no_function_is_longer_than_a_screen() -> None:
    too_long = sorted(d for d in definitions((ast.FunctionDef, ast.AsyncFunctionDef)) if d[0] > MAX_FUNCTION_LINES)
    assert not too_long, too_long


def test_type_ignores_are_few_and_each_says_what_it_ignores() -> None:
    ignores = [(path, line) for path in package_files() for line in path.read_text().splitlines() if "# type: ignore" in line]
    assert len(ignores) <= MAX_TYPE_IGNORES, ignores
    bare = [(path, line) for path, line in ignores if not re.search(r"# type: ignore\[[a-z-]+(, *[a-z-]+)*\]", line)]
    assert not bare, bare


def test_httpx_clients_are_built_in_one_module() -> None:
    builders = {path for path in package_files() if re.search(r"httpx\.(Async)?Client\(", path.read_text())}
    assert len(builders) <= MAX_HTTPX_CLIENT_MODULES, builders


def test_the_package_code_type_checks() -> None:
    """mypy, strict as pyproject.toml configures it: the same check as `make lint`, on the same
    cache (mypy checks each cached module against its source, so a warm cache is as strict)."""
    result = subprocess.run([str(MYPY)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
