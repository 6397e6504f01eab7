"""Packers: selected sequences -> one minibatch per stream (cntk-io-semantics 2.3, 2.9, 2.10).

Sequence and frame mode pack whole sequences in delivery order; each stream gets its own
``[S, Tmax]`` mask (2 = first sample, 1 = continuation, 0 = padding) and its valid samples in
row-major order, built by vectorised gathers from the columnar chunk data (one gather per chunk
and stream, never a Python object per sample). Truncated BPTT keeps ``slots`` parallel streams of
whole sequences laid end to end and emits the next ``<= T`` samples of every slot per call; its
state (which sequences are in which slot, how far each stream has been emitted) is small and goes
into checkpoints.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..deserializers.protocol import ChunkData
from ..minibatch import Minibatch, MinibatchData
from ..streams import StreamInformation
from . import buffers
from .segments import copy_segments
from .slotdata import CsrRows, sequence_arrays, sequences_arrays  # noqa: F401  (re-exported)
from ..tensor_ready import TensorBatch, TensorLayout, TensorMinibatch
from .idblocks import IdBlocks, gather_ids
from .tensor_ready import build_tensor_batch

__all__ = ["pack_sequences", "make_mask", "TruncatedSlots", "CsrRows", "check_frame_mode", "copy_segments"]


def make_mask(lengths: np.ndarray, width: int | None = None) -> np.ndarray:
    """The ``[S, T]`` int8 mask of rows with these valid lengths (2 first, 1 valid, 0 padding)."""
    lengths = np.asarray(lengths, np.int64)
    T = int(lengths.max()) if width is None and len(lengths) else int(width or 0)
    mask = (np.arange(T, dtype=np.int64)[None, :] < lengths[:, None]).astype(np.int8)
    if T:
        mask[:, 0] *= 2
    return mask


def check_frame_mode(lengths: np.ndarray) -> None:
    """Frame mode needs one-sample sequences (CNTK's FramePacker error otherwise)."""
    bad = np.flatnonzero(np.asarray(lengths) != 1)
    if len(bad):
        raise RuntimeError(f"Detected a non-frame sequence of size {int(lengths[bad[0]])} in frame mode.")


def _contiguous(idx: np.ndarray) -> bool:
    return len(idx) > 0 and int(idx[-1]) - int(idx[0]) == len(idx) - 1 and \
        (len(idx) < 3 or bool(np.all(np.diff(idx) == 1)))


def _gather_one(name: str, info: StreamInformation, chunks: Mapping[int, ChunkData],
                sel_chunk: np.ndarray, sel_index: np.ndarray, groups, owned: bool = False):
    """Lengths and packed arrays of one stream for the selected sequences.

    Whole sequences are contiguous in a chunk (rows, and for sparse streams their non-zeros), so
    the gather copies one segment per sequence. ``owned``: the chunks were made for this call
    alone, so a contiguous selection is returned as views instead of copies (so is one of a
    dense stream that declares itself ``shared``: read-only data a user opted in to get as views).
    """
    n = len(sel_chunk)
    if len(groups) == 1:
        cid, pos = groups[0]
        st = chunks[cid].streams[name]
        off = st.offsets
        idx = sel_index
        row0 = off[idx]
        lens = off[idx + 1] - row0
        if _contiguous(idx):
            a, b = int(row0[0]), int(off[idx[-1] + 1])
            if not st.is_sparse:
                if owned or st.shared:
                    return lens, (st.values[a:b],)
                return lens, (_take_rows(st, a, b),)
            p0, p1 = int(st.indptr[a]), int(st.indptr[b])
            if owned:
                return lens, (st.indptr[a:b + 1] - p0 if p0 else st.indptr[a:b + 1], st.indices[p0:p1],
                              st.data[p0:p1])
            return lens, (st.indptr[a:b + 1] - p0, st.indices[p0:p1].copy(), st.data[p0:p1].copy())
        per = [(st, slice(None), row0, lens)]
    else:
        # per chunk: the stream, the positions in the selection, the sequences' first rows, lengths
        lens = np.empty(n, np.int64)
        per = []
        for cid, pos in groups:
            st = chunks[cid].streams[name]
            idx = sel_index[pos]
            row0 = st.offsets[idx]
            rows = st.offsets[idx + 1] - row0
            lens[pos] = rows
            per.append((st, pos, row0, rows))
    dst_start = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=dst_start[1:])
    total = int(dst_start[-1])
    first = per[0][0]
    if not first.is_sparse:
        span = _shared_span(per, total)
        if span is None:
            span = _private_span(per, total)
        if span is not None:
            return lens, (span,)
        out = buffers.empty((total,) + first.values.shape[1:], first.values.dtype)
        if _one_each(per, n):
            # one sequence from each chunk (an image per chunk): one copy call for all of them
            pieces = [None] * n
            for st, pos, row0, rows in per:
                r = int(row0[0])
                pieces[int(pos[0])] = st.values[r:r + int(rows[0])]
            np.concatenate(pieces, out=out, casting="unsafe")    # as copy_segments casts
            return lens, (out,)
        for st, pos, row0, rows in per:
            if len(rows) > 1 and not isinstance(pos, slice) and _run(pos, row0, rows):
                d0, d1 = int(dst_start[pos[0]]), int(dst_start[pos[-1] + 1])
                _take_rows(st, int(row0[0]), int(row0[0]) + d1 - d0, out[d0:d1])
            else:
                copy_segments(st.values, row0, out, dst_start[:-1][pos], rows)
        return lens, (out,)
    # each sequence's non-zeros are contiguous in its chunk: gather them, and its row pointers
    # rebased to where its non-zeros land
    nz_len = np.empty(n, np.int64)
    nz_src = []
    for st, pos, row0, rows in per:
        e0 = st.indptr[row0]
        nz_len[pos] = st.indptr[row0 + rows] - e0
        nz_src.append(e0)
    nz_dst = np.zeros(n + 1, np.int64)
    np.cumsum(nz_len, out=nz_dst[1:])
    nz = int(nz_dst[-1])
    indptr = np.empty(total + 1, np.int64)
    indptr[total] = nz
    indices = np.empty(nz, first.indices.dtype)
    data = np.empty(nz, first.data.dtype)
    if _one_each(per, n):
        # one sequence from each chunk: the pieces joined by one call per array, the row pointers
        # rebased by one vector operation
        pp, pi, pd = [None] * n, [None] * n, [None] * n
        e0s = np.empty(n, np.int64)
        for (st, pos, row0, rows), e0 in zip(per, nz_src):
            k, r, e = int(pos[0]), int(row0[0]), int(e0[0])
            e0s[k] = e
            pp[k] = st.indptr[r:r + int(rows[0])]
            f = e + int(nz_len[k])
            pi[k] = st.indices[e:f]
            pd[k] = st.data[e:f]
        shift = np.repeat(nz_dst[:-1] - e0s, lens)
        np.add(np.concatenate(pp), shift, out=indptr[:total], casting="unsafe")
        np.concatenate(pi, out=indices, casting="unsafe")
        np.concatenate(pd, out=data, casting="unsafe")
        return lens, (indptr, indices, data)
    for (st, pos, row0, rows), e0 in zip(per, nz_src):
        d0, nzl = nz_dst[:-1][pos], nz_len[pos]
        copy_segments(st.indptr, row0, indptr, dst_start[:-1][pos], rows, shift=d0 - e0)
        copy_segments(st.indices, e0, indices, d0, nzl)
        copy_segments(st.data, e0, data, d0, nzl)
    return lens, (indptr, indices, data)


def _one_each(per: list, n: int) -> bool:
    """Whether every chunk gives one sequence of the selection (several chunks, plain arrays):
    then a stream's pieces are joined by one call instead of a copy per chunk."""
    return len(per) == n > 1 and all(len(p[1]) == 1 and getattr(p[0], "read_rows", None) is None for p in per)


def _take_rows(st, a: int, b: int, out: np.ndarray | None = None) -> np.ndarray:
    """Rows ``[a, b)`` of a dense chunk stream copied into ``out`` (when None: mapped
    copy-on-write when the stream has a ``private_map`` that maps them, else a new array): read
    from the file by the stream's ``read_rows`` when it has one (the data touched once), else one
    copy of the run."""
    if out is None:
        if st.private_map is not None:
            mapper, first = st.private_map
            mapped = mapper.map_rows(first + a, first + b)
            if mapped is not None:
                return mapped
        out = buffers.empty((b - a,) + st.values.shape[1:], st.values.dtype)
    if st.read_rows is not None:
        st.read_rows(a, b, out)
    else:
        np.copyto(out, st.values[a:b])
    return out


def _shared_span(per: list, total: int) -> np.ndarray | None:
    """A selection of runs from several chunks of ``shared`` dense streams whose values are
    slices of one array, the runs following each other there (a non-randomized read across a
    chunk boundary of the binary cache with ``cacheViews``): that array's rows as one view; else
    None."""
    first = per[0][0]
    base = first.values.base
    if not isinstance(base, np.ndarray) or not base.flags.c_contiguous or not base.ndim or \
            not all(st.shared and st.values.base is base for st, *_ in per):
        return None
    row_bytes = base.strides[0] if base.shape[0] > 1 else base.itemsize * int(np.prod(base.shape[1:], dtype=np.int64))
    start = None
    expect = None
    for st, pos, row0, rows in per:
        if isinstance(pos, slice) or not len(rows) or not _run(pos, row0, rows) or \
                (expect is not None and int(pos[0]) != expect[0]):
            return None
        delta = st.values.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        if delta % row_bytes:
            return None
        r = delta // row_bytes + int(row0[0])
        if start is None:
            start = r
        elif r != expect[1]:
            return None
        n = int(rows.sum())
        expect = (int(pos[-1]) + 1, r + n)
    if start is None or expect[1] - start != total:
        return None
    return base[start:start + total]


def _private_span(per: list, total: int) -> np.ndarray | None:
    """A selection of runs from several chunks whose dense streams map their rows copy-on-write
    from one mapper, the runs following each other there (a non-randomized read across a chunk
    boundary of the binary cache): those rows as one mapping; else None."""
    mapper = per[0][0].private_map[0] if per[0][0].private_map is not None else None
    if mapper is None:
        return None
    start = expect = None
    for st, pos, row0, rows in per:
        pm = st.private_map
        if pm is None or pm[0] is not mapper or isinstance(pos, slice) or not len(rows) or \
                not _run(pos, row0, rows) or (expect is not None and int(pos[0]) != expect[0]):
            return None
        r = pm[1] + int(row0[0])
        if start is None:
            start = r
        elif r != expect[1]:
            return None
        expect = (int(pos[-1]) + 1, r + int(rows.sum()))
    if start is None or expect[1] - start != total:
        return None
    return mapper.map_rows(start, start + total)


def _run(pos: np.ndarray, row0: np.ndarray, rows: np.ndarray) -> bool:
    """Whether a chunk's part of the selection is one run: consecutive positions taking
    consecutive rows (so one copy or read moves it)."""
    if not (int(pos[-1]) - int(pos[0]) == len(pos) - 1 and bool(np.all(np.diff(pos) == 1))):
        return False
    ends = row0[:-1] + rows[:-1]
    return bool(np.all(ends == row0[1:]))


def group_by_chunk(sel_chunk: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``[(chunk id, positions in the selection)]`` in first-appearance order."""
    if len(sel_chunk) == 0:
        return []
    if sel_chunk[0] == sel_chunk[-1] and (len(sel_chunk) < 3 or bool(np.all(sel_chunk == sel_chunk[0]))):
        return [(int(sel_chunk[0]), np.arange(len(sel_chunk)))]
    uniq, first = np.unique(sel_chunk, return_index=True)
    order = np.argsort(first)
    return [(int(uniq[k]), np.flatnonzero(sel_chunk == uniq[k])) for k in order]


def pack_sequences(stream_infos: Sequence[StreamInformation], chunks: Mapping[int, ChunkData],
                   sel_chunk: np.ndarray, sel_index: np.ndarray, end_of_sweep: bool,
                   dense: bool = False) -> Minibatch:
    """Pack the selected sequences (``sel_chunk[i]``, ``sel_index[i]`` in delivery order) into one
    :class:`MinibatchData` per stream. ``dense`` densifies sparse streams."""
    sel_chunk = np.asarray(sel_chunk, np.int64)
    sel_index = np.asarray(sel_index, np.int64)
    return pack_many(stream_infos, chunks, sel_chunk, sel_index, group_by_chunk(sel_chunk),
                     [len(sel_chunk)], [end_of_sweep], dense)[0]


def pack_many(stream_infos: Sequence[StreamInformation], chunks: Mapping[int, ChunkData],
              sel_chunk: np.ndarray, sel_index: np.ndarray, groups, counts: Sequence[int],
              end_of_sweep: Sequence[bool], dense: bool = False, owned: bool = False) -> list[Minibatch]:
    """The minibatches of :func:`pack_batch`, made at once."""
    batch = pack_batch(stream_infos, chunks, sel_chunk, sel_index, groups, counts, end_of_sweep, dense, owned)
    return [batch.get(j) for j in range(len(counts))]


def pack_batch(stream_infos: Sequence[StreamInformation], chunks: Mapping[int, ChunkData],
               sel_chunk: np.ndarray, sel_index: np.ndarray, groups, counts: Sequence[int],
               end_of_sweep: Sequence[bool], dense: bool = False, owned: bool = False,
               ids: frozenset = frozenset(), pad_id: int = 0) -> "PackedBatch":
    """Pack consecutive minibatches at once: the selection holds their sequences one after
    another, ``counts[j]`` of them for minibatch ``j``. One gather per stream and chunk; each
    minibatch's arrays are slices of the gathered ones (a sparse stream's row pointers are a
    slice too, into the gathered non-zeros). ``owned``: see :func:`_gather_one`. ``ids``: the
    sparse streams a consumer wants as token ids, gathered straight into padded id blocks
    (:mod:`~cntkio.engine.idblocks`) when every sample is one-hot."""
    bl = [0]
    for c in counts:
        bl.append(bl[-1] + c)
    bounds = np.array(bl, np.int64)
    streams = []
    for info in stream_infos:
        if not groups:
            streams.append((info, None, None, None, None, None))
            continue
        if info.name in ids and info.is_sparse and not dense:
            got = _pack_ids(info, chunks, sel_chunk, sel_index, groups, counts, bounds, pad_id)
            if got is not None:
                streams.append(got)
                continue
        lens, arrays = _gather_one(info.name, info, chunks, sel_chunk, sel_index, groups, owned)
        if len(arrays) > 1 and dense:
            arrays = (_densify(info, *arrays),)
        starts = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=starts[1:])
        mask_all = make_mask(lens)
        widths = _widths(lens, counts, bounds)
        streams.append((info, mask_all, widths, starts[bounds].tolist(), arrays, lens))
    return PackedBatch(streams, bl, list(end_of_sweep), dense, _gather_keys(chunks, sel_index, groups))


def _gather_keys(chunks: Mapping[int, ChunkData], sel_index: np.ndarray, groups) -> np.ndarray | None:
    """The sequence keys of the selection, in its order (one gather per chunk)."""
    if not groups:
        return None
    first = chunks[groups[0][0]].sequences.keys
    keys = np.empty(len(sel_index), first.dtype)
    for cid, pos in groups:
        keys[pos] = chunks[cid].sequences.keys[sel_index[pos]]
    return keys


def _pack_ids(info, chunks, sel_chunk, sel_index, groups, counts, bounds, pad_id: int):
    """A one-hot sparse stream's entry of :func:`pack_batch` as token-id blocks, or None."""
    lens = np.empty(len(sel_chunk), np.int64)
    for cid, pos in groups:
        off = chunks[cid].streams[info.name].offsets
        idx = sel_index[pos]
        lens[pos] = off[idx + 1] - off[idx]
    widths = _widths(lens, counts, bounds)
    got = gather_ids(info, chunks, sel_chunk, sel_index, groups, bounds, np.asarray(widths, np.int64), pad_id)
    if got is None:
        return None
    starts = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=starts[1:])
    return (info, make_mask(lens), widths, starts[bounds].tolist(), got[1], lens)


def _widths(lens: np.ndarray, counts: Sequence[int], bounds: np.ndarray) -> list:
    """The widest row of every minibatch."""
    nmb = len(counts)
    if nmb == 1:
        return [int(lens.max()) if len(lens) else 0]
    nz = np.asarray(counts) > 0
    widths = np.zeros(nmb, np.int64)
    if nz.any() and len(lens):
        widths[nz] = np.maximum.reduceat(lens, bounds[:-1][nz])
    return widths.tolist()


class PackedBatch:
    """Consecutive minibatches packed at once, made one by one when asked for (:meth:`get`).

    The batch holds a few arrays per stream (all minibatches' rows, their mask, the bounds); the
    objects of a minibatch (``Minibatch``, ``MinibatchData``, ``Value``) are made when it is handed
    out, so that they die young when the caller drops them instead of waiting, hundreds at a time,
    in a queue long enough for the garbage collector to promote them to its oldest generation
    (whose full collections, in a process with many long-lived objects, cost tens of ms).
    """

    __slots__ = ("streams", "bounds", "end_of_sweep", "dense", "_tensors", "keys")

    def __init__(self, streams: list, bounds: list, end_of_sweep: list, dense: bool,
                 keys: np.ndarray | None = None) -> None:
        self.streams, self.bounds, self.end_of_sweep, self.dense = streams, bounds, end_of_sweep, dense
        self._tensors = None
        #: every packed sequence's key, in packing order (``Minibatch.sequence_keys`` slices it)
        self.keys = keys

    def __len__(self) -> int:
        return len(self.end_of_sweep)

    def get(self, j: int) -> Minibatch:
        """Minibatch ``j``: slices of the batch's arrays."""
        s0, s1 = self.bounds[j], self.bounds[j + 1]
        eos = self.end_of_sweep[j]
        mb = Minibatch()
        mb.ready = (self.tensor_minibatch, j)
        mb.packed_keys = None if self.keys is None else self.keys[s0:s1]
        packed = MinibatchData._packed
        for info, mask_all, widths, rows, arrays, _lens in self.streams:
            if s0 == s1 or mask_all is None:
                mb[info] = _empty(info, eos, self.dense)
                continue
            r0, r1 = rows[j], rows[j + 1]
            mask = mask_all[s0:s1, :widths[j]]
            if isinstance(arrays, IdBlocks):  # token ids: the minibatch's CSR made back from them
                mb[info] = packed(info, mask, None, *arrays.csr(j), eos, r1 - r0)
            elif len(arrays) > 1:
                mb[info] = packed(info, mask, None, arrays[0][r0:r1 + 1], arrays[1], arrays[2], eos, r1 - r0)
            else:
                mb[info] = packed(info, mask, arrays[0][r0:r1], None, None, None, eos, r1 - r0)
        return mb

    def tensor_ready(self, layout: TensorLayout) -> TensorBatch:
        """The batch's tensor-ready arrays (:class:`~cntkio.tensor_ready.TensorBatch`), built for
        the whole batch on the first call with this layout."""
        t = self._tensors
        if t is None or t.layout.key != layout.key:
            t = self._tensors = build_tensor_batch(self, layout, self.get)
        return t

    def tensor_minibatch(self, j: int, layout: TensorLayout) -> TensorMinibatch:
        """Minibatch ``j``'s tensor-ready arrays."""
        return TensorMinibatch(self.tensor_ready(layout), j)


def _densify(info: StreamInformation, indptr, indices, data) -> np.ndarray:
    n = len(indptr) - 1
    dim = int(np.prod(info.sample_shape, dtype=np.int64)) if info.sample_shape else 1
    out = np.zeros((n, dim), data.dtype)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    out[rows, indices] = data
    return out.reshape((n,) + tuple(info.sample_shape))


def _empty(info: StreamInformation, end_of_sweep: bool, dense: bool) -> MinibatchData:
    mask = np.zeros((0, 0), np.int8)
    dtype = np.dtype(info.dtype)
    if info.is_sparse and not dense:
        return MinibatchData.from_packed(info, mask, indptr=np.zeros(1, np.int64),
                                         indices=np.zeros(0, np.int32), data=np.zeros(0, dtype),
                                         end_of_sweep=end_of_sweep)
    return MinibatchData.from_packed(info, mask, values=np.zeros((0,) + tuple(info.sample_shape), dtype),
                                     end_of_sweep=end_of_sweep)


class TruncatedSlots:
    """Truncated-BPTT state: ``slots`` parallel rows, each a queue of whole sequences.

    Every queued sequence is held as its own arrays (one per stream: dense, or a sparse stream's
    :class:`CsrRows`) plus its global sequence number (for checkpoints); a sparse stream comes out
    sparse when its output stream is (else densified). ``offsets[slot][stream]`` counts the samples of the front
    sequences already emitted for that stream; ``toffset[slot]`` the same in timeline samples,
    which decides when a slot needs the next sequence (CNTK fills while ``T >= available``).
    """

    def __init__(self, stream_infos: Sequence[StreamInformation], truncation_length: int) -> None:
        self.infos = list(stream_infos)
        self.T = int(truncation_length)
        self.queues: list[list[tuple[int, int, dict[str, np.ndarray]]]] = []  # (g, timeline length, data)
        self.toffset: list[int] = []
        self.offsets: list[dict[str, int]] = []

    def resize(self, slots: int) -> list:
        """Use ``slots`` rows; returns the queues of rows dropped (their data is discarded)."""
        dropped = []
        names = [i.name for i in self.infos]
        while len(self.queues) > slots:
            dropped.append(self.queues.pop())
            self.toffset.pop()
            self.offsets.pop()
        while len(self.queues) < slots:
            self.queues.append([])
            self.toffset.append(0)
            self.offsets.append(dict.fromkeys(names, 0))
        return dropped

    def available(self, slot: int) -> int:
        """Timeline samples of this slot not yet emitted."""
        return sum(q[1] for q in self.queues[slot]) - self.toffset[slot]

    def needs(self, slot: int) -> bool:
        return self.T >= self.available(slot)

    def push(self, slot: int, g: int, length: int, data: dict[str, np.ndarray]) -> None:
        self.queues[slot].append((g, int(length), data))

    def empty(self) -> bool:
        return all(self.available(s) <= 0 and
                   all(sum(len(q[2][i.name]) for q in self.queues[s]) - self.offsets[s][i.name] <= 0
                       for i in self.infos)
                   for s in range(len(self.queues)))

    def emit(self, end_of_sweep: bool) -> Minibatch:
        """The next ``<= T`` samples of every slot, as ``[slots, T]`` dense minibatches."""
        T = self.T
        S = len(self.queues)
        out = Minibatch()
        for info in self.infos:
            name = info.name
            mask = np.zeros((S, T), np.int8)
            pieces = []
            for s in range(S):
                off = self.offsets[s][name]
                t = 0
                skip = off
                for (_g, _l, data) in self.queues[s]:
                    arr = data[name]
                    n = len(arr)
                    if skip >= n:
                        skip -= n
                        continue
                    take = min(n - skip, T - t)
                    if take <= 0:
                        break
                    pieces.append(arr[skip:skip + take])
                    mask[s, t:t + take] = 1
                    if skip == 0:
                        mask[s, t] = 2
                    t += take
                    skip = 0
                    if t >= T:
                        break
                self.offsets[s][name] = off + t
            out[info] = MinibatchData.from_packed(info, mask, end_of_sweep=end_of_sweep, **_join_pieces(info, pieces))
        for s in range(S):
            self.toffset[s] += min(T, self.available(s))
            self._pop_finished(s)
        return out

    def emit_group(self, end_of_sweep: bool) -> Minibatch:
        """:meth:`emit` for slots that hold one sequence each, all of one length, every stream
        at the same offset (grouped sentences): the next ``<= T`` steps of every slot, the
        minibatch as wide as what is left when that is less (no empty cells); the slots are
        emptied once the sequences end. Falls back to :meth:`emit` for anything else."""
        queues, S = self.queues, len(self.queues)
        lockstep = self._lockstep()
        if lockstep is None:
            return self.emit(end_of_sweep)
        length, off = lockstep
        w = max(0, min(self.T, length - off))
        out = Minibatch()
        whole = off == 0 and w == length
        for info in self.infos:
            name = info.name
            mask = np.ones((S, w), np.int8)
            if off == 0 and w:
                mask[:, 0] = 2
            seqs = [q[0][2][name] for q in queues]
            if w and info.is_sparse and all(isinstance(a, CsrRows) for a in seqs):
                joined = _join_rows(info, seqs, off, w)
            else:
                joined = _join_pieces(info, seqs if whole else [a[off:off + w] for a in seqs])
            out[info] = MinibatchData.from_packed(info, mask, end_of_sweep=end_of_sweep, num_samples=S * w,
                                                  **joined)
        if off + w >= length:
            self.resize(0)
        else:
            for s in range(S):
                self.toffset[s] = off + w
                for name in self.offsets[s]:
                    self.offsets[s][name] = off + w
        return out

    def _lockstep(self):
        """``(length, offset)`` when every slot holds one sequence, all of one length (every
        stream too) and at one offset (timeline and streams): what :meth:`emit_group` packs."""
        queues = self.queues
        if not queues or len(queues[0]) != 1:
            return None
        length, off = queues[0][0][1], self.toffset[0]
        names = [info.name for info in self.infos]
        for q, t, offsets in zip(queues, self.toffset, self.offsets):
            if len(q) != 1 or t != off or q[0][1] != length:
                return None
            data = q[0][2]
            for name in names:
                if offsets[name] != off or len(data[name]) != length:
                    return None
        return length, off

    def _pop_finished(self, s: int) -> None:
        q = self.queues[s]
        while q:
            g, length, data = q[0]
            if self.toffset[s] >= length and all(self.offsets[s][i.name] >= len(data[i.name]) for i in self.infos):
                self.toffset[s] -= length
                for i in self.infos:
                    self.offsets[s][i.name] -= len(data[i.name])
                q.pop(0)
            else:
                break

    def state(self) -> list:
        """JSON-able slot state: ``[[sequence numbers...], timeline offset, {stream: offset}]``."""
        return [[[q[0] for q in self.queues[s]], self.toffset[s], dict(self.offsets[s])]
                for s in range(len(self.queues))]


def _join_pieces(info: StreamInformation, pieces: list):
    """A truncated-BPTT minibatch's valid samples of one stream: ``{"values": ...}`` for a dense
    output (sparse pieces densified), or ``{"indptr", "indices", "data"}`` for a sparse one."""
    shape = tuple(info.sample_shape)
    dtype = np.dtype(info.dtype)
    if not info.is_sparse:
        arrays = [_densify(info, p.indptr, p.indices, p.data) if isinstance(p, CsrRows) else p for p in pieces]
        return {"values": np.concatenate(arrays) if arrays else np.zeros((0,) + shape, dtype)}
    if not pieces:
        return {"indptr": np.zeros(1, np.int64), "indices": np.zeros(0, np.int32), "data": np.zeros(0, dtype)}
    rows = np.fromiter((len(p.indptr) - 1 for p in pieces), np.int64, len(pieces))
    nnz = np.fromiter((p.indptr[-1] for p in pieces), np.int64, len(pieces))
    indptr = np.empty(int(rows.sum()) + 1, np.int64)
    indptr[0] = 0
    # each piece's row pointers (from 0) moved past the non-zeros of the pieces before it
    np.add(np.concatenate([p.indptr[1:] for p in pieces]), np.repeat(np.cumsum(nnz) - nnz, rows), out=indptr[1:])
    indices = np.concatenate([p.indices for p in pieces])
    data = np.concatenate([p.data for p in pieces])
    return {"indptr": indptr, "indices": indices.astype(np.int32, copy=False), "data": data}


def _join_rows(info: StreamInformation, seqs: list, off: int, w: int) -> dict:
    """:func:`_join_pieces` of ``seq[off:off + w]`` for sparse sequences (:class:`CsrRows`) into
    a sparse output, without a :class:`CsrRows` per piece: the row pointers of all pieces are cut
    as one ``[pieces, w + 1]`` array and rebased with one vector op (the same arrays as
    :func:`_join_pieces`)."""
    S = len(seqs)
    cut = np.concatenate([a.indptr[off:off + w + 1] for a in seqs]).reshape(S, w + 1)
    if cut.dtype != np.int64:
        cut = cut.astype(np.int64)
    lo, hi = cut[:, 0], cut[:, w]
    nnz = hi - lo
    indptr = np.empty(S * w + 1, np.int64)
    indptr[0] = 0
    # each piece's row pointers from 0, moved past the non-zeros of the pieces before it
    np.add(cut[:, 1:], (nnz.cumsum() - nnz - lo)[:, None], out=indptr[1:].reshape(S, w))
    index_pieces, data_pieces = [], []
    for a, p0, p1 in zip(seqs, lo.tolist(), hi.tolist()):
        index_pieces.append(a.indices[p0:p1])
        data_pieces.append(a.data[p0:p1])
    indices = np.concatenate(index_pieces)
    if indices.dtype != np.int32:
        indices = indices.astype(np.int32)
    return {"indptr": indptr, "indices": indices, "data": np.concatenate(data_pieces)}
