"""What the model actions share: device and precision, reading minibatches as tensors, the
distributed context, loading the model of a command, and CNTK-style result lines."""
from __future__ import annotations

import atexit
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import numpy as np
from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import ConfigError, NotImplementedInCntkio
from ._params import get_bool, get_int, get_str, has, key_path

__all__ = ["resolve_device", "resolve_dtype", "Dist", "dist_context", "stream_samples", "batch_tensors",
           "open_reader", "epoch_minibatches", "report", "fmt_criteria", "trace_level", "apply_cpu_threads"]

_log = get_logger("actions")


# --- device and precision ------------------------------------------------------------------------
def resolve_device(cfg, dist: "Dist | None" = None) -> torch.device:
    """``deviceId`` -> torch device: ``auto`` (default; the first GPU if torch sees one, else the
    CPU), ``cpu`` or ``-1``, a GPU index ``N`` (``cuda:N``). Under torchrun on GPUs each process
    takes ``cuda:LOCAL_RANK``. ``all``/``*N`` (several GPUs in one process) is CNTK's PTask engine:
    use ``torchrun --nproc_per_node=N`` instead."""
    apply_cpu_threads(cfg)
    raw = (get_str(cfg, "deviceId", "auto") or "auto").strip().lower()
    path = key_path(cfg, "deviceId")
    cuda = torch.cuda.is_available()
    if raw in ("cpu", "-1"):
        return torch.device("cpu")
    if raw == "auto":
        if cuda and dist is not None and dist.active:
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", dist.rank)) % torch.cuda.device_count())
        return torch.device("cuda", 0) if cuda else torch.device("cpu")
    if raw == "all" or raw.startswith("*"):
        raise NotImplementedInCntkio(
            f"{path}={raw}: several GPUs in one process (CNTK's PTask engine) is not implemented in "
            "cntkio; run one process per GPU with torchrun --nproc_per_node=N and deviceId=auto")
    try:
        index = int(raw)
    except ValueError as e:
        raise ConfigError(f"expected auto, cpu or a GPU index, found {raw!r}", path=path) from e
    if not cuda or index >= torch.cuda.device_count():
        raise ConfigError(f"GPU {index} is not available to torch (CUDA available: {cuda}, devices: "
                          f"{torch.cuda.device_count() if cuda else 0})", path=path,
                          hint="use deviceId=auto or deviceId=cpu")
    return torch.device("cuda", index)


_DTYPES = {"float": torch.float32, "float32": torch.float32, "double": torch.float64,
           "float64": torch.float64, "float16": torch.float16, "half": torch.float16}


def resolve_dtype(cfg) -> torch.dtype:
    """``precision`` -> torch dtype (``float`` float32, the default; ``double`` float64; ``float16``)."""
    raw = (get_str(cfg, "precision", "float") or "float").strip().lower()
    if raw not in _DTYPES:
        raise ConfigError(f"expected float or double, found {raw!r}", path=key_path(cfg, "precision"))
    return _DTYPES[raw]


def apply_cpu_threads(cfg) -> None:
    """``numCPUThreads`` (CNTK's top-level parameter; 0, the default, leaves torch's choice) ->
    ``torch.set_num_threads``. Small networks run fastest with 1: their matrix products are too
    small to gain from threads, and lose much to them on a busy machine."""
    n = int(get_int(cfg, "numCPUThreads", 0))
    if n < 0:
        raise ConfigError(f"expected a thread count >= 0, found {n}", path=key_path(cfg, "numCPUThreads"))
    if n > 0 and torch.get_num_threads() != n:
        torch.set_num_threads(n)


def trace_level(cfg) -> int:
    return int(get_int(cfg, "traceLevel", 0))


# --- distributed ---------------------------------------------------------------------------------
@dataclass
class Dist:
    """The torch.distributed context of a run (``active`` False for one process)."""

    active: bool = False
    rank: int = 0
    world_size: int = 1
    #: where collectives run: the CPU for gloo, this process's GPU for nccl
    comm_device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_reduce_(self, t: torch.Tensor) -> torch.Tensor:
        """Sum ``t`` over the processes, in place (no-op for one process); a tensor on another
        device than the backend's goes there and back."""
        if self.active:
            if t.device == self.comm_device:
                torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.SUM)
            else:
                tmp = t.to(self.comm_device)
                torch.distributed.all_reduce(tmp, op=torch.distributed.ReduceOp.SUM)
                t.copy_(tmp)
        return t

    def barrier(self) -> None:
        if self.active:
            torch.distributed.barrier()


def _close_process_group() -> None:
    """Tear down the process group this module created (a gloo group left open aborts the process
    at exit). No barrier: a process that exits on an error must not wait for the others (they may
    be blocked in a collective); its exit lets torchrun stop the rest."""
    from ..integrations.torch_backend import distributed as td
    if td.is_available() and td.is_initialized():
        td.destroy_process_group()


def _backend(world: int) -> str:
    """``nccl`` when every process of this node has a GPU of its own, else ``gloo``: NCCL refuses
    two ranks on one GPU ("Duplicate GPU detected"), so more processes on a node than it has GPUs
    (two test processes on a one-GPU machine, say) share the GPUs and reduce through gloo on the
    CPU (``Dist.all_reduce_`` copies there and back)."""
    if not torch.cuda.is_available():
        return "gloo"
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if local > torch.cuda.device_count():
        _log.info("%d processes on this node and %d GPU(s): reducing through gloo on the CPU "
                  "(NCCL needs a GPU per process)", local, torch.cuda.device_count())
        return "gloo"
    return "nccl"


def dist_context() -> Dist:
    """The current torch.distributed context. Under ``torchrun`` (``WORLD_SIZE`` > 1 and
    ``MASTER_ADDR`` set) a process group is created if none exists yet: ``nccl`` when every
    process of the node has a GPU of its own, ``gloo`` otherwise (on CPU, or processes sharing a
    GPU)."""
    from ..integrations.torch_backend import distributed as td
    if not td.is_available():
        return Dist()
    if not td.is_initialized():
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1 or "MASTER_ADDR" not in os.environ:
            return Dist()
        backend = _backend(world)
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        td.init_process_group(backend=backend)
        atexit.register(_close_process_group)
        _log.info("initialised torch.distributed (%s): rank %d of %d", backend, td.get_rank(), td.get_world_size())
    if td.get_world_size() <= 1:
        return Dist(active=False, rank=td.get_rank(), world_size=1)
    comm = torch.device("cpu")
    if td.get_backend() == "nccl":
        comm = torch.device("cuda", torch.cuda.current_device())
    return Dist(active=True, rank=td.get_rank(), world_size=td.get_world_size(), comm_device=comm)


# --- readers -------------------------------------------------------------------------------------
def open_reader(command, key: str = "reader", name: str = "command"):
    """Build the MinibatchSource of a command's ``reader`` section (cntkio.readers)."""
    from ..readers import build_reader
    from ._params import section
    reader_cfg = section(command, key)
    return build_reader(reader_cfg, path=f"{name}.{key}")


def epoch_minibatches(source, *, minibatch_size: int, epoch_size: int, epoch: int, dist: Dist) -> Iterator[Mapping]:
    """The minibatches of 0-based ``epoch`` with CNTK's config-reader epochs (consecutive slices of
    ``epoch_size`` samples of one timeline, 0 = one sweep; :class:`cntkio.readers.EpochReader`).

    Under torch.distributed this process reads its own part of each minibatch
    (``num_data_partitions`` = world size, ``partition_index`` = rank), and the epoch is driven by
    the *global* sample count: every process requests the same size, ``min(minibatch_size, samples
    left in the epoch)``, and the samples all processes read are all-reduced after each minibatch.
    So all processes take the same number of steps, and a global minibatch is the one a single
    process would read whenever the partitioning deals the timeline out (not randomized). A
    process's own timeline position cannot serve: each stops at the start of its next own
    sequence, so positions differ between processes and so would their last minibatches.
    """
    from ..readers.epochs import EpochReader
    reader = EpochReader(source, minibatch_size=minibatch_size, epoch_size=epoch_size,
                         num_subsets=dist.world_size, subset_num=dist.rank)
    if not dist.active:
        yield from reader.epoch(epoch)
        return

    def global_samples(local: int) -> int:
        return int(dist.all_reduce_(torch.tensor([float(local)], dtype=torch.float64)).item())
    yield from reader.epoch(epoch, global_samples=global_samples)


def _stream_name(key: Any) -> str:
    return key if isinstance(key, str) else getattr(key, "name", str(key))


def stream_samples(data) -> np.ndarray:
    """A stream's valid samples as a dense ``[num_samples, dim]`` array (sequences concatenated in
    row order; sparse samples densified), built with whole-array operations."""
    if data.is_sparse:
        csr = data.as_csr()
        n, dim = csr.shape
        dense = np.zeros((n, dim), dtype=csr.dtype)
        np.add.at(dense, (np.repeat(np.arange(n), np.diff(csr.indptr)), csr.indices), csr.data)
        return dense
    mask = np.asarray(data.mask)
    with warnings.catch_warnings():          # the padding is dropped below, by the mask
        warnings.simplefilter("ignore")
        arr = np.asarray(data.asarray())
    if arr.size == 0:                         # no sample in this minibatch (e.g. an undeclared alias)
        return arr.reshape(0, int(np.prod(arr.shape[2:], dtype=np.int64)) if arr.ndim > 2 else 0)
    if arr.ndim >= 2 and arr.shape[:2] == mask.shape:
        flat = arr.reshape(mask.shape[0] * mask.shape[1], -1)
        return flat if mask.all() else flat[mask.reshape(-1) != 0]
    return arr.reshape(arr.shape[0], -1)


def batch_tensors(minibatch: Mapping, names: list[str], dtype: torch.dtype, device: torch.device,
                  *, required: list[str] | None = None, where: str = "reader") -> dict[str, torch.Tensor]:
    """The streams ``names`` of a minibatch as ``[num_samples, dim]`` tensors; a name in ``required``
    that the reader does not deliver is a ConfigError naming the streams it does deliver."""
    by_name = {_stream_name(k): v for k, v in minibatch.items()}
    out = {}
    for n in names:
        if n not in by_name:
            if required and n in required:
                raise ConfigError(f"the network reads a stream named {n!r} but the reader delivers "
                                  f"{', '.join(sorted(by_name)) or 'no streams'}", path=where,
                                  hint=f"name the reader's input {n!r} (SimpleNetworkBuilder's inputs "
                                       "are 'features' and 'labels')")
            continue
        arr = stream_samples(by_name[n])
        out[n] = torch.from_numpy(np.ascontiguousarray(arr)).to(device=device, dtype=dtype)
    return out


# --- output --------------------------------------------------------------------------------------
def fmt_criteria(values: Mapping[str, float], count: int, percent: "frozenset[str] | set[str] | None" = None) -> str:
    """CNTK's result text: ``name = value * samples`` per criterion, classification errors as a
    percentage: the nodes in ``percent`` (:func:`cntkio.actions.eval.percent_nodes`, by the node's
    operation), or without it, names with ``Error`` but not ``Square``."""
    parts = []
    for k, v in values.items():
        avg = v / count if count else float("nan")
        if (k in percent) if percent is not None else ("Error" in k and "Square" not in k):
            parts.append(f"{k} = {100.0 * avg:.3f}% * {count}")
        else:
            parts.append(f"{k} = {avg:.8f} * {count}")
    return "; ".join(parts)


def report(line: str, *, dist: Dist | None = None, stream=None) -> None:
    """Print a result line on the main process (stdout, through tqdm so that bars stay intact)."""
    if dist is not None and not dist.is_main:
        return
    try:
        from tqdm import tqdm
        tqdm.write(line, file=stream or sys.stdout)
    except ImportError:  # pragma: no cover - tqdm is a core dependency
        print(line, file=stream or sys.stdout, flush=True)


def progress_enabled(cfg, dist: Dist) -> bool | None:
    """Whether to show tqdm bars: never on processes other than 0; ``progressBar=true``/``false``
    (a cntkio parameter) forces them on or off; by default (None) they show when stderr is a
    terminal."""
    if not dist.is_main:
        return False
    if has(cfg, "progressBar"):
        return bool(get_bool(cfg, "progressBar"))
    return None


def progress_bar(enabled: bool | None, **kwargs):
    """A tqdm bar on stderr (``enabled`` None: the run's progressBar, else only on a terminal), or
    None when it is off (:mod:`cntkio._progress`)."""
    from .._progress import bar
    kwargs.setdefault("unit", " samples")
    return bar(enabled, **kwargs)


def sweep_total(source) -> int | None:
    """Samples in one sweep of ``source`` (a progress bar's total for epochSize=0), when it tells."""
    from ..readers.epochs import sweep_size
    try:
        return sweep_size(source)
    except (TypeError, ValueError):
        return None
