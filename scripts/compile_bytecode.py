"""Compile the suite's Python (and, after an installation, its environment's) to bytecode.

Every process of the room is a Python program (``run`` starts eight), and so is every command a
test starts. A module without bytecode is compiled from source at each import, and where
``PYTHONDONTWRITEBYTECODE`` is set (CI images, many developers' shells) the result is never
kept: a worker then spends 2 s of CPU starting instead of 0.6. pip compiles what it installs by
default; uv does not; the suite's own folders are never installed. So the set-up step compiles
both here: the environment once after each installation (``--environment``), the suite's folders
every time (only what changed since: a few hundred milliseconds).

pytest runs test modules from bytecode of its own, with their asserts rewritten, which it keeps
beside the ordinary bytecode only where it may write bytecode; without it each of ``make
test``'s workers rewrites every test module as it collects (4.5 s of the 8 s a collection takes
here). So when a test module changed, the set-up collects the tests once with writing allowed
(:func:`rewrite_tests`), while it fetches its assets.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
OWN_FOLDERS = ("scripts", "bench", "tests")
"""The suite's folders that are not installed packages (the packages: pyproject.toml's list)."""


def suite_folders(root: Path = ROOT) -> list[Path]:
    """The suite's packages as pyproject.toml installs them, and its other Python folders."""
    found = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    names = dict.fromkeys([pattern.rstrip("*") for pattern in found] + list(OWN_FOLDERS))
    return [root / name for name in names if (root / name).is_dir()]


PACKAGES_OWN_TESTS = re.compile(r"[/\\]site-packages[/\\].*[/\\]tests?[/\\]")
"""An installed package's own test suite (``numpy/_core/tests``, ``scipy/linalg/tests``: one file
in eight of the environment's), which nothing here imports: not compiled."""


def environment_folders() -> list[Path]:
    """The running interpreter's site-packages (pure and platform-specific, once each)."""
    paths = sysconfig.get_paths()
    return [Path(p) for p in dict.fromkeys((paths["purelib"], paths["platlib"])) if Path(p).is_dir()]


def compile_folders(folders: list[Path], workers: int = 0, skip: re.Pattern[str] | None = None) -> None:
    """Bytecode for every module under ``folders`` that has none or an outdated one, on
    ``workers`` processes (0: every core), but for the paths ``skip`` finds. Files that are not
    Python 3 (a package's test data) are left as they are: the interpreter never imports them."""
    for folder in folders:
        compileall.compile_dir(folder, quiet=2, workers=workers, rx=skip)


REWRITE_TIMEOUT_S = 300.0
"""A collection that takes longer than this is abandoned (the tests then rewrite as they run)."""


def stale_test_modules(tests: Path) -> list[Path]:
    """The test modules and conftests under ``tests`` without pytest's bytecode of them, or with
    bytecode older than the source."""
    stale = []
    for source in sorted([*tests.rglob("test_*.py"), *tests.rglob("conftest.py")]):
        kept = list((source.parent / "__pycache__").glob(f"{source.stem}.*-pytest-*.pyc"))
        if not kept or max(p.stat().st_mtime for p in kept) < source.stat().st_mtime:
            stale.append(source)
    return stale


def rewrite_tests(root: Path = ROOT) -> int:
    """pytest's bytecode of the test modules, by collecting them once with bytecode writing
    allowed; how many were out of date (0: nothing run). Where pytest is not installed, none."""
    tests = root / "tests"
    stale = stale_test_modules(tests) if tests.is_dir() else []
    if not stale:
        return 0
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    try:
        subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(tests)],
                       cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       timeout=REWRITE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass  # each test run rewrites what was not kept, as without this
    return len(stale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--environment", action="store_true", help="also the environment's site-packages")
    args = parser.parse_args(argv)
    started = time.monotonic()
    compile_folders(suite_folders())
    if args.environment:
        compile_folders(environment_folders(), skip=PACKAGES_OWN_TESTS)
    rewrite_tests()
    what = "the suite and its environment" if args.environment else "the suite"
    print(f"setup:     bytecode of {what} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
