"""Logging with CNTK's trace levels: the ``cntkio`` loggers, each warning once.

What it must never do: hide a warning about what the user wrote (a misspelt key, a padded or
dropped sample) because of ``traceLevel``: the level governs info and progress, not warnings.

CNTK's ``traceLevel``/``verbosity`` (0 quiet, 1 more, 2 info and more) map onto the standard
``logging`` levels of the ``cntkio`` logger hierarchy: 0 and 1 show warnings (and errors), 2 adds
info, 3 and above debug. (CNTK's readers printed no warnings at traceLevel 0, e.g. the CTF
parser's ``ShouldWarn`` in ``Source/Readers/CNTKTextFormatReader/TextParser.h:182``;
docs/differences.md.) Every logger made by :func:`get_logger` drops a warning whose text was
already emitted (:class:`OnceFilter`): a chunk read again in every epoch, or a reader section
read by validation and then by the action, warns once. :func:`reset_warnings` starts afresh (each
``cntkio configFile=...`` run does).
"""
from __future__ import annotations

import logging
import threading

__all__ = ["trace_level_to_logging", "get_logger", "TraceLogger", "OnceFilter", "reset_warnings"]

_LEVELS = {0: logging.WARNING, 1: logging.WARNING, 2: logging.INFO}


def trace_level_to_logging(trace_level: int) -> int:
    """The ``logging`` level for a CNTK trace level: WARNING for 0 and 1 (warnings always show),
    INFO for 2, DEBUG above; a negative level (only an application asks for it) shows errors only."""
    trace_level = int(trace_level)
    if trace_level < 0:
        return logging.ERROR
    return _LEVELS.get(trace_level, logging.DEBUG)


class OnceFilter(logging.Filter):
    """Passes a WARNING record only the first time its text is seen (other levels always pass).
    At most ``limit`` texts are remembered; past that, warnings pass again (never unbounded)."""

    def __init__(self, limit: int = 10000) -> None:
        super().__init__()
        self.limit = limit
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) < self.limit:
                self._seen.add(key)
        return True

    def reset(self) -> None:
        with self._lock:
            self._seen.clear()


_ONCE = OnceFilter()


def reset_warnings() -> None:
    """Forget the warnings already emitted: each is shown again once (a new run)."""
    _ONCE.reset()


def get_logger(name: str) -> logging.Logger:
    """The logger ``cntkio.<name>``, with the each-warning-once filter."""
    logger = logging.getLogger("cntkio." + name if not name.startswith("cntkio") else name)
    if _ONCE not in logger.filters:
        logger.addFilter(_ONCE)
    return logger


class TraceLogger:
    """A logger filtered by a component's own trace level, as each CNTK component had one: info
    shows from level 2; warnings and errors show at every level (module docstring)."""

    def __init__(self, name: str, trace_level: int = 1) -> None:
        self.logger = get_logger(name)
        self.trace_level = int(trace_level)

    def enabled(self, level: int) -> bool:
        return self.trace_level >= level

    def error(self, msg: str, *args) -> None:
        self.logger.error(msg, *args)

    def warning(self, msg: str, *args) -> None:
        self.logger.warning(msg, *args)

    def info(self, msg: str, *args) -> None:
        if self.trace_level >= 2:
            self.logger.info(msg, *args)
