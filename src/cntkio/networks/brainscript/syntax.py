"""BrainScript text -> syntax tree: the tokens and the grammar of CNTK's BrainScript.

Tokens (from the lexical layer shared with the config language, :mod:`cntkio.config.lexer`):
numbers, strings (``"..."`` or ``'...'``), names, operators; comments are ``#`` and ``//`` to the
end of the line and ``/* ... */``. Line breaks do not end an expression (as in CNTK's parser): a
``(`` on the next line calls the expression before it (``Sequential`` then ``(`` ... ``)``).

Grammar (lowest precedence first)::

    expr     := lambda | 'if' expr 'then' expr 'else' expr | 'new' NAME expr | array
    lambda   := (NAME | '(' NAME, ... ')') '=>' expr
    array    := compose (':' compose)*              # a : b : c is an array
    compose  := or (('>>'|'<<') or)*                # f >> g: g(f(x)); array << n: drop n
    or       := and ('||' and)*;  and := cmp ('&&' cmp)*
    cmp      := add (('=='|'!='|'<'|'<='|'>'|'>=') add)?
    add      := mul (('+'|'-') mul)*;  mul := unary (('*'|'/'|'.*'|'%'|'**') unary)*
    unary    := ('-'|'+'|'!') unary | postfix
    postfix  := primary ('.' NAME | '(' args ')' | '{' args '}' | '[' expr ']')*
    primary  := NUMBER | STRING | 'true' | 'false' | NAME | '(' expr ')' | record
              | '[|' (expr (';' expr)*)? '|]'                # an array, of any length
              | 'array' '[' expr '..' expr ']' '(' lambda ')'
    record   := '{' member* '}' | '[' member* ']'
    member   := NAME ('(' params ')' | '{' params '}' | '[' NAME ':' expr '..' expr ']')? '=' expr
              | 'include' STRING
    params   := param (',' param)*;  param := NAME ('=' expr)?   # a default: an optional parameter

Every node carries its :class:`Loc` (file, line, column) for the evaluator's errors.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...config.lexer import tokenize_brainscript
from ..ndl.parser import Loc, NDLError, NDLRefusal

__all__ = ["BrainScriptError", "BrainScriptRefusal", "Loc", "Assign", "RecordLit", "tokenize", "parse_record_body", "parse_expression", "Node"]


class BrainScriptError(NDLError):
    """An error in BrainScript text or its evaluation: ``file:line:column: message``."""


class BrainScriptRefusal(BrainScriptError, NDLRefusal):
    """A function of CNTK's BrainScript library that cntkio does not build (``library.refuse``)."""


@dataclass
class Tok:
    kind: str       # num str name op eof
    text: str
    loc: Loc
    line_start: bool = False


def tokenize(text: str, file: str = "<brainscript>", line: int = 1, col: int = 1) -> list[Tok]:
    """The tokens of ``text``, whose first character stands at ``file:line:col``: the shared
    lexer's (:func:`cntkio.config.lexer.tokenize_brainscript`), each with its :class:`Loc`."""
    toks = tokenize_brainscript(text, file, line, col,
                                error=lambda message, ln, c: BrainScriptError(message, Loc(file, ln, c)))
    return [Tok(t.kind, t.text, Loc(file, t.line, t.col), t.line_start) for t in toks]


# --- syntax tree ------------------------------------------------------------------------------
@dataclass
class Node:
    loc: Loc


@dataclass
class Lit(Node):
    value: Any


@dataclass
class Name(Node):
    name: str


@dataclass
class Member(Node):
    obj: Node
    name: str


@dataclass
class Call(Node):
    fn: Node
    args: list
    named: dict
    braces: bool = False


@dataclass
class Index(Node):
    obj: Node
    index: Node


@dataclass
class BinOp(Node):
    op: str
    a: Node
    b: Node


@dataclass
class Unary(Node):
    op: str
    a: Node


@dataclass
class If(Node):
    cond: Node
    then: Node
    other: Node


@dataclass
class ArrayLit(Node):
    items: list


@dataclass
class Lambda(Node):
    params: list
    defaults: dict
    body: Node


@dataclass
class ArrayGen(Node):
    lo: Node
    hi: Node
    fn: Node


@dataclass
class New(Node):
    cls: str
    body: Node


@dataclass
class Assign:
    name: str
    expr: Node
    loc: Loc
    params: list | None = None          # a function member
    defaults: dict = field(default_factory=dict)
    index: tuple | None = None          # name[i:a..b] = expr


@dataclass
class Include:
    path: str
    loc: Loc


@dataclass
class RecordLit(Node):
    members: list


_PREC = [(">>", "<<"), ("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">="), ("+", "-"), ("*", "/", ".*", "%", "**")]


class _Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.t = toks
        self.i = 0

    @property
    def tok(self) -> Tok:
        return self.t[self.i]

    def peek(self, k: int = 1) -> Tok:
        return self.t[min(self.i + k, len(self.t) - 1)]

    def err(self, expected: str, tok: Tok | None = None) -> BrainScriptError:
        tok = tok or self.tok
        found = "the end of the text" if tok.kind == "eof" else repr(tok.text)
        return BrainScriptError(f"expected {expected}, found {found}", tok.loc)

    def is_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def take(self, op: str) -> Tok:
        if not self.is_op(op):
            raise self.err(f"'{op}'")
        tok = self.tok
        self.i += 1
        return tok

    def name(self) -> Tok:
        if self.tok.kind != "name":
            raise self.err("a name")
        tok = self.tok
        self.i += 1
        return tok

    # --- records ------------------------------------------------------------------------
    def members(self, close: str | None) -> list:
        out = []
        while True:
            while self.is_op(";", ","):
                self.i += 1
            if close is None and self.tok.kind == "eof":
                return out
            if close is not None and self.is_op(close):
                return out
            out.append(self.member())

    def member(self):
        tok = self.name()
        if tok.text == "include" and self.tok.kind == "str":
            s = self.tok
            self.i += 1
            return Include(s.text[1:-1], tok.loc)
        params, defaults, index = None, {}, None
        if self.is_op("(", "{"):
            close = ")" if self.tok.text == "(" else "}"
            self.i += 1
            params, defaults = self.params(close)
        elif self.is_op("["):
            self.i += 1
            var = self.name().text
            self.take(":")
            lo = self.binary(0)
            self.take("..")
            hi = self.binary(0)
            self.take("]")
            index = (var, lo, hi)
        if not self.is_op("="):
            raise self.err(f"'=' after the member name {tok.text!r}")
        self.i += 1
        expr = self.expr()
        return Assign(tok.text, expr, tok.loc, params, defaults, index)

    def params(self, close: str) -> tuple[list, dict]:
        names, defaults = [], {}
        while not self.is_op(close):
            n = self.name().text
            if n in names:
                raise self.err(f"a parameter other than {n!r} (it is named twice)")
            if self.is_op("="):         # optional (named) parameters may stand between positional ones
                self.i += 1
                defaults[n] = self.expr()
            names.append(n)
            if not self.is_op(close):
                self.take(",")
        self.i += 1
        return names, defaults

    # --- expressions --------------------------------------------------------------------
    def expr(self) -> Node:
        tok = self.tok
        if tok.kind == "name" and tok.text == "if":
            self.i += 1
            c = self.expr()
            if not (self.tok.kind == "name" and self.tok.text == "then"):
                raise self.err("'then'")
            self.i += 1
            a = self.expr()
            if not (self.tok.kind == "name" and self.tok.text == "else"):
                raise self.err("'else'")
            self.i += 1
            return If(tok.loc, c, a, self.expr())
        if tok.kind == "name" and tok.text == "new":
            self.i += 1
            cls = self.name().text
            return New(tok.loc, cls, self.expr())
        if tok.kind == "name" and self.peek().kind == "op" and self.peek().text == "=>":
            self.i += 2
            return Lambda(tok.loc, [tok.text], {}, self.expr())
        if self.is_op("(") and self._lambda_params():
            self.i += 1
            params, defaults = self.params(")")
            self.take("=>")
            return Lambda(tok.loc, params, defaults, self.expr())
        first = self.binary(0)
        if not self.is_op(":"):
            return first
        items = [first]
        while self.is_op(":"):
            self.i += 1
            items.append(self.binary(0))
        return ArrayLit(tok.loc, items)

    def _lambda_params(self) -> bool:
        """``(a, b) =>``: a parenthesised list of names followed by ``=>``."""
        j = self.i + 1
        depth = 0
        while j < len(self.t):
            t = self.t[j]
            if t.kind == "op" and t.text in "({[":
                depth += 1
            elif t.kind == "op" and t.text in ")}]":
                if depth == 0:
                    nxt = self.t[j + 1] if j + 1 < len(self.t) else t
                    return nxt.kind == "op" and nxt.text == "=>"
                depth -= 1
            elif t.kind == "eof":
                return False
            j += 1
        return False

    def binary(self, level: int) -> Node:
        if level == len(_PREC):
            return self.unary()
        a = self.binary(level + 1)
        ops = _PREC[level]
        while self.tok.kind == "op" and self.tok.text in ops:
            tok = self.tok
            self.i += 1
            a = BinOp(tok.loc, tok.text, a, self.binary(level + 1))
        return a

    def unary(self) -> Node:
        if self.is_op("-", "+", "!"):
            tok = self.tok
            self.i += 1
            return Unary(tok.loc, tok.text, self.unary())
        return self.postfix()

    def postfix(self) -> Node:
        e = self.primary()
        while True:
            tok = self.tok
            if self.is_op("."):
                self.i += 1
                e = Member(tok.loc, e, self.name().text)
            elif self.is_op("(", "{"):      # also on the next line: CNTK's parser does not stop at a
                self.i += 1                  # line break (BrainScriptParser.cpp, ParseExpression)
                args, named = self.args(")" if tok.text == "(" else "}")
                e = Call(tok.loc, e, args, named, tok.text == "{")
            elif self.is_op("["):
                self.i += 1
                idx = self.expr()
                self.take("]")
                e = Index(tok.loc, e, idx)
            else:
                return e

    def args(self, close: str) -> tuple[list, dict]:
        pos, named = [], {}
        while not self.is_op(close):
            if self.tok.kind == "name" and self.peek().kind == "op" and self.peek().text == "=":
                n = self.tok.text
                self.i += 2
                named[n] = self.expr()
            else:                   # positional arguments may follow named ones (CNTK's calls do)
                pos.append(self.expr())
            if not self.is_op(close):
                self.take(",")
        self.i += 1
        return pos, named

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            v = float(tok.text)
            return Lit(tok.loc, int(v) if re.fullmatch(r"\d+", tok.text) else v)
        if tok.kind == "str":
            self.i += 1
            return Lit(tok.loc, tok.text[1:-1])
        if tok.kind == "name":
            self.i += 1
            if tok.text in ("true", "false"):
                return Lit(tok.loc, tok.text == "true")
            if tok.text == "array" and self.is_op("["):
                self.i += 1
                lo = self.binary(0)
                self.take("..")
                hi = self.binary(0)
                self.take("]")
                self.take("(")
                fn = self.expr()
                self.take(")")
                return ArrayGen(tok.loc, lo, hi, fn)
            return Name(tok.loc, tok.text)
        if self.is_op("("):
            self.i += 1
            e = self.expr()
            self.take(")")
            return e
        if self.is_op("[|"):                # [| a ; b |]: an array of any length (CNTK's F# syntax)
            self.i += 1
            items = []
            if not self.is_op("|]"):
                while True:
                    items.append(self.expr())
                    if not self.is_op(";"):
                        break
                    self.i += 1
            self.take("|]")
            return ArrayLit(tok.loc, items)
        if self.is_op("{", "["):
            close = "}" if tok.text == "{" else "]"
            self.i += 1
            members = self.members(close)
            self.take(close)
            return RecordLit(tok.loc, members)
        raise self.err("an expression")


def parse_record_body(text: str, file: str = "<brainscript>", line: int = 1, col: int = 1) -> RecordLit:
    """The members of a record written without its braces (a whole ``.bs`` file, or the inside of
    ``BrainScriptNetworkBuilder = { ... }``)."""
    toks = tokenize(text, file, line, col)
    p = _Parser(toks)
    members = p.members(None)
    return RecordLit(toks[0].loc, members)


def parse_expression(text: str, file: str = "<brainscript>", line: int = 1, col: int = 1) -> Node:
    p = _Parser(tokenize(text, file, line, col))
    e = p.expr()
    if p.tok.kind != "eof":
        raise p.err("the end of the expression")
    return e
