"""NDL text -> statements, on the configuration language's lexing (``cntkio.config.text``).

NDL is CNTK's configuration syntax read as a script: the same comments, quotes, brackets and
separators (``;`` or line breaks outside brackets). A statement is

* ``name = expression``: a variable (``HDim = 256``), a node (``h = Sigmoid(z)``), a section of
  statements (``ndlMacroUse = [ ... ]``) or a node array (``FeatureNodes = (features)``);
* ``Name(p1, p2) = expression`` or ``Name(p1, p2) = [ statements ]`` (also ``Name(p1) { ... }``,
  with or without ``=``, the brace on the same or the next line): a macro definition;
* a bare call ``Name(args)``: a command (MEL scripts).

An expression is a number, a quoted string, a (dotted) name, a call ``Name(positional..., key=value...)``
whose arguments are expressions (``{a, b, c}`` there is a list, as ``(a, b)``), ``(a, b)`` a list, or
``[ ... ]`` a section. Every piece keeps
its file, line and column for error messages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from ...config.text import (Text, find_top, is_group, is_quoted, match, split, strip_span)
from ...errors import ConfigError, NotImplementedInCntkio

__all__ = ["NDLError", "NDLRefusal", "Loc", "Num", "Str", "Ref", "Call", "ListExpr", "Block", "Assign", "MacroDef",
           "ExprStmt", "parse_ndl", "parse_span", "parse_expression"]

_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.(?:[A-Za-z_][\w]*|\*))*\Z|[A-Za-z_*][\w*]*(?:\.[\w*]+)*\Z")
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_HEADER = re.compile(r"\s*([A-Za-z_]\w*)\s*\(")


class NDLError(ConfigError):
    """An error in NDL or MEL text: ``file:line:column: message``."""

    def __init__(self, message: str, loc: "Loc | None" = None, hint: str | None = None) -> None:
        file = loc.file if loc else None
        line = loc.line if loc else None
        super().__init__(message, file=file or "<ndl>", line=line, hint=hint)
        self.column = loc.col if loc else None
        if loc is not None:
            text = f"{file or '<ndl>'}:{line}:{loc.col}: {message}" + (f" ({hint})" if hint else "")
            self.args = (text,)


class NDLRefusal(NDLError, NotImplementedInCntkio):
    """A function of CNTK's network languages that cntkio does not build: ``file:line:column:``,
    the function's name and why."""


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class Num:
    value: float
    loc: Loc


@dataclass
class Str:
    value: str
    loc: Loc


@dataclass
class Ref:
    name: str
    loc: Loc


@dataclass
class Call:
    fn: str
    args: list
    kwargs: dict
    loc: Loc
    kwlocs: dict = field(default_factory=dict)


@dataclass
class ListExpr:
    items: list
    loc: Loc


@dataclass
class Block:
    statements: list
    loc: Loc


@dataclass
class Assign:
    name: str
    expr: object
    loc: Loc


@dataclass
class MacroDef:
    name: str
    params: list
    body: object        # a Block or an expression
    loc: Loc


@dataclass
class ExprStmt:
    expr: Call
    loc: Loc


Expr = Union[Num, Str, Ref, Call, ListExpr, Block]


def _loc(src: Text, pos: int, col0: int = 1) -> Loc:
    nl = src.text.rfind("\n", 0, pos)
    col = pos - nl if nl >= 0 else pos + col0
    return Loc(src.file or "<ndl>", src.line_of(pos), col)


class _P:
    def __init__(self, src: Text, col0: int = 1) -> None:
        self.src, self.col0 = src, col0

    def loc(self, pos: int) -> Loc:
        return _loc(self.src, pos, self.col0)

    def err(self, msg: str, pos: int, hint: str | None = None) -> NDLError:
        return NDLError(msg, self.loc(pos), hint)

    # --- statements ------------------------------------------------------------------------
    def body(self, start: int, end: int) -> list:
        text = self.src.text
        try:
            pieces = [strip_span(text, s, e) for s, e in split(self.src, start, end, ";\n")]
        except ConfigError as e:
            raise NDLError(e.reason, Loc(self.src.file or "<ndl>", e.line or 0, 1), e.hint) from e
        pieces = [(s, e) for s, e in pieces if s < e]
        out, i = [], 0
        while i < len(pieces):
            s, e = pieces[i]
            # "Name(params)" on one line, "{ ... }" or "= [ ... ]" on the next: one macro definition
            if (i + 1 < len(pieces) and find_top(self.src, s, e, "=") < 0 and _HEADER.match(text, s, e)
                    and is_group(self.src, s + text[s:e].index("("), e)):
                ns, ne = pieces[i + 1]
                nxt = text[ns:ne].lstrip("=").strip()
                if nxt[:1] in "[{" and (text[ns] in "[{" or text[ns] == "="):
                    out.append(self.statement(s, ne))
                    i += 2
                    continue
            out.append(self.statement(s, e))
            i += 1
        return out

    def statement(self, s: int, e: int):
        text = self.src.text
        eq = find_top(self.src, s, e, "=")
        m = _HEADER.match(text, s, e)
        if m:
            po = m.end() - 1
            pc = match(self.src, po, e)
            rest = strip_span(text, pc + 1, e)
            if eq < 0 and rest[0] == rest[1]:          # a bare call: a command
                return ExprStmt(self.expression(s, e), self.loc(s))
            if eq < 0 or eq > pc:                       # Name(params) = body  /  Name(params) { body }
                params = self.names(po + 1, pc)
                bs = eq + 1 if eq > pc else rest[0]
                bs, be = strip_span(text, bs, e)
                if bs == be:
                    raise self.err(f"macro {m.group(1)}: expected a body after the parameters", s)
                return MacroDef(m.group(1), params, self.expression(bs, be), self.loc(s))
        if eq < 0:
            raise self.err(f"expected 'name = value', a macro definition or a command, found "
                           f"{_short(text[s:e])!r}", s)
        name = text[s:eq].strip()
        if not _NAME.match(name):
            raise self.err(f"expected a name before '=', found {_short(name)!r}", s,
                           hint="names are letters, digits and '_', dotted for nodes inside macros")
        vs, ve = strip_span(text, eq + 1, e)
        if vs == ve:
            raise self.err(f"expected a value after '{name} ='", eq)
        return Assign(name, self.expression(vs, ve), self.loc(s))

    def names(self, s: int, e: int) -> list[str]:
        out = []
        for a, b in split(self.src, s, e, ","):
            a, b = strip_span(self.src.text, a, b)
            if a == b:
                continue
            n = self.src.text[a:b]
            if not _IDENT.match(n):
                raise self.err(f"expected a parameter name, found {_short(n)!r}", a)
            out.append(n)
        return out

    # --- expressions -----------------------------------------------------------------------
    def expression(self, s: int, e: int):
        text, src = self.src.text, self.src
        s, e = strip_span(text, s, e)
        if s == e:
            raise self.err("expected a value", s)
        loc = self.loc(s)
        if is_quoted(src, s, e):
            return Str(text[s + 1:e - 1], loc)
        if is_group(src, s, e):
            if text[s] in "[{":
                return Block(self.body(s + 1, e - 1), loc)
            items = []
            for a, b in split(src, s + 1, e - 1, ",:"):
                a, b = strip_span(text, a, b)
                if a < b:
                    items.append(self.expression(a, b))
            return ListExpr(items, loc)
        word = text[s:e]
        if _NUMBER.match(word):
            return Num(float(word), loc)
        m = _HEADER.match(text, s, e)
        if m and text[e - 1] == ")" and match(src, m.end() - 1, e) == e - 1:
            return self.call(m.group(1), m.end() - 1, e, loc)
        if _NAME.match(word):
            return Ref(word, loc)
        raise self.err(f"expected a number, a name, a \"string\", a call f(...) or a list (a, b), found "
                       f"{_short(word)!r}", s)

    def call(self, fn: str, po: int, e: int, loc: Loc) -> Call:
        text = self.src.text
        args, kwargs, kwlocs = [], {}, {}
        for a, b in split(self.src, po + 1, e - 1, ","):
            a, b = strip_span(text, a, b)
            if a == b:
                if b < e - 1 or args or kwargs:
                    raise self.err(f"{fn}: empty argument", a)
                continue
            eq = find_top(self.src, a, b, "=")
            if eq >= 0:
                key = text[a:eq].strip()
                if not _IDENT.match(key):
                    raise self.err(f"{fn}: expected 'name=value' for an optional parameter, found "
                                   f"{_short(text[a:b])!r}", a)
                if key.lower() in {k.lower() for k in kwargs}:
                    raise self.err(f"{fn}: parameter {key!r} given twice", a)
                kwargs[key] = self.argument(eq + 1, b)
                kwlocs[key] = self.loc(a)
            else:
                if kwargs:
                    raise self.err(f"{fn}: a positional argument after the optional parameters "
                                   f"({', '.join(kwargs)})", a)
                args.append(self.argument(a, b))
        return Call(fn, args, kwargs, loc, kwlocs)

    def argument(self, s: int, e: int):
        """An argument of a call: an expression, where ``{a, b, c}`` (or ``[a, b]``) is a list, an
        NDL array (CNTK's ndlTypeArray: kernel shapes, strides; NetworkDescriptionLanguage.h,
        ParseVariable)."""
        s, e = strip_span(self.src.text, s, e)
        if s < e and self.src.text[s] in "[{" and is_group(self.src, s, e):
            items = []
            for a, b in split(self.src, s + 1, e - 1, ","):
                a, b = strip_span(self.src.text, a, b)
                if a < b:
                    items.append(self.expression(a, b))
            return ListExpr(items, self.loc(s))
        return self.expression(s, e)


def _short(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= 50 else s[:47] + "..."


def parse_ndl(text: str, file: str = "<ndl>", first_line: int = 1) -> list:
    """The statements of NDL ``text`` (comments removed as in config files)."""
    src = Text(text, file=file, first_line=first_line)
    return _P(src).body(0, len(src.text))


def parse_span(text: str, file: str, first_line: int, col0: int = 1) -> list:
    """Like :func:`parse_ndl`, for a fragment whose first character is at column ``col0``."""
    src = Text(text, file=file, first_line=first_line, strip=False)
    return _P(src, col0).body(0, len(src.text))


def parse_expression(text: str, file: str = "<ndl>", first_line: int = 1):
    src = Text(text, file=file, first_line=first_line)
    return _P(src).expression(0, len(src.text))
