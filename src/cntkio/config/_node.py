"""The base type of a parameter set, for the modules below :mod:`cntkio.config.params`.

The printer and the ``$variable$`` substitution handle trees whose nodes are parameter sets
(:class:`~cntkio.config.params.ConfigParameters`) and values
(:class:`~cntkio.config.params.ConfigValue`, a ``str``). They sit below the module that defines
those classes, so they recognise a set by this base class rather than by importing it.
"""
from __future__ import annotations

__all__ = ["ParameterSet"]


class ParameterSet:
    """Base class of :class:`~cntkio.config.params.ConfigParameters`.

    What the modules below ``params`` read of a set: ``_entries`` (lower-case name ->
    ``[name as written, value]``), ``_resolved(owner, key, stack)`` (an entry with ``$var$``
    replaced), ``_find(name, skip)``, ``_visible_names()``, ``copy(name, parent)``, ``path`` and
    ``parent``.
    """

    __slots__ = ()
