"""PyTorch integration: minibatches as tensors, and a source as an ``IterableDataset``.

``to_torch(mb)`` converts one minibatch dict; :class:`MinibatchIterableDataset` reads a
``MinibatchSource`` (or a ``UserMinibatchSource``) inside ``DataLoader(batch_size=None)``, taking
this process's partition from ``torch.distributed`` (rank, world size) when it is initialised,
and splitting further across DataLoader worker processes. torch is imported only here.

Layouts: a dense stream becomes the padded float tensor ``[S, T, *shape]`` (padding zero); a
sparse stream becomes a ``torch.sparse_csr_tensor`` of shape ``(num_valid_samples, dim)`` with
the valid samples in sequence order, never densified. Sequence lengths (int64 ``[S]``) come with
each stream so padding and sparse rows can be mapped back to sequences.
"""
from __future__ import annotations

import warnings
from typing import Any, Iterator, Mapping

import numpy as np
from .torch_backend import torch

from .._log import get_logger
from ..minibatch import MinibatchData, Value

__all__ = ["value_to_torch", "to_torch", "distributed_partition", "MinibatchIterableDataset"]

_log = get_logger("integrations.torch")


def _tensor(arr: np.ndarray) -> torch.Tensor:
    if not arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.array(arr, copy=True, order="C")
    return torch.from_numpy(arr)


def value_to_torch(value: Value, device: Any = None) -> torch.Tensor:
    """One stream's values as a tensor (see the module docstring for the layouts)."""
    if value.is_sparse:
        csr = value.as_csr()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            t = torch.sparse_csr_tensor(_tensor(np.asarray(csr.indptr, np.int64)),
                                        _tensor(np.asarray(csr.indices, np.int64)),
                                        _tensor(np.asarray(csr.data)), size=csr.shape,
                                        check_invariants=False)
    else:
        t = _tensor(value._padded())
    return t.to(device) if device is not None else t


def to_torch(minibatch: Mapping[Any, MinibatchData], device: Any = None,
             lengths: bool = True) -> dict[str, torch.Tensor]:
    """A ``next_minibatch`` result as ``{stream name: tensor}``; with ``lengths`` also
    ``{stream name + '_lengths': int64 tensor [S]}`` (valid samples per sequence).

    Keys that are StreamInformation are replaced by their names; other keys (an ``input_map``'s)
    are used as given, converted to ``str``.
    """
    out: dict[str, torch.Tensor] = {}
    for key, mb in minibatch.items():
        name = getattr(key, "name", None) if not isinstance(key, str) else key
        name = str(key) if name is None else name
        out[name] = mb.to_torch(device)
        if lengths:
            t = torch.from_numpy(np.ascontiguousarray(mb.sequence_lengths, np.int64))
            out[name + "_lengths"] = t.to(device) if device is not None else t
    return out


def distributed_partition() -> tuple[int, int]:
    """``(world_size, rank)`` from ``torch.distributed`` when initialised, else ``(1, 0)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_world_size()), int(dist.get_rank())
    return 1, 0


class MinibatchIterableDataset(torch.utils.data.IterableDataset):
    """A minibatch source as an ``IterableDataset`` yielding ``{stream name: tensor}`` dicts.

    Use with ``DataLoader(dataset, batch_size=None)``: each item already is a minibatch of
    ``minibatch_size`` samples (this partition's share, as ``next_minibatch`` counts it).

    ``source`` is a source object, or a zero-argument callable making one (needed with
    DataLoader worker processes, where every worker builds its own source). The partition is
    ``(num_data_partitions, partition_index)`` when given, else ``torch.distributed``'s
    ``(world_size, rank)``; with ``W`` DataLoader workers it is split further into
    ``partitions * W`` parts, worker ``w`` of partition ``r`` reading part ``r * W + w``.
    Iteration ends when the source returns ``{}`` (an infinite source never ends).
    """

    def __init__(self, source: Any, minibatch_size: int, *, num_data_partitions: int | None = None,
                 partition_index: int | None = None, device: Any = None, lengths: bool = True) -> None:
        super().__init__()
        if int(minibatch_size) <= 0:
            raise ValueError(f"minibatch_size must be > 0, got {minibatch_size}")
        if (num_data_partitions is None) != (partition_index is None):
            raise ValueError("give both num_data_partitions and partition_index, or neither")
        self._source = source
        self.minibatch_size = int(minibatch_size)
        self.num_data_partitions = num_data_partitions
        self.partition_index = partition_index
        self.device = device
        self.lengths = lengths

    def partition(self) -> tuple[int, int]:
        """``(num_data_partitions, partition_index)`` this process (and worker) reads."""
        if self.num_data_partitions is not None:
            parts, index = int(self.num_data_partitions), int(self.partition_index)
        else:
            parts, index = distributed_partition()
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 1:
            parts, index = parts * info.num_workers, index * info.num_workers + info.id
        if not 0 <= index < parts:
            raise ValueError(f"partition_index {index} outside 0..{parts - 1}")
        return parts, index

    def _make_source(self):
        if callable(self._source) and not hasattr(self._source, "next_minibatch"):
            return self._source()
        return self._source

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        from ..user_source import read_minibatch
        parts, index = self.partition()
        source = self._make_source()
        _log.info("reading partition %d of %d", index, parts)
        while True:
            mb = read_minibatch(source, self.minibatch_size, parts, index)
            if not mb:
                return
            yield to_torch(mb, self.device, self.lengths)

