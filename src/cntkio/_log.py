"""Logging with CNTK's trace levels.

CNTK's ``traceLevel``/``verbosity`` (0 errors, 1 warnings, 2 info and more) map onto the standard
``logging`` levels of the ``cntkio`` logger hierarchy.
"""
from __future__ import annotations

import logging

_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO}


def trace_level_to_logging(trace_level: int) -> int:
    """The ``logging`` level for a CNTK trace level (values above 2 mean DEBUG)."""
    trace_level = int(trace_level)
    if trace_level < 0:
        return logging.CRITICAL
    return _LEVELS.get(trace_level, logging.DEBUG)


def get_logger(name: str) -> logging.Logger:
    """The logger ``cntkio.<name>``."""
    return logging.getLogger("cntkio." + name if not name.startswith("cntkio") else name)


class TraceLogger:
    """A logger filtered by a component's own trace level, as each CNTK component had one.

    Messages above the component's trace level are not emitted even when the logging
    configuration would let them through.
    """

    def __init__(self, name: str, trace_level: int = 1) -> None:
        self.logger = get_logger(name)
        self.trace_level = int(trace_level)

    def enabled(self, level: int) -> bool:
        return self.trace_level >= level

    def error(self, msg: str, *args) -> None:
        self.logger.error(msg, *args)

    def warning(self, msg: str, *args) -> None:
        if self.trace_level >= 1:
            self.logger.warning(msg, *args)

    def info(self, msg: str, *args) -> None:
        if self.trace_level >= 2:
            self.logger.info(msg, *args)
