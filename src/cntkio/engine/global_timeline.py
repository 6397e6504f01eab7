"""The global-timeline window policy: CNTK's block randomizer over built-in deserializers.

Every sequence has a place on one global timeline of sweeps (:mod:`~cntkio.engine.randomizer`);
the position ``(sweep, sequence in sweep)`` is the whole state. The jobs are split by module:

* :mod:`~cntkio.engine.walk` — which sequences a call takes (budgets, partitions, sweep flags,
  the epoch end);
* :mod:`~cntkio.engine.window` — which chunks (or raw bytes) are held, loaded ahead, released;
* :mod:`~cntkio.engine.schedule` — what is parsed and packed ahead of the caller, and where;
* :mod:`~cntkio.engine.handoff` — packed minibatches handed out one per call, invalid sequences
  counted against ``max_errors``;

and this module ties them to a cursor and its checkpoint: the checkpoint is the global sample
position after the last returned minibatch; a restore goes to the first sequence starting at or
after it in its sweep, and the order is re-derived from the seed, so a restore on a fresh reader
continues exactly (cntkio differs from CNTK's restore quirk on purpose). A restore or a change of
settings drops what was packed or parsed ahead.
"""
from __future__ import annotations


import numpy as np

from ..constants import POSITION_KEY
from ..deserializers.protocol import (Deserializer, depends_on_sweep, has_random_access,
                                      supports_global_randomization)
from ..errors import ConfigError
from ..streams import StreamInformation
from ..values import check_state_int
from .handoff import Handoff
from .slotdata import sequence_arrays, sequences_arrays
from .schedule import BatchScheduler
from .walk import TimelineWalker
from .window import ChunkWindow
from .._log import get_logger

__all__ = ["GlobalTimeline", "NO_END_POSITION"]

log = get_logger("engine.reader")

#: The position a worker without data reports on an endless epoch (CNTK 2.7: 2^63 - 1), and the
#: largest position a checkpoint may hold.
NO_END_POSITION = 2**63 - 1


def _check_global(corpus, *, truncated: bool, by_sweep: bool, random_access: bool) -> None:
    """Global randomization reads every batch of minibatches by sequence from nearly every chunk:
    refuse what cannot (naming the option and why)."""
    why = ("truncated BPTT reads whole chunks" if truncated else
           "the chunk data depends on the sweep (random transforms)" if by_sweep else
           "random_access=False reads whole chunks" if not random_access else
           None if supports_global_randomization(corpus) else
           "a deserializer cannot read single sequences by index without holding its chunks' data "
           "(CBF files on local storage can; CTF, HTK, images and URLs cannot)")
    if why is not None:
        raise ConfigError(f"global randomization (MinibatchSource(global_randomization=True)) is not possible "
                          f"here: {why}", path="globalRandomization",
                          hint="it needs CBF files on local storage, sequence or frame packing; "
                               "else use the block randomizer (randomizationWindow)")


class GlobalTimeline:
    """The window policy of built-in deserializers (module docstring); see
    :class:`~cntkio.engine.reader.WindowPolicy` for the interface."""

    global_timeline = True

    def __init__(self, corpus: Deserializer, stream_infos: list[StreamInformation], *, randomize: bool,
                 window: int, sample_based: bool, seed: int, epoch_end: int | None, frame_mode: bool,
                 truncated: bool, max_errors: int, loader_threads: int, prefetch: bool = True,
                 trace_level: int = 1, random_access: bool = True, rolling: bool = False,
                 random_ordering: int = 0, global_randomization: bool = False) -> None:
        self.corpus = corpus
        self.stream_infos = stream_infos
        # the composite gives a chunk's lengths without its key table (frame mode: no per-frame keys)
        seq_lengths = getattr(corpus, "sequence_lengths", None) or (lambda c: corpus.sequence_infos(c).lengths)
        lengths = [seq_lengths(c.id) for c in corpus.chunk_infos()]
        # a deserializer whose chunks depend on the sweep (random transforms) is told the sweep of
        # every load, and a chunk is loaded again in every sweep (walk.TimelineWalker: load ids)
        by_sweep = depends_on_sweep(corpus)
        global_randomization = bool(global_randomization and randomize)
        if global_randomization:
            _check_global(corpus, truncated=truncated, by_sweep=by_sweep, random_access=random_access)
        self.walker = TimelineWalker(lengths, randomize=randomize, window=window, sample_based=sample_based,
                                     seed=seed, epoch_end=epoch_end, sweep_chunks=by_sweep,
                                     rolling=rolling, random_ordering=random_ordering,
                                     global_randomization=global_randomization)
        # read randomized batches sequence by sequence (:mod:`~cntkio.engine.schedule`); chunks
        # whose direct read reported an issue go through chunk loading. (Not when the chunks
        # depend on the sweep: the direct reads carry no sweep.)
        # In input order too when every deserializer asks for it (``direct_in_order``: a
        # selection read straight into the minibatch beats a whole chunk parsed, then copied).
        in_order = all(getattr(d, "direct_in_order", False) for d in getattr(corpus, "parts", (corpus,)))
        direct = bool(random_access and (randomize or in_order) and not truncated and not by_sweep
                      and has_random_access(corpus)) or global_randomization
        self.window = ChunkWindow(corpus, self.walker, threads=loader_threads, direct=direct)
        self.handoff = Handoff(stream_infos, max_errors=max_errors, trace_level=trace_level)
        # random access: a batch is parsed in two halves at once (given two cores)
        self.scheduler = BatchScheduler(corpus, self.walker, self.window, self.handoff, frame_mode=frame_mode,
                                        prefetch=prefetch and not truncated, halves=loader_threads > 1)
        self.generation = 0
        self.cursor = (0, 0)
        self.end_position: int | None = None  # reported by a worker without data (no_data)
        if trace_level >= 2:
            w = self.walker
            log.info("%d sequences (%d samples per sweep) in %d chunks; %s; epoch end %s; %s packing",
                     w.N, w.S, w.C,
                     ("global randomization, seed %d" % seed if global_randomization else
                      f"RandomOrdering in blocks of {random_ordering} records" if random_ordering else
                      f"{'rolling window' if rolling else 'block randomizer'}, window {window} "
                      f"{'samples' if sample_based else 'chunks'}, seed {seed}"
                      if randomize else "no randomization"),
                     "none" if epoch_end is None else f"at sample {epoch_end}",
                     "truncated BPTT" if truncated else ("frame" if frame_mode else "sequence"))

    @property
    def direct(self) -> bool:
        """Whether randomized batches are parsed sequence by sequence (random access)."""
        return self.window.raw is not None

    @property
    def sweep_size(self) -> int:
        return self.walker.S

    @property
    def epoch_end(self) -> int | None:
        return self.walker.E

    def sweep_order(self, sweep: int):
        """Sweep ``sweep``'s delivery order as the sequences' ordinals in storage order (corpus
        chunks in input order, sequences in chunk order): int64, one per position."""
        w = self.walker
        counts = [int(c.num_sequences) for c in self.corpus.chunk_infos()]
        first = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=first[1:])
        tl = w.timeline(int(sweep))
        pos = slice(0, w.N)
        return first[np.asarray(tl.chunks(pos), np.int64)] + np.asarray(tl.index[pos], np.int64)

    def has_data(self, W: int, r: int) -> bool:
        return not self.walker.no_data_for(W, r)

    def no_data(self) -> None:
        """A call of a worker without data: as in CNTK, it reports the epoch end as its position
        (2^63 - 1 when the epoch is endless) until it reads or restores."""
        E = self.walker.E
        self.end_position = NO_END_POSITION if E is None else min(int(E), NO_END_POSITION)

    # --- sequence and frame mode ----------------------------------------------------------------
    def next_minibatch(self, budget: int, W: int, r: int):
        entry = self._pop(budget, W, r)
        return None if entry is None else self.handoff.get(*entry)

    def next_tensor_ready(self, budget: int, W: int, r: int, layout):
        """:meth:`next_minibatch` as a :class:`~cntkio.tensor_ready.TensorMinibatch` in
        ``layout``; batches packed from now on build their tensor-ready arrays as they are packed."""
        handoff = self.handoff
        if handoff.layout is None or handoff.layout.key != layout.key or handoff.layout.prepare is not layout.prepare:
            handoff.layout = layout
        entry = self._pop(budget, W, r)
        return None if entry is None else handoff.get_tensor_ready(*entry, layout)

    def _pop(self, budget: int, W: int, r: int):
        """The next queue entry ``(part, index, invalid sequences)``, refilled when needed; None
        at the epoch end."""
        key = (self.generation, budget, W, r)
        handoff = self.handoff
        while True:
            if not handoff.ready(key):
                self.scheduler.refill(key, self.cursor, budget, W, r)
            k, i, _, part, j, n_invalid = handoff.pop()
            self.cursor = self.walker.normalize(k, i)
            self.end_position = None
            if part < 0:
                self._drop_ahead()
                self.window.clear()
                return None
            if W == 1 and handoff.emptied(part, j):
                # every sequence invalid (or dropped) in the middle of a sweep: counted against
                # max_errors and the next minibatch taken (CNTK handed out an empty one, which a
                # loop reads as the end of the data). Distributed workers keep their empty local
                # minibatches: their minibatch count must agree.
                handoff.count_invalid(n_invalid, handoff.reasons.get((part, j)))
                continue
            return part, j, n_invalid

    def _drop_ahead(self, forget_settings: bool = False) -> None:
        """Drop what was packed or begun ahead (the only place that does)."""
        self.scheduler.drop()
        self.handoff.drop(forget_settings)

    # --- truncated BPTT -------------------------------------------------------------------------
    def next_sequences(self, W: int, r: int):
        """The next local sequence for a truncated-BPTT slot: ``([(ref, length, data)], CNTK's
        sweep-end flag of its fetch)`` (:meth:`TimelineWalker.next_local`), or None at the end.
        ``ref`` is its global sequence number."""
        walker = self.walker
        k, i, sweep_end, cursor = walker.next_local(self.cursor, W, r)
        if k < 0:
            if walker.E is not None:  # the epoch end: past the other workers' last sequences
                self.cursor = cursor
            return None
        self.cursor = cursor
        seq = self.sequence(k * walker.N + i)
        self.end_position = None
        return [seq], sweep_end

    def next_lengths(self, W: int, r: int, count: int):
        """The lengths of up to ``count`` next local sequences when they are the next positions of
        the current sweep, each taken as :meth:`next_sequences` takes it (one worker, before the
        epoch end); else None (take them one at a time). :meth:`take_sequences` then takes them."""
        if W != 1:
            return None
        walker = self.walker
        k, i = self.cursor
        tl = walker.timeline(k)
        n_end = walker._n_before_end(k, tl)
        if i >= n_end:
            return None
        return tl.length[i:min(n_end, i + int(count))]

    def take_sequences(self, count: int, W: int, r: int) -> list:
        """The next ``count`` sequences (at most :meth:`next_lengths`'s) as ``count`` calls of
        :meth:`next_sequences` give them, in one step: ``[(ref, length, data, sweep-end flag)]``."""
        walker = self.walker
        k, i = self.cursor
        N = walker.N
        tl = walker.timeline(k)
        pos = slice(i, i + count)
        chunk_ids, index, lengths = tl.chunks(pos).tolist(), tl.index[pos].tolist(), tl.length[pos].tolist()
        infos, window = self.stream_infos, self.window
        out = []
        t = 0
        while t < count:                       # a run of sequences of one chunk at a time
            c = chunk_ids[t]
            u = t + 1
            while u < count and chunk_ids[u] == c:
                u += 1
            chunk = window.chunk(walker.load_id(k, c))
            arrays = [sequences_arrays(info, chunk, index[t:u]) for info in infos]
            for m, j in enumerate(range(i + t, i + u)):
                out.append((k * N + j, lengths[j - i], {info.name: arrays[s][m] for s, info in enumerate(infos)},
                            j + 1 >= N))
            t = u
        self.cursor = walker.normalize(k, i + count)
        self.end_position = None
        return out

    def sequence(self, ref):
        """``(ref, length, data)`` of the sequence with global sequence number ``ref``."""
        k, i = divmod(int(ref), self.walker.N)
        tl = self.walker.timeline(k)
        chunk = self.window.chunk(self.walker.load_id(k, int(tl.chunks(i))))
        idx = int(tl.index[i])
        return int(ref), int(tl.length[i]), {info.name: sequence_arrays(info, chunk, idx)
                                             for info in self.stream_infos}

    def after_truncated(self, W: int, r: int) -> None:
        self.window.retain(self.window.needed(self.cursor, W, r))

    def release(self) -> None:
        self.window.clear()

    # --- state ----------------------------------------------------------------------------------
    def position(self) -> int:
        """The global sample position after the last minibatch returned."""
        return self.end_position if self.end_position is not None else self.walker.position(self.cursor)

    def position_state(self) -> dict:
        return {POSITION_KEY: self.position()}

    def restore(self, state) -> None:
        if POSITION_KEY not in state:
            raise ValueError(f"Checkpoint misses required field {POSITION_KEY}")
        self.seek(check_state_int(state[POSITION_KEY], POSITION_KEY, maximum=NO_END_POSITION))

    def seek(self, pos: int) -> None:
        """Go to the first sequence starting at or after global position ``pos`` (what was read
        ahead is dropped)."""
        self._drop_ahead(forget_settings=True)
        self.generation += 1
        self.end_position = None
        walker = self.walker
        if walker.E is not None and pos >= walker.E:
            # at or past the epoch end (a worker without data reports the epoch end): nothing is
            # left to read, and the state keeps the position restored
            self.cursor = walker.cursor_at(walker.E)
            self.end_position = pos
        else:
            self.cursor = walker.cursor_at(pos)

    def set_epoch_end(self, end: int | None) -> None:
        """Move the epoch end (the reader then restores its own state: what was planned or
        prefetched under the old end is dropped; the cursor stays where it is)."""
        self.walker.set_epoch_end(end)

    def close(self) -> None:
        self.scheduler.close()  # first: the parses begun ahead read the mapped file; they are joined
        self.handoff.drop()
        self.window.close()
