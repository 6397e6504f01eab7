"""Printing a configuration tree back as configuration text.

``dump(cfg)`` writes every parameter set with one ``name = value`` per line and nested sets in
``[ ]``, after ``$var$`` substitution; parsing the output gives the same tree (the property the
tests check). ``format_value`` writes a Python value (dict, list, str, number, bool) as a value
text, for ``ConfigParameters.insert`` and command-line overrides built from Python.

The printer sits below :mod:`cntkio.config.params` (which prints sets and values with it): it
knows a parameter set by its base class :class:`~cntkio.config._node.ParameterSet`.
"""
from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ConfigError
from ._node import ParameterSet
from .text import CLOSE, OPEN, Text, split

__all__ = ["dump", "format_value", "needs_quotes"]

_PAD = "    "
# separators we may declare after '[' when a value of the set contains ';'
_DECLARABLE = "|!@%^&~`?,"
_COMMENT_RE = re.compile(r"(^|\s)#")


def needs_quotes(text: str) -> bool:
    """True when ``text`` must be quoted to read back as the same string value."""
    if not text or text != text.strip():
        return True
    if any(c in text for c in ';\n\r"'):
        return True
    if any(c in OPEN or c in CLOSE for c in text):
        return True
    if _COMMENT_RE.search(text) or "$" in text:
        return True
    return False


def _quote(text: str, path: str | None) -> str:
    if '"' in text:
        raise ConfigError(f"cannot write {text!r} as configuration text: it needs quotes and contains '\"'",
                          path=path)
    return f'"{text}"'


def _top_level_has(text: str, chars: str) -> bool:
    try:
        src = Text(text, strip=False)
        return len(split(src, 0, len(text), chars)) > 1
    except ConfigError:
        return True


def _value_text(value, path: str | None) -> str:
    if not value:
        return '""'
    if value.quoted:
        if not needs_quotes(str(value)) and ":" not in value:
            return str(value)
        return _quote(str(value), path)
    return str(value)


def dump(params: ParameterSet, indent: int = 0) -> str:
    """The configuration text of ``params`` (resolved), nested sets indented."""
    pad = _PAD * indent
    lines = []
    for key, (name, _) in params._entries.items():
        value = params._resolved(params, key, ())
        if isinstance(value, ParameterSet):
            lines.append(f"{pad}{name} = {_open_bracket(value)}\n")
            lines.append(dump(value, indent + 1))
            lines.append(f"{pad}]\n")
        else:
            text = _value_text(value, value.path)
            if "$" in text and value.is_array_literal():
                text = _array_text(value, indent)
            if not value.quoted and _top_level_has(text, ";") and indent == 0 and params.parent is None:
                text = _quote(text, value.path)
            # a '#' right after white space would start a comment: write "name =#..." instead
            lines.append(f"{pad}{name} ={text}\n" if text.startswith("#") else f"{pad}{name} = {text}\n")
    return "".join(lines)


def _array_text(value, indent: int) -> str:
    """An array whose parameter sets still hold ``$var$`` (substituted from their own scope),
    written element by element with those sets resolved."""
    pad = _PAD * (indent + 1)
    parts = []
    for item in value.as_array():
        if isinstance(item, ParameterSet):
            parts.append(f"{pad}{_open_bracket(item)}\n{dump(item, indent + 2)}{pad}]\n")
        elif item.quoted:
            parts.append(f"{pad}{_quote(str(item), item.path)}\n")
        else:
            parts.append(f"{pad}{item}\n")
    return "(\n" + "".join(parts) + _PAD * indent + ")"


def _open_bracket(params) -> str:
    """'[' or '[<sep>' when a value of ``params`` contains ';' outside brackets."""
    used = []
    for _, value in params._entries.values():
        if not isinstance(value, ParameterSet) and not value.quoted:
            used.append(str(value))
    if not any(_top_level_has(t, ";") for t in used):
        return "["
    for c in _DECLARABLE:
        if not any(_top_level_has(t, c) for t in used):
            return "[" + c
    raise ConfigError("cannot write this parameter set: its values use every separator character",
                      path=params.path)


def format_value(value: Any, *, in_array: bool = False) -> str:
    """Configuration text for a Python value: dict -> ``[..]``, list/tuple -> ``(..)``."""
    if isinstance(value, ParameterSet):
        return "[\n" + dump(value, 1) + "]"
    if isinstance(value, dict):
        body = "".join(f"{_PAD}{k} = {format_value(v)}\n" for k, v in value.items())
        return "[\n" + body + "]"
    if isinstance(value, (list, tuple)):
        body = "".join(f"{_PAD}{format_value(v, in_array=True)}\n" for v in value)
        return "(\n" + body + ")"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if needs_quotes(text) or (in_array and any(c in text for c in ":*=")):
        return _quote(text, None)
    return text
