"""Running a CNTK configuration: the ``command`` list, each section's ``action``.

``run(argv)`` does what ``cntk configFile=x.cntk [name=value ...]`` does:

1. load the configuration (layered files, includes, overrides, ``$var$``; :mod:`cntkio.config`);
2. read and validate the top-level settings: ``traceLevel`` (info and progress: 0 and 1 show
   warnings, 2 adds info, 3+ debug; warnings about what the user wrote show at every level, each
   once: :mod:`cntkio._log`), ``precision`` (``float``/``double``, checked in every command
   section, where it is usually written), ``deviceId`` (``auto``, ``cpu``, ``-1``, a GPU number,
   ``all``, ``*N``);
3. with ``stderr=<prefix>``, send the log and standard error to ``<prefix>_<cmd1>_<cmd2>.log``
   (directories created, the file overwritten), as CNTK does;
4. run the sections named by ``command=a:b`` in order, each through its ``action``
   (:mod:`cntkio.actions` registry).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from typing import Any, Iterable

from .._log import get_logger, reset_warnings, trace_level_to_logging
from ..errors import ConfigError
from . import get_action
from .settings import DeviceId, _trace_level, check_precision, parse_device_id

__all__ = ["run", "run_config", "parse_device_id", "DeviceId", "stderr_log_path", "check_precision"]

_log = get_logger("actions")


def stderr_log_path(prefix: str, commands: Iterable[str]) -> str:
    """CNTK's log file name: ``<prefix>_<cmd1>_<cmd2>.log``."""
    return prefix + "".join("_" + c for c in commands) + ".log"


@contextlib.contextmanager
def _logging_to(stream, level: int, *, redirect: bool):
    """Log the ``cntkio`` loggers at ``level`` for the run. With ``redirect`` (``stderr=``) the log
    goes to ``stream`` only, as CNTK redirects its output; otherwise to ``stream`` only when the
    application has not configured logging itself (else its handlers get the records)."""
    logger = logging.getLogger("cntkio")
    handler = None
    if redirect or not (logger.handlers or logging.getLogger().handlers):
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    old_level, old_propagate = logger.level, logger.propagate
    logger.setLevel(level)
    if redirect:
        logger.propagate = False
    try:
        yield
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            handler.flush()
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def run_config(cfg: Any, *, strict: bool = False, validate: bool = True,
               results: list[tuple[str, str, Any]] | None = None) -> list[tuple[str, str, Any]]:
    """Run the ``command`` list of a loaded configuration; return ``(section, action, result)``
    for every action run (appended to ``results`` as each ends, when given: what ran before an
    error). Every command section is validated before the first one runs
    (:mod:`cntkio.actions.validate`: all problems reported at once, and the keys no part of cntkio
    reads logged as warnings, or with ``strict`` reported as errors)."""
    from ..config import command_sections
    from .validate import validate_commands

    root = cfg.root if hasattr(cfg, "root") else cfg
    reset_warnings()         # each run shows each warning once
    # traceLevel sets the level of the cntkio loggers: warnings show at every level
    trace = _trace_level(root("traceLevel")) if root.exists("traceLevel") else 1
    device = parse_device_id(root("deviceId")) if root.exists("deviceId") else DeviceId("auto")
    commands = command_sections(root)
    for cmd in commands:
        if cmd.section.exists("precision"):
            check_precision(cmd.section("precision"), path=f"{cmd.name}.precision")
        if cmd.section.exists("deviceId"):
            parse_device_id(cmd.section("deviceId"), path=f"{cmd.name}.deviceId")
        if cmd.section.exists("traceLevel"):
            _trace_level(cmd.section("traceLevel"), path=f"{cmd.name}.traceLevel")
        for action in cmd.actions:
            get_action(action, path=f"{cmd.name}.action")     # unknown actions fail before any work

    log_file = None
    if root.exists("stderr"):
        prefix = str(root("stderr")).strip()
        log_file = stderr_log_path(prefix, [c.name for c in commands])
        directory = os.path.dirname(log_file)
        if directory:
            os.makedirs(directory, exist_ok=True)

    from .. import _progress
    from ._params import get_bool
    if results is None:
        results = []
    with contextlib.ExitStack() as stack:
        # progressBar of the run: the default of every bar, a reader's index build included
        old_progress = _progress.set_default(get_bool(root, "progressBar") if root.exists("progressBar") else None)
        stack.callback(_progress.set_default, old_progress)
        if log_file is not None:
            fh = stack.enter_context(open(log_file, "w", encoding="utf-8"))
            stack.enter_context(contextlib.redirect_stderr(fh))
            stack.enter_context(_logging_to(fh, trace_level_to_logging(trace), redirect=True))
        else:
            stack.enter_context(_logging_to(sys.stderr, trace_level_to_logging(trace), redirect=False))
        if validate:     # every command section checked before the first runs; unused keys warned about
            validate_commands(root, strict=strict)
        _log.info("running %s (deviceId=%s, traceLevel=%d)", ":".join(c.name for c in commands), device, trace)
        for cmd in commands:
            for action in cmd.actions:
                fn = get_action(action, path=f"{cmd.name}.action")
                _log.info("command %s: action %s", cmd.name, action)
                start = time.perf_counter()
                result = fn(cmd.section, cmd.name)
                _log.info("command %s: action %s done in %.3f s", cmd.name, action, time.perf_counter() - start)
                results.append((cmd.name, action, result))
    return results


def run(argv: Iterable[str], base_dir: str | None = None, *, strict: bool = False,
        results: list[tuple[str, str, Any]] | None = None) -> list[tuple[str, str, Any]]:
    """Load the configuration of CNTK-style arguments (``configFile=...``, ``name=value``) and run
    its commands (see the module docstring); ``strict``: unused keys are errors; ``results``: see
    :func:`run_config`. ``currentDirectory=dir`` runs the commands in ``dir`` (CNTK changes into it
    while reading its command line: ``ConfigParameters::ParseCommandLine``, Source/Common/Config.cpp);
    the process's directory is restored afterwards."""
    from ..config import load_config

    argv = list(argv)
    cfg = load_config(argv, base_dir=base_dir)
    directory = _current_directory(argv, base_dir)
    if directory is None:
        return run_config(cfg, strict=strict, results=results)
    if not os.path.isdir(directory):
        raise ConfigError(f"currentDirectory: {directory} is not a directory", path="currentDirectory",
                          file="<command line>")
    before = os.getcwd()
    os.chdir(directory)
    try:
        return run_config(cfg, strict=strict, results=results)
    finally:
        os.chdir(before)


def _current_directory(argv: list[str], base_dir: str | None) -> str | None:
    """The last ``currentDirectory=`` of the command line, made absolute (None when not given)."""
    found = None
    for a in argv:
        name, eq, value = a.strip().partition("=")
        if eq and name.strip().lower() == "currentdirectory":
            value = value.strip().strip('"')
            found = value if os.path.isabs(value) else os.path.join(found or base_dir or os.getcwd(), value)
    return found
