"""Tensor-ready minibatches: a source's public option to hand out arrays already in a tensor library's layouts.

Holds the public types only (no engine, no torch): the engine builds :class:`TensorBatch` objects,
the torch bridge reads them; neither imports the other.

A source that supports it (:func:`cntkio.source_protocol.has_tensor_ready`) answers
``next_tensor_ready(size, num_data_partitions, partition_index, layout)`` with a
:class:`TensorMinibatch`: minibatch ``index`` of a :class:`TensorBatch`, which holds the arrays
of up to 256 consecutive minibatches in these layouts, built once per batch on the thread that
packed it (nothing per sequence or sample in Python):

* **dense**: the padded ``[S, T, *shape]`` values (padding zero); when every sequence of the batch
  has one length (rows, length 1) the packed values already are that layout (no copy);
* **csr**: the valid samples as CSR, row pointers from 0 for every minibatch, column indices
  and values as packed;
* **ids**: a one-hot sparse stream named in :attr:`TensorLayout.ids` (every sample exactly one
  non-zero, of value 1) as padded ``[S, T]`` int64 token ids, plus a bool ``[S, T]`` mask when
  :attr:`TensorLayout.masks` is set.

Every kind also has the int64 ``[S]`` sequence lengths.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .minibatch import check_one_hot

if TYPE_CHECKING:
    from .minibatch import Minibatch

__all__ = ["TensorLayout", "TensorBatch", "TensorMinibatch", "check_one_hot"]


@dataclass(frozen=True)
class TensorLayout:
    """What a consumer wants of tensor-ready minibatches.

    ``ids``: the one-hot sparse streams to deliver as token ids; ``pad_id``: their padding;
    ``masks``: a bool mask per id stream. ``prepare``: called with every :class:`TensorBatch` right
    after it is built, on the thread that packed it (a consumer readies its own objects there,
    ahead of its calls); not part of the layout's identity."""

    ids: frozenset = frozenset()
    pad_id: int = 0
    masks: bool = False
    prepare: Callable[["TensorBatch"], None] | None = field(default=None, compare=False, hash=False)

    @property
    def key(self) -> tuple:
        return (self.ids, self.pad_id, self.masks)


class TensorBatch:
    """The tensor-ready arrays of consecutive minibatches (module docstring).

    ``streams`` holds per stream ``(name, kind, lens, bounds, parts)``: ``lens`` the int64 lengths
    of all the batch's rows, ``bounds`` the minibatches' first rows (``nmb + 1``), and ``parts``
    a list of ``(flat array, starts, shapes)``: minibatch ``j``'s array is
    ``flat[starts[j]:starts[j + 1]]`` reshaped to ``shapes[j]`` (None: kept 1-D). ``kind`` is
    ``"dense"`` (parts: the padded values), ``"ids"`` (the token ids, the mask) or ``"csr"``
    (row pointers, column indices, values; ``sizes[name][j]`` gives the matrices' shapes), or None
    for a stream with no sequences in the batch. ``cache`` is free for a consumer to keep what it
    made of the batch (the torch bridge keeps its per-batch plan there). ``num_sequences[j]`` and
    ``num_samples[j]`` count minibatch ``j``'s sequences and valid samples (of the first stream,
    as ``next_minibatch``'s statistics do); ``minibatch(j)`` makes minibatch ``j`` as
    ``next_minibatch`` returns it.
    """

    __slots__ = ("streams", "nmb", "sizes", "cache", "layout", "num_sequences", "num_samples", "_minibatch")

    def __init__(self, streams: list, nmb: int, sizes: dict, layout: TensorLayout,
                 minibatch: Callable[[int], "Minibatch"], num_sequences: list[int], num_samples: list[int]) -> None:
        self.streams, self.nmb, self.sizes, self.layout = streams, nmb, sizes, layout
        self.num_sequences, self.num_samples = num_sequences, num_samples
        self.cache: Any = None
        self._minibatch = minibatch

    @property
    def empty(self) -> bool:
        """Whether a stream has no sequences in the batch (its minibatches have no arrays here)."""
        return any(kind is None for _, kind, _, _, _ in self.streams)

    def minibatch(self, j: int) -> "Minibatch":
        """Minibatch ``j`` as ``next_minibatch`` gives it (``{StreamInformation: MinibatchData}``)."""
        return self._minibatch(j)

    def get(self, j: int) -> list:
        """Minibatch ``j``: ``[(name, kind, arrays, lengths)]``; ``arrays`` is the padded array
        (dense), ``(ids, mask)`` or ``(ids,)`` (ids) or ``(crow, col, values, shape)`` (csr); kind
        None (and the rest None) for a stream with no sequences in the batch."""
        out = []
        for name, kind, lens, bounds, parts in self.streams:
            if kind is None:
                out.append((name, None, None, None))
                continue
            got = []
            for flat, starts, shapes in parts:
                a = flat[starts[j]:starts[j + 1]]
                got.append(a if shapes is None else a.reshape(shapes[j]))
            if kind == "dense":
                arrays: Any = got[0]
            elif kind == "csr":
                arrays = (*got, self.sizes[name][j])
            else:
                arrays = tuple(got)
            out.append((name, kind, arrays, lens[bounds[j]:bounds[j + 1]]))
        return out


class TensorMinibatch:
    """Minibatch ``index`` of a :class:`TensorBatch`: what ``next_tensor_ready`` returns."""

    __slots__ = ("batch", "index")

    def __init__(self, batch: TensorBatch, index: int) -> None:
        self.batch, self.index = batch, index

    def arrays(self) -> list:
        """``batch.get(index)``."""
        return self.batch.get(self.index)

    def minibatch(self) -> "Minibatch":
        """The minibatch as ``next_minibatch`` gives it."""
        return self.batch.minibatch(self.index)
