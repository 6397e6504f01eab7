"""Exact-resume checking: does a restored source give what the uninterrupted one gave?

:func:`snapshot` turns a minibatch dict into plain comparable data (per stream: mask, values or
CSR arrays, end_of_sweep). :func:`check_resumes_exactly` reads a schedule of calls from one
source, and for each cut point reads the prefix from a fresh source, takes its checkpoint state
(through a JSON round trip, as a training script would store it), restores it on another fresh
source and reads the rest; every minibatch must equal the uninterrupted one.
``cntkio.testing.assert_resumes_exactly`` is built on it.
"""
from __future__ import annotations

import json
from typing import Callable, Iterable, Sequence

import numpy as np

__all__ = ["snapshot", "read_schedule", "check_resumes_exactly", "Call"]

#: One call: a minibatch size, or ``(size, num_data_partitions, partition_index)``.
Call = "int | tuple[int, int, int]"


def snapshot(mb) -> dict:
    """A minibatch dict as ``{stream name: (mask, arrays..., end_of_sweep)}`` of plain lists/bytes."""
    out = {}
    for info, data in mb.items():
        name = getattr(info, "name", info)
        mask = np.asarray(data.mask)
        if data.is_sparse:
            csr = data.as_csr()
            arrays = (csr.indptr.tolist(), csr.indices.tolist(), np.asarray(csr.data).tobytes())
        else:
            seqs = data.as_sequences()
            arrays = (b"".join(np.ascontiguousarray(s).tobytes() for s in seqs),)
        out[name] = (mask.shape, mask.tobytes()) + arrays + (bool(data.end_of_sweep),)
    return out


def _call(src, call):
    if isinstance(call, (tuple, list)):
        size, W, r = call
        return src.next_minibatch(size, num_data_partitions=W, partition_index=r)
    return src.next_minibatch(call)


def read_schedule(src, calls: Iterable) -> list[dict]:
    """Snapshots of the minibatches of these calls (an empty dict stays empty)."""
    return [snapshot(_call(src, c)) for c in calls]


def check_resumes_exactly(make_source: Callable[[], object], calls: Sequence, cuts: Iterable[int] | None = None) -> None:
    """Raise AssertionError unless restoring at every cut point (a number of calls already made)
    on a fresh source yields exactly the uninterrupted minibatches of the remaining calls."""
    calls = list(calls)
    src = make_source()
    try:
        reference = read_schedule(src, calls)
    finally:
        _close(src)
    for cut in (range(len(calls) + 1) if cuts is None else cuts):
        first = make_source()
        try:
            read_schedule(first, calls[:cut])
            state = json.loads(json.dumps(first.get_checkpoint_state()))
        finally:
            _close(first)
        second = make_source()
        try:
            second.restore_from_checkpoint(state)
            rest = read_schedule(second, calls[cut:])
        finally:
            _close(second)
        for k, (got, want) in enumerate(zip(rest, reference[cut:])):
            if got != want:
                raise AssertionError(f"after restoring the state {state} taken after {cut} call(s), call "
                                     f"{cut + k} ({calls[cut + k]!r}) gave a different minibatch than the "
                                     "uninterrupted source")


def _close(src) -> None:
    close = getattr(src, "close", None)
    if callable(close):
        close()
