"""Logging set-up shared by every process of the suite: one readable line per event."""

from __future__ import annotations

import logging
import sys
import threading
import time

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
NOISY_LOGGERS = ("amqtt", "transitions", "paho", "httpx", "httpcore", "uvicorn.access", "websockets")


def setup_logging(level: str = "INFO", worker: str | None = None) -> None:
    fmt = LOG_FORMAT if worker is None else f"%(asctime)s %(levelname)-7s [{worker}] %(name)s: %(message)s"
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt, datefmt="%H:%M:%S"))
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


DEFAULT_LOG_INTERVAL_S = 60.0
"""Repeats of one kind of problem are summarised at most this often."""


class RateLimitedLog:
    """One line per kind of problem, then at most one summary line per interval.

    Input from outside (a flood of hostile payloads, a peer stuck in a loop) must not turn into
    a flood of log lines: the first occurrence of each key is logged, later ones are counted and
    the count rides on the next line logged for that key."""

    def __init__(self, logger: logging.Logger, interval_s: float = DEFAULT_LOG_INTERVAL_S) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._last: dict[object, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def log(self, level: int, key: object, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``key`` was logged within the interval; True if logged."""
        now = time.monotonic()
        with self._lock:
            last, suppressed = self._last.get(key, (None, 0))
            if last is not None and now - last < self.interval_s:
                self._last[key] = (last, suppressed + 1)
                return False
            self._last[key] = (now, 0)
        if suppressed:
            message += " (%d more since the last report)"
            args = (*args, suppressed)
        self.logger.log(level, message, *args)
        return True

    def warning(self, key: object, message: str, *args: object) -> bool:
        return self.log(logging.WARNING, key, message, *args)

    def error(self, key: object, message: str, *args: object) -> bool:
        return self.log(logging.ERROR, key, message, *args)
