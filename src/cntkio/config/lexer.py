"""The lexical layer of cntkio's two text languages: the CNTK configuration language and BrainScript.

One module holds the lexical rules of both dialects, and the code that applies them:

* the **configuration language** (CNTK's ``Config.h``): strings are ``"..."`` only (they may span
  lines); ``#`` starts a comment at the start of a line or after white space (``1#INF`` is a
  value); names are ``[A-Za-z0-9_][\\w-]*``, dotted for key paths; ``[ ] { } ( )`` are the
  brackets. :mod:`cntkio.config.text` and :mod:`cntkio.config.parser` build their patterns from
  the fragments below (the config layer has no token stream: it scans offsets with a few compiled
  patterns, which stay exactly what they were);
* **BrainScript**: strings are ``"..."`` or ``'...'`` on one line; comments are ``#`` and ``//``
  to the end of the line and ``/* ... */``; numbers, names and the operators of the expression
  language. :func:`tokenize_brainscript` splits text into tokens with their line and column
  (BrainScript's parser, ``networks/brainscript/syntax.py``, reads them), and
  :func:`match_brainscript` finds the bracket closing a BrainScript group (strings and comments
  skipped), for a network written inline in a config file.

Both dialects share the bracket characters; the difference between them is only in strings and
comments, kept side by side here.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

from ..errors import ConfigError

__all__ = ["CONFIG_STRING", "CONFIG_STRING_TO_END", "CONFIG_COMMENT", "CONFIG_LINE_COMMENT", "CONFIG_NAME",
           "CONFIG_DOTTED_NAME",
           "BRACKETS", "BS_STRING", "BS_COMMENT", "BS_NUMBER", "BS_NAME", "BS_OPERATOR", "BS_TOKEN",
           "Token", "LexError", "tokenize_brainscript", "match_brainscript", "brainscript_spans",
           "BRAINSCRIPT_SECTION", "brainscript_config_view"]

# --- the configuration language --------------------------------------------------------------
#: a quoted string (``"`` only; line breaks allowed)
CONFIG_STRING = r'"[^"]*"'
#: a quoted string, or an unterminated one running to the end of the text
CONFIG_STRING_TO_END = r'"[^"]*(?:"|\Z)'
#: a comment: ``#`` at the start of a line or after white space, to the end of the line
CONFIG_COMMENT = r"#(?<![^ \t\n]#)[^\n]*"
#: a line whose first non-blank characters are // (BrainScript's comment, written at the top level
#: of CNTK's own configs: CNTK read such a line as a flag named by the whole line, which nothing reads)
CONFIG_LINE_COMMENT = r"(?m:^)[ \t]*//[^\n]*"
#: a parameter name, and a dotted key path of them
CONFIG_NAME = r"[A-Za-z0-9_][\w\-]*"
CONFIG_DOTTED_NAME = CONFIG_NAME + r"(?:\." + CONFIG_NAME + r")*"
#: the bracket characters of both languages, escaped for a character class
BRACKETS = r"\[\]{}()"

# --- BrainScript ------------------------------------------------------------------------------
#: a string in ``"`` or ``'``, on one line
BS_STRING = r""""[^"\n]*"|'[^'\n]*'"""
#: ``#`` or ``//`` to the end of the line, ``/* ... */`` (line breaks allowed)
BS_COMMENT = r"#[^\n]*|//[^\n]*|/\*(?:.|\n)*?\*/"
#: a number: ``1``, ``1.5``, ``.5``, ``1e-3``; ``1..3`` is 1, ``..``, 3
BS_NUMBER = r"(?:\d+\.(?!\.)\d*|(?<!\.)\.\d+|\d+)(?:[eE][+-]?\d+)?"
BS_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
BS_OPERATOR = r"=>|==|!=|<=|>=|&&|\[\||\|\]|\|\||>>|<<|\.\.|\.\*|\*\*|[-+*/%!<>=:.,;(){}\[\]]"
#: one BrainScript token (its group name is the kind; ``ws``, ``nl`` and ``comment`` are dropped)
BS_TOKEN = re.compile(
    r"(?P<ws>[ \t\r\f]+)|(?P<nl>\n)|(?P<comment>" + BS_COMMENT + r")|(?P<num>" + BS_NUMBER + r")"
    r"|(?P<str>" + BS_STRING + r")|(?P<name>" + BS_NAME + r")|(?P<op>" + BS_OPERATOR + r")")
# a string or comment (group 1, skipped whole) or a bracket (group 2): match_brainscript's jumps
_BS_SKIP_OR_BRACKET = re.compile(r"(" + BS_STRING + "|" + BS_COMMENT + r")|([" + BRACKETS + r"])")
# a string or a comment, for spans that must not be read inside them ($var$ substitution)
_BS_STRING_OR_COMMENT = re.compile(r"(?P<str>" + BS_STRING + r")|(?P<comment>" + BS_COMMENT + r")")
_PAIR = {"[": "]", "{": "}", "(": ")"}
#: a config key whose bracketed value is BrainScript text (group 1: its opening bracket)
BRAINSCRIPT_SECTION = re.compile(r"\b(?:BrainScript|Experimental)NetworkBuilder\w*[ \t]*=?[ \t\n]*([\[{(])",
                                 re.IGNORECASE)


class Token(NamedTuple):
    """One BrainScript token: ``kind`` (num, str, name, op, eof), its ``text``, its ``offset`` in
    the text, its ``line`` and ``col`` (1-based), and ``line_start``: the first token of its line."""
    kind: str
    text: str
    offset: int
    line: int
    col: int
    line_start: bool


class LexError(ConfigError):
    """A lexical error, ``file:line:column: message``."""

    def __init__(self, message: str, file: str, line: int, col: int) -> None:
        super().__init__(message, file=file, line=line)
        self.column = col
        self.args = (f"{file}:{line}:{col}: {message}",)


ErrorFactory = Callable[[str, int, int], Exception]


def tokenize_brainscript(text: str, file: str = "<brainscript>", line: int = 1, col: int = 1,
                         error: ErrorFactory | None = None) -> list[Token]:
    """The BrainScript tokens of ``text``, whose first character stands at ``file:line:col``,
    ending with an ``eof`` token. A character that starts no token raises ``error(message, line,
    column)`` (a :class:`LexError` by default)."""
    out: list[Token] = []
    pos, ln, line_begin = 0, line, -col + 1
    fresh = True
    n = len(text)
    step = BS_TOKEN.match
    while pos < n:
        m = step(text, pos)
        if m is None:
            c = pos - line_begin + 1
            message = f"unexpected character {text[pos]!r}"
            raise error(message, ln, c) if error else LexError(message, file, ln, c)
        kind = m.lastgroup
        s = m.group()
        if kind == "nl":
            ln += 1
            line_begin = m.end()
            fresh = True
        elif kind == "comment":
            k = s.count("\n")
            if k:
                ln += k
                line_begin = pos + s.rfind("\n") + 1
                fresh = True
        elif kind != "ws":
            out.append(Token(kind, s, pos, ln, pos - line_begin + 1, fresh))
            fresh = False
        pos = m.end()
    out.append(Token("eof", "", pos, ln, pos - line_begin + 1, True))
    return out


def _line_col(text: str, pos: int, line: int, col: int) -> tuple[int, int]:
    """Line and column of offset ``pos`` in ``text`` whose offset 0 stands at ``line:col``."""
    k = text.count("\n", 0, pos)
    if k == 0:
        return line, col + pos
    return line + k, pos - text.rfind("\n", 0, pos)


def match_brainscript(text: str, pos: int, file: str = "<brainscript>", line: int = 1, col: int = 1,
                      error: ErrorFactory | None = None) -> int:
    """The offset of the bracket closing the one at ``text[pos]``, by BrainScript's rules: brackets
    of the three kinds nest, strings (``"``/``'``) and comments (``#``, ``//``, ``/* */``) are
    skipped whole. ``line``/``col`` place offset 0 for the errors (a bracket closed by the wrong
    kind, or never closed)."""
    def fail(message: str, at: int) -> Exception:
        ln, c = _line_col(text, at, line, col)
        return error(message, ln, c) if error else LexError(message, file, ln, c)

    stack = [pos]
    search = _BS_SKIP_OR_BRACKET.search
    i = pos + 1
    while True:
        m = search(text, i)
        if m is None:
            top = stack[-1]
            raise fail(f"'{text[top]}' opened here is never closed (expected '{_PAIR[text[top]]}' "
                       "before the end of the text)", top)
        i = m.end()
        if m.lastindex == 1:
            continue
        c = m.group(2)
        if c in _PAIR:
            stack.append(m.start())
            continue
        top = stack.pop()
        want = _PAIR[text[top]]
        if c != want:
            ln, _ = _line_col(text, top, line, col)
            raise fail(f"expected '{want}' to close '{text[top]}' opened on line {ln}, found '{c}'", m.start())
        if not stack:
            return m.start()


def brainscript_spans(text: str) -> list[tuple[str, int, int]]:
    """``(kind, start, end)`` of every BrainScript string (``str``) and comment (``comment``) of
    ``text``, in order; the text between them is code."""
    return [(m.lastgroup, m.start(), m.end()) for m in _BS_STRING_OR_COMMENT.finditer(text)]


def _config_view(m: re.Match) -> str:
    s = m.group()
    if m.lastgroup == "comment":
        return "\n" * s.count("\n")
    if s[0] == "'":
        # the config language has no escape: a '"' inside is seen as "'" (the network builder reads
        # the network's own text back from the file, so the string keeps its '"' there)
        return '"' + s[1:-1].replace('"', "'") + '"'
    return s


def brainscript_config_view(body: str) -> str:
    """The text of a BrainScript body as the config layer sees it inside the config file: the
    BrainScript comments removed (their line breaks kept) and each ``'...'`` string written
    ``"..."`` (the same string in BrainScript; the config language's only quote), so that a ``#``,
    a bracket or a ``//`` inside BrainScript's strings and comments means nothing to the config
    layer. Every other character keeps its line and column. A ``'...'`` string holding a ``"`` is
    seen with ``'`` in its place (the config language has no escape); the network builder reads
    the network's own text back from the file (``builder_source``)."""
    return _BS_STRING_OR_COMMENT.sub(_config_view, body)
