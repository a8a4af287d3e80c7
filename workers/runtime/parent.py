"""A child of ``humaine-env run`` ends when ``run`` ends, however ``run`` ends.

``run`` stops its children on Ctrl-C and SIGTERM, but a ``kill -9`` (or an OOM kill) of ``run``
gives it no chance: its children would live on, holding their ports and MQTT client ids, and
the next ``run`` would fight them. So ``run`` names itself in :data:`PARENT_ENV` and the child
asks the kernel (Linux ``prctl(PR_SET_PDEATHSIG)``) for a SIGTERM when its parent dies; where
that call does not exist, a thread polls the parent instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

PARENT_ENV = "HUMAINE_ENV_PARENT_PID"
PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 1.0

log = logging.getLogger(__name__)
_started_by_run = False


def started_by_run() -> bool:
    """Whether ``run`` started this process (it prints the suite's addresses itself: a child
    saying them again only doubles the lines on the one console)."""
    return _started_by_run


def bind_to_parent() -> None:
    """When started by ``run`` (``PARENT_ENV`` set), get SIGTERM as soon as the parent dies;
    a stopping worker then stops as on Ctrl-C. Exits at once if the parent is already gone."""
    global _started_by_run
    expected = os.environ.pop(PARENT_ENV, "")
    if not expected.isdigit():
        return
    _started_by_run = True
    parent = int(expected)
    if not _ask_kernel():
        threading.Thread(target=_poll_parent, args=(parent,), name="parent-watch", daemon=True).start()
    if os.getppid() != parent:  # it died before we asked
        os.kill(os.getpid(), signal.SIGTERM)


def die_with_parent_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` for a child that is not ours to edit (mosquitto): it gets SIGTERM when
    this process dies. libc is loaded here, in the parent: the function runs between fork and
    exec, where loading a library could deadlock. ``None`` where prctl does not exist."""
    libc = _libc()
    if libc is None:
        return None
    prctl = libc.prctl

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return preexec


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl  # noqa: B018 (raises AttributeError where there is no prctl)
        return libc
    except (OSError, AttributeError):
        return None


def _ask_kernel() -> bool:
    libc = _libc()
    return libc is not None and int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)) == 0


def _poll_parent(parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(PARENT_POLL_S)
    log.warning("humaine-env run (pid %s) is gone; stopping", parent)
    os.kill(os.getpid(), signal.SIGTERM)
