"""The platform's real Node.js services, cached under ``.cache/platform`` with their ``node_modules``:
the Environment Orchestrator and the utility generator, at the commits this suite is tested against.

Standard library only, so the set-up step can fetch them (``npm ci``: the longest part of a fresh
set-up) while it installs the Python environment; ``scripts/fetch_assets.py`` registers the same
functions as its fetchers, for the tests and for a machine set up another way.

    python3 scripts/platform_services.py    # both, side by side; one line each
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

log = logging.getLogger("fetch_assets")


PLATFORM = ROOT / ".cache" / "platform"
"""Where the platform's real Node.js services are cached, one folder each."""
PLATFORM_SOURCE = ROOT.parent / "shared" / "platform"
"""Local copies of the platform's trees at their commits, when the machine has them."""
LOOPBACK_PRELOAD = ROOT / "scripts" / "loopback-preload.js"


def platform_service(name: str, repository: str, commit: str, entry: str, tree: Path, source: Path) -> Path:
    """One of the platform's Node.js services (github.com/humaine-anac/<name>) at ``commit``, with
    its ``node_modules``, in ``tree``: copied from ``source`` (a local copy of the tree, when it
    holds ``entry``) or cloned, then ``npm ci`` once. A marker file holding the commit says the
    tree is whole, so an interrupted install is redone rather than trusted. Two fetches of the
    same service (the set-up step's own, started early, and ``fetch_assets``') take turns on a
    lock file: the second finds the tree installed."""
    import fcntl

    tree.parent.mkdir(parents=True, exist_ok=True)
    with open(tree.with_name(tree.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install_service(name, repository, commit, entry, tree, source)


def _install_service(name: str, repository: str, commit: str, entry: str, tree: Path, source: Path) -> Path:
    ready = tree / ".installed"
    if ready.is_file() and ready.read_text().strip() == commit:
        return tree
    import shutil
    import subprocess

    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError(f"Node.js and npm are needed for the real {name} (Debian: apt-get install -y nodejs npm)")
    staging = tree.with_name(tree.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    if (source / entry).is_file():
        shutil.copytree(source, staging, ignore=shutil.ignore_patterns("node_modules", ".git"))
    else:
        subprocess.run(["git", "clone", "--quiet", repository, str(staging)], check=True)
        subprocess.run(["git", "-C", str(staging), "checkout", "--quiet", commit], check=True)
    # Only what the service runs on: the utility generator's development tools include husky 4,
    # whose install step writes git hooks into the enclosing repository (this one).
    quiet = ["--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"]
    env = {**os.environ, "HUSKY_SKIP_INSTALL": "1", "HUSKY": "0"}
    try:
        subprocess.run([npm, "ci", *quiet], cwd=staging, check=True, stdout=subprocess.DEVNULL, env=env)
    except subprocess.CalledProcessError:
        # an old lock file (lockfileVersion 1, the EO's) is read by npm install when ci will not take it
        subprocess.run([npm, "install", *quiet], cwd=staging, check=True, stdout=subprocess.DEVNULL, env=env)
    shutil.rmtree(tree, ignore_errors=True)
    staging.replace(tree)
    ready.write_text(commit + "\n")
    log.info("the platform's %s (%s) in %s", name, commit[:10], tree)
    return tree


EO_COMMIT = "20a32e2abb4f7a7524def3be246e0b8af2d0aeca"
"""The platform EO's commit this suite is tested against (``../shared/platform/README.md``)."""
EO_REPOSITORY = "https://github.com/humaine-anac/environment-orchestrator"
EO_SOURCE = PLATFORM_SOURCE / "environment-orchestrator"
"""A local copy of the EO's tree at :data:`EO_COMMIT`, when the machine has one."""
EO_TREE = PLATFORM / "environment-orchestrator"
EO_READY = EO_TREE / ".installed"


def environment_orchestrator() -> Path:
    """The real HUMAINE Environment Orchestrator (Node.js) with its ``node_modules``, for the
    tests that run it and for a venue's dry run: copied from :data:`EO_SOURCE` (or cloned at
    :data:`EO_COMMIT` where there is none), then ``npm ci`` once (about 40 s, 76 MB)."""
    return platform_service("environment-orchestrator", EO_REPOSITORY, EO_COMMIT, "environment-orchestrator.js", EO_TREE, EO_SOURCE)


UTILITY_GENERATOR_COMMIT = "408d2aa3986f07f44c6bbd473fe8c0513653e449"
"""The platform utility generator's commit this suite is tested against (``../shared/platform/README.md``)."""
UTILITY_GENERATOR_REPOSITORY = "https://github.com/humaine-anac/utility-generator"
UTILITY_GENERATOR_SOURCE = PLATFORM_SOURCE / "utility-generator"
"""A local copy of the utility generator's tree at :data:`UTILITY_GENERATOR_COMMIT`, when the machine has one."""
UTILITY_GENERATOR_TREE = PLATFORM / "utility-generator"


def utility_generator() -> Path:
    """The real HUMAINE utility generator (Node.js) with its ``node_modules``: the buyer's
    utility, allocation check and rating that ``humaine_platform.buyer_utility`` ports are
    tested against it (``tests/e2e/humaine_platform/test_buyer_utility.py``). Fetched as the EO is."""
    return platform_service("utility-generator", UTILITY_GENERATOR_REPOSITORY, UTILITY_GENERATOR_COMMIT, "utility-generator.js",
                            UTILITY_GENERATOR_TREE, UTILITY_GENERATOR_SOURCE)


SERVICES: tuple[Callable[[], Path], ...] = (environment_orchestrator, utility_generator)


def _fetch(fetch: Callable[[], Path]) -> bool:
    started = time.monotonic()
    try:
        where = fetch()
    except Exception as exc:  # one line, and the set-up step's own fetcher tries again
        log.error("could not fetch %s: %s", fetch.__name__, exc)
        return False
    log.info("    %s: %s (%.0f s)", fetch.__name__, where.relative_to(ROOT), time.monotonic() - started)
    return True


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="setup: %(message)s")
    with ThreadPoolExecutor(max_workers=len(SERVICES), thread_name_prefix="platform") as pool:
        return 0 if all(pool.map(_fetch, SERVICES)) else 1


if __name__ == "__main__":
    sys.exit(main())
