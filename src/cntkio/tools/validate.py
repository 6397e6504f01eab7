"""``cntkio validate configFile=... [--strict] [--json]``: every problem of every command section a
run would meet, reported at once; nothing is run.

What it must never do: run a command, or print a problem twice. The checks are
:func:`cntkio.actions.validate.validate_commands`'s, the same a run makes before its first command.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ._common import emit, fail

__all__ = ["main", "report_dict"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cntkio validate",
        description="Check every command section the configuration would run (every value, required "
                    "keys, input files and model files, writable outputs, reader streams against the "
                    "network's inputs, makeMode against the models already written) and report all "
                    "problems at once; run nothing. Keys nothing reads are warnings (--strict: errors). "
                    "Exit status 0 when the run may start, 1 otherwise. See docs/config.md.")
    p.add_argument("args", nargs="*", metavar="name=value", help="configFile=FILE[+FILE] and overrides")
    p.add_argument("--strict", action="store_true", help="keys nothing reads are errors")
    p.add_argument("--json", action="store_true",
                   help="print {ok, problems: [{file, line, path, message, hint}], unused: [{file, line, path, "
                        "suggestion}]}")
    return p


def report_dict(report, strict: bool = False) -> dict:
    """A :class:`~cntkio.actions.validate.ValidationReport` as plain data (``--json``)."""
    def problem(p):
        return {"file": getattr(p, "file", None), "line": getattr(p, "line", None), "path": getattr(p, "path", None),
                "message": getattr(p, "reason", None) or str(p), "hint": getattr(p, "hint", None)}
    unused = [{"file": u.file, "line": u.line, "path": u.path, "suggestion": u.suggestion} for u in report.unused]
    return {"ok": report.ok and not (strict and report.unused), "problems": [problem(p) for p in report.problems],
            "unused": unused}


def main(argv: Sequence[str]) -> int:
    from ..actions.validate import validate_commands
    from ..config import load_config
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    if not args.args:
        return fail("validate", "give configFile=FILE", 2)
    bad = [a for a in args.args if "=" not in a]
    if bad:
        return fail("validate", f"argument {bad[0]!r} is not name=value (configFile={bad[0]}?)", 2)
    report = validate_commands(load_config(list(args.args)), strict=args.strict, raise_errors=False, warn=False)
    data = report_dict(report, args.strict)
    if args.json:
        emit(data, True, "")
        return 0 if data["ok"] else 1
    for u in report.unused:
        sys.stderr.write(f"cntkio: {'error' if args.strict else 'warning'}: {u}\n")
    for p in report.problems:
        sys.stderr.write(f"cntkio: error: {p}\n")
    bad_count = len(report.problems) + (len(report.unused) if args.strict else 0)
    if bad_count:
        sys.stderr.write(f"cntkio validate: {bad_count} problem{'s' if bad_count != 1 else ''} found\n")
        return 1
    n = len(report.unused)
    sys.stdout.write("cntkio validate: no problems found"
                     + (f" ({n} unused key{'s' if n != 1 else ''})" if n else "") + "\n")
    return 0
