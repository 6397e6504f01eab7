"""The ``cntkio`` command line: run a CNTK configuration file, as ``cntk configFile=...`` does.

::

    cntkio configFile=x.cntk [configFile=y.cntk | configFile=x.cntk+y.cntk] [--strict] [name=value ...]
    cntkio validate configFile=x.cntk [--strict] [--json] [name=value ...]
    cntkio show-config configFile=x.cntk [name=value ...]
    cntkio show-network configFile=x.cntk [name=value ...]
    cntkio convert ctf2bin|bin2ctf|csv2ctf|svm2ctf|npz2ctf|ctf2npz IN OUT [options]
    cntkio inspect|bench FILE | configFile=x.cntk [name=value ...]
    cntkio plot-log LOG [--output PNG]
    cntkio --help | --version

Arguments are applied in order (later ones win, parameter sets merge); the configuration's
``command=a:b`` names the sections to run and each section's ``action`` what to do. Every tool
has ``--help`` and, where it reports, ``--json`` (docs/tools.md); an error is one line on standard
error (exit status 1, 2 for bad usage), and so is Ctrl-C (exit status 130).
"""
from __future__ import annotations

import sys
from typing import Sequence

__all__ = ["main", "usage", "TOOLS"]

_DOCS = """\
Documentation:
  docs/config.md   the configuration language, readers from config, this command line
  docs/actions.md  the actions (train, eval, write, ...) and their section keys
  docs/guide.md    the Python API (cntk.io names)
  (in the cntkio source tree, beside README.md)
"""


#: the command-line tools: subcommand -> module of cntkio.tools (docs/tools.md has a section each)
TOOLS = {"inspect": "inspect", "convert": "convert", "bench": "bench", "show-config": "show_config",
         "show-network": "show_network", "validate": "validate", "plot-log": "plot_log"}


def usage() -> str:
    """The ``--help`` text: syntax, the known actions, where the docs are."""
    from .actions import ACTION_SUMMARIES, known_actions

    lines = [
        "usage: cntkio configFile=FILE[+FILE...] [configFile=FILE ...] [name=value ...]",
        "       cntkio validate configFile=FILE [--strict] [name=value ...]",
        "       cntkio show-network configFile=FILE [name=value ...]",
        "       cntkio convert ctf2bin|bin2ctf|csv2ctf|svm2ctf|npz2ctf|ctf2npz IN OUT [options]",
        "       cntkio inspect FILE | configFile=FILE [name=value ...]   (streams, sizes, lengths)",
        "       cntkio bench FILE | configFile=FILE [name=value ...]     (reading speed by stage)",
        "       cntkio show-config configFile=FILE [--format cntk|yaml|json]",
        "       cntkio plot-log LOG [--output PNG]                         (a training log's epochs as a PNG)",
        "       (each tool: --help, and --json where it reports; docs/tools.md)",
        "       cntkio --help | --version",
        "",
        "Runs the sections named by the configuration's command=a:b, each through its action=...,",
        "like CNTK's `cntk configFile=...`. Later arguments override earlier ones; sec=[key=value]",
        "changes one key of a section. Top-level settings: command, precision (float|double),",
        "deviceId (auto|cpu|-1|N|all|*N), traceLevel (2 shows info lines; warnings show at every",
        "level), progressBar (true|false; default: on a terminal), tensorBoardLogDir=DIR (TensorBoard",
        "scalars of train), stderr=PREFIX (log to PREFIX_<cmd1>_<cmd2>.log).",
        "",
        "validate checks every command section (keys, files, output paths, reader streams against",
        "the network) and reports all problems at once; a run does so before its first command.",
        "--strict makes config keys that nothing reads errors (else warnings with a suggestion).",
        "show-config prints the resolved configuration (after includes, overrides and $var$).",
        "show-network prints the networks of the commands (nodes, dimensions, parameter counts).",
        "",
        "actions:",
    ]
    names = known_actions()
    width = max(len(n) for n in names)
    for n in names:
        lines.append(f"  {n.ljust(width)}  {ACTION_SUMMARIES.get(n, '')}".rstrip())
    lines.append("")
    lines.append(_DOCS)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cntkio`` console script and ``python -m cntkio``; returns the exit
    status (0 success, 1 a configuration or data error, 2 bad usage)."""
    from .errors import CntkioError

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        from . import __version__
        sys.stdout.write(f"cntkio {__version__}\n")
        return 0
    try:
        tool = {"showConfig": "show-config", "--show-config": "show-config"}.get(args[0], args[0])
        if tool in TOOLS:  # docs/tools.md
            import importlib
            return importlib.import_module(f".tools.{TOOLS[tool]}", __package__).main(args[1:])
        strict = "--strict" in args          # unused config keys are errors (docs/config.md)
        args = [a for a in args if a != "--strict"]
        if args and args[0] == "validate":   # cntkio --strict validate ...
            from .tools.validate import main as validate
            return validate(args[1:] + (["--strict"] if strict else []))
        for a in args:
            if "=" not in a:
                sys.stderr.write(f"cntkio: error: argument {a!r} is not name=value "
                                 f"(a configuration file is given as configFile={a})\n")
                return 2
        from .actions.runner import run
        run(args, strict=strict)
        return 0
    except CntkioError as e:
        sys.stderr.write(f"cntkio: error: {e}\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"cntkio: error: {e}\n")
        return 1
    except KeyboardInterrupt:           # Ctrl-C: one line, not a traceback (128 + SIGINT)
        sys.stderr.write("cntkio: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
