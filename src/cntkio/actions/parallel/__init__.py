"""The ``parallelTrain`` section: CNTK's parallel training methods on torch.distributed.

Processes are started by ``torchrun`` (or any launcher that sets ``WORLD_SIZE``, ``RANK``,
``MASTER_ADDR``/``MASTER_PORT``): gloo on CPU, NCCL on GPUs (:func:`cntkio.actions._common.dist_context`).
Every process reads its own partition of each minibatch (cntkio's readers always read
distributed); the methods differ in what the processes exchange:

* ``DataParallelSGD``: the summed gradients of every minibatch, so that every process applies the
  update of the whole minibatch. ``gradientBits`` = 32 (64 in double precision; CNTK's default is
  the precision's width) exchanges them exactly (one all-reduce). Fewer bits quantize each
  gradient column with **error feedback**, as CNTK's 1-bit SGD: the value quantized is the
  gradient plus the residual the previous quantization left, and the new residual is kept. With 1
  bit a column is sent as one bit per element (``>= 0``, or ``>=`` the column mean with
  ``useZeroThresholdFor1BitQuantization=false``) and two reconstruction values (the means of the
  elements on each side); with b bits as b-bit indices into 2**b evenly spaced levels between the
  column's minimum and maximum. Each process all-gathers the packed columns of all processes and
  sums their reconstructions. :attr:`Parallel.bytes_sent` counts what this process contributes.
* ``ModelAveragingSGD``: every process updates its own model with its own samples; after every
  ``blockSize`` samples (all processes together; ``blockSizePerWorker`` times the process count;
  CNTK's default 40000 per process) the models are averaged, each weighted by the samples it
  processed since the last average.
* ``BlockMomentumSGD``: as model averaging, then the block's change ``G = W_prev - W_avg`` goes
  through block momentum: ``D = bm * D + blockLearningRate * G``; ``W_prev -= D``; every process
  continues from ``W_prev`` (``- bm * D`` more with ``useNesterovMomentum=true``, the default).
  ``bm = exp(-blockSize / blockMomentumAsTimeConstant)`` (or ``blockMomentumPerSync``; default
  ``1 - 1/processes``); ``resetSGDMomentum=true`` (default) zeroes the local SGD momentum at each
  sync. ``blockSize`` defaults to 120000 per process.

Before ``parallelizationStartEpoch`` (1-based, default 1) every method trains as exact
data-parallel SGD, which gives the updates of a single process. A block that is not full at the
end of an epoch is synchronised there, so every model file holds the common model.
``distributedMBReading`` is accepted either way (reading is always distributed in cntkio, which
gives the same minibatches); ``syncPerfStats`` N prints every N minibatches the slowest and fastest
process's compute time. ``useBufferedAsyncGradientAggregation=true`` (asynchronous aggregation)
is refused. A ``parallelTrain`` section in a run without torch.distributed trains on one process
after one info line.
"""
from .buckets import QuantizedHookState, quantized_allreduce_hook
from .codec import decode_quantized_sum, dequantize_columns, encode_quantized, quantize_columns
from .methods import Parallel, perf_clock
from .params import METHODS, PARALLEL_KEYS, ParallelParams, check_reader_split, describe, randomized_chunks

__all__ = ["ParallelParams", "Parallel", "METHODS", "PARALLEL_KEYS", "check_reader_split", "randomized_chunks",
           "describe", "perf_clock", "quantize_columns", "dequantize_columns", "encode_quantized",
           "decode_quantized_sum", "QuantizedHookState", "quantized_allreduce_hook"]
