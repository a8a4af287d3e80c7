"""The folder the room writes in: ``[core] data_dir``, or a folder of its own in the machine's
temporary directory when that cannot be written.

A read-only ``data_dir`` (a read-only disk, a folder of another user, a copied-in image) used to
silence the room: the Avatar Controller could not create its speech folder, exited and was not
restarted, no round started, and every utterance ended "undelivered". Only the microphone's
model cache fell back to a temporary folder. Here the whole data directory falls back, once, for
every command: the room runs and keeps its books until the machine restarts, and one warning
line says where, and what to do (a writable ``data_dir`` keeps them for good). ``run`` resolves it
once and hands the result to its children, so the line is said once.
"""

from __future__ import annotations

import getpass
import logging
import tempfile
from pathlib import Path

from workers.runtime.config import Config

log = logging.getLogger(__name__)

FALLBACK_PREFIX = "humaine-env-data"


def fallback_dir(environment_uuid: str) -> Path:
    """The temporary data directory of one room (one per user, so rooms and users never mix)."""
    return Path(tempfile.gettempdir()) / f"{FALLBACK_PREFIX}-{getpass.getuser()}" / environment_uuid


def unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be written (created if missing, then a file made and removed), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def with_writable_data_dir(config: Config) -> Config:
    """``config`` with a data directory the room can write in (see the module)."""
    wanted = config.core.data_dir
    reason = unwritable(wanted)
    if reason is None:
        return config
    instead = fallback_dir(config.core.environment_uuid)
    if unwritable(instead) is not None:
        return config  # nowhere better: each writer says what it could not write
    log.warning("data_dir %s cannot be written (%s): the room writes in %s instead, which the machine may clear "
                "when it restarts; make data_dir writable, or set another, to keep the day's books", wanted, reason, instead)
    return config.with_overrides({"data_dir": str(instead)})
