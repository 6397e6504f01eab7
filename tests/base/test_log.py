"""cntkio._log: traceLevel governs info, not warnings; each warning once (issue 31, item 1)."""
import logging

from cntkio._log import OnceFilter, TraceLogger, get_logger, reset_warnings, trace_level_to_logging


def test_trace_levels_never_hide_warnings():
    assert [trace_level_to_logging(t) for t in (0, 1, 2, 3)] == [logging.WARNING, logging.WARNING,
                                                                  logging.INFO, logging.DEBUG]


def test_trace_logger_warns_at_level_0_and_informs_from_level_2(caplog):
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        for level in (0, 1, 2):
            t = TraceLogger("test.trace", level)
            t.warning("w%d", level)
            t.info("i%d", level)
    assert [r.getMessage() for r in caplog.records] == ["w0", "w1", "w2", "i2"]


def test_a_warning_shows_once_until_reset(caplog):
    log = get_logger("test.once")
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        for _ in range(3):
            log.warning("the same %s", "text")
            log.info("info repeats")
        log.warning("another text")
        reset_warnings()
        log.warning("the same %s", "text")
    assert [r.getMessage() for r in caplog.records] == [
        "the same text", "info repeats", "info repeats", "info repeats", "another text", "the same text"]


def test_once_filter_memory_is_bounded():
    f = OnceFilter(limit=2)

    def rec(msg):
        return logging.LogRecord("cntkio.x", logging.WARNING, __file__, 1, msg, None, None)
    assert [f.filter(rec(m)) for m in ("a", "b", "c", "a", "c")] == [True, True, True, False, True]
