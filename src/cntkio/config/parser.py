"""Recursive-descent parser of the CNTK configuration language.

Turns configuration text into a tree of :class:`~cntkio.config.params.ConfigParameters`
(parameter sets) whose leaves are :class:`~cntkio.config.params.ConfigValue` strings. Leaves stay
strings (CNTK's lazy typing): ``256:512*3`` is only split into an array when a consumer asks for
one with ``as_array()``. What is decided here is the structure that the syntax fixes:

* ``name=[...]`` is a parameter set; ``name={...}`` and ``name=(...)`` are parameter sets when
  their body starts with ``name=`` (the reader pages' ``reader = { a = 1 ; b = "x" }``), and
  arrays otherwise (``{|a|b}``, ``([..]:[..])``, ``({...})``);
* ``name="..."`` is a string with the quotes removed (backslashes kept: Windows paths);
* a bare ``name`` in a parameter set is the boolean flag ``name=true``;
* ``include=file`` pastes another file's parameters at that point (once per file);
* ``a.b.c=v`` is the same as ``a=[b=[c=v]]`` (a cntkio extension, handy on the command line);
* a repeated name replaces the earlier value, except that two parameter sets merge.
"""
from __future__ import annotations

import os
import re

from .._log import get_logger
from ..errors import ConfigError
from ._text import CUSTOM_SEPARATORS, Text, find_top, is_group, is_quoted, match, split, strip_span

_log = get_logger("config")

NAME_RE = re.compile(r"[A-Za-z0-9_][\w\-]*(\.[A-Za-z0-9_][\w\-]*)*\Z")
# a bracket body that begins with "name =" holds parameters, not array elements
_DICT_START = re.compile(r"\s*[A-Za-z0-9_][\w.\-]*[ \t]*=")


class ParseContext:
    """State shared by one load: the files already included (each is included once)."""

    def __init__(self) -> None:
        self.included: set[str] = set()


def group_body(src: Text, start: int, end: int, default_sep: str) -> tuple[int, int, str]:
    """Body offsets and separator of the bracket group ``text[start:end]``.

    A character of :data:`CUSTOM_SEPARATORS` right after the opening bracket becomes the
    separator; otherwise ``default_sep``.
    """
    body = start + 1
    sep = default_sep
    if body < end - 1 and src.text[body] in CUSTOM_SEPARATORS:
        sep = src.text[body]
        body += 1
    return body, end - 1, sep


def is_dict_group(src: Text, start: int, end: int) -> bool:
    """True when the bracket group ``text[start:end]`` is a parameter set.

    ``[..]`` always is; ``{..}``/``(..)`` are when their body starts with ``name=``; ``{}`` is an
    empty parameter set and ``()`` an empty array.
    """
    opener = src.text[start]
    if opener == "[":
        return True
    body, body_end, _ = group_body(src, start, end, ";")
    if opener == "{" and not src.text[body:body_end].strip():
        return True
    return _DICT_START.match(src.text, body, body_end) is not None


def make_value(src: Text, start: int, end: int, ctx: ParseContext | None, key: str):
    """The value written at ``text[start:end]``: a ConfigParameters or a ConfigValue."""
    from .params import ConfigParameters, ConfigValue

    start, end = strip_span(src.text, start, end)
    line = src.line_of(start)
    if start < end and is_group(src, start, end) and is_dict_group(src, start, end):
        body, body_end, sep = group_body(src, start, end, ";")
        params = ConfigParameters(key, None, file=src.file, line=line)
        parse_body(src, body, body_end, sep, params, ctx)
        return params
    if is_quoted(src, start, end):
        return ConfigValue(src.text[start + 1:end - 1], file=src.file, line=line, quoted=True)
    return ConfigValue(src.text[start:end], file=src.file, line=line)


def parse_body(src: Text, start: int, end: int, sep: str, target, ctx: ParseContext | None) -> None:
    """Parse the parameters in ``text[start:end]`` (separated by ``sep`` or line breaks) into
    ``target``, a ConfigParameters."""
    text = src.text
    for s, e in split(src, start, end, sep + "\n"):
        s, e = strip_span(text, s, e)
        if s == e:
            continue
        eq = find_top(src, s, e, "=")
        # as in CNTK, the name also ends at an opening bracket or quote: name[a=1] is name=[a=1]
        bracket = next((i for i in range(s, e if eq < 0 else eq) if text[i] in '[{("'), -1)
        if bracket > s:
            name_end, value_start = bracket, bracket
        elif eq >= 0:
            name_end, value_start = eq, eq + 1
        else:
            name_end = value_start = e
        name = text[s:name_end].strip()
        if not NAME_RE.match(name):
            found = text[s:e] if len(text[s:e]) <= 40 else text[s:s + 37] + "..."
            if not name:
                raise src.error(f"expected a parameter name before '=', found {found!r}", s,
                                path=_join(target.path, "?"))
            raise src.error(f"expected 'name=value' or a flag name, found {found!r}", s,
                            path=target.path or None,
                            hint="parameter names are letters, digits, '_', '-' and '.'")
        if value_start == e and eq < 0:
            from .params import ConfigValue
            if name.lower() == "include":
                raise src.error("include needs a file name: include=file", s, path=_join(target.path, name))
            assign(target, name, ConfigValue("true", file=src.file, line=src.line_of(s)))
            continue
        if not text[value_start:e].strip():
            raise src.error(f"expected a value after '{name}='", s, path=_join(target.path, name),
                            hint=f'write {name}="" for an empty string')
        if name.lower() == "include":
            _include(src, value_start, e, target, ctx)
            continue
        value = make_value(src, value_start, e, ctx, name.split(".")[-1])
        assign(target, name, value)


def assign(target, name: str, value) -> None:
    """Set ``name`` in ``target`` to ``value``, merging parameter sets (CNTK's Insert).

    A dotted ``name`` walks (and creates) the parameter sets on the way.
    """
    from .params import ConfigParameters

    parts = name.split(".")
    if any(p.lower() == "include" for p in parts):
        raise ConfigError("'include' is reserved: include=file pastes a configuration file",
                          path=_join(target.path, name), file=getattr(value, "file", None),
                          line=getattr(value, "line", None), hint="use another name")
    for part in parts[:-1]:
        entry = target._entries.get(part.lower())
        if entry is None or not isinstance(entry[1], ConfigParameters):
            child = ConfigParameters(part, None, file=getattr(value, "file", None),
                                     line=getattr(value, "line", None))
            target._set(part, child)
            target = child
        else:
            target = entry[1]
    key = parts[-1]
    entry = target._entries.get(key.lower())
    if entry is not None and isinstance(entry[1], ConfigParameters) and isinstance(value, ConfigParameters):
        existing = entry[1]
        for sub_name, sub_value in list(value._entries.values()):
            assign(existing, sub_name, sub_value)
        return
    target._set(key, value)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _include(src: Text, start: int, end: int, target, ctx: ParseContext | None) -> None:
    start, end = strip_span(src.text, start, end)
    raw = src.text[start + 1:end - 1] if is_quoted(src, start, end) else src.text[start:end]
    if not raw:
        raise src.error("include= needs a file name", start, path=_join(target.path, "include"))
    if "$" in raw:
        raise src.error("$variables$ are not supported in include= (as in CNTK)", start,
                        path=_join(target.path, "include"), hint="write the path of the file")
    base = src.base_dir or (os.path.dirname(os.path.abspath(src.file)) if src.file and not
                            src.file.startswith("<") else os.getcwd())
    for piece in raw.split("+"):
        piece = piece.strip()
        path = piece if os.path.isabs(piece) else os.path.join(base, piece)
        real = os.path.realpath(path)
        if ctx is None:
            ctx = ParseContext()
        if real in ctx.included:
            _log.warning("config: %s was already included; not including it again (include in %s line %d)", piece,
                      src.file, src.line_of(start))
            continue
        if not os.path.isfile(path):
            raise src.error(f"included file {piece!r} not found (looked for {path})", start,
                            path=_join(target.path, "include"))
        ctx.included.add(real)
        _log.info("config: including %s", path)
        load_file_into(path, target, ctx)


def read_text(path: str) -> str:
    """The text of a configuration file (UTF-8, a BOM allowed)."""
    try:
        with open(path, "r", encoding="utf-8-sig") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(f"cannot read configuration file: {e.strerror}", file=path) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"configuration file is not UTF-8 text ({e.reason} at byte {e.start})",
                          file=path) from None


def load_file_into(path: str, target, ctx: ParseContext) -> None:
    """Parse the file at ``path`` into ``target`` (its includes relative to the file)."""
    src = Text(read_text(path), file=path, base_dir=os.path.dirname(os.path.abspath(path)))
    parse_body(src, 0, len(src.text), ";", target, ctx)


def parse_text_into(text: str, target, ctx: ParseContext, *, file: str | None = None,
                    base_dir: str | None = None, first_line: int = 1) -> None:
    """Parse configuration ``text`` into ``target``."""
    src = Text(text, file=file, first_line=first_line, base_dir=base_dir)
    parse_body(src, 0, len(src.text), ";", target, ctx)


__all__ = ["ParseContext", "make_value", "parse_body", "assign", "group_body", "is_dict_group",
           "load_file_into", "parse_text_into", "read_text", "match"]
