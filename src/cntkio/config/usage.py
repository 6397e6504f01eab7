"""Unused configuration keys: the names no part of cntkio read, with the closest known name.

:class:`~cntkio.config.params.ConfigParameters` records every name a consumer looks up (directly,
through a parent section, through ``$var$`` substitution, or through a copy of the set) and the
reader sections record what the reader factory reads. After the commands' sections have been
read, :func:`unused_keys` walks them and returns each key that nothing read, with the closest name
that cntkio did look up (or that a caller declares: the SGD and parallelTrain key lists), so that
``minibatchSzie = 32`` is reported as "not used — did you mean ``minibatchSize``?".

Rules: inside a command section every key is checked, and inside each sub-section that was read;
a sub-section nothing read is reported once, as a whole. At the top level, sections are checked
only when something refers to them (the others belong to commands not run), and a plain value
nothing read is reported only when it is close to a name that was looked up through every
enclosing section and is defined nowhere (``traceLevle = 2``): other top-level values are variables and settings of commands not
run this time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .text import closest, join_path
from .params import ConfigParameters

__all__ = ["UnusedKey", "unused_keys"]


@dataclass(frozen=True)
class UnusedKey:
    """A key nothing read: its dotted path, where it was written, the closest known name."""

    path: str
    file: str | None
    line: int | None
    suggestion: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else (f"{self.file}: " if self.file else "")
        text = f"{where}`{self.path}`: not used"
        if self.suggestion:
            text += f" \N{EM DASH} did you mean `{self.suggestion}`?"
        return text


def _any_used(params: ConfigParameters) -> bool:
    for key, (_, value) in params._entries.items():
        if params.is_used(key):
            return True
        if isinstance(value, ConfigParameters) and _any_used(value):
            return True
    return False


def _where(params: ConfigParameters, value) -> tuple[str | None, int | None]:
    return (getattr(value, "file", None) or params.file or params.root.file,
            getattr(value, "line", None) if getattr(value, "line", None) is not None else params.line)


def _walk(params: ConfigParameters, known: list[str], out: list[UnusedKey]) -> None:
    for key, (name, value) in params._entries.items():
        if params.is_used(key):
            if isinstance(value, ConfigParameters):
                _walk(value, known, out)
            continue
        if isinstance(value, ConfigParameters) and _any_used(value):
            _walk(value, known, out)     # read through a copy or a dotted name: its parts count
            continue
        file, line = _where(params, value)
        guess = closest(name, [k for k in known if k.lower() != key])
        out.append(UnusedKey(join_path(params.path, name), file, line, guess))


def unused_keys(root: ConfigParameters, sections: Iterable[ConfigParameters],
                known: Iterable[str] = ()) -> list[UnusedKey]:
    """The keys of ``sections`` (the command sections run) and the top-level values of ``root``
    that no consumer read, in configuration order. ``known``: more names to suggest from, besides
    those looked up (declared key lists)."""
    names = list(dict.fromkeys([*root.asked_names(), *known]))
    out: list[UnusedKey] = []
    seen: set[int] = set()
    for sec in sections:
        if id(sec) in seen:
            continue
        seen.add(id(sec))
        _walk(sec, names, out)
    for key, (name, value) in root._entries.items():
        if isinstance(value, ConfigParameters):
            if any(value is s for s in sections):
                continue
            if root.is_used(key) or _any_used(value):
                _walk(value, names, out)     # a section another one refers to ($var$, inheritance)
            continue
        if not root.is_used(key):
            # a top-level value is reported only when it looks like a misspelling of a name that
            # was looked up and is not defined: the others are variables and settings of commands
            # not run this time ($ModelDir$, outputNodeNames of a write command...)
            missing = [k for k in root.missed_names() if k.lower() not in root._entries]
            guess = closest(name, missing)
            if guess is not None:
                file, line = _where(root, value)
                out.append(UnusedKey(name, file, line, guess))
    return out
