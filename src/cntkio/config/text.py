"""Low-level text handling of the CNTK configuration language.

Comment removal, bracket and quote matching, splitting a region of text at separator characters
outside brackets, and telling a bracket group that holds parameters from one that holds array
elements. Everything here works on plain strings and offsets; the tree built from the pieces
(parameter sets, values) is made in :mod:`cntkio.config.parser` and :mod:`cntkio.config.params`.

The lexical rules are CNTK's (``Source/Common/Include/Config.h``), defined in
:mod:`cntkio.config.lexer` (beside BrainScript's) and compiled here into the scanning patterns:

* ``#`` starts a comment when it is the first character of a line or follows white space
  (``1#INF`` is a value); so does ``//`` as the first non-blank characters of a line;
* ``[ ]``, ``{ }``, ``( )`` and ``" "`` are matched pairs; separators inside them do not split;
* a separator character placed right after an opening bracket replaces the default one for that
  bracket (``(;c:\\a.txt;c:\\b.txt)``, ``[|a=1|b=2]``); line breaks always separate.
"""
from __future__ import annotations

import bisect
import difflib
import functools
import re

from ..errors import ConfigError
from .lexer import (BRACKETS, BRAINSCRIPT_SECTION, CONFIG_COMMENT, CONFIG_LINE_COMMENT, CONFIG_STRING,
                    CONFIG_STRING_TO_END,
                    brainscript_config_view, match_brainscript)

OPEN = "[{("
CLOSE = "]})"
PAIR = {"[": "]", "{": "}", "(": ")"}

# Characters that, placed right after an opening bracket, become that bracket's separator.
# CNTK's list is "`~!@$%^&*_-+|:;,?." plus '#' (documented as "[#a=1#b=2]"). We leave out the
# characters that can start an ordinary value ('$' of $var$, '_', '-', '+', '.', '*' of "*2"),
# so that "{-1:2}" is the array (-1, 2) and not an array split at '-'.
CUSTOM_SEPARATORS = "`~!@%^&|:;,?#"
# a bracket body that begins with "name =" holds parameters, not array elements
_DICT_START = re.compile(r"\s*[A-Za-z0-9_][\w.\-]*[ \t]*=")
# a ``{..}`` body may also start with ``name [``, ``name {`` or ``name (``: CNTK's ParseValue ends a
# name at '=' or an opening bracket (Source/Common/Include/Config.h:809), so
# ``features = { transforms ( {...} : {...} ) }`` (CNTK's ImageDeserializers.cntk) is a set
_BRACE_DICT_START = re.compile(r"\s*[A-Za-z0-9_][\w.\-]*[ \t]*[=\[{(]")
_NEWLINE = re.compile("\n")
OPEN_OR_QUOTE = re.compile(r'[\[{("]')
# one step of match(), a .match() from where the scan is: the text up to the next bracket or quote
# (one run of the regular-expression engine, not a search trying every offset), then group 1 a
# quoted text whole, 2 a bracket group with no bracket inside it (quoted text allowed) closed by its
# own kind, whole (an array of small sets: one step per element), or 3 a single bracket or a lone
# '"' (one never closed); no group at the end of the text
# (the strings, comments and brackets are the config dialect's of cntkio.config.lexer)
_PLAIN = r"[^" + BRACKETS + r'"]*'          # text with no bracket or quote
_FLAT = _PLAIN + r"(?:" + CONFIG_STRING + _PLAIN + r")*"
_STEP = re.compile(_PLAIN + r"(?:(" + CONFIG_STRING + r")|(\[" + _FLAT + r"\]|\{" + _FLAT + r"\}|\(" + _FLAT + r"\))"
                   r"|([" + BRACKETS + r'"]))?')
# a quoted string (kept, as group 1; to the end of the text when unterminated), or a comment: '#'
# at the start of a line or after white space, to the end of the line (dropped); both start with
# their character, so that a search jumps from one '"' or '#' to the next
_COMMENT = re.compile("(" + CONFIG_STRING_TO_END + ")|" + CONFIG_COMMENT)
# the // line comments, in a pass of their own (only texts holding "//" pay for it: its pattern has
# no first character to jump to)
_LINE_COMMENT = re.compile("(" + CONFIG_STRING_TO_END + ")|" + CONFIG_LINE_COMMENT)


class Text:
    """One piece of configuration text with its origin, for error messages.

    ``text`` has comments removed (line breaks kept, so offsets map to the original lines);
    ``file`` is the file name (or a label such as ``<command line>``) and ``first_line`` the line
    number of offset 0.
    """

    __slots__ = ("text", "file", "first_line", "base_dir", "_last", "_newlines", "closing")

    def __init__(self, text: str, file: str | None = None, first_line: int = 1,
                 base_dir: str | None = None, strip: bool = True) -> None:
        self.text = strip_comments(text) if strip else text
        self.file = file
        self.first_line = first_line
        self.base_dir = base_dir
        self._last = (0, first_line)   # the last offset asked and its line
        self._newlines: list | None = None
        self.closing: dict[int, int] = {}  # bracket offset -> its closing offset (match)

    def line_of(self, pos: int) -> int:
        """The 1-based line number of offset ``pos``.

        The parser asks in increasing order, so the lines are counted from the last offset asked
        (``str.count``); an earlier offset is looked up in an index of the line breaks, made once."""
        last, line = self._last
        if pos >= last:
            line += self.text.count("\n", last, pos)
        else:
            if self._newlines is None:
                self._newlines = [m.start() for m in _NEWLINE.finditer(self.text)]
            line = self.first_line + bisect.bisect_left(self._newlines, pos)
        self._last = (pos, line)
        return line

    def error(self, message: str, pos: int, *, path: str | None = None,
              hint: str | None = None) -> ConfigError:
        """A :class:`ConfigError` located at offset ``pos``."""
        return ConfigError(message, path=path, file=self.file or "<config>", line=self.line_of(pos),
                           hint=hint)


def normalize(text: str) -> str:
    """``text`` without a BOM at its start, with ``\\n`` line ends (CRLF and CR replaced)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def strip_comments(text: str) -> str:
    """Remove ``#`` comments (at line start or after white space, outside quotes).

    Line breaks are kept so that offsets still map to the original line numbers. A BOM at the
    start and carriage returns of CRLF line ends are dropped.
    """
    text = normalize(text)
    # a BrainScript section matters only when its text holds a '...' string, a // or /* */
    # comment or a '#' (BrainScript's comments start at any '#', the config language's only at a
    # line start or after white space): single-character searches (memchr) gate the
    # case-insensitive key search
    if ("'" in text or "/" in text or "#" in text) and "networkbuilder" in text.lower():
        return _strip_with_brainscript(text)
    # quoted strings (to the end of the text when unterminated) are kept, comments dropped: one
    # regular-expression substitution, no Python per character
    return _strip(text)


def _strip(text: str) -> str:
    if "#" in text:
        text = _COMMENT.sub(r"\1", text)
    if "//" in text:
        text = _LINE_COMMENT.sub(r"\1", text)
    return text


def _strip_with_brainscript(text: str) -> str:
    """:func:`strip_comments` of a text holding ``BrainScriptNetworkBuilder = {...}`` sections:
    outside them the config language's comments are removed; their bodies are matched by
    BrainScript's lexical rules and replaced by their config view (BrainScript comments removed,
    ``'...'`` strings written ``"..."``: :func:`cntkio.config.lexer.brainscript_config_view`), so
    that ``s = 'a # b'`` or ``'}'`` in a network written inline means what BrainScript says. A
    body whose brackets BrainScript's rules cannot match is left to the config layer's errors."""
    newlines = [m.start() for m in _NEWLINE.finditer(text)]
    out = []
    pos = 0
    while True:
        rest = _strip(text[pos:])
        # a section key, not one inside a quoted string (an odd number of '"' before it)
        m = next((k for k in BRAINSCRIPT_SECTION.finditer(rest) if rest.count('"', 0, k.start()) % 2 == 0), None)
        if m is None:
            out.append(rest)
            return "".join(out)
        at = m.start(1)
        # the bracket's offset in ``text``: comments removed keep every other character on its
        # line and column
        k = rest.count("\n", 0, at)
        first = bisect.bisect_left(newlines, pos)        # newlines[first] is the first one at or after pos
        line_start = pos if k == 0 else newlines[first + k - 1] + 1
        col = at - (rest.rfind("\n", 0, at) + 1)
        open_at = line_start + col
        try:
            close_at = match_brainscript(text, open_at)
        except ConfigError:
            out.append(rest)
            return "".join(out)
        out.append(rest[:at + 1])
        out.append(brainscript_config_view(text[open_at + 1:close_at]))
        pos = close_at


def match(src: Text, pos: int, end: int | None = None) -> int:
    """The offset of the bracket or quote closing the one at ``pos``.

    Brackets of all three kinds nest; text inside quotes is skipped. Raises ConfigError naming
    the line of the opening bracket when it is not closed, or closed by the wrong kind.
    """
    text = src.text
    if end is None:
        end = len(text)
    opener = text[pos]
    if opener == '"':
        return _close_quote(src, pos, end)
    known = src.closing.get(pos)
    if known is not None and known < end:  # a group is scanned once, whoever asks again
        return known
    stack = [pos]
    step = _STEP.match
    i = pos + 1
    while True:
        m = step(text, i, end)
        k = m.lastindex
        if k is None:   # no bracket or quote before the end
            break
        if k != 3:      # a quoted text, or a group with no bracket inside: skipped whole
            i = m.end()
            continue
        i = m.start(3)
        c = text[i]
        if c == '"':    # a '"' never closed: the error
            i = _close_quote(src, i, end) + 1
            continue
        if c in OPEN:
            stack.append(i)
        else:
            top = stack.pop()
            want = PAIR[text[top]]
            if c != want:
                raise src.error(f"expected '{want}' to close '{text[top]}' opened on line "
                                f"{src.line_of(top)}, found '{c}'", i)
            if not stack:
                src.closing[pos] = i
                return i
        i += 1
    top = stack[-1]
    raise src.error(f"'{text[top]}' opened here is never closed", top,
                    hint=f"expected '{PAIR[text[top]]}' before the end of the text")


def split(src: Text, start: int, end: int, seps: str) -> list[tuple[int, int]]:
    """Split ``src.text[start:end]`` at the characters of ``seps`` outside brackets and quotes.

    Returns the (start, end) offsets of every piece, empty ones included. A closing bracket
    without an opening one is an error.
    """
    text = src.text
    spans = []
    i = tok = start
    search = _scanner(seps).search
    while True:
        m = search(text, i, end)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c in seps:
            spans.append((tok, i))
            tok = i + 1
        elif c in CLOSE:
            raise src.error(f"unexpected '{c}' (no matching opening bracket)", i)
        else:
            i = match(src, i, end)
        i += 1
    spans.append((tok, end))
    return spans


def find_top(src: Text, start: int, end: int, char: str) -> int:
    """The first offset of ``char`` in ``src.text[start:end]`` outside brackets and quotes, or -1."""
    text = src.text
    i = start
    search = _scanner(char).search
    while True:
        m = search(text, i, end)
        if m is None:
            return -1
        i = m.start()
        c = text[i]
        if c == char:
            return i
        if c in OPEN or c == '"':
            i = match(src, i, end)
        i += 1


def _close_quote(src: Text, pos: int, end: int) -> int:
    """The offset of the ``"`` closing the one at ``pos``."""
    j = src.text.find('"', pos + 1, end)
    if j < 0:
        raise src.error('unterminated quoted string', pos,
                        hint='expected a closing \'"\' before the end of the text')
    return j


@functools.lru_cache(maxsize=64)
def _scanner(chars: str) -> re.Pattern:
    """A pattern finding the next of ``chars``, a bracket or a quote (the scans jump to it)."""
    return re.compile("[" + re.escape(chars) + r'\[\]{}()"]')


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` with surrounding white space removed."""
    while start < end and text[start] in " \t\n\r\f\v":
        start += 1
    while end > start and text[end - 1] in " \t\n\r\f\v":
        end -= 1
    return start, end


def is_group(src: Text, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is exactly one bracket group (``[..]``, ``{..}``, ``(..)``)."""
    return end - start >= 2 and src.text[start] in OPEN and match(src, start, end) == end - 1


def is_quoted(src: Text, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is exactly one quoted string."""
    return end - start >= 2 and src.text[start] == '"' and _close_quote(src, start, end) == end - 1


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

    ``[..]`` is, unless its body starts with a bracket group: ``[ [..]:[..] ]`` is the array of
    the groups, as CNTK reads ``deserializers = [ [..]:[..] ]`` (a parameter set's body starts
    with a name); ``{..}``/``(..)`` are when their body starts with ``name=`` (``{..}`` also with a
    name and an opening bracket: ``{ transforms (..) }``); ``{}`` is an empty parameter set and
    ``()`` an empty array.
    """
    opener = src.text[start]
    body, body_end, _ = group_body(src, start, end, ";")
    if opener == "[":
        first, _ = strip_span(src.text, body, body_end)
        return first >= body_end or src.text[first] not in OPEN
    if opener == "{":
        return not src.text[body:body_end].strip() or _BRACE_DICT_START.match(src.text, body, body_end) is not None
    return _DICT_START.match(src.text, body, body_end) is not None


def join_path(path: str | None, name: str) -> str:
    """The dotted key path of ``name`` inside the set at ``path``."""
    return f"{path}.{name}" if path else name


def closest(name: str, candidates) -> str | None:
    """The candidate closest to ``name`` (compared in lower case), for "did you mean" hints."""
    lowered = {}
    for c in candidates:
        lowered.setdefault(c.lower(), c)
    hit = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[hit[0]] if hit else None
