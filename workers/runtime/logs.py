"""Logging set-up shared by every process of the suite: one readable line per event.

The console is quiet by default: problems (WARNING and up) and :data:`NOTICE` lines, the few
an operator follows (a model being loaded, a broker being waited for). ``--verbose`` shows
INFO too; ``[run] log_file`` keeps everything at ``log_level`` in a rotating file."""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
import threading
import time
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
DATE_FORMAT = "%H:%M:%S"
NOISY_LOGGERS = ("amqtt", "transitions", "paho", "httpx", "httpcore", "uvicorn.access", "websockets")
NOTICE = 25
"""Between INFO and WARNING: progress an operator should see on a quiet console."""
logging.addLevelName(NOTICE, "NOTICE")
QUIET_CONSOLE = NOTICE
"""The console's threshold without ``--verbose`` or ``--log-level``."""
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (?P<level>[A-Z]+) ")
"""A line of :data:`LOG_FORMAT` (what a child of ``run`` writes), and its level."""
LIBRARY_LINE = re.compile(r"^(?:(?P<glog>[IWEF])\d{4} |INFO: |WARNING: All log messages before absl)")
"""What MediaPipe's C++ (absl/glog) and TensorFlow Lite write straight to stderr."""


class PassThroughFormatter(logging.Formatter):
    """Formats records as :data:`LOG_FORMAT`, except lines that arrive already formatted (a
    child's stderr relayed by ``run``), which are written as they are. With ``dated`` (the log
    file) every line starts with the date, a relayed one too."""

    def __init__(self, fmt: str, dated: bool = False) -> None:
        super().__init__(fmt, datefmt=f"%Y-%m-%d {DATE_FORMAT}" if dated else DATE_FORMAT)
        self.dated = dated

    def format(self, record: logging.LogRecord) -> str:
        if not getattr(record, "preformatted", False):
            return super().format(record)
        line = record.getMessage()
        if not self.dated:
            return line
        if LOG_LINE.match(line):
            return f"{self.formatTime(record, '%Y-%m-%d')} {line}"
        return f"{self.formatTime(record, self.datefmt)} {record.levelname:<7} {record.name}: {line}"


FILE_ERROR_INTERVAL_S = 60.0
"""A log file that cannot be written is said once, then at most this often (with the lines lost)."""


class ReportingFileHandler(logging.handlers.RotatingFileHandler):
    """The rotating log file, whose write errors are said in one line on stderr - then at most
    once every :data:`FILE_ERROR_INTERVAL_S`, counting the lines lost - and whose recovery is said
    once. ``logging`` itself prints a "--- Logging error ---" traceback for every record it cannot
    write: a log file on a full disk (``/dev/full``) gave 47 of them in 20 s. The line goes to
    stderr directly, never through logging, which would fail the same way again."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self.lost = 0
        """Lines not written since the last report."""
        self._reported: float | None = None
        self._failed = False

    def emit(self, record: logging.LogRecord) -> None:
        self._failed = False
        super().emit(record)
        if not self._failed and self.lost:
            _say("NOTICE", f"the log file {self.baseFilename} is written again ({self.lost} lines were lost)")
            self.lost, self._reported = 0, None

    def handleError(self, record: logging.LogRecord) -> None:
        """Count the line and say why, rate-limited; never a traceback."""
        self._failed = True
        self.lost += 1
        error = sys.exc_info()[1]
        now = time.monotonic()
        if self._reported is not None and now - self._reported < FILE_ERROR_INTERVAL_S:
            return
        self._reported = now
        reason = getattr(error, "strerror", None) or error or "unknown error"
        _say("ERROR", f"cannot write the log file {self.baseFilename}: {reason}; its lines are lost until it can be "
                      f"({self.lost} so far; said at most once a minute)")


def _say(level: str, message: str) -> None:
    """One line of :data:`LOG_FORMAT` straight to stderr (``run`` relays it like any child line)."""
    try:
        sys.stderr.write(f"{time.strftime(DATE_FORMAT)} {level:<7} humaine-env: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr either: nothing left to tell
        pass


def open_log_file(path: str | Path, max_bytes: int, backups: int) -> ReportingFileHandler | None:
    """The log file's handler, or None after one line on stderr saying why it cannot be opened
    (a read-only folder): the suite runs on without it, as it does when the file fails later."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return ReportingFileHandler(Path(path), max_bytes, backups)
    except OSError as exc:
        _say("ERROR", f"cannot open the log file {path}: {exc.strerror or exc}; running without it")
        return None


def level_number(level: str | int) -> int:
    return level if isinstance(level, int) else logging.getLevelName(level.upper())


def console_level(explicit: str | None, verbose: bool, log_level: str) -> int:
    """The console's threshold: ``--log-level`` when given, ``log_level`` with ``--verbose``,
    else :data:`QUIET_CONSOLE` (or ``log_level`` when that is higher)."""
    if explicit:
        return level_number(explicit)
    if verbose:
        return level_number(log_level)
    return max(QUIET_CONSOLE, level_number(log_level))


def setup_logging(
    level: str | int = "INFO",
    worker: str | None = None,
    log_file: str | Path | None = None,
    file_level: str | int = "INFO",
    max_bytes: int = 5_000_000,
    backups: int = 3,
) -> None:
    """The console at ``level`` on stderr, and with ``log_file`` a rotating file at ``file_level``."""
    fmt = LOG_FORMAT if worker is None else f"%(asctime)s %(levelname)-7s [{worker}] %(name)s: %(message)s"
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(PassThroughFormatter(fmt))
    console.setLevel(level_number(level))
    root.addHandler(console)
    lowest = console.level
    file = open_log_file(log_file, max_bytes, backups) if log_file else None
    if file is not None:
        file.setFormatter(PassThroughFormatter(LOG_FORMAT, dated=True))
        file.setLevel(level_number(file_level))
        root.addHandler(file)
        lowest = min(lowest, file.level)
    root.setLevel(lowest)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


def line_level(line: str, previous: int) -> int:
    """The level of one line a child wrote to stderr: its log level when it is a log line,
    INFO for the C++ libraries' chatter (a glog E/F line is an ERROR), the previous line's for
    the continuation of a multi-line record, else WARNING (a one-line refusal, a traceback)."""
    match = LOG_LINE.match(line)
    if match:
        number = logging.getLevelName(match.group("level"))
        return number if isinstance(number, int) else logging.WARNING
    library = LIBRARY_LINE.match(line)
    if library:
        return logging.ERROR if library.group("glog") in ("E", "F") else logging.INFO
    if line.startswith((" ", "\t")) and previous:
        return previous
    return logging.WARNING


def relay_line(name: str, line: str, level: int) -> None:
    """Hand one already formatted line of a child to this process's handlers, which keep or
    drop it by ``level`` like any record."""
    record = logging.LogRecord(name, level, __file__, 0, line, None, None)
    record.preformatted = True
    logging.getLogger(name).handle(record)


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


class OnceLog:
    """Logs a kind of event once at WARNING and its repeats at DEBUG, so a peer that keeps
    sending the same odd thing (an EO that never sends ``timeStamp``) is named once, not at
    every message. Keys are kept up to :attr:`max_keys`; after that every event is new again."""

    def __init__(self, logger: logging.Logger, max_keys: int = 1024) -> None:
        self.logger = logger
        self.max_keys = max_keys
        self._seen: set[object] = set()

    def warning(self, key: object, msg: str, *args: object) -> bool:
        """Log ``msg % args``: at WARNING the first time ``key`` is seen. True if it was new."""
        new = key not in self._seen
        if new:
            if len(self._seen) >= self.max_keys:
                self._seen.clear()
            self._seen.add(key)
        self.logger.log(logging.WARNING if new else logging.DEBUG, msg, *args)
        return new
