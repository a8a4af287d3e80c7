"""Native libraries' start-up chatter kept off the operator's console.

MediaPipe's C++ graph, TFLite and OpenCV write their own log lines straight to file descriptor
2 (``W0000 00:00:... inference_feedback_manager.cc:114] Feedback manager requires ...``,
``INFO: Created TensorFlow Lite XNNPACK delegate``, ``[ WARN:0@0.5] global loadsave.cpp ...``),
past Python's logging, so no log level hides them. A command whose console is for the operator
runs inside :func:`native_chatter_filtered`: those lines are dropped, every other byte written to
stderr (ours, a library's real error) goes through unchanged and in order.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Final

CHATTER_PREFIXES: Final = (b"W0000 ", b"I0000 ", b"INFO: Created TensorFlow", b"WARNING: All log messages before absl",
                           b"[ WARN:", b"[ INFO:")
"""How the native lines begin (absl/glog's ``W0000``/``I0000``, TFLite's ``INFO:``, OpenCV's
``[ WARN:``); an error (``E0000``, ``F0000``, OpenCV's ``[ERROR:``) is never dropped."""
DRAIN_WAIT_S: Final = 2.0


@contextlib.contextmanager
def native_chatter_filtered() -> Iterator[None]:
    """Run the body with file descriptor 2 behind a filter that drops :data:`CHATTER_PREFIXES`
    lines. Not on a console that is not a real file (pytest's capture): nothing to filter."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def pump() -> None:
        with os.fdopen(read_end, "rb") as pipe, os.fdopen(os.dup(saved), "wb", buffering=0) as out:
            for line in pipe:
                if not line.startswith(CHATTER_PREFIXES):
                    out.write(line)

    thread = threading.Thread(target=pump, name="native-chatter", daemon=True)
    thread.start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer goes: the pump reads to the end and stops
        os.close(saved)
        thread.join(DRAIN_WAIT_S)
