"""Compile the suite's Python (and, after an installation, its environment's) to bytecode.

Every process of the room is a Python program (``run`` starts eight), and so is every command a
test starts. A module without bytecode is compiled from source at each import, and where
``PYTHONDONTWRITEBYTECODE`` is set (CI images, many developers' shells) the result is never
kept: a worker then spends 2 s of CPU starting instead of 0.6. pip compiles what it installs by
default; uv does not; the suite's own folders are never installed. So the set-up step compiles
both here: the environment once after each installation (``--environment``), the suite's folders
every time (only what changed since: a few hundred milliseconds).
"""

from __future__ import annotations

import argparse
import compileall
import re
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--environment", action="store_true", help="also the environment's site-packages")
    args = parser.parse_args(argv)
    started = time.monotonic()
    compile_folders(suite_folders())
    if args.environment:
        compile_folders(environment_folders(), skip=PACKAGES_OWN_TESTS)
    what = "the suite and its environment" if args.environment else "the suite"
    print(f"setup:     bytecode of {what} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
