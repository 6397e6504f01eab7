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

Over a source that offers tensor-ready minibatches (:mod:`cntkio.source_protocol`,
``MinibatchSource.next_tensor_ready``) the dataset asks for those: arrays already in these layouts,
built once per packed batch of up to 256 minibatches on the thread that packs it; converting one
is a few ``torch.from_numpy`` calls on slices of them, without copies. The bridge reads the
source through that contract only (no engine object).
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from ..minibatch import Minibatch, MinibatchData, Value
from ..readers.epochs import EpochReader
from ..source_protocol import Source, has_global_timeline, has_tensor_ready
from ..tensor_ready import TensorBatch, TensorLayout
from .._log import get_logger
from ..user_source import read_minibatch
from .tensors import arrays_to_tensor, place, warm_csr
from .torch_backend import torch

__all__ = ["value_to_torch", "value_to_ids", "to_torch", "distributed_partition",
           "MinibatchIterableDataset"]

_log = get_logger("integrations.torch")
_from_numpy = torch.from_numpy
_sparse_csr = torch.sparse_csr_tensor


def value_to_torch(value: Value, device: Any = None, pin_memory: bool = False) -> torch.Tensor:
    """One stream's values as a tensor (see the module docstring for the layouts); with
    ``pin_memory`` in page-locked memory (and copied to ``device`` without blocking)."""
    return arrays_to_tensor(value.tensor_arrays(), device, pin_memory)


def value_to_ids(value: Value, name: str = "", pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A one-hot sparse Value (every sample exactly one non-zero, of value 1) as padded int64 token
    ids ``[S, T]`` (padding ``pad_id``) and the bool mask of valid cells ``[S, T]``."""
    return value.token_ids(pad_id, name)


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

    def __init__(self, bt: TensorBatch, lengths: bool, masks: bool) -> None:
        self.key = (lengths, masks)
        self.empty = bt.empty
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
                warm_csr()
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
    """A :class:`~cntkio.tensor_ready.TensorLayout`'s ``prepare``: readies each tensor-ready batch
    for tensors (:class:`_BatchPlan`) on the thread that packs it (the background packing thread
    in sequential reading), ahead of the consumer."""

    __slots__ = ("key",)

    def __init__(self, lengths: bool, masks: bool) -> None:
        self.key = (lengths, masks)
        warm_csr()

    def __call__(self, bt: TensorBatch) -> None:
        if bt.cache is None or bt.cache.key != self.key:
            bt.cache = _BatchPlan(bt, *self.key)


def _plan(bt: TensorBatch, lengths: bool, masks: bool) -> _BatchPlan:
    plan = bt.cache
    if plan is None or plan.key != (lengths, masks):
        plan = bt.cache = _BatchPlan(bt, lengths, masks)
    return plan


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
    A minibatch its source packed in a batch converts from the batch's tensor-ready arrays
    (:meth:`~cntkio.minibatch.Minibatch.tensor_ready`), without copies.
    """
    ids = frozenset(ids)
    names = [_name(k) for k in minibatch]
    if ids:
        _check_ids(ids, names, {n: mb.is_sparse for n, mb in zip(names, minibatch.values())})
    if isinstance(minibatch, Minibatch):
        ready = minibatch.tensor_ready(TensorLayout(ids, int(pad_id), bool(masks)))
        if ready is not None:
            out = _plan(ready.batch, lengths, masks).get(ready.index)
            if out is not None:
                return out if device is None and not pin_memory else \
                    {k: place(v, device, pin_memory) for k, v in out.items()}
    out = {}
    for name, mb in zip(names, minibatch.values()):
        lt = torch.from_numpy(np.ascontiguousarray(mb.sequence_lengths, np.int64))
        if name in ids:
            tid, valid = mb.data.token_ids(pad_id, name)
            out[name] = torch.from_numpy(tid)
            if masks:
                out[name + "_mask"] = torch.from_numpy(valid)
        else:
            out[name] = mb.to_torch()
            if masks:
                out[name + "_mask"] = torch.from_numpy(mb.mask != 0)
        if lengths:
            out[name + "_lengths"] = lt
    return out if device is None and not pin_memory else {k: place(v, device, pin_memory) for k, v in out.items()}


def distributed_partition() -> tuple[int, int]:
    """``(world_size, rank)`` from ``torch.distributed`` when initialised, else ``(1, 0)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_world_size()), int(dist.get_rank())
    return 1, 0


_WORKERS_MESSAGE = (
    "cntkio: MinibatchIterableDataset in {n} DataLoader worker processes: each worker reads its "
    "own share of the partition (correct, disjoint, resumable with torchdata's StatefulDataLoader), "
    "but every tensor is then copied into shared memory and pickled between processes, which costs "
    "more per minibatch than cntkio's reading, already done on native threads off the GIL: "
    "in-process is faster. bench/ceiling.py --quick measured 4-5 times the CPU per sample with 2 "
    "workers (CBF rows 8.7 -> 38.4 us, token sequences 12.0 -> 43.2 us; a hand-written np.memmap "
    "loader 3.6 -> 20.6 and 6.5 -> 29.1: docs/from-pytorch.md). Use num_workers=0 (the default); "
    "for more processes use torch.distributed ranks (torchrun), which cntkio partitions without copies.")
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
        self._built = source if isinstance(source, Source) else None   # else a factory
        self.minibatch_size = int(minibatch_size)
        self.num_data_partitions = num_data_partitions
        self.partition_index = partition_index
        self.device = device
        self.lengths = lengths
        self.ids = frozenset(ids)
        self.pad_id = int(pad_id)
        self.masks = bool(masks)
        self.set_epoch(epoch)
        self._reading: tuple | None = None  # (epoch, partition) of the iteration under way
        self._resume: dict | None = None    # a loaded state_dict, for the next iteration

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration read sweep ``epoch`` (0-based)."""
        if int(epoch) != epoch or int(epoch) < 0:
            raise ValueError(f"set_epoch: the epoch must be an integer >= 0, got {epoch!r}")
        self.epoch = int(epoch)

    # --- torchdata's Stateful protocol (StatefulDataLoader: exact mid-epoch resume) ---------------
    def state_dict(self) -> dict:
        """Where this dataset (this process's copy: a DataLoader worker's own) stands: the sweep
        being read, its partition and the source's checkpoint after the last item yielded; between
        iterations, the next sweep only. JSON-able. ``torchdata``'s ``StatefulDataLoader`` calls it
        after every item, in each worker, and hands each worker its own state back on resume."""
        if self._reading is None:
            return {"epoch": self.epoch, "partition": None, "source": None}
        epoch, partition = self._reading
        return {"epoch": epoch, "partition": list(partition), "source": self._make_source().get_checkpoint_state()}

    def load_state_dict(self, state: Mapping) -> None:
        """Continue from a :meth:`state_dict`: the next iteration reads the rest of the sweep it
        names (exactly, from the source's checkpoint) or, for a state taken between iterations,
        that sweep from its start (any partitioning: the global timeline is the same)."""
        self.set_epoch(int(state["epoch"]))
        self._resume = dict(state) if state.get("source") is not None else None

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

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        global _workers_warned
        _check_not_batched(sys._getframe(1))
        parts, index = self.partition()
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers >= 1 and info.id == 0 and not _workers_warned:
            _workers_warned = True
            warnings.warn(_WORKERS_MESSAGE.format(n=info.num_workers), RuntimeWarning, stacklevel=2)
        source = self._make_source()
        if self.ids:  # the streams are the same in every minibatch: checked once
            infos = source.stream_infos()
            _check_ids(self.ids, [s.name for s in infos], {s.name: s.is_sparse for s in infos})
        resume, self._resume = self._resume, None
        if resume is not None and tuple(resume["partition"]) != (parts, index):
            raise ValueError(f"MinibatchIterableDataset: the state was taken reading partition "
                             f"{tuple(resume['partition'])} (of num_data_partitions x DataLoader workers), this "
                             f"iteration reads {(parts, index)}; a sweep resumes exactly on the same partitioning "
                             "(a state taken between sweeps resumes on any)")
        epoch = self.epoch
        if has_global_timeline(source) and source.sweep_size:
            self.epoch = epoch + 1  # the next iteration reads the next sweep
        self._reading = (epoch, (parts, index))
        try:
            yield from self._items(source, epoch, parts, index, None if resume is None else resume["source"])
        finally:
            self._reading = None

    def _items(self, source, epoch: int, parts: int, index: int, state) -> Iterator[dict[str, torch.Tensor]]:
        size, device, lengths, ids = self.minibatch_size, self.device, self.lengths, self.ids
        pad_id, masks = self.pad_id, self.masks
        if not (has_global_timeline(source) and source.sweep_size):
            _log.info("reading partition %d of %d", index, parts)
            if state is not None:
                source.restore_from_checkpoint(state)
            while True:
                mb = read_minibatch(source, size, parts, index)
                if not mb:
                    return
                yield to_torch(mb, device, lengths, ids, pad_id, masks)
        _log.info("reading sweep %d, partition %d of %d%s", epoch, index, parts, "" if state is None else ", resumed")
        # the one epoch loop (cntkio.readers.epochs): a sweep per iteration, whatever the source's
        # own max_sweeps/max_samples
        epochs = EpochReader(source, size, 0, num_subsets=parts, subset_num=index, within_source_end=False)
        if device is not None or not has_tensor_ready(source):
            for mb in epochs.epoch(epoch, state=state):
                yield to_torch(mb, device, lengths, ids, pad_id, masks)
            return
        # the fast path: tensor-ready minibatches, each item made from its batch's plan (made
        # on the packing thread by the layout's prepare, else here once per batch)
        layout = TensorLayout(ids, pad_id, masks, _Prebuild(lengths, masks))
        last = None
        plan: _BatchPlan | None = None
        for ready in epochs.epoch(epoch, layout=layout, state=state):
            batch = ready.batch
            if batch is not last:
                plan = _plan(batch, lengths, masks)
                last = batch
            assert plan is not None
            out = plan.get(ready.index)
            yield out if out is not None else to_torch(ready.minibatch(), None, lengths, ids, pad_id, masks)
