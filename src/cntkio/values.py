"""CNTK option values: the one place where an option's value becomes a typed value.

A value comes either as text (read from a configuration file: a
:class:`~cntkio.config.ConfigValue` is a ``str``) or as a Python value (given to the Python API:
``True``, ``10``, ``(28, 28, 1)``). Every function here takes the value and the ``option`` it
belongs to (its key path, ``reader.input.features.dim``, or None when unknown) and returns the
typed value or raises :class:`~cntkio.errors.ConfigError` naming the option, what was expected
and what was found. ``file``/``line``, when the caller knows them, go into the error as well.

The grammar is CNTK's (``Source/Common/Include/Config.h``, spec: configuration-files.txt), with
the extensions the config layer documents in ``docs/config.md``:

* **booleans** (:func:`to_bool`): ``t``, ``true``, ``1`` / ``f``, ``false``, ``0`` in any case,
  and the empty string as false (CNTK's ``ConfigValue::operator bool``); Python ``bool``, and the
  integers 0 and 1. ``yes``/``no``/``on``/``off`` are rejected, as CNTK rejects them (the CTF
  deserializer's own parser used to accept them from Python dicts; the config files never did). A
  bare flag name (``frameMode`` with no ``=``) is ``true``: the parser writes it so.
* **integers** (:func:`to_int`): ``[+-]digits``, or a float text that is integral (``1e3``,
  ``2.0``), as CNTK's array conversion reads them; Python ints (not ``bool``) and integral floats.
  ``1_000``, ``0x10`` and ``1.5`` are rejected.
* **floats** (:func:`to_float`): ``[+-]ddd[.ddd][e[+-]ddd]``, ``.5``, ``3.``, MSVC's ``1#INF``,
  ``-1#INF``, ``1#IND``, ``1#QNAN``, and ``inf``, ``infinity``, ``nan`` (any case).
* **arrays** (:func:`to_array`): ``a:b:c``, ``v*N`` repeats ``v`` N times, ``(;a;b)`` and
  ``{|a|b}`` declare their separator; a Python list or tuple. (A ConfigValue's own
  ``as_array()`` also knows nested brackets and quotes: the config layer calls it first.)
* **ranges** ``lo:hi`` (:func:`to_range`, lo <= hi), **pairs** ``l:r`` (:func:`to_pair`, e.g.
  HTK's ``contextWindow``), **dims** ``28:28:1`` (:func:`to_dims`), **choices**
  (:func:`to_choice`) and **file paths** relative to a directory (:func:`to_path`).

:func:`check_int` is the Python API's check of an integer argument (``TypeError`` /
``ValueError``, as Python functions raise, not ConfigError).

This is a base module: it imports only :mod:`cntkio.errors`, numpy and the standard library.
"""
from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np

from .errors import ConfigError

__all__ = ["to_bool", "to_int", "to_float", "to_str", "to_choice", "to_array", "to_range", "to_pair", "is_url",
           "local_path",
           "to_dims", "to_path", "split_repeat", "check_int", "check_state_int", "TRUE_WORDS", "FALSE_WORDS",
           "MAX_REPEAT"]

#: the spellings of true and false (compared in lower case; "" is false, as in CNTK)
TRUE_WORDS = frozenset({"t", "true", "1"})
FALSE_WORDS = frozenset({"f", "false", "0", ""})
#: ``v*N`` builds N elements; a typo like ``1e-3*10000000000`` should not exhaust memory
MAX_REPEAT = 1_000_000

_INT_RE = re.compile(r"[+-]?\d+\Z")
_FLOAT_RE = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)\Z")
_REPEAT_RE = re.compile(r"\*[ \t]*(\d+)\Z")
# characters that start a value, so never a separator declared after '(' or '{' ("{-1:2}")
_VALUE_START = "$_-+.*\"'([{"
_SPECIAL_FLOATS = {
    "1#inf": math.inf, "+1#inf": math.inf, "-1#inf": -math.inf,
    "1#ind": math.nan, "-1#ind": math.nan, "1#qnan": math.nan, "-1#qnan": math.nan,
    "1#snan": math.nan, "-1#snan": math.nan,
    "inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
    "+infinity": math.inf, "-infinity": -math.inf, "nan": math.nan, "+nan": math.nan, "-nan": math.nan,
}


def _found(value: Any) -> str:
    """How an error message shows the value that was found."""
    if isinstance(value, str):
        return repr(str(value))     # a ConfigValue shows as its text
    if isinstance(value, Mapping):
        return "a parameter set [...]"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} values"
    if isinstance(value, np.generic):       # numpy scalars show as the Python value
        value = value.item()
    return repr(value)


def _error(option: str | None, expected: str, value: Any, file: str | None, line: int | None,
           hint: str | None = None) -> ConfigError:
    return ConfigError(f"expected {expected}, found {_found(value)}", path=option, file=file, line=line,
                       hint=hint)


def to_bool(value: Any, option: str | None = None, *, file: str | None = None,
            line: int | None = None) -> bool:
    """A CNTK boolean: ``t``/``true``/``1`` or ``f``/``false``/``0`` in any case, ``""`` is false;
    a Python or numpy bool; the integers 0 and 1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        if value in (0, 1):
            return bool(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
    raise _error(option, "a boolean", value, file, line, hint="write true or false (or T/F, 1/0)")


def to_int(value: Any, option: str | None = None, *, minimum: int | None = None,
           file: str | None = None, line: int | None = None) -> int:
    """An integer: ``[+-]digits`` or an integral float text (``1e3``, ``2.0``); a Python or numpy
    integer (not a bool) or an integral float. ``minimum``: the smallest value allowed."""
    result = None
    if isinstance(value, (bool, np.bool_)):
        pass
    elif isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real):
        f = float(value)
        if f.is_integer():
            result = int(f)
    elif isinstance(value, str):
        text = value.strip()
        if _INT_RE.match(text):
            result = int(text)
        elif _FLOAT_RE.match(text) and float(text).is_integer():
            result = int(float(text))
    if result is None:
        raise _error(option, "an integer", value, file, line)
    if minimum is not None and result < minimum:
        raise ConfigError(f"expected an integer >= {minimum}, found {result}", path=option, file=file,
                          line=line)
    return result


def to_float(value: Any, option: str | None = None, *, file: str | None = None,
             line: int | None = None) -> float:
    """A float: ``[+-]ddd[.ddd][e[+-]ddd]``, ``.5``, ``1#INF``, ``-1#INF``, ``1#QNAN``, ``inf``,
    ``nan`` (any case); a Python or numpy number (not a bool)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)     # (a numpy bool is no numbers.Real)
    if isinstance(value, str):
        text = value.strip()
        if _FLOAT_RE.match(text):
            return float(text)
        special = _SPECIAL_FLOATS.get(text.lower())
        if special is not None:
            return special
    raise _error(option, "a floating-point number", value, file, line)


def to_str(value: Any, option: str | None = None, *, file: str | None = None,
           line: int | None = None) -> str:
    """A single value as text, white space at both ends removed (a set or an array is an error)."""
    if isinstance(value, (Mapping, list, tuple)):
        raise _error(option, "a single value", value, file, line)
    return str(value).strip()


def to_choice(value: Any, option: str | None, choices: Sequence[str], *, file: str | None = None,
              line: int | None = None) -> str:
    """One of ``choices`` (compared in any case; the spelling in ``choices`` is returned)."""
    text = to_str(value, option, file=file, line=line)
    for choice in choices:
        if choice.lower() == text.lower():
            return choice
    names = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
    raise ConfigError(f"expected {names}, found {text!r}", path=option, file=file, line=line)


def split_repeat(text: str, option: str | None = None, *, star: int | None = None,
                 file: str | None = None, line: int | None = None) -> tuple[str, int | None]:
    """``('v', N)`` for an array element ``v*N``; ``(text, None)`` when it is no repeat.

    The element splits at its first ``*`` (``star``: its offset, when the caller knows better,
    e.g. the first one outside brackets); it is a repeat only when digits alone follow and
    something comes before. ``v*0`` is no element at all. A count above :data:`MAX_REPEAT` is an
    error.
    """
    if star is None:
        star = text.find("*")
    if star <= 0:
        return text, None
    m = _REPEAT_RE.match(text, star)
    if m is None or not text[:star].strip():
        return text, None
    count = int(m.group(1))
    if count > MAX_REPEAT:
        raise ConfigError(f"repeat count {count} is too large (at most {MAX_REPEAT})", path=option,
                          file=file, line=line)
    return text[:star].strip(), count


def _split_text(text: str) -> list[str]:
    """The elements of an array written as plain text (``a:b``, ``(a:b)``, ``(;a;b)``,
    ``{|a|b}``), split at the separator and at line breaks, each stripped."""
    text = text.strip()
    sep, body = ":", text
    if len(text) >= 2 and (text[0], text[-1]) in (("(", ")"), ("{", "}")):
        sep, body = text[1:2], text[2:-1]
        if not sep or sep.isalnum() or sep.isspace() or sep in _VALUE_START:
            sep, body = ":", text[1:-1]     # no separator declared: the first element starts here
    return [p.strip() for p in re.split(f"[{re.escape(sep)}\n]", body)]


def to_array(value: Any, option: str | None = None, *, item: Callable | None = None,
             file: str | None = None, line: int | None = None) -> list:
    """A flat list: text ``a:b:c`` (``v*N`` repeats, ``(;a;b)``/``{|a|b}`` separators, empty
    elements dropped), or a list/tuple, whose elements are taken as they are (nested lists
    flattened; a list is already split, so ``"x*3"`` in it is one element). ``item(value,
    option)`` converts each element (e.g. :func:`to_int`); without it elements stay as found."""
    out: list = []
    if isinstance(value, (list, tuple)):
        for element in value:
            if isinstance(element, (list, tuple)):
                out.extend(to_array(element, option, file=file, line=line))
            else:
                out.append(element)
    elif isinstance(value, Mapping):
        out.append(value)
    elif isinstance(value, str):
        for piece in _split_text(value):
            if piece:
                base, count = split_repeat(piece, option, file=file, line=line)
                out.extend([base] * (1 if count is None else count))
    else:
        out.append(value)
    if item is None:
        return out
    return [item(v, f"{option}[{i}]" if option else None) for i, v in enumerate(out)]


def _two(value: Any, option: str | None, item: Callable, what: str, file, line) -> tuple:
    if isinstance(value, (str, list, tuple)):
        items = to_array(value, option, file=file, line=line)
    else:
        items = [value]
    if len(items) == 1:
        items = items * 2
    if len(items) != 2:
        raise _error(option, what, value, file, line)
    try:
        return tuple(item(v, option) for v in items)
    except ConfigError as e:
        raise ConfigError(e.reason, path=option, file=file, line=line,
                          hint=f"{what} is written as one value or two (a:b)") from e


def to_pair(value: Any, option: str | None = None, *, item: Callable = to_int,
            file: str | None = None, line: int | None = None) -> tuple:
    """``(l, r)``: ``l:r`` (or ``(l, r)`` from Python); a single value ``v`` is ``(v, v)``. HTK's
    ``contextWindow`` is such a pair of integers."""
    return _two(value, option, item, "a pair (one value or l:r)", file, line)


def to_range(value: Any, option: str | None = None, *, item: Callable = to_float,
             file: str | None = None, line: int | None = None) -> tuple:
    """``(lo, hi)`` with ``lo <= hi``: ``lo:hi`` (or ``(lo, hi)`` from Python); a single value ``v``
    is ``(v, v)`` (the image transforms' ``cropRatio``, ``areaRatio``, ``aspectRatio``)."""
    lo, hi = _two(value, option, item, "a range (one value or lo:hi)", file, line)
    if lo > hi:
        raise ConfigError(f"expected a range lo:hi with lo <= hi, found {lo}:{hi}", path=option,
                          file=file, line=line)
    return lo, hi


def to_dims(value: Any, option: str | None = None, *, file: str | None = None,
            line: int | None = None) -> tuple[int, ...]:
    """A sample shape: an integer, ``28:28:1``, or a list/tuple of integers, each >= 1."""
    items = to_array(value, option, file=file, line=line) if isinstance(value, (str, list, tuple)) \
        else [value]
    if not items:
        raise ConfigError("expected a positive dimension, found an empty shape", path=option, file=file,
                          line=line)
    return tuple(to_int(v, option, minimum=1, file=file, line=line) for v in items)


def to_path(value: Any, option: str | None = None, base_dir: str | None = None, *,
            file: str | None = None, line: int | None = None) -> str:
    """A file path: a ``str`` or path-like; a relative one is joined to ``base_dir`` when given (the
    directory of the configuration file that names it), else left relative to the current
    directory (as CNTK reads data file names)."""
    if not isinstance(value, (str, os.PathLike)):
        raise _error(option, "a file path", value, file, line)
    path = os.fspath(value)
    if not isinstance(path, str) or not path:
        raise _error(option, "a file path", value, file, line)
    if base_dir is not None and not os.path.isabs(path) and not is_url(path):
        path = os.path.join(base_dir, path)
    return path


#: ``scheme://`` at the start of a path: a URL (a scheme of two letters or more, so a Windows drive
#: ``C:\\`` is a path)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def local_path(path: str) -> str:
    """``file:///a/b`` as ``/a/b`` (a ``file://`` URL is read as the local file it names, on the
    local reading path); any other path as given."""
    if isinstance(path, str) and path[:7].lower() == "file://":
        return path[7:] if path[7:8] == "/" else "/" + path[7:]
    return path


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL (``s3://``, ``gs://``, ``https://``, ...) that the object-store
    layer (:mod:`cntkio.remote`) reads, rather than a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def check_int(value: Any, name: str, *, minimum: int | None = 0, owner: str | None = None) -> int:
    """A Python API integer argument, checked as a Python function checks one: ``int(value)``
    (``TypeError`` when it has none: ``"{owner}: {name} must be an int, got {value!r}"``), then
    ``ValueError`` below ``minimum`` (``"... {name} must be >= {minimum}, got {v}"``)."""
    prefix = f"{owner}: " if owner else ""
    try:
        v = int(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{prefix}{name} must be an int, got {value!r}") from e
    if minimum is not None and v < minimum:
        raise ValueError(f"{prefix}{name} must be >= {minimum}, got {v}")
    return v


def check_state_int(value: Any, key: str, *, maximum: int = 2**63 - 1) -> int:
    """A checkpoint field that counts something (a sample position, a sweep, an index): a Python or
    numpy integer (not a bool, not a float, not a string) in ``[0, maximum]`` (CNTK keeps them as
    ``size_t``; cntkio's positions stay below 2^63). ``ValueError`` naming ``key`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"Checkpoint field {key} must be a non-negative integer, found {_found(value)}")
    v = int(value)
    if v < 0 or v > maximum:
        raise ValueError(f"Checkpoint field {key} must be an integer in [0, {maximum}], found {v}")
    return v
