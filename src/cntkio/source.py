"""``MinibatchSource``: the front of the pipeline, with cntk.io's API (cntk-io-semantics 1.2).

Deserializers (config dicts from the factories such as ``CTFDeserializer(...)``, or
:class:`~cntkio.deserializers.base.Deserializer` instances) are joined by key, randomized
(CNTK's block randomizer, or the local-timeline pair for a ``UserDeserializer``), packed (sequence,
frame or truncated-BPTT mode) and delivered as ``{StreamInformation: MinibatchData}`` with NumPy
and SciPy values. Chunk loads and the next minibatch run on background threads.

Beyond cntk.io: ``iter(minibatch_size=...)``, ``for mb in source``, ``close()`` and use as a
context manager; checkpoints restore exactly in every mode (cntk-ctf-behaviours, table row 19),
also onto a different number of workers (the same global timeline continues).
"""
from __future__ import annotations

import logging
import weakref
from time import perf_counter as _now
from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np

from .constants import FULL_DATA_SWEEP, INFINITELY_REPEAT, DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS, TraceLevel
from .deserializers.composite import CompositeDeserializer
from .deserializers.protocol import Deserializer, is_local_timeline
from .errors import ConfigError
from .engine import closer
from .engine.global_timeline import GlobalTimeline
from .engine.local_timeline import LTNoRandomizer, LTTumblingWindowRandomizer
from .engine.prefetch import default_pool_size
from .engine.reader import Reader
from .engine.stats import SourceStats
from .registry import build_deserializer
from .streams import Record, StreamInformation
from .tensor_ready import TensorLayout, TensorMinibatch
from .values import check_int

__all__ = ["MinibatchSource", "DEFAULT_ITER_MINIBATCH_SIZE"]

log = logging.getLogger("cntkio.source")

#: Minibatch size (samples) used by ``for mb in source`` (``source.iter()`` takes any size).
DEFAULT_ITER_MINIBATCH_SIZE = 256

_DEFAULT_LAYOUT = TensorLayout()
_MULTITHREADED_TYPES = ("ImageDeserializer", "Base64ImageDeserializer")
_USER_COMPOSITION_ERROR = "Currently composition for user defined deserializers is not supported."


def _flatten(deserializers) -> list:
    if isinstance(deserializers, (list, tuple)):
        out = []
        for d in deserializers:
            out.extend(_flatten(d))
        return out
    return [deserializers]


def _as_int(name: str, value) -> int:
    return check_int(value, name, owner="MinibatchSource")


class MinibatchSource:
    """Reads minibatches from deserializers, as ``cntk.io.MinibatchSource``.

    The arguments have cntk.io's names, order and defaults.

    Args:
        deserializers: one deserializer or a list; the first one is primary.
        max_samples: epoch length in samples on the global timeline; ``FULL_DATA_SWEEP`` = 1 sweep.
        max_sweeps: epoch length in sweeps (not together with ``max_samples``).
        randomization_window_in_chunks: non-zero turns on a chunk-based window (default 128).
        randomization_window_in_samples: non-zero means a sample-based window.
        randomization_seed: sweep ``k`` is randomized with ``randomization_seed + k``.
        trace_level: 2 or more shows info lines; warnings show at every level (an int or ``TraceLevel``).
        multithreaded_deserializer: ``None`` = on for image deserializers; loads chunks on a pool.
        frame_mode: every sequence must be one sample.
        truncation_length: non-zero = truncated-BPTT packing with this many steps.
        parallel_sequences: cntkio only (CNTK's legacy ``nbrUttsInEachRecurrentIter``). Non-zero =
            truncated-BPTT packing with exactly this many parallel sequences per minibatch, each
            ``truncation_length`` steps, or, with ``truncation_length`` 0, as many steps as the
            minibatch size asked for.
        parallel_sparse: cntkio only. With ``parallel_sequences``, sparse streams stay sparse (CNTK's
            legacy sentence readers' inputs; truncated BPTT otherwise densifies them, as CNTK 2.7).
        parallel_groups: cntkio only. With ``parallel_sequences``, CNTK's LM/LU sentence readers'
            grouping: the rows of a minibatch hold sentences of one length, in lockstep, the next
            group starting when they end (see ``cntkio.engine.reader``).
        randomize: ``False`` forces no randomization.
        rolling_window: cntkio only (the legacy HTKMLFReader's ``readMethod = rollingWindow``). With
            ``frame_mode`` and ``randomization_window_in_samples`` N: frames in corpus order, each
            delivered less than N // 2 positions from its corpus position, per sweep by the seed
            (``cntkio.engine.randomizer.rolling_order``); N of twice the sweep or more shuffles the
            whole sweep. Not CNTK's order (which came from the C library's ``rand()``).
        random_ordering: cntkio only (the legacy UCIFastReader's ``randomize``). Non-zero: CNTK's
            ``RandomOrdering`` over blocks of this many records, each chunk of the deserializer
            one block, read in input order (``cntkio.engine.ordering``); the window arguments are
            then not used.
        max_errors: invalid sequences that may be dropped before raising.
        random_access: cntkio only. When randomized, parse each batch of minibatches' sequences
            straight out of the input in delivery order (CTF: out of a read-only mapping of the
            file) instead of parsing the whole chunks of the randomization window first; same
            minibatches, no wait for the window, less memory. Used when every deserializer
            supports it (CTF, not with ``numChunksToCache``) and not with truncated BPTT.
            ``False`` loads whole chunks as CNTK did (better on storage where random reads are
            slow: disks, network file systems).
        global_randomization: cntkio only (config ``globalRandomization``). When randomized, each
            sweep ``k`` delivers every sequence of the corpus in the order of a keyed bijection of
            ``(randomization_seed, k)`` (``cntkio.engine.index_shuffle``: a Feistel network with
            cycle walking, as Grain's index shuffle) instead of CNTK's block randomizer; the window
            arguments are then not used. No table of the order: a restore needs the position only.
            CBF files on local storage; not with truncated BPTT.
        full_minibatches: cntkio only (the legacy readers' ``minibatchMode = full``). Config epochs
            (:class:`cntkio.readers.EpochReader`) end before a minibatch that would be partial.

    The source implements the contract of :mod:`cntkio.source_protocol`: a
    :class:`~cntkio.source_protocol.GlobalTimelineSource` (built-in deserializers: ``seek``,
    ``position``, ``set_epoch_end``) and a :class:`~cntkio.source_protocol.TensorReadySource`
    (``next_tensor_ready``: minibatches as arrays in tensor layouts, the torch bridge's fast path).
    """

    def __init__(self, deserializers: Any, max_samples: int = INFINITELY_REPEAT, max_sweeps: int = INFINITELY_REPEAT,
                 randomization_window_in_chunks: int = DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
                 randomization_window_in_samples: int = 0, randomization_seed: int = 0,
                 trace_level: int = TraceLevel.Warning, multithreaded_deserializer: bool | None = None,
                 frame_mode: bool = False, truncation_length: int = 0, randomize: bool = True,
                 max_errors: int = 0, random_access: bool = True, parallel_sequences: int = 0,
                 parallel_sparse: bool = False, parallel_groups: bool = False,
                 rolling_window: bool = False, random_ordering: int = 0,
                 full_minibatches: bool = False, global_randomization: bool = False) -> None:
        self._reader: Reader | None = None
        self._stats = SourceStats()
        self.random_access = bool(random_access)
        #: config epochs end before a partial minibatch (the legacy ``minibatchMode = full``)
        self.full_minibatches = bool(full_minibatches)
        items = _flatten(deserializers)
        if not items:
            raise ValueError("MinibatchSource: at least one deserializer is required")
        if any(is_local_timeline(d) for d in items) and len(items) > 1:
            raise ValueError(_USER_COMPOSITION_ERROR)
        max_samples = _as_int("max_samples", max_samples)
        max_sweeps = _as_int("max_sweeps", max_sweeps)
        if max_samples != INFINITELY_REPEAT and max_sweeps != INFINITELY_REPEAT:
            raise RuntimeError("MinibatchSource: max_samples and max_sweeps cannot be specified together "
                               f"(got max_samples={max_samples}, max_sweeps={max_sweeps}); set only one")
        win_chunks = _as_int("randomization_window_in_chunks", randomization_window_in_chunks)
        win_samples = _as_int("randomization_window_in_samples", randomization_window_in_samples)
        if not randomize:
            win_chunks = win_samples = 0
        if win_chunks and win_samples:
            raise RuntimeError("MinibatchSource: randomization_window_in_chunks and "
                               "randomization_window_in_samples cannot both be non-zero "
                               f"(got {win_chunks} and {win_samples}); set one of them to 0")
        truncation_length = _as_int("truncation_length", truncation_length)
        parallel_sequences = _as_int("parallel_sequences", parallel_sequences)
        if parallel_sequences < 0:
            raise ValueError(f"MinibatchSource: parallel_sequences must be >= 0, got {parallel_sequences}")
        if frame_mode and (truncation_length or parallel_sequences):
            raise RuntimeError("MinibatchSource: frame_mode cannot be combined with truncation_length "
                               f"{truncation_length} or parallel_sequences {parallel_sequences}; use one "
                               "packing mode")
        if rolling_window and (not frame_mode or win_chunks):
            raise RuntimeError("MinibatchSource: rolling_window randomizes frames: it needs frame_mode=True and "
                               "randomization_window_in_samples (got frame_mode="
                               f"{bool(frame_mode)}, randomization_window_in_chunks={win_chunks})")
        #: cntkio's rolling window over the corpus order (``readMethod = rollingWindow``)
        self.rolling_window = bool(rolling_window) and bool(win_samples)
        #: CNTK's legacy RandomOrdering over blocks of this many records (0: not used)
        self.random_ordering = _as_int("random_ordering", random_ordering) if randomize else 0
        if self.random_ordering < 0:
            raise ValueError(f"MinibatchSource: random_ordering must be >= 0, got {self.random_ordering}")
        if self.random_ordering and not (win_chunks or win_samples):
            win_chunks = 1              # randomized: the blocks are the chunks
        self.trace_level = int(trace_level)
        self.max_samples = max_samples
        self.max_sweeps = max_sweeps
        self.randomize = bool(win_chunks or win_samples)
        #: cntkio's global randomization (a keyed bijection over every sequence per sweep)
        self.global_randomization = bool(global_randomization) and self.randomize
        if self.global_randomization and (self.rolling_window or self.random_ordering):
            raise RuntimeError("MinibatchSource: global_randomization orders the whole sweep itself; it cannot be "
                               "combined with rolling_window or random_ordering")
        self.randomization_window = win_samples or win_chunks
        self.sample_based_window = bool(win_samples)
        self.randomization_seed = _as_int("randomization_seed", randomization_seed)
        self.frame_mode = bool(frame_mode)
        self.truncation_length = truncation_length
        self.parallel_sequences = parallel_sequences
        self.parallel_sparse = bool(parallel_sparse) and parallel_sequences > 0
        self.parallel_groups = bool(parallel_groups) and parallel_sequences > 0
        #: truncated-BPTT packing (a truncation length or a fixed number of parallel sequences)
        self.truncated = bool(truncation_length or parallel_sequences)
        self.max_errors = _as_int("max_errors", max_errors)
        if multithreaded_deserializer is None:
            multithreaded_deserializer = any(
                (isinstance(d, Mapping) and d.get("type") in _MULTITHREADED_TYPES)
                or type(d).__name__ in _MULTITHREADED_TYPES for d in items)
        self.multithreaded_deserializer = bool(multithreaded_deserializer)
        # chunk loads run ahead on background threads; two of them let the next chunks of a window
        # parse at once (the C parser releases the GIL); a multithreaded deserializer gets a pool
        threads = default_pool_size() if self.multithreaded_deserializer else min(2, default_pool_size())

        built = [self._build(d) for d in items]
        self._deserializers = built
        if is_local_timeline(built[0]):
            if self.global_randomization:
                raise ConfigError("global randomization is not possible for a UserDeserializer (it knows "
                                  "its sequences only chunk by chunk)", path="globalRandomization")
            self._init_user(built[0], threads)
        else:
            self._init_builtin(built, threads)
        self._last_mb_data: dict | None = None
        self._streams: Record | None = None
        # collected without close(): the reader is closed on the closer thread (engine/closer.py:
        # joining threads from a garbage-collection callback can deadlock)
        self._finalizer = weakref.finalize(self, closer.close_later, self._reader)
        closer.start()

    # --- construction -------------------------------------------------------------------------
    def _build(self, d) -> Deserializer:
        if is_local_timeline(d) and not isinstance(d, Deserializer):
            from .deserializers.user import as_deserializer  # checks and converts user chunks
            return as_deserializer(d, trace_level=self.trace_level)
        if isinstance(d, Deserializer) or is_local_timeline(d):
            return d
        if isinstance(d, Mapping):
            if "input" in d and not d["input"] and d.get("type") != "CNTKBinaryFormatDeserializer":
                raise ValueError(f"{d.get('type', 'deserializer')}: no input streams are configured "
                                 f"(file {d.get('file', '')!r}); give at least one StreamDef\n\n[CALL STACK]\n"
                                 "    cntkio.source.MinibatchSource.__init__")
            return build_deserializer(d, frame_mode=self.frame_mode, trace_level=self.trace_level,
                                      randomization_seed=self.randomization_seed)
        raise TypeError(f"MinibatchSource: a deserializer must be a config dict (e.g. from CTFDeserializer) "
                        f"or a Deserializer, got {type(d).__name__}")

    def _output_infos(self, infos: list[StreamInformation]) -> list[StreamInformation]:
        if not self.truncated:
            return infos
        for i in infos:
            if any(s <= 0 for s in i.sample_shape):
                raise RuntimeError("Input streams with unknown sample shape are currently not supported "
                                   f"(stream '{i.name}')")
        # truncated BPTT: sparse inputs come out dense (2.10), unless parallel_sparse
        return [i if self.parallel_sparse else
                StreamInformation(i.name, i.m_id, "dense", i.dtype, i.sample_shape, i.defines_mb_size)
                for i in infos]

    def _epoch_end(self, sweep_samples: int | None) -> int | None:
        if self.max_samples == FULL_DATA_SWEEP:
            return sweep_samples
        if self.max_samples != INFINITELY_REPEAT:
            return self.max_samples
        if self.max_sweeps != INFINITELY_REPEAT:
            return None if sweep_samples is None else self.max_sweeps * sweep_samples
        return None

    def _init_builtin(self, built: list[Deserializer], threads: int) -> None:
        corpus = CompositeDeserializer(built, trace_level=self.trace_level)
        self._corpus = corpus
        self._num_chunks = len(corpus.chunk_infos())
        self._stream_infos = self._output_infos(corpus.stream_infos())
        sweep = sum(c.num_samples for c in corpus.chunk_infos())
        policy = GlobalTimeline(
            corpus, self._stream_infos, randomize=self.randomize, window=self.randomization_window,
            sample_based=self.sample_based_window, seed=self.randomization_seed,
            epoch_end=self._epoch_end(sweep), frame_mode=self.frame_mode,
            truncated=self.truncated, max_errors=self.max_errors, loader_threads=threads,
            trace_level=self.trace_level, random_access=self.random_access, rolling=self.rolling_window,
            random_ordering=self.random_ordering, global_randomization=self.global_randomization)
        self._reader = self._make_reader(policy)

    def _make_reader(self, policy) -> Reader:
        return Reader(policy, self._stream_infos, truncation_length=self.truncation_length,
                      frame_mode=self.frame_mode, trace_level=self.trace_level,
                      parallel_sequences=self.parallel_sequences, group_lengths=self.parallel_groups)

    def _init_user(self, d, threads: int) -> None:
        self._corpus = d
        self._num_chunks = int(d.num_chunks())
        infos = list(d.stream_infos())
        self._stream_infos = self._output_infos(infos)
        max_sweeps = None if self.max_sweeps == INFINITELY_REPEAT else self.max_sweeps
        max_samples = None
        if self.max_samples == FULL_DATA_SWEEP:
            max_sweeps = 1
        elif self.max_samples != INFINITELY_REPEAT:
            max_samples = self.max_samples
        common = dict(max_samples=max_samples, max_sweeps=max_sweeps, frame_mode=self.frame_mode,
                      loader_threads=threads)
        policy: LTTumblingWindowRandomizer | LTNoRandomizer
        if self.randomize:
            policy = LTTumblingWindowRandomizer(d, self._stream_infos, window=self.randomization_window,
                                                sample_based=self.sample_based_window,
                                                seed=self.randomization_seed, **common)
        else:
            policy = LTNoRandomizer(d, self._stream_infos, **common)
        self._reader = self._make_reader(policy)

    # --- streams ------------------------------------------------------------------------------
    def stream_infos(self) -> list[StreamInformation]:
        """All output streams."""
        return list(self._stream_infos)

    @property
    def streams(self) -> Record:
        """Stream name -> StreamInformation, with attribute access."""
        if self._streams is None:
            self._streams = Record({s.name: s for s in self._stream_infos})
        return self._streams

    def stream_info(self, name: str) -> StreamInformation:
        """The stream of that name (RuntimeError when there is none or more than one)."""
        found = [s for s in self._stream_infos if s.name == name]
        if len(found) != 1:
            raise RuntimeError(f"MinibatchSource: {'no' if not found else 'more than one'} stream named "
                               f"'{name}'; the streams are {[s.name for s in self._stream_infos]}")
        return found[0]

    def __getitem__(self, name: str) -> StreamInformation:
        return self.stream_info(name)

    # --- reading ------------------------------------------------------------------------------
    def next_minibatch(self, minibatch_size_in_samples: int, input_map: Mapping | None = None, device: Any = None,
                       num_data_partitions: int | None = None, partition_index: int | None = None) -> dict:
        """The next minibatch: ``{StreamInformation: MinibatchData}``, or ``{}`` at the epoch end.

        With ``input_map`` the result is ``{key: mb[stream]}``; that dict is cleared in place by the
        next call. ``num_data_partitions``/``partition_index`` read this worker's share (CNTK's split).
        ``device`` is accepted for compatibility; outputs are NumPy/SciPy (see ``to_torch``).
        """
        reader = self._open()
        size, W, r = self._call_args(minibatch_size_in_samples, num_data_partitions, partition_index)
        if self._last_mb_data is not None:
            self._last_mb_data.clear()
            self._last_mb_data = None
        t0 = _now()
        mb = reader.next(size, W, r)
        self._stats.record(mb, _now() - t0)
        if mb is None:
            if self.trace_level >= 2:
                log.info("minibatch source statistics: %s", self.stats())
            return {}
        if input_map is None:
            return mb  # the packers build Minibatch dicts
        out = {key: mb[info] for key, info in input_map.items()}
        self._last_mb_data = out
        return out

    @staticmethod
    def _call_args(size, num_data_partitions, partition_index) -> tuple[int, int, int]:
        size = int(size)
        if size <= 0:
            raise ValueError(f"next_minibatch: minibatch_size_in_samples must be > 0, got {size}")
        W = 1 if num_data_partitions is None else int(num_data_partitions)
        r = 0 if partition_index is None else int(partition_index)
        if W < 1:
            raise ValueError(f"next_minibatch: num_data_partitions must be >= 1, got {W}")
        if not 0 <= r < W:
            raise ValueError(f"next_minibatch: partition_index must be in [0, {W}), got {r}")
        return size, W, r

    def stats(self) -> dict:
        """What this source has handed out: minibatches, sequences and samples (the first
        stream's), seconds spent inside ``next_minibatch`` (waiting for the reader and making
        the minibatch) and since the first call, the packed minibatches waiting (prefetch depth)
        and the invalid sequences dropped (``errors``); for built-in deserializers also the
        seconds of the reading stages, on whatever thread they ran (``seconds_parse``,
        ``seconds_randomize``, ``seconds_pack``) and ``bytes_loaded``
        (:class:`~cntkio.engine.stats.StageClock`). Logged at the epoch end at trace level 2."""
        reader = self._reader
        return self._stats.as_dict(None if reader is None else reader.handoff,
                                   None if reader is None else reader.clock)

    def iter(self, minibatch_size: int = DEFAULT_ITER_MINIBATCH_SIZE, input_map: Mapping | None = None,
             num_data_partitions: int | None = None, partition_index: int | None = None) -> Iterator[dict]:
        """Minibatches until the epoch end (``for mb in src.iter(minibatch_size=64)``)."""
        while True:
            mb = self.next_minibatch(minibatch_size, input_map=input_map,
                                     num_data_partitions=num_data_partitions, partition_index=partition_index)
            if not mb:
                return
            yield dict(mb) if input_map is not None else mb

    def __iter__(self) -> Iterator[dict]:
        return self.iter()

    # --- state --------------------------------------------------------------------------------
    def get_checkpoint_state(self) -> dict:
        """The reading position: ``{'minibatchSourcePosition': samples}`` for built-in
        deserializers (plus the slots in truncated BPTT), the local-timeline keys for a user one."""
        if self._reader is None:
            raise RuntimeError("MinibatchSource is closed")
        return self._reader.get_state()

    def restore_from_checkpoint(self, checkpoint: Mapping) -> None:
        """Continue from a state of :meth:`get_checkpoint_state` (also of another source over the
        same data and options). An ended epoch starts again from there."""
        if self._reader is None:
            raise RuntimeError("MinibatchSource is closed")
        if self._last_mb_data is not None:
            self._last_mb_data.clear()
            self._last_mb_data = None
        self._reader.set_state(dict(checkpoint))

    @property
    def current_position(self) -> dict:
        """Alias of :meth:`get_checkpoint_state` / :meth:`restore_from_checkpoint`."""
        return self.get_checkpoint_state()

    @current_position.setter
    def current_position(self, state: Mapping) -> None:
        self.restore_from_checkpoint(state)

    def is_infinite(self) -> bool:
        """True when neither max_samples nor max_sweeps limits the epoch."""
        return self.max_samples == INFINITELY_REPEAT and self.max_sweeps == INFINITELY_REPEAT

    # --- the global timeline (cntkio.source_protocol.GlobalTimelineSource) ------------------------
    def has_global_timeline(self) -> bool:
        """True for built-in deserializers (positions are global sample positions); False over a
        ``UserDeserializer`` (CNTK's local timeline)."""
        return self._open().global_timeline

    @property
    def sweep_size(self) -> int | None:
        """Samples in one sweep (None for a user deserializer, whose size is unknown up front)."""
        return None if self._reader is None else self._reader.sweep_size

    @property
    def num_chunks(self) -> int:
        """The chunks of the corpus (after the join): what a randomized timeline deals out to
        partitions."""
        return self._num_chunks

    @property
    def epoch_end(self) -> int | None:
        """The global sample position where the epoch ends (from ``max_samples``/``max_sweeps`` or
        :meth:`set_epoch_end`); None when it never ends, and over a user deserializer (no global
        positions)."""
        reader = self._reader
        return reader.epoch_end if reader is not None and reader.global_timeline else None

    def set_epoch_end(self, end: int | None) -> None:
        """Move the epoch end to global sample position ``end`` (None: endless), keeping the
        reading position. A sequence is delivered iff it starts before the end (as in CNTK),
        in every worker's partition; in truncated BPTT the slots drain there. CNTK's
        config-reader epochs (``epochSize`` slices of one timeline, cntkio.readers.epochs) are
        built on this. Only for built-in deserializers (a user deserializer's local timeline has
        no global positions)."""
        reader = self._require_global("set_epoch_end")
        if end is not None and int(end) < 0:
            raise ValueError(f"set_epoch_end: the end must be >= 0 or None, got {end}")
        reader.set_epoch_end(end)

    def use_global_partition_budget(self) -> None:
        """Distributed reading as CNTK's config readers without a local timeline (HTKMLFReader,
        CNTKTextFormatReader, CNTKBinaryReader: their packers ask the randomizer for the minibatch
        size in global samples, SequencePacker.cpp:131): a call with ``num_data_partitions`` > 1
        covers the next ``minibatch_size_in_samples`` samples of the global timeline and this worker
        takes its own sequences among them, so the workers' minibatches add up to the minibatch
        size. (cntk.io's default: each worker takes ``size / workers`` samples of its own.) The
        reader factory sets it for those reader types; only for built-in deserializers."""
        self._require_global("use_global_partition_budget").use_global_budget()

    def position(self) -> int:
        """The global sample position after the last minibatch returned (the checkpoint's
        ``minibatchSourcePosition``)."""
        return self._require_global("position").position()

    def seek(self, position: int) -> int:
        """Go to the first sequence starting at or after global sample ``position`` (dropping what
        was read ahead; truncated-BPTT slots are emptied) and return the position reached."""
        reader = self._require_global("seek")
        position = _as_int("position", position)
        if position < 0:
            raise ValueError(f"seek: the position must be >= 0, got {position}")
        if self._last_mb_data is not None:
            self._last_mb_data.clear()
            self._last_mb_data = None
        return reader.seek(position)

    def sweep_order(self, sweep: int = 0) -> np.ndarray:
        """The order in which sweep ``sweep`` delivers the sequences, as their ordinals in storage
        order (int64, one per sequence of the sweep; ``arange`` when not randomized): what
        ``cntkio bench`` measures the shuffle's quality on. Built-in deserializers only."""
        return self._require_global("sweep_order").sweep_order(_as_int("sweep", sweep))

    def _require_global(self, what: str) -> Reader:
        reader = self._open()
        if not reader.global_timeline:
            raise TypeError(f"MinibatchSource.{what}: a source over a UserDeserializer has no global "
                            "timeline; only built-in deserializers support it")
        return reader

    def _open(self) -> Reader:
        if self._reader is None:
            raise RuntimeError("MinibatchSource is closed")
        return self._reader

    # --- tensor-ready minibatches (cntkio.source_protocol.TensorReadySource) ----------------------
    def supports_tensor_ready(self) -> bool:
        """Whether :meth:`next_tensor_ready` serves this source (built-in deserializers, sequence
        or frame mode; not truncated BPTT, whose minibatches are packed one by one)."""
        return self._open().supports_tensor_ready

    def next_tensor_ready(self, minibatch_size_in_samples: int, num_data_partitions: int | None = None,
                          partition_index: int | None = None,
                          layout: TensorLayout | None = None) -> TensorMinibatch | None:
        """The next minibatch as a :class:`~cntkio.tensor_ready.TensorMinibatch`: its arrays in
        tensor layouts (``layout``, a :class:`~cntkio.tensor_ready.TensorLayout`: padded dense
        values, CSR, or token ids for the one-hot streams it names), built once per packed batch
        on the thread that packs it, no minibatch objects made; None at the epoch end. Moves the
        position, counts invalid sequences and keeps :meth:`stats` as :meth:`next_minibatch`."""
        reader = self._open()
        size, W, r = self._call_args(minibatch_size_in_samples, num_data_partitions, partition_index)
        if self._last_mb_data is not None:
            self._last_mb_data.clear()
            self._last_mb_data = None
        t0 = _now()
        got = reader.next_tensor_ready(size, W, r, _DEFAULT_LAYOUT if layout is None else layout)
        self._stats.record_tensor_ready(got, _now() - t0)
        return got

    # --- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the background threads and release chunks and files. Idempotent."""
        if self._reader is not None:
            if self._finalizer.detach() is not None:
                self._reader.close()
            self._reader = None

    def __enter__(self) -> "MinibatchSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"MinibatchSource(streams={[s.name for s in self._stream_infos]}, randomize={self.randomize}, "
                f"frame_mode={self.frame_mode}, truncation_length={self.truncation_length})")
