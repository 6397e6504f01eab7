"""The ``parallelTrain`` section read into :class:`ParallelParams`, its info line, and the checks that
a reader can be split among the processes; never exchanges anything between processes."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import NotImplementedInCntkio
from ..._log import get_logger
from .._common import Dist, report
from .._params import get_bool, get_float, get_int, get_str, has, key_path
from ..sgd import config_error

__all__ = ["ParallelParams", "METHODS", "PARALLEL_KEYS", "describe", "check_reader_split", "randomized_chunks"]

_log = get_logger("actions.parallel")

METHODS = ("none", "dataparallelsgd", "modelaveragingsgd", "blockmomentumsgd")

#: every key of the parallelTrain section and its method sub-sections that cntkio reads
PARALLEL_KEYS = ("parallelizationMethod", "parallelizationStartEpoch", "distributedMBReading", "syncPerfStats",
                 "DataParallelSGD", "gradientBits", "useZeroThresholdFor1BitQuantization",
                 "useBufferedAsyncGradientAggregation", "ModelAveragingSGD", "BlockMomentumSGD", "blockSize",
                 "blockSizePerWorker", "blockLearningRate", "blockMomentumAsTimeConstant", "blockMomentumPerSync",
                 "resetSGDMomentum", "useNesterovMomentum")


@dataclass
class ParallelParams:
    """A ``parallelTrain`` section, resolved for ``world_size`` processes."""

    method: str = "none"
    start_epoch: int = 1
    sync_perf_stats: int = 0
    gradient_bits: int = 32
    zero_threshold: bool = True
    block_size: int = 0                  # samples of all processes per model sync (MA, BM)
    block_learning_rate: float = 1.0
    block_momentum: float = 0.0          # per sync
    reset_sgd_momentum: bool = True
    nesterov: bool = True

    @classmethod
    def from_config(cls, command, sgd, world_size: int, double: bool = False) -> "ParallelParams":
        """The ``parallelTrain`` section found from the SGD section ``sgd`` (or up the chain)."""
        cfg = sgd if sgd is not None else command
        if not has(cfg, "parallelTrain"):
            return cls()
        pt = cfg("parallelTrain")
        if not hasattr(pt, "exists"):
            # the top-level switch "parallelTrain = true|false" (CNTK.cpp: MPI on or off), found
            # up the chain: a boolean, and no parallelTrain section (CNTK reads it as a record
            # without parallelizationMethod, i.e. "none"); processes come from torchrun here
            get_bool(cfg, "parallelTrain")
            return cls()
        method = (get_str(pt, "parallelizationMethod", "none") or "none").lower()
        if method == "dataparallelasgd":
            # CNTK's asynchronous SGD through a parameter server (Multiverso, SGD.cpp's
            # ParallelizationMethod::dataParallelASGD; Tests/EndToEndTests/ParallelTraining/AsynchronousSGD)
            v = pt("parallelizationMethod")
            raise NotImplementedInCntkio(
                f"{getattr(v, 'file', '') or ''}{':' + str(v.line) if getattr(v, 'line', None) else ''} "
                f"{key_path(pt, 'parallelizationMethod')}=DataParallelASGD: asynchronous SGD with a parameter "
                "server is not implemented in cntkio (DataParallelSGD, ModelAveragingSGD and BlockMomentumSGD are)")
        if method not in METHODS:
            raise config_error(pt, "parallelizationMethod",
                               f"unknown parallelizationMethod {get_str(pt, 'parallelizationMethod')!r}",
                               hint="one of None, DataParallelSGD, ModelAveragingSGD, BlockMomentumSGD")
        p = cls(method=method, start_epoch=get_int(pt, "parallelizationStartEpoch", 1),
                sync_perf_stats=get_int(pt, "syncPerfStats", 0))
        if p.start_epoch < 1:
            raise config_error(pt, "parallelizationStartEpoch", f"must be >= 1 (1-based), found {p.start_epoch}")
        if p.sync_perf_stats < 0:
            raise config_error(pt, "syncPerfStats", f"must be >= 0, found {p.sync_perf_stats}")
        if pt.exists("distributedMBReading") and not get_bool(pt, "distributedMBReading"):
            _log.warning("%s=false is accepted and has no effect: cntkio's readers always read distributed "
                         "(each process its partition), which gives the same minibatches",
                         key_path(pt, "distributedMBReading"))
        if method == "dataparallelsgd":
            sub = pt("DataParallelSGD") if pt.exists("DataParallelSGD") else pt
            full = 64 if double else 32
            p.gradient_bits = get_int(sub, "gradientBits", full)
            if not (1 <= p.gradient_bits <= 32 or p.gradient_bits == 64):
                raise config_error(sub, "gradientBits", f"gradientBits must be 1 to 32 (or 64), found {p.gradient_bits}")
            if p.gradient_bits >= 32:
                p.gradient_bits = 32
            p.zero_threshold = get_bool(sub, "useZeroThresholdFor1BitQuantization", True)
            if get_bool(sub, "useBufferedAsyncGradientAggregation", False):
                v = sub("useBufferedAsyncGradientAggregation")
                raise NotImplementedInCntkio(
                    f"{getattr(v, 'file', '') or ''}{':' + str(v.line) if getattr(v, 'line', None) else ''} "
                    f"{key_path(sub, 'useBufferedAsyncGradientAggregation')}=true: asynchronous gradient "
                    "aggregation is not implemented in cntkio (aggregation is synchronous)")
        elif method in ("modelaveragingsgd", "blockmomentumsgd"):
            name = "ModelAveragingSGD" if method == "modelaveragingsgd" else "BlockMomentumSGD"
            sub = pt(name) if pt.exists(name) else pt
            if sub.exists("blockSize") and sub.exists("blockSizePerWorker"):
                raise config_error(sub, "blockSizePerWorker", "give blockSize or blockSizePerWorker, not both")
            if sub.exists("blockSize"):
                p.block_size = get_int(sub, "blockSize")
            elif sub.exists("blockSizePerWorker"):
                p.block_size = get_int(sub, "blockSizePerWorker") * world_size
            else:
                p.block_size = (40000 if method == "modelaveragingsgd" else 120000) * world_size
            if p.block_size <= 0:
                raise config_error(sub, "blockSize" if sub.exists("blockSize") else "blockSizePerWorker",
                                   f"the block size must be > 0, found {p.block_size}")
            if method == "blockmomentumsgd":
                p.block_learning_rate = get_float(sub, "blockLearningRate", 1.0)
                p.reset_sgd_momentum = get_bool(sub, "resetSGDMomentum", True)
                p.nesterov = get_bool(sub, "useNesterovMomentum", True)
                if sub.exists("blockMomentumAsTimeConstant") and sub.exists("blockMomentumPerSync"):
                    raise config_error(sub, "blockMomentumPerSync",
                                       "give blockMomentumAsTimeConstant or blockMomentumPerSync, not both")
                if sub.exists("blockMomentumAsTimeConstant"):
                    tc = get_float(sub, "blockMomentumAsTimeConstant")
                    if tc < 0:
                        raise config_error(sub, "blockMomentumAsTimeConstant", f"must be >= 0, found {tc}")
                    p.block_momentum = 0.0 if tc == 0 else math.exp(-p.block_size / tc)
                elif sub.exists("blockMomentumPerSync"):
                    p.block_momentum = get_float(sub, "blockMomentumPerSync")
                else:
                    p.block_momentum = 1.0 - 1.0 / world_size
                if not 0 <= p.block_momentum < 1:
                    raise config_error(sub, "blockMomentumPerSync", f"block momentum must be in [0, 1), "
                                       f"found {p.block_momentum}")
        return p



def describe(params: ParallelParams, dist: Dist, where: str) -> None:
    """The one info line of a parallelTrain section."""
    if params.method == "none":
        return
    if not dist.active:
        report(f"{where}: parallelTrain asks for {params.method}; not started under torchrun, so training on "
               "one process", dist=dist)
        return
    _log.info("%s: %s on %d processes (gradientBits=%d, blockSize=%d, start epoch %d)", where, params.method,
              dist.world_size, params.gradient_bits, params.block_size, params.start_epoch)


def randomized_chunks(source) -> int | None:
    """The number of chunks a randomized reader deals to processes, or None when ``source`` is not
    randomized or does not say (legacy readers, sources built from a user deserializer)."""
    from ...source_protocol import has_global_timeline
    if not has_global_timeline(source) or not source.randomize:
        return None
    return int(source.num_chunks)


_RANDOMIZE = "randomize"


def _section_value(cfg, key: str):
    return cfg(key) if cfg is not None and cfg.exists(key) else None


def check_reader_split(params: ParallelParams, source, world_size: int, mb_sizes: list[int], command,
                       sgd_cfg) -> None:
    """A :class:`ConfigError` before training when a ``parallelTrain`` section asks for a method
    (``params``) and ``world_size`` processes cannot split the reader:

    * a minibatch size (of any epoch's ``minibatchSize``) smaller than the number of processes:
      every process reads at least one sequence, so the global minibatch would no longer be the one
      asked for;
    * a randomized reader with fewer chunks than processes: randomized, process ``r`` reads the
      sequences of the randomized chunks ``r, r + W, ...``, so the processes ``chunks .. W-1`` would
      read nothing (CNTK trained on with idle workers; cntkio refuses it).

    The error names the key (``minibatchSize``, or the reader section), the file and line where it
    was written, and the ``parallelTrain`` section. Without a parallelTrain method (plain
    ``torchrun``) both are allowed as before: a worker reads at least one sequence (with a warning)
    and a worker without chunks takes part in every step with no samples (cntk-io-semantics 2.6)."""
    if world_size <= 1 or params.method == "none":
        return
    cfg = sgd_cfg if sgd_cfg is not None else command
    asked = f"parallelTrain ({key_path(cfg, 'parallelTrain')}, {params.method}) on"
    small = [m for m in mb_sizes if m < world_size]
    if small:
        raise config_error(cfg, "minibatchSize",
                           f"{asked} {world_size} processes cannot split a minibatch of {min(small)} samples: "
                           "every process reads at least one sequence of each minibatch",
                           hint=f"give minibatchSize >= {world_size} in every epoch, or run fewer processes")
    chunks = randomized_chunks(source)
    if chunks is not None and chunks < world_size:
        reader = _section_value(command, "reader")
        # the reader's own key (not an SGD/parallelTrain key), named by the error when it is written
        key = _RANDOMIZE if reader is not None and reader.exists(_RANDOMIZE) else "reader"
        where = reader if key == "randomize" else command
        raise config_error(where, key,
                           f"{asked} {world_size} processes cannot split this reader: it has {chunks} randomized "
                           f"chunk(s), and a randomized reader deals whole chunks to processes, so process(es) "
                           f"{chunks}..{world_size - 1} would read nothing",
                           hint=f"run at most {chunks} processes, split the data into more chunks, or "
                           "read it without randomization (randomize=none)")
