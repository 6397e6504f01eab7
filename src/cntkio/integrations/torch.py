"""PyTorch integration: minibatches as tensors, and a source as an ``IterableDataset``.

``to_torch(mb)`` converts one minibatch dict; :class:`MinibatchIterableDataset` reads a
``MinibatchSource`` (or a ``UserMinibatchSource``) inside ``DataLoader(batch_size=None)``, one
sweep per iteration (``set_epoch(n)`` picks the sweep), taking this process's partition from
``torch.distributed`` (rank, world size) when it is initialised, and splitting further across
DataLoader worker processes. torch is imported only here.

Layouts: a dense stream becomes the padded float tensor ``[S, T, *shape]`` (padding zero); a
sparse stream becomes a ``torch.sparse_csr_tensor`` of shape ``(num_valid_samples, dim)`` with
the valid samples in sequence order, never densified (int32 row pointers and column indices,
the packer's own; int64 past 2^31 non-zeros);
a one-hot sparse stream named in ``ids`` becomes int64 token ids ``[S, T]`` (padding ``pad_id``);
``masks=True`` adds a bool mask ``[S, T]`` per stream. Sequence lengths (int64 ``[S]``) come with each stream so padding
and sparse rows can be mapped back to sequences.

Minibatches of a ``MinibatchSource`` carry tensor-ready arrays built by the packer once per
batch of up to 256 minibatches (:mod:`cntkio.engine.tensor_ready`); converting one is a few
``torch.from_numpy`` calls on slices of them, without copies.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
from .torch_backend import torch

from .._log import get_logger
from ..constants import POSITION_KEY
from ..engine.tensor_ready import check_one_hot
from ..minibatch import MinibatchData, Value

__all__ = ["value_to_torch", "value_to_ids", "to_torch", "distributed_partition",
           "MinibatchIterableDataset"]

_log = get_logger("integrations.torch")
_from_numpy = torch.from_numpy
_sparse_csr = torch.sparse_csr_tensor
_csr_warned = False  # torch warns once per process that sparse CSR is in beta


def _tensor(arr: np.ndarray) -> torch.Tensor:
    if not arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.array(arr, copy=True, order="C")
    return _from_numpy(arr)


def _csr_t(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size) -> torch.Tensor:
    """A sparse CSR tensor over these tensors (not checked: the packer made them; without
    ``check_invariants=False`` torch would warn that checks are implicitly disabled)."""
    global _csr_warned
    if _csr_warned:
        return _sparse_csr(crow, col, values, size, check_invariants=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        t = torch.sparse_csr_tensor(crow, col, values, size=size, check_invariants=False)
    _csr_warned = True
    return t


def _warm_csr() -> None:
    """Let torch's once-per-process "sparse CSR is in beta" warning happen now, silenced (call on
    the caller's thread, where the warning filters can be set safely), so that the per-item code
    calls ``torch.sparse_csr_tensor`` directly."""
    if not _csr_warned:
        z = np.zeros(1, np.int32)
        _csr(z, z[:0], np.zeros(0, np.float32), (0, 1))


def _csr(crow: np.ndarray, col: np.ndarray, values: np.ndarray, size) -> torch.Tensor:
    return _csr_t(_tensor(crow), _tensor(col), _tensor(values), size)


def _pin(t: torch.Tensor) -> torch.Tensor:
    """``t`` in page-locked memory, for a fast (and ``non_blocking``) copy to a GPU."""
    if not torch.cuda.is_available():
        raise RuntimeError("to_torch(pin_memory=True): pinned memory is for copies to a CUDA device, and "
                           "torch sees none here; leave pin_memory off on a CPU-only machine")
    return t.pin_memory()


def _place(t: torch.Tensor, device: Any, pin_memory: bool) -> torch.Tensor:
    if pin_memory:
        t = _pin(t)
    if device is None:
        return t
    return t.to(device, non_blocking=pin_memory)


def value_to_torch(value: Value, device: Any = None, pin_memory: bool = False) -> torch.Tensor:
    """One stream's values as a tensor (see the module docstring for the layouts); with
    ``pin_memory`` in page-locked memory (and copied to ``device`` without blocking)."""
    value._check()
    if value.is_sparse:
        indptr = value._indptr
        p0, p1 = int(indptr[0]), int(indptr[-1])
        dim = int(np.prod(value.sample_shape, dtype=np.int64)) if value.sample_shape else 1
        col = value._indices[p0:p1]
        if col.dtype != np.int32 or p1 - p0 > np.iinfo(np.int32).max:
            col = col.astype(np.int64)
        t = _csr((indptr - p0).astype(col.dtype), col, value._data[p0:p1], (len(indptr) - 1, dim))
    else:
        mask = value._mask
        S, T = mask.shape
        values = value._values
        if value.has_sequence_axis and len(values) == S * T:  # no padding: the values reshaped
            t = _tensor(values.reshape(value.shape))
        else:
            t = _tensor(value._padded())
    return _place(t, device, pin_memory)


def value_to_ids(value: Value, name: str = "", pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A one-hot sparse Value (every sample exactly one non-zero, of value 1) as padded int64 token
    ids ``[S, T]`` (padding ``pad_id``) and the bool mask of valid cells ``[S, T]``."""
    value._check()
    if not value.is_sparse:
        raise ValueError(f"stream {name!r}: token ids need a sparse (one-hot) stream, this one is dense")
    check_one_hot(name, value._indptr, value._data)
    valid = value._mask != 0
    ids = np.full(valid.shape, int(pad_id), np.int64)
    p0 = int(value._indptr[0])
    ids[valid] = value._indices[p0:p0 + int(valid.sum())]
    return ids, valid


def _name(key: Any) -> str:
    name = getattr(key, "name", None) if not isinstance(key, str) else key
    return str(key) if name is None else name


def _mask_from(lengths: torch.Tensor, width: int) -> torch.Tensor:
    return torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)


def _check_ids(ids: frozenset, names: list[str], sparse: dict) -> None:
    unknown = sorted(ids - set(names))
    if unknown:
        raise ValueError(f"ids: no stream named {unknown[0]!r} in the minibatch (streams: {names})")
    dense = sorted(n for n in ids if not sparse[n])
    if dense:
        raise ValueError(f"ids: stream {dense[0]!r} is dense; token ids need a sparse one-hot stream")


def _writeable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy of it when read-only (``torch.from_numpy`` needs a writeable array)."""
    return a if a.flags.writeable else a.copy()


class _BatchPlan:
    """What a packed batch's minibatches need to become tensors: per stream the batch's flat
    tensor-ready arrays (writeable) and where each minibatch's piece of them starts. A handful
    of objects per batch; each minibatch's tensors are made only when it is handed out
    (:meth:`get`: a ``torch.from_numpy`` per array, on a NumPy slice, no copies), so they live
    as long as the caller keeps them. Tensors made ahead for a whole batch would outlive two
    garbage-collector generations and be counted towards full collections, which traverse every
    object of the process (torch's own included: ~50 ms each): on the 100 MB sequence benchmark
    at 256-sample minibatches that was 2-3 full collections per sweep, 8-13 us per minibatch.

    ``steps`` is one flat tuple per stream, in the order the keys go into the item: ``get`` is
    the per-item work of the PyTorch path, so it reads each step's arrays by position (no nested
    unpacking, no lookups by name) and makes exactly the tensors asked for."""

    __slots__ = ("key", "steps", "empty")

    def __init__(self, bt, lengths: bool, masks: bool) -> None:
        self.key = (lengths, masks)
        self.empty = any(kind is None for _, kind, _, _, _ in bt.streams)
        self.steps: list[tuple] = []
        if self.empty:
            return
        for name, kind, lens, bounds, parts in bt.streams:
            parts = [(_writeable(flat), starts, shapes)
                     for flat, starts, shapes in (parts[:1] if kind == "ids" and not masks else parts)]
            lens = _writeable(np.ascontiguousarray(lens, np.int64))
            lname = name + "_lengths" if lengths else None
            if masks and kind != "ids":  # the bool mask from the lengths, at each minibatch's padded width
                widths = [int(lens[b0:b1].max()) if b1 > b0 else 0 for b0, b1 in zip(bounds, bounds[1:])]
                mask = (name + "_mask", widths)
            else:
                mask = None
            if kind == "csr":
                _warm_csr()
                (crow, cs, _), (col, nz, _), (val, _, _) = parts
                self.steps.append((True, name, crow, cs, col, val, nz, bt.sizes[name], lname, lens, bounds, mask))
            else:  # dense values, or token ids (and their mask)
                arrays = tuple((key, flat, starts, shapes)
                               for (flat, starts, shapes), key in zip(parts, (name, name + "_mask")))
                self.steps.append((False, arrays, None, None, None, None, None, None, lname, lens, bounds, mask))

    def get(self, j: int) -> dict | None:
        """Minibatch ``j``'s ``{name: tensor}`` (None when a stream has no sequences)."""
        if self.empty:
            return None
        fn = _from_numpy
        d: dict[str, torch.Tensor] = {}
        for csr, name, crow, cs, col, val, nz, sizes, lname, lens, bounds, mask in self.steps:
            if csr:
                a = nz[j]
                b = nz[j + 1]
                d[name] = _sparse_csr(fn(crow[cs[j]:cs[j + 1]]), fn(col[a:b]), fn(val[a:b]), sizes[j],
                                      check_invariants=False)
            else:
                for key, flat, starts, shapes in name:
                    a = flat[starts[j]:starts[j + 1]]
                    d[key] = fn(a if shapes is None else a.reshape(shapes[j]))
            if mask is not None:  # the keys in to_torch's order: values, mask, lengths
                lt = fn(lens[bounds[j]:bounds[j + 1]])
                d[mask[0]] = _mask_from(lt, mask[1][j])
                if lname is not None:
                    d[lname] = lt
            elif lname is not None:
                d[lname] = fn(lens[bounds[j]:bounds[j + 1]])
        return d


class _Prebuild:
    """The hook that readies each packed batch for tensors (:class:`_BatchPlan`) on the thread
    that packs it (the background packing thread in sequential reading), ahead of the consumer."""

    __slots__ = ("key",)

    def __init__(self, lengths: bool, masks: bool) -> None:
        self.key = (lengths, masks)
        _warm_csr()

    def __call__(self, bt) -> None:
        if bt.cache is None or bt.cache.key != self.key:
            bt.cache = _BatchPlan(bt, *self.key)


def _packed_to_torch(mb, ids: frozenset, pad_id: int, lengths: bool, masks: bool) -> dict | None:
    """The fast path: a packed minibatch's tensors, views of its batch's tensor-ready arrays (no
    copies); None when a stream has no sequences (the generic path makes the empty tensors)."""
    batch, j = mb.packed
    bt = batch.tensor_ready(ids, pad_id, masks)
    plan = bt.cache
    if plan is None or plan.key != (lengths, masks):
        plan = bt.cache = _BatchPlan(bt, lengths, masks)
    return plan.get(j)


def to_torch(minibatch: Mapping[Any, MinibatchData], device: Any = None, lengths: bool = True,
             ids: Iterable[str] = (), pad_id: int = 0, masks: bool = False,
             pin_memory: bool = False) -> dict[str, torch.Tensor]:
    """A ``next_minibatch`` result as ``{stream name: tensor}``; with ``lengths`` also
    ``{stream name + '_lengths': int64 tensor [S]}`` (valid samples per sequence).

    ``ids`` names one-hot sparse streams to deliver as int64 token ids ``[S, T]`` (padding
    ``pad_id``), ready for ``nn.Embedding`` and, with the lengths, ``pack_padded_sequence``; a
    sample that is not exactly one non-zero of value 1 raises ``ValueError``. ``masks`` adds
    ``name + '_mask'`` for every stream: bool ``[S, T]``, True on valid cells.

    Keys that are StreamInformation are replaced by their names; other keys (an ``input_map``'s)
    are used as given, converted to ``str``. ``pin_memory``: every tensor in page-locked memory,
    for a fast ``non_blocking`` copy to a GPU (an error where torch sees no CUDA device).
    """
    ids = frozenset(ids)
    names = [_name(k) for k in minibatch]
    if ids:
        _check_ids(ids, names, {n: mb.is_sparse for n, mb in zip(names, minibatch.values())})
    if getattr(minibatch, "packed", None) is not None:
        out = _packed_to_torch(minibatch, ids, int(pad_id), lengths, masks)
        if out is not None:
            return out if device is None and not pin_memory else \
                {k: _place(v, device, pin_memory) for k, v in out.items()}
    out = {}
    for name, mb in zip(names, minibatch.values()):
        lt = torch.from_numpy(np.ascontiguousarray(mb.sequence_lengths, np.int64))
        if name in ids:
            tid, valid = value_to_ids(mb.data, name, pad_id)
            out[name] = torch.from_numpy(tid)
            if masks:
                out[name + "_mask"] = torch.from_numpy(valid)
        else:
            out[name] = mb.to_torch()
            if masks:
                out[name + "_mask"] = torch.from_numpy(mb.mask != 0)
        if lengths:
            out[name + "_lengths"] = lt
    return out if device is None and not pin_memory else {k: _place(v, device, pin_memory) for k, v in out.items()}


def distributed_partition() -> tuple[int, int]:
    """``(world_size, rank)`` from ``torch.distributed`` when initialised, else ``(1, 0)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_world_size()), int(dist.get_rank())
    return 1, 0


_WORKERS_MESSAGE = (
    "cntkio: MinibatchIterableDataset in {n} DataLoader worker processes: each worker reads its "
    "own share of the partition (correct, disjoint), but every tensor is then copied between "
    "processes, which costs more per minibatch than cntkio's reading, already done on native "
    "threads off the GIL. Use num_workers=0 (the default); for more processes use "
    "torch.distributed ranks (torchrun), which cntkio partitions without copies.")
_workers_warned = False

_BATCHED_MESSAGE = (
    "MinibatchIterableDataset in a DataLoader with batch_size={n}: each item already is a minibatch "
    "of minibatch_size samples, so the DataLoader must not batch the items again (it would add a "
    "dimension of {n} to every tensor and try to stack sparse CSR tensors). Use "
    "DataLoader(dataset, batch_size=None).")


def _as_is(item: Any) -> Any:
    return item


def _check_not_batched(caller: Any) -> None:
    """Raise ``ValueError`` when ``caller`` (the frame asking for the dataset's first item) is a
    DataLoader fetcher that batches items (``batch_size`` not None, its default 1 included).

    With ``batch_size=None`` the fetcher passes every item through its ``collate_fn``, by default
    ``default_convert``, which turns NumPy arrays into tensors: it would walk each item (a dict of
    tensors already) and return a copy of it holding the same tensors, about 1.3 us per item for
    nothing. That default is replaced here, for this fetcher only (one DataLoader iteration), by
    a function returning the item as it is; a ``collate_fn`` the user gave is kept."""
    fetcher = None if caller is None else caller.f_locals.get("self")
    utils = getattr(torch.utils.data, "_utils", None)
    base = getattr(getattr(utils, "fetch", None), "_BaseDatasetFetcher", None)
    if base is None or not isinstance(fetcher, base):
        return
    if getattr(fetcher, "auto_collation", False):
        index = caller.f_locals.get("possibly_batched_index")
        raise ValueError(_BATCHED_MESSAGE.format(n=len(index) if hasattr(index, "__len__") else "not None"))
    if getattr(fetcher, "collate_fn", None) is getattr(getattr(utils, "collate", None), "default_convert", _as_is):
        fetcher.collate_fn = _as_is


class MinibatchIterableDataset(torch.utils.data.IterableDataset):
    """A minibatch source as an ``IterableDataset`` yielding ``{stream name: tensor}`` dicts.

    Use with ``DataLoader(dataset, batch_size=None)``: each item already is a minibatch of
    ``minibatch_size`` samples (this partition's share, as ``next_minibatch`` counts it), so the
    DataLoader's own batching must be off; any other ``batch_size`` (the DataLoader's default 1
    included) raises ``ValueError`` when iteration starts. Leave ``num_workers`` at 0: cntkio
    already reads on native threads, and worker processes only add copies (a warning says so).

    ``source`` is a source object, or a zero-argument callable making one (needed with
    DataLoader worker processes, where every worker builds its own source); the source is made
    once per process and kept. The partition is ``(num_data_partitions, partition_index)`` when
    given, else ``torch.distributed``'s ``(world_size, rank)``; with ``W`` DataLoader workers it
    is split further into ``partitions * W`` parts, worker ``w`` of partition ``r`` reading part
    ``r * W + w`` (which works, but copies every tensor between processes: a warning says so).

    Epochs: over a ``MinibatchSource`` of built-in deserializers, each iteration reads one sweep
    of the data, whatever the source's ``max_sweeps``/``max_samples``: the first iteration sweep
    ``epoch`` (0 by default), the next one the following sweep, and so on; :meth:`set_epoch`
    makes the next iteration read sweep ``n`` (with DataLoader workers, which iterate copies of
    the dataset, call it before every epoch, as with ``DistributedSampler``). Over other sources
    (a user deserializer, a ``UserMinibatchSource``) an iteration reads until the source returns
    ``{}``. ``lengths``, ``ids``, ``pad_id`` and ``masks`` are :func:`to_torch`'s.
    """

    def __init__(self, source: Any, minibatch_size: int, *, num_data_partitions: int | None = None,
                 partition_index: int | None = None, device: Any = None, lengths: bool = True,
                 ids: Iterable[str] = (), pad_id: int = 0, masks: bool = False, epoch: int = 0) -> None:
        super().__init__()
        if int(minibatch_size) <= 0:
            raise ValueError(f"minibatch_size must be > 0, got {minibatch_size}")
        if (num_data_partitions is None) != (partition_index is None):
            raise ValueError("give both num_data_partitions and partition_index, or neither")
        self._source = source
        self._built = None if callable(source) and not hasattr(source, "next_minibatch") else source
        self.minibatch_size = int(minibatch_size)
        self.num_data_partitions = num_data_partitions
        self.partition_index = partition_index
        self.device = device
        self.lengths = lengths
        self.ids = frozenset(ids)
        self.pad_id = int(pad_id)
        self.masks = bool(masks)
        self.set_epoch(epoch)

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration read sweep ``epoch`` (0-based)."""
        if int(epoch) != epoch or int(epoch) < 0:
            raise ValueError(f"set_epoch: the epoch must be an integer >= 0, got {epoch!r}")
        self.epoch = int(epoch)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if state.get("_built") is not state.get("_source"):
            state["_built"] = None  # a worker builds its own source from the factory
        return state

    def partition(self) -> tuple[int, int]:
        """``(num_data_partitions, partition_index)`` this process (and worker) reads."""
        if self.num_data_partitions is not None and self.partition_index is not None:  # both or neither
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
        if self._built is None:
            self._built = self._source()
        return self._built

    def _sweep_size(self, source) -> int | None:
        from ..source import MinibatchSource
        if not isinstance(source, MinibatchSource) or source._reader is None:
            return None
        if not source._reader.global_timeline:
            return None
        return source.sweep_size

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        from ..user_source import read_minibatch
        global _workers_warned
        _check_not_batched(sys._getframe(1))
        parts, index = self.partition()
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers >= 1 and info.id == 0 and not _workers_warned:
            _workers_warned = True
            warnings.warn(_WORKERS_MESSAGE.format(n=info.num_workers), RuntimeWarning, stacklevel=2)
        source = self._make_source()
        reader = getattr(source, "_reader", None)
        handoff = None
        if reader is not None and hasattr(reader, "prepare_tensors"):
            # tensor-ready arrays built as batches are packed, ahead of this loop
            handoff = reader.prepare_tensors(self.ids, self.pad_id, self.masks,
                                             _Prebuild(self.lengths, self.masks))
        sweep = self._sweep_size(source)
        if sweep:
            epoch = self.epoch
            self.epoch += 1
            source.restore_from_checkpoint({POSITION_KEY: epoch * sweep})
            source.set_epoch_end((epoch + 1) * sweep)
            _log.info("reading sweep %d, partition %d of %d", epoch, index, parts)
        else:
            _log.info("reading partition %d of %d", index, parts)
        size, device, lengths, ids = self.minibatch_size, self.device, self.lengths, self.ids
        pad_id, masks = self.pad_id, self.masks
        # the first item the generic way: it checks the streams against ids (the same in every minibatch)
        mb = read_minibatch(source, size, parts, index)
        if not mb:
            return
        yield to_torch(mb, device, lengths, ids, pad_id, masks)
        if device is not None or handoff is None:
            while True:
                mb = read_minibatch(source, size, parts, index)
                if not mb:
                    return
                yield to_torch(mb, device, lengths, ids, pad_id, masks)
        # the fast path: the hand-off gives a reference to the packed batch instead of the
        # minibatch's objects (Handoff.light), and the item is made from the batch's plan, looked
        # up once per batch
        next_minibatch = source.next_minibatch
        key = (lengths, masks)
        last = None
        plan: _BatchPlan | None = None
        while True:
            handoff.light = True
            try:
                mb = next_minibatch(size, None, None, parts, index)
            finally:
                handoff.light = False
            packed = getattr(mb, "packed", None)  # first: a PackedRef's truth is a Python __len__
            if packed is None and not mb:
                return
            if packed is not None:
                batch, j = packed
                if batch is not last:
                    bt = batch.tensor_ready(ids, pad_id, masks)
                    plan = bt.cache
                    if plan is None or plan.key != key:
                        plan = bt.cache = _BatchPlan(bt, lengths, masks)
                    last = batch
                assert plan is not None
                out = plan.get(j)
                if out is not None:
                    yield out
                    continue
            yield to_torch(mb.minibatch() if hasattr(mb, "minibatch") else mb, None, lengths, ids, pad_id, masks)
