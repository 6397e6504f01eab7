"""Loading configurations: text, files, layered files and command-line assignments.

``load_config(argv)`` does what ``cntk configFile=a.cntk+b.cntk x=1 configFile=c.cntk`` does:
the arguments are applied in order, each file's parameters (with its includes) on top of what
came before, each ``name=value`` argument as if it were one more line of configuration. So the
last assignment of a name wins, and parameter sets merge (``mnistTrain=[reader=[file=x]]``
changes only ``file``).
"""
from __future__ import annotations

import contextlib
import os
import shlex
from typing import Iterable, NamedTuple

from .._log import get_logger
from ..errors import ConfigError
from ..values import to_path
from .text import closest
from .params import ConfigParameters
from .parser import ParseContext, load_file_into, parse_text_into

__all__ = ["parse_config", "load_config", "load_config_file", "command_sections", "Command"]

_log = get_logger("config")


def parse_config(text: str, base_dir: str | None = None, *, file: str | None = None) -> ConfigParameters:
    """Parse configuration ``text`` into its root :class:`ConfigParameters`.

    ``include=`` paths are relative to ``base_dir`` (default: the directory of ``file`` when
    given, else the current directory). ``file`` names the text in error messages.
    """
    if base_dir is None:
        base_dir = os.path.dirname(os.path.abspath(file)) if file else os.getcwd()
    root = ConfigParameters("", None, file=file or "<config>", line=1)
    with _depth_guard(file or "<config>"):
        parse_text_into(text, root, ParseContext(), file=file or "<config>", base_dir=base_dir)
    return root


@contextlib.contextmanager
def _depth_guard(where: str):
    try:
        yield
    except RecursionError as e:
        raise ConfigError("brackets nested too deeply", file=where,
                          hint="the parser follows nesting recursively; flatten the configuration") from e


def load_config_file(path: str) -> ConfigParameters:
    """Load one configuration file (with its includes)."""
    return load_config([f"configFile={path}"])


def load_config(argv: Iterable[str] | str, base_dir: str | None = None) -> ConfigParameters:
    """The configuration given by CNTK-style command-line arguments.

    ``argv`` holds ``configFile=a.cntk``, ``configFile=a.cntk+b.cntk`` and ``name=value``
    arguments (a string is split like a shell would). They are applied in order; file paths are
    relative to ``base_dir`` (default: the current directory), includes relative to the file
    that includes them. A file may be given once (as in CNTK: "Cannot specify same config file
    multiple times"); an include of a file already loaded is skipped. ``currentDirectory=dir``
    (CNTK's argument) makes later relative ``configFile`` paths relative to ``dir`` and stays in
    the configuration for the command line to change into.
    """
    if isinstance(argv, str):
        argv = shlex.split(argv)
    base_dir = base_dir or os.getcwd()
    root = ConfigParameters("", None, file=None, line=None)
    ctx = ParseContext()
    with _depth_guard("<command line>"):
        _apply_arguments(root, ctx, argv, base_dir)
    if root.file is None:
        root.file = "<command line>"
    return root


def _apply_arguments(root: ConfigParameters, ctx: ParseContext, argv, base_dir: str) -> None:
    # CNTK joins the arguments that are not configFile= into one text, one argument a line
    # (ConfigParameters::ParseCommandLine, Source/Common/Config.cpp:52): a bracket an argument
    # opens may close in a later one (a run-test's unquoted "x=[a=1 b=2]" reaches CNTK as two
    # arguments). Consecutive plain arguments are parsed together, each on its own line.
    pending: list[str] = []
    first = 0

    def flush() -> None:
        if pending:
            parse_text_into("\n".join(pending), root, ctx, file="<command line>", base_dir=base_dir,
                            first_line=first)
            pending.clear()

    for index, arg in enumerate(argv, start=1):
        arg = arg.strip()
        if not arg:
            if pending:
                pending.append("")      # keeps each argument on the line of its index
            continue
        name, eq, value = arg.partition("=")
        if not (eq and name.strip().lower() in ("currentdirectory", "configfile")):
            if not pending:
                first = index
            pending.append(arg)
            continue
        flush()
        if eq and name.strip().lower() == "currentdirectory":
            directory = value.strip().strip('"')
            base_dir = directory if os.path.isabs(directory) else os.path.join(base_dir, directory)
            parse_text_into(arg, root, ctx, file="<command line>", base_dir=base_dir, first_line=index)
        if eq and name.strip().lower() == "configfile":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            if not value:
                raise ConfigError("configFile= needs a file name", path="configFile",
                                  file="<command line>", line=index)
            for piece in value.split("+"):
                piece = piece.strip()
                path = to_path(piece, "configFile", base_dir, file="<command line>", line=index)
                if not os.path.isfile(path):
                    raise ConfigError(f"configuration file {piece} does not exist" + (
                        "" if os.path.isabs(piece) else
                        f" (relative paths are taken from the working directory, {base_dir})"
                        if os.path.abspath(base_dir) == os.getcwd() else f" (looked for {path})"),
                        path="configFile", file="<command line>", line=index)
                real = os.path.realpath(path)
                if real in ctx.included:
                    raise ConfigError(f"configuration file {piece!r} is given more than once",
                                      path="configFile", file="<command line>", line=index,
                                      hint="CNTK does not allow the same file twice either")
                ctx.included.add(real)
                _log.info("config: loading %s", path)
                if root.file is None:
                    root.file, root.line = path, 1
                load_file_into(path, root, ctx)
    flush()


class Command(NamedTuple):
    """One entry of ``command=``: the section name, the section, its actions."""

    name: str
    section: ConfigParameters
    actions: list[str]


def command_sections(cfg: ConfigParameters) -> list[Command]:
    """The sections named by the root's ``command`` (``command=a:b``), in order, with their
    ``action`` values (an action may itself be an array: ``action=train:test``).

    A command that names no section, or a section without ``action``, is a ConfigError with the
    closest existing section name as a hint.
    """
    root = cfg.root
    if not root.exists("command"):
        raise ConfigError("required parameter 'command' not found at the top level", path="command",
                          file=root.file, hint="name the sections to run, e.g. command=train:test")
    commands = root("command")
    if isinstance(commands, ConfigParameters):
        raise ConfigError("expected a list of section names, found a parameter set", path="command",
                          file=commands.file, line=commands.line)
    out = []
    for item in commands.as_array():
        name = str(item).strip()
        if isinstance(item, ConfigParameters) or not name:
            raise ConfigError("expected a section name", path="command", file=commands.file,
                              line=commands.line)
        if not root.exists_current(name):
            sections = [k for k, v in root.items() if isinstance(v, ConfigParameters)]
            guess = closest(name, sections)
            raise ConfigError(f"command {name!r} names no section of the configuration", path="command",
                              file=commands.file, line=commands.line,
                              hint=f"did you mean {guess!r}?" if guess else
                              f"define {name}=[action=...] at the top level")
        section = root(name)
        if not isinstance(section, ConfigParameters):
            raise ConfigError(f"command {name!r}: expected a section [action=...], found the value {str(section)!r}",
                              path=name, file=section.file, line=section.line)
        if not section.exists("action"):
            raise ConfigError(f"command section {name!r} has no 'action'", path=f"{name}.action",
                              file=section.file, line=section.line,
                              hint="add action=train (or eval, test, write, ...)")
        action = section("action")
        if isinstance(action, ConfigParameters):
            raise ConfigError("expected an action name, found a parameter set", path=f"{name}.action",
                              file=action.file, line=action.line)
        actions = [str(a).strip() for a in action.as_array()]
        out.append(Command(name, section, actions))
    return out
