"""Testing helpers for cntkio users and for cntkio's own tests."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence


def dump_minibatches(minibatches: Iterable[Mapping[Any, Any]], out: Any,
                     stream_order: Sequence[str] | None = None, *, layout: str = "first_fit") -> int:
    """Write minibatches as CNTK's reader unit tests dump them (one text line per sample, first-fit
    layout, time-major, ``'.6g'`` numbers), so they compare with CNTK's control files; returns the
    number of lines. See :func:`cntkio.actions.dump.dump_minibatches` for the arguments."""
    from .actions.dump import dump_minibatches as _dump
    return _dump(minibatches, out, stream_order, layout=layout)


# --- exact resume ---------------------------------------------------------------------------------
def _snapshot(mb: Mapping[Any, Any]) -> dict:
    """A copy of everything observable in a minibatch, for bitwise comparison."""
    import numpy as np
    out = {}
    for key, d in mb.items():
        name = key if isinstance(key, str) else getattr(key, "name", str(key))
        entry = {"num_sequences": int(d.num_sequences), "num_samples": int(d.num_samples),
                 "end_of_sweep": bool(d.end_of_sweep), "mask": np.array(d.mask, copy=True),
                 "shape": tuple(d.shape), "is_sparse": bool(d.is_sparse)}
        if d.is_sparse:
            csr = d.as_csr()
            entry["values"] = (np.array(csr.indptr, np.int64), np.array(csr.indices, np.int64),
                               np.array(csr.data, copy=True))
        else:
            seqs = d.as_sequences()
            entry["values"] = (np.concatenate(seqs) if seqs else np.zeros(0),)
        out[name] = entry
    return out


def _same_array(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _difference(expected: dict, found: dict) -> str | None:
    if set(expected) != set(found):
        return f"streams {sorted(found)} instead of {sorted(expected)}"
    for name in sorted(expected):
        e, f = expected[name], found[name]
        for field in ("num_sequences", "num_samples", "end_of_sweep", "shape", "is_sparse"):
            if e[field] != f[field]:
                return f"stream {name!r}: {field} is {f[field]!r}, expected {e[field]!r}"
        if not _same_array(e["mask"], f["mask"]):
            return f"stream {name!r}: the masks differ"
        for part, (x, y) in enumerate(zip(e["values"], f["values"])):
            if not _same_array(x, y):
                return f"stream {name!r}: the values differ (part {part}, bitwise)"
    return None


def assert_resumes_exactly(make_source: Callable[[], Any], minibatch_sizes: int | Sequence[int],
                           cut_points: Iterable[int] | None = None, *, max_minibatches: int = 1000,
                           num_data_partitions: int = 1, partition_index: int = 0,
                           json_roundtrip: bool = True) -> int:
    """Check that a source resumes exactly from its checkpoints.

    Reads an uninterrupted run from ``make_source()`` (minibatch ``i`` of size
    ``minibatch_sizes[i % len]``, or the one size given; until ``{}`` or ``max_minibatches``; an
    entry may also be a ``(size, num_data_partitions, partition_index)`` call, so a run can
    change its partitioning between calls),
    taking ``get_checkpoint_state()`` before every minibatch. Then, for every cut point ``k``
    (0 <= k <= number of minibatches read; ``None``, the default, means every one of them), it restores the state taken before minibatch ``k`` on
    a fresh ``make_source()`` and asserts the remaining minibatches are identical: stream names,
    counts, ``end_of_sweep``, shapes, masks and values bitwise, and the final ``{}`` if the run
    ended. With ``json_roundtrip`` the state goes through ``json.dumps``/``json.loads`` first
    (checkpoints must survive being written to a file). Works with every
    :class:`~cntkio.source_protocol.Source` (``MinibatchSource``, ``UserMinibatchSource``); ``num_data_partitions``/``partition_index`` read one partition.
    Returns the number of minibatches of the uninterrupted run; raises AssertionError naming the
    cut point, the minibatch and the first difference.
    """
    import json

    from .user_source import read_minibatch

    calls = []
    for c in ([minibatch_sizes] if isinstance(minibatch_sizes, int) else list(minibatch_sizes)):
        size, parts, index = (c if isinstance(c, (tuple, list))
                              else (c, num_data_partitions, partition_index))
        calls.append((int(size), int(parts), int(index)))
    if not calls or min(c[0] for c in calls) <= 0:
        raise ValueError(f"minibatch_sizes must be positive, got {minibatch_sizes!r}")

    def read(src, i):
        size, parts, index = calls[i % len(calls)]
        return read_minibatch(src, size, parts, index)

    src = make_source()
    states, run, ended = [], [], False
    try:
        for i in range(max_minibatches):
            state = src.get_checkpoint_state()
            if json_roundtrip:
                try:
                    state = json.loads(json.dumps(dict(state)))
                except TypeError as exc:
                    raise AssertionError(f"the checkpoint before minibatch {i} is not "
                                         f"JSON-serialisable: {exc}") from exc
            states.append(state)
            mb = read(src, i)
            if not mb:
                ended = True
                break
            run.append(_snapshot(mb))
    finally:
        src.close()
    for k in (range(len(states)) if cut_points is None else cut_points):
        k = int(k)
        if not 0 <= k < len(states):
            raise ValueError(f"cut point {k} outside 0..{len(states) - 1} (the run has "
                             f"{len(run)} minibatches)")
        fresh = make_source()
        try:
            fresh.restore_from_checkpoint(states[k])
            for i in range(k, len(run)):
                mb = read(fresh, i)
                if not mb:
                    raise AssertionError(f"resumed at minibatch {k} (state {states[k]}): minibatch "
                                         f"{i} is empty, the uninterrupted run had data")
                diff = _difference(run[i], _snapshot(mb))
                if diff:
                    raise AssertionError(f"resumed at minibatch {k} (state {states[k]}): minibatch "
                                         f"{i} differs from the uninterrupted run: {diff}")
            if ended:
                mb = read(fresh, len(run))
                if mb:
                    raise AssertionError(f"resumed at minibatch {k} (state {states[k]}): the "
                                         f"uninterrupted run ended after {len(run)} minibatches, "
                                         "the resumed one goes on")
        finally:
            fresh.close()
    return len(run)
