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

PARENT_ENV = "HUMAINE_ENV_PARENT_PID"
PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 1.0

log = logging.getLogger(__name__)


def bind_to_parent() -> None:
    """When started by ``run`` (``PARENT_ENV`` set), get SIGTERM as soon as the parent dies;
    a stopping worker then stops as on Ctrl-C. Exits at once if the parent is already gone."""
    expected = os.environ.pop(PARENT_ENV, "")
    if not expected.isdigit():
        return
    parent = int(expected)
    if not _ask_kernel():
        threading.Thread(target=_poll_parent, args=(parent,), name="parent-watch", daemon=True).start()
    if os.getppid() != parent:  # it died before we asked
        os.kill(os.getpid(), signal.SIGTERM)


def _ask_kernel() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _poll_parent(parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(PARENT_POLL_S)
    log.warning("humaine-env run (pid %s) is gone; stopping", parent)
    os.kill(os.getpid(), signal.SIGTERM)
