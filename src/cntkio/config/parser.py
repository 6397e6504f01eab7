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

The parser sits below :mod:`cntkio.config.params`, whose lazy conversions (``as_array()``,
``as_params()``, ``insert()``) call it. It makes the tree through the parameter set it fills
(``target``), so it needs none of the tree's classes:

* ``target._new_set(name, file=, line=)``: an empty, detached set of the same kind;
* ``target._new_value(text, file=, line=, quoted=)``: a value;
* ``target._assign(name, value)``: set ``name`` (dotted names walk down), merging two sets, as
  CNTK's Insert; and ``target.path`` for error messages;
* ``target._put(name, text, file, line, quoted)``: ``_assign(name, _new_value(...))`` for one
  plain name, in one call (the common item's fast path); ``target._put_items(items, file, line)``
  the same for ``(name, quoted text, word)`` triples, all on one line (a one-line set's body).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
import threading

from .._log import get_logger
from ..errors import ConfigError
from ..values import to_path
from .text import (CLOSE, CUSTOM_SEPARATORS, OPEN, OPEN_OR_QUOTE, Text, _scanner, find_top, group_body,
                    is_dict_group, is_group, is_quoted, join_path, match, split, strip_span)
from .lexer import CONFIG_DOTTED_NAME, CONFIG_NAME

_log = get_logger("config")

NAME_RE = re.compile(CONFIG_NAME + r"(\." + CONFIG_NAME + r")*\Z")
# "name = " and an opening bracket: a parameter set or an array (parse_body)
_GROUP_ITEM = re.compile(r"[ \t\n\r\f\v]*(" + CONFIG_DOTTED_NAME + r")[ \t]*=[ \t]*(?=[\[{(])")
# "name = [": a parameter set (parse_body's fast path for sets)
_SET_ITEM = re.compile(r"[ \t\n\r\f\v]*(" + CONFIG_NAME + r")[ \t]*=[ \t]*\[")
# "name =" at the start of a parameter (white space before it): the parse's fast path
_NAME_EQ = re.compile(r"[ \t\n\r\f\v]*(" + CONFIG_DOTTED_NAME + r")[ \t\n\r\f\v]*=")


#: parameter sets nested deeper than this are an error (the parser follows nesting recursively)
MAX_NESTING = 200
#: the levels an include counts for (its file's parse goes three calls deeper)
_INCLUDE_LEVELS = 2
_nesting = threading.local()


@contextlib.contextmanager
def parsing():
    """Around a parse: the garbage collector paused (a large configuration makes many objects and
    no cycles; its passes would make the parse slower than linear), restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ParseContext:
    """State shared by one load: the files already included (each is included once)."""

    def __init__(self) -> None:
        self.included: set[str] = set()


def make_value(src: Text, start: int, end: int, ctx: ParseContext | None, key: str, maker):
    """The value written at ``text[start:end]``: a parameter set or a value, made by ``maker``
    (a parameter set: its ``_new_set``/``_new_value``)."""
    start, end = strip_span(src.text, start, end)
    line = src.line_of(start)
    first = src.text[start] if start < end else ""
    if first in OPEN and is_brainscript_key(key) and is_group(src, start, end):
        return _brainscript_value(src, start, end, ctx, key, maker)
    if first in OPEN and is_group(src, start, end) and is_dict_group(src, start, end):
        body, body_end, sep = group_body(src, start, end, ";")
        params = maker._new_set(key, file=src.file, line=line)
        depth = getattr(_nesting, "depth", 0)
        if depth >= MAX_NESTING:
            raise src.error(f"parameter sets nested too deeply (more than {MAX_NESTING} levels, at {key!r})", start,
                            hint="flatten the configuration")
        _nesting.depth = depth + 1
        try:
            parse_body(src, body, body_end, sep, params, ctx)
        finally:
            _nesting.depth = depth
        return params
    if first == '"' and is_quoted(src, start, end):
        return maker._new_value(src.text[start + 1:end - 1], file=src.file, line=line, quoted=True)
    return maker._new_value(src.text[start:end], file=src.file, line=line, quoted=False)


@functools.lru_cache(maxsize=32)
def _after(sep: str) -> re.Pattern:
    """Blank space, then a separator, a line break or the end (matched after an item)."""
    return re.compile(r"[ \t\r\f\v]*(?:[\n" + re.escape(sep) + r"]|\Z)")


def _body_item(group: str, end: str) -> str:
    """One plain item of a one-line set's body (its separator ';'): ``name = word`` or
    ``name = "text"`` (a plain name, not include), then ';' or ``end``; ``group`` opens the groups
    of the name, the quoted text and the word (``(`` to capture them, ``(?:`` not)."""
    return (r'[ \t\r\f\v]*(?!(?i:include)[ \t]*=)' + group + CONFIG_NAME + r')[ \t]*=[ \t]*'
            r'(?:"' + group + r'[^"\n]*)"|' + group + r'[^\s"=\[\]{}();]+))[ \t\r\f\v]*(?:;|' + end + ")")


# the items of a one-line set's body (_plain_item's group 4): group 1 the name, 2 a quoted value's
# text, 3 a plain value (as _plain_item's groups)
_BODY_ITEMS = re.compile(_body_item("(", r"\Z"))


@functools.lru_cache(maxsize=32)
def _plain_item(sep: str) -> re.Pattern:
    """``name = value`` where the value is one plain word or one quoted string on its line, or
    ``name = [ ... ]`` written on one line whose body is only such items (a plain name each,
    separated by ``;``; no separator of its own right after the ``[``), then the end of the piece
    (a separator, a line break or the end): the common parameters, taken in one match. Group 1 the
    name, 2 a quoted value's text, 3 a plain value, 4 the set's body (its items are
    ``_BODY_ITEMS.findall`` of it); a match also takes the separators and blank space after it."""
    stop = re.escape(sep)
    body_item = _body_item("(?:", r"(?=\])")
    return re.compile(r'[ \t\n\r\f\v]*(' + CONFIG_DOTTED_NAME + r')[ \t]*=[ \t]*'
                      r'(?:"([^"\n]*)"|([^\s"=\[\]{}()' + stop + r']+)|\[(?![' + re.escape(CUSTOM_SEPARATORS) + r'])'
                      r'((?:' + body_item + r')*[ \t\r\f\v]*)\])[ \t\r\f\v]*(?:[\n' + stop + r']|\Z)')


def parse_body(src: Text, start: int, end: int, sep: str, target, ctx: ParseContext | None) -> None:
    """Parse the parameters in ``text[start:end]`` (separated by ``sep`` or line breaks) into
    ``target``, a parameter set.

    Plain ``name = word`` and ``name = "string"`` items are taken one regular-expression match each
    (most of a configuration), and so is a set written on one line holding only such items
    (``name = [ a = 1 ; b = "x" ]``, its items then found by one more match); a set in
    brackets that only blank space follows is parsed straight from its brackets; any other item
    (an array, an include, a flag, a dotted name...) is cut at the next separator outside brackets
    and goes through the general path (:func:`_parse_pieces`)."""
    text = src.text
    file = src.file
    plain = _plain_item(sep).match
    findall = _BODY_ITEMS.findall
    put = target._put
    new_set = target._new_set
    count = text.count
    depth = getattr(_nesting, "depth", 0)
    lpos, line = start, src.line_of(start)  # the line of offset lpos, counted along
    pos = start
    while pos < end:
        m = plain(text, pos, end)
        if m is not None:
            name, quoted, word, body = m.groups()
            if "." in name or (len(name) == 7 and name.lower() == "include"):  # a dotted name, include=
                stop = _piece_end(src, pos, end, sep + "\n")
                _parse_pieces(src, pos, stop, sep, target, ctx)
                pos = stop + 1
                continue
            if body is None:
                if quoted is not None:
                    at = m.start(2) - 1
                    line += count("\n", lpos, at)
                    put(name, quoted, file, line, True)
                else:
                    at = m.start(3)
                    line += count("\n", lpos, at)
                    put(name, word, file, line, False)
                lpos = at
                pos = m.end()
                continue
            # name = [ ... ] on one line, only plain items inside: the items found by one more
            # match, the line of the '[' for them all
            bs, be = m.span(4)
            line += count("\n", lpos, bs)
            lpos = bs
            if depth >= MAX_NESTING:
                raise src.error(f"parameter sets nested too deeply (more than {MAX_NESTING} levels, at "
                                f"{name!r})", bs - 1, hint="flatten the configuration")
            params = new_set(name, file=file, line=line)
            params._put_items(findall(text, bs, be), file, line)
            target._assign(name, params)
            pos = m.end()
            continue
        g = _SET_ITEM.match(text, pos, end)
        if g is not None and "." not in g.group(1) and g.group(1).lower() != "include" \
                and not is_brainscript_key(g.group(1)):
            # name = [ ... ]: the set parsed straight from its brackets when only blank space
            # and a separator follow them
            b = g.end() - 1
            close = match(src, b, end)
            after = _after(sep).match(text, close + 1, end)
            if after is not None and is_dict_group(src, b, close + 1):
                name = g.group(1)
                body, body_end, body_sep = group_body(src, b, close + 1, ";")
                params = new_set(name, file=file, line=src.line_of(b))
                if depth >= MAX_NESTING:
                    raise src.error(f"parameter sets nested too deeply (more than {MAX_NESTING} levels, at "
                                    f"{name!r})", b, hint="flatten the configuration")
                _nesting.depth = depth + 1
                try:
                    parse_body(src, body, body_end, body_sep, params, ctx)
                finally:
                    _nesting.depth = depth
                target._assign(name, params)
                pos = after.end()
                continue
        # another item: up to the next separator outside brackets
        stop = _piece_end(src, pos, end, sep + "\n")
        g = _GROUP_ITEM.match(text, pos, stop)
        if g is not None and g.group(1).lower() != "include":   # name = [...] / {...} / (...)
            name = g.group(1)
            target._assign(name, make_value(src, g.end(), stop, ctx, name.rpartition(".")[2], target))
        else:
            _parse_pieces(src, pos, stop, sep, target, ctx)
        pos = stop + 1


def _piece_end(src: Text, start: int, end: int, seps: str) -> int:
    """The offset of the first of ``seps`` in ``text[start:end]`` outside brackets and quotes, or
    ``end`` (where :func:`split` ends its first piece)."""
    text = src.text
    search = _scanner(seps).search
    i = start
    while True:
        m = search(text, i, end)
        if m is None:
            return end
        i = m.start()
        c = text[i]
        if c in seps:
            return i
        if c in CLOSE:
            raise src.error(f"unexpected '{c}' (no matching opening bracket)", i)
        i = match(src, i, end) + 1


def _parse_pieces(src: Text, start: int, end: int, sep: str, target, ctx: ParseContext | None) -> None:
    """The general path of :func:`parse_body`: the body split at its separators outside brackets
    and quotes, each piece parsed on its own."""
    text = src.text
    for s, e in split(src, start, end, sep + "\n"):
        m = _NAME_EQ.match(text, s, e)
        if m is not None:  # the common form, name = value: the first '=' outside brackets
            name = m.group(1)
            if not text[m.end():e].strip():
                raise src.error(f"expected a value after '{name}='", m.start(1), path=join_path(target.path, name),
                                hint=f'write {name}="" for an empty string')
            if name.lower() == "include":
                _include(src, m.end(), e, target, ctx)
                continue
            target._assign(name, make_value(src, m.end(), e, ctx, name.rpartition(".")[2], target))
            continue
        s, e = strip_span(text, s, e)
        if s == e:
            continue
        if text[s] == "[" and not target.path and match(src, s, e) == e - 1:
            # a record that is one bracket group, at the top level: its parameters are the top
            # level's (CNTK's Parse flattens it: "[command=a:b]" on the command line)
            body, body_end, body_sep = group_body(src, s, e, ";")
            parse_body(src, body, body_end, body_sep, target, ctx)
            continue
        eq = find_top(src, s, e, "=")
        # as in CNTK, the name also ends at an opening bracket or quote: name[a=1] is name=[a=1]
        m = OPEN_OR_QUOTE.search(text, s, e if eq < 0 else eq)
        bracket = m.start() if m is not None else -1
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
                                path=join_path(target.path, "?"))
            raise src.error(f"expected 'name=value' or a flag name, found {found!r}", s,
                            path=target.path or None,
                            hint="parameter names are letters, digits, '_', '-' and '.'")
        if value_start == e and eq < 0:
            if name.lower() == "include":
                raise src.error("include needs a file name: include=file", s, path=join_path(target.path, name))
            target._assign(name, target._new_value("true", file=src.file, line=src.line_of(s), quoted=False))
            continue
        if not text[value_start:e].strip():
            raise src.error(f"expected a value after '{name}='", s, path=join_path(target.path, name),
                            hint=f'write {name}="" for an empty string')
        if name.lower() == "include":
            _include(src, value_start, e, target, ctx)
            continue
        value = make_value(src, value_start, e, ctx, name.split(".")[-1], target)
        target._assign(name, value)


#: keys whose bracketed value is BrainScript text: ``BrainScriptNetworkBuilder``,
#: ``ExperimentalNetworkBuilder`` and names that extend them (``BrainScriptNetworkBuilder_plain``)
_BRAINSCRIPT_KEY = re.compile(r"(?:BrainScript|Experimental)NetworkBuilder\w*\Z", re.IGNORECASE)


def is_brainscript_key(name: str) -> bool:
    """Whether the value of key ``name`` is BrainScript text (a network builder section)."""
    return _BRAINSCRIPT_KEY.match(name.rpartition(".")[2]) is not None


def _brainscript_value(src: Text, start: int, end: int, ctx: ParseContext | None, key: str, maker):
    """A BrainScript section's value: a parameter set when its body also reads as configuration,
    else its text kept as one value, unparsed. CNTK keeps a bracketed value verbatim until it is
    used ("if val is a block in braces, it is kept verbatim (not parsed inside)",
    ``ConfigParser::ReadConfigFiles``, Source/Common/Config.cpp) and hands a network builder's to
    BrainScript, so multi-line ``if ... then ... else``, ``Sequential`` with its ``(`` on the next
    line or ``[| a; b |]`` never meet the config syntax; an unused section is never read at all.
    The network builder reads the text back from the file (``builder_source``)."""
    line = src.line_of(start)
    if src.text[start] == "[" or is_dict_group(src, start, end):
        params = maker._new_set(key, file=src.file, line=line)
        body, body_end, sep = group_body(src, start, end, ";")
        depth = getattr(_nesting, "depth", 0)
        _nesting.depth = depth + 1
        try:
            parse_body(src, body, body_end, sep, params, ctx)
            return params
        except ConfigError as e:
            _log.debug("config: %s (line %d) is not configuration text (%s); kept as BrainScript text",
                       key, line, e.reason)
        finally:
            _nesting.depth = depth
    return maker._new_value(src.text[start:end], file=src.file, line=line, quoted=False)


def _include(src: Text, start: int, end: int, target, ctx: ParseContext | None) -> None:
    start, end = strip_span(src.text, start, end)
    if any(is_brainscript_key(p) for p in (target.path or "").split(".") if p):
        return          # the builder reads the section's text back and includes the file itself
    raw = src.text[start + 1:end - 1] if is_quoted(src, start, end) else src.text[start:end]
    if not raw:
        raise src.error("include= needs a file name", start, path=join_path(target.path, "include"))
    if "$" in raw:
        raise src.error("$variables$ are not supported in include= (as in CNTK)", start,
                        path=join_path(target.path, "include"), hint="write the path of the file")
    base = src.base_dir or (os.path.dirname(os.path.abspath(src.file)) if src.file and not
                            src.file.startswith("<") else os.getcwd())
    for piece in raw.split("+"):
        piece = piece.strip()
        path = os.path.normpath(to_path(piece, join_path(target.path, "include"), base, file=src.file,
                                        line=src.line_of(start)))
        real = os.path.realpath(path)
        if ctx is None:
            ctx = ParseContext()
        if real in ctx.included:
            _log.warning("config: %s was already included; not including it again (include in %s line %d)", piece,
                      src.file, src.line_of(start))
            continue
        if not os.path.isfile(path):
            raise src.error(f"included file {piece!r} not found (looked for {path})", start,
                            path=join_path(target.path, "include"))
        ctx.included.add(real)
        _log.info("config: including %s", path)
        depth = getattr(_nesting, "depth", 0)
        if depth + _INCLUDE_LEVELS > MAX_NESTING:
            raise src.error(f"included files and parameter sets nested too deeply (more than {MAX_NESTING} "
                            f"levels, an include counting {_INCLUDE_LEVELS})", start,
                            path=join_path(target.path, "include"), hint="include fewer files in a chain")
        _nesting.depth = depth + _INCLUDE_LEVELS
        try:
            load_file_into(path, target, ctx)
        finally:
            _nesting.depth = depth


def read_text(path: str) -> str:
    """The text of a configuration file (UTF-8, a BOM allowed)."""
    try:
        with open(path, "r", encoding="utf-8-sig") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(f"cannot read configuration file: {e.strerror}", file=path) from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"configuration file is not UTF-8 text ({e.reason} at byte {e.start})",
                          file=path) from e


def load_file_into(path: str, target, ctx: ParseContext) -> None:
    """Parse the file at ``path`` into ``target`` (its includes relative to the file)."""
    src = Text(read_text(path), file=path, base_dir=os.path.dirname(os.path.abspath(path)))
    with parsing():
        parse_body(src, 0, len(src.text), ";", target, ctx)


def parse_text_into(text: str, target, ctx: ParseContext, *, file: str | None = None,
                    base_dir: str | None = None, first_line: int = 1) -> None:
    """Parse configuration ``text`` into ``target``."""
    with parsing():
        src = Text(text, file=file, first_line=first_line, base_dir=base_dir)
        parse_body(src, 0, len(src.text), ";", target, ctx)


__all__ = ["MAX_NESTING", "ParseContext", "parsing", "make_value", "parse_body", "group_body", "is_dict_group",
           "is_brainscript_key",
           "load_file_into", "parse_text_into", "read_text", "match"]
