"""The base type of a parameter set, for the modules below :mod:`cntkio.config.params`, and the
array that ``as_array()`` returns (:class:`ConfigArray`, a list with typed views).

The printer and the ``$variable$`` substitution handle trees whose nodes are parameter sets
(:class:`~cntkio.config.params.ConfigParameters`) and values
(:class:`~cntkio.config.params.ConfigValue`, a ``str``). They sit below the module that defines
those classes, so they recognise a set by this base class rather than by importing it.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["ParameterSet", "ConfigArray"]


class ParameterSet:
    """Base class of :class:`~cntkio.config.params.ConfigParameters`.

    What the modules below ``params`` read of a set: ``_entries`` (lower-case name ->
    ``[name as written, value]``), ``_resolved(owner, key, stack)`` (an entry with ``$var$``
    replaced), ``_find(name, skip)``, ``_visible_names()``, ``copy(name, parent)``, ``path`` and
    ``parent``.
    """

    __slots__ = ()


class ConfigArray(list):
    """A list of ConfigValue / ConfigParameters elements (CNTK's ConfigArray)."""

    def __init__(self, items: Iterable[Any] = (), path: str | None = None) -> None:
        super().__init__(items)
        self.path = path

    def as_ints(self) -> list[int]:
        """Every element as an integer."""
        return [v.as_int() for v in self]

    def as_floats(self) -> list[float]:
        """Every element as a float."""
        return [v.as_float() for v in self]

    def as_strs(self) -> list[str]:
        """Every element as a plain string."""
        return [str(v) for v in self]
