"""The packing hand-off: minibatches packed in batches, handed out one per call.

While the minibatch size and the partition stay the same, up to 256 consecutive minibatches (about
16 MB of output) are packed at once (:func:`~cntkio.engine.packer.pack_batch`: one gather per
stream and chunk, then each minibatch is a slice), then handed out one per call. A packed batch is
a few arrays per stream (:class:`~cntkio.engine.packer.PackedBatch`); each minibatch's objects are
made when it is handed out, and the queue holds tuples of numbers, so nothing queued lives long
enough to reach the garbage collector's oldest generation.

Sequences that failed to load (``ChunkData.invalid``) are dropped here and counted against
``max_errors`` when their minibatch is handed out. A minibatch whose sequences are all invalid is
counted too and, in the middle of a sweep, not handed out (:meth:`Handoff.emptied`; CNTK's
SequenceCleaner, ReaderUtil.h, counted it without the check and returned it empty).
"""
from __future__ import annotations

from collections import deque
from typing import Callable

import numpy as np

from ..errors import MaxErrorsExceeded
from ..streams import StreamInformation
from ..tensor_ready import TensorLayout, TensorMinibatch
from .packer import PackedBatch, group_by_chunk, pack_batch
from .._log import get_logger

__all__ = ["Handoff", "MAX_BATCH_MINIBATCHES"]

log = get_logger("engine.handoff")

#: Minibatches packed together at most (and about 16 MB of output at most).
MAX_BATCH_MINIBATCHES = 256
_BATCH_OUTPUT_BYTES = 16 << 20


class Handoff:
    """The queue of packed minibatches and the invalid-sequence budget (module docstring).

    A queue entry is ``(sweep, position after it, reached the epoch end, part, index in part,
    invalid sequences dropped)``; part -1 marks the epoch end (no minibatch). ``key`` names the
    settings the queue was packed for.
    """

    def __init__(self, stream_infos: list[StreamInformation], *, max_errors: int, trace_level: int) -> None:
        self.stream_infos = stream_infos
        self.max_errors = int(max_errors)
        self.trace_level = int(trace_level)
        self.errors = 0
        self.queue: deque = deque()
        self.parts: list = []  # the PackedBatch objects the entries index
        #: ``{(part, index): why}``: the reason given for the last invalid sequence of a minibatch
        self.reasons: dict[tuple[int, int], str] = {}
        self.key = None
        #: the layout of the last ``next_tensor_ready`` call: each batch's tensor-ready arrays are
        #: built in it as the batch is packed (ahead of the consumer where packing runs ahead),
        #: and its ``prepare`` is called there; None until a consumer asks for them
        self.layout: TensorLayout | None = None
        self._sample_bytes = sum(
            (int(np.prod(i.sample_shape, dtype=np.int64)) * np.dtype(i.dtype).itemsize) if not i.is_sparse else 64
            for i in stream_infos) or 4

    def batch_size(self, budget: int) -> int:
        """Minibatches packed together: up to 256, about 16 MB of output at most."""
        return max(1, min(MAX_BATCH_MINIBATCHES, _BATCH_OUTPUT_BYTES // max(1, budget * self._sample_bytes)))

    def pack(self, prep, direct, chunk: Callable[[int], object]) -> tuple[PackedBatch, list, dict]:
        """Pack a prepared selection ``(end_of_sweep flags, counts, sel_chunk, sel_index)`` from
        ``direct`` (its sequences parsed in order), or else from the parsed chunks ``chunk(id)``:
        ``(PackedBatch, invalid sequences dropped per minibatch, {minibatch: why its last invalid
        sequence is invalid})``."""
        eos, counts, sel_chunk, sel_index = prep
        counts = list(counts)
        if direct is not None:
            n = len(sel_chunk)
            chunks = {0: direct}
            sel_chunk, sel_index = np.zeros(n, np.int64), np.arange(n, dtype=np.int64)
            groups = [(0, sel_index)]
        else:
            groups = group_by_chunk(sel_chunk)
            chunks = {c: chunk(c) for c, _ in groups}
        invalid = [0] * len(counts)
        reasons: dict[int, str] = {}
        if any(chunks[c].invalid is not None or chunks[c].dropped is not None for c, _ in groups):
            bad = np.zeros(len(sel_chunk), bool)     # failed to load: counted against max_errors
            gone = np.zeros(len(sel_chunk), bool)    # removed: bad, or dropped by the deserializer
            for c, pos in groups:
                inv, drop = chunks[c].invalid, chunks[c].dropped
                if inv is not None:
                    bad[pos] = inv[sel_index[pos]]
                if drop is not None:
                    gone[pos] = drop[sel_index[pos]]
            gone |= bad
            if gone.any():
                keep = np.ones(len(sel_chunk), bool)
                start = 0
                for j, n in enumerate(counts):
                    nb = int(bad[start:start + n].sum())
                    ng = int(gone[start:start + n].sum())
                    if ng:   # an emptied minibatch is counted too (CNTK counted it without the check: ReaderUtil.h)
                        keep[start:start + n] = False if ng == n else ~gone[start:start + n]
                        invalid[j] = nb
                        if nb:
                            reasons[j] = _last_reason(chunks, sel_chunk, sel_index,
                                                      start + np.flatnonzero(bad[start:start + n]))
                    counts[j] = int(keep[start:start + n].sum())
                    start += n
                sel_chunk, sel_index = sel_chunk[keep], sel_index[keep]
                groups = group_by_chunk(sel_chunk)
        layout = self.layout
        packed = pack_batch(self.stream_infos, chunks, sel_chunk, sel_index, groups, counts, eos,
                            owned=direct is not None, ids=layout.ids if layout is not None else frozenset(),
                            pad_id=layout.pad_id if layout is not None else 0)
        if layout is not None:
            bt = packed.tensor_ready(layout)
            if layout.prepare is not None:
                layout.prepare(bt)
        return packed, invalid, reasons

    def finish(self, entries: list, parsed: list, chunk: Callable[[int], object]) -> tuple[list, list, dict]:
        """Pack a batch's parts ``[(prep, direct or None)]`` whose minibatches end at ``entries``
        (``(sweep, position after it, reached the epoch end)``, the epoch-end marker last when
        the batch reaches it): ``(packed parts, queue entries, {(part, index): why})``."""
        packed, out, e = [], [], 0
        why: dict[tuple[int, int], str] = {}
        for part, (prep, direct) in enumerate(parsed):
            pb, invalid, reasons = self.pack(prep, direct, chunk)
            packed.append(pb)
            why.update({(part, j): r for j, r in reasons.items()})
            for j, n in enumerate(invalid):
                out.append(entries[e] + (part, j, n))
                e += 1
        if e < len(entries):  # the epoch-end marker
            out.append(entries[e] + (-1, 0, 0))
        return packed, out, why

    def put(self, key, packed: tuple[list, list, dict]) -> None:
        """Queue a packed batch (:meth:`finish`) for the settings ``key``."""
        self.parts, entries, self.reasons = packed
        self.queue.extend(entries)
        self.key = key

    def ready(self, key) -> bool:
        """Whether minibatches packed for ``key`` are waiting."""
        return bool(self.queue) and self.key == key

    def pop(self) -> tuple:
        """The next entry; its minibatch is :meth:`get` ``(part, index)``."""
        return self.queue.popleft()

    def last(self) -> tuple | None:
        return self.queue[-1] if self.queue else None

    def emptied(self, part: int, j: int) -> bool:
        """Whether minibatch ``j`` of packed part ``part`` lost every sequence (invalid or dropped)
        and does not end a sweep: the reader goes on to the next one instead of handing it out."""
        batch = self.parts[part]
        return batch.bounds[j] == batch.bounds[j + 1] and not batch.end_of_sweep[j]

    def get(self, part: int, j: int, n_invalid: int):
        """The minibatch ``j`` of packed part ``part``, its dropped sequences counted."""
        self.count_invalid(n_invalid, self.reasons.get((part, j)))
        return self.parts[part].get(j)

    def get_tensor_ready(self, part: int, j: int, n_invalid: int, layout: TensorLayout) -> TensorMinibatch:
        """:meth:`get`'s minibatch as tensor-ready arrays in ``layout`` (no minibatch objects)."""
        self.count_invalid(n_invalid, self.reasons.get((part, j)))
        return TensorMinibatch(self.parts[part].tensor_ready(layout), j)

    def count_invalid(self, n_invalid: int, reason: str | None = None) -> None:
        """Count ``n_invalid`` sequences removed from a minibatch (``reason``: why the last one was
        invalid); more than ``max_errors`` in all raises CNTK's error, naming that reason."""
        if n_invalid:
            self.errors += n_invalid
            # the warning once (its text is constant: cntkio._log shows it once), the counts as info
            log.warning("invalid sequences are removed from the minibatches and counted against "
                        "max_errors (%d allowed)", self.max_errors)
            log.info("%d invalid sequence(s) removed from the minibatch (%d so far, max_errors %d)",
                     n_invalid, self.errors, self.max_errors)
            if self.errors > self.max_errors:
                raise MaxErrorsExceeded(
                    f"Number of invalid sequences '{self.errors}' in the input exceeded the specified maximum "
                    f"number '{self.max_errors}'" + (f"; the last: {reason}" if reason else ""),
                    expected=f"at most {self.max_errors} invalid sequence(s) (max_errors)",
                    found=str(self.errors))

    def drop(self, forget_key: bool = False) -> None:
        """Drop the packed minibatches not handed out (``forget_key``: and the settings)."""
        self.queue.clear()
        self.parts = []
        self.reasons = {}
        if forget_key:
            self.key = None


def _last_reason(chunks, sel_chunk: np.ndarray, sel_index: np.ndarray, positions: np.ndarray) -> str:
    """Why the last of the invalid sequences at ``positions`` of the selection is invalid, as its
    deserializer said (``ChunkData.reasons``), or a line naming its chunk and index."""
    p = int(positions[-1])
    c, i = int(sel_chunk[p]), int(sel_index[p])
    data = chunks[c]
    if data.reasons and i in data.reasons:
        return data.reasons[i]
    return f"sequence {i} of chunk {c} (key {data.sequences.keys[i]!r}) failed to load"
