"""Testing helpers for cntkio users and for cntkio's own tests."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence, TextIO


def dump_minibatches(minibatches: Iterable[Mapping[Any, Any]], out: Any,
                     stream_order: Sequence[str] | None = None, *, layout: str = "first_fit") -> int:
    """Write minibatches as CNTK's reader unit tests dump them (one text line per sample, first-fit
    layout, time-major, ``'.6g'`` numbers), so they compare with CNTK's control files; returns the
    number of lines. See :func:`cntkio.commands.dump.dump_minibatches` for the arguments."""
    from .commands.dump import dump_minibatches as _dump
    return _dump(minibatches, out, stream_order, layout=layout)
