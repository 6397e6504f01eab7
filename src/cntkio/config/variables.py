"""``$variable$`` substitution: a value's ``$name$`` references replaced by the named values.

CNTK replaces ``$name$`` with the value of ``name`` as seen from the set that holds the value,
searching up to the root; cntkio does so when a value is looked up (so the last assignment of a
variable wins wherever it is written). The functions work on the tree through the sets they are
given (:class:`~cntkio.config._node.ParameterSet`: ``_find``, ``_resolved``, ``_entries``,
``copy``) and the values' ``_derive``; :mod:`cntkio.config.params` calls them.
"""
from __future__ import annotations

import re

from ..errors import ConfigError
from ._node import ParameterSet
from .text import OPEN, Text, closest, is_dict_group, match
from .printer import dump

__all__ = ["substitute", "VAR_RE"]

VAR_RE = re.compile(r"\$([A-Za-z_][\w.\-]*)\$")


def substitute(value, owner, key: str, stack: tuple, self_skip: bool = True):
    """Replace ``$var$`` in ``value`` (defined as ``owner``'s entry ``key``).

    Variables are looked up from ``owner`` up to the root, skipping the entry itself (so that
    ``file=$file$`` inside a section refers to an outer ``file``). Text inside parameter sets
    nested in the value is left alone: it is substituted when that set's values are looked up,
    from that set's own scope.
    """
    text = str(value)
    skip = (owner, key) if self_skip else None
    whole = VAR_RE.fullmatch(text.strip())
    if whole is not None:
        target = _lookup_var(whole.group(1), value, owner, skip, stack)
        if isinstance(target, ParameterSet):
            return target.copy(owner._entries[key][0] if key in owner._entries else key, owner)
        return value._derive(str(target), quoted=value.quoted or target.quoted)
    pieces = []
    pos = 0
    for a, b in _substitutable_regions(text):
        seg = text[a:b]
        out = []
        last = 0
        for m in VAR_RE.finditer(seg):
            target = _lookup_var(m.group(1), value, owner, skip, stack)
            if isinstance(target, ParameterSet):
                rep = "[\n" + dump(target, indent=1) + "]"
            else:
                rep = str(target)
            out.append(seg[last:m.start()])
            out.append(rep)
            last = m.end()
        out.append(seg[last:])
        pieces.append(text[pos:a])
        pieces.append("".join(out))
        pos = b
    pieces.append(text[pos:])
    return value._derive("".join(pieces))


def _substitutable_regions(text: str) -> list[tuple[int, int]]:
    """Offsets of the text outside nested parameter sets (where ``$var$`` is replaced now)."""
    src = Text(text, strip=False)
    regions = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in OPEN:
            try:
                j = match(src, i)
            except ConfigError:
                break
            if is_dict_group(src, i, j + 1):
                regions.append((start, i))
                start = i = j + 1
                continue
        i += 1
    regions.append((start, n))
    return regions


def _lookup_var(name: str, value, owner, skip, stack):
    found = owner._find(name, skip)
    if found is None:
        guess = closest(name.split(".")[-1], owner._visible_names())
        raise ConfigError(f"undefined variable ${name}$", path=value.path, file=value.file,
                          line=value.line,
                          hint=(f"did you mean ${guess}$?" if guess else
                                f"define {name} in this section, a parent section or on the command line"))
    vowner, vkey = found
    return owner._resolved(vowner, vkey, stack)
