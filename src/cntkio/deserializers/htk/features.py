"""HTKFeatureDeserializer: utterances of HTK feature files listed in SCP files.

One input stream per deserializer (as in CNTK 2.7), configured by::

    input = [ features = [ dim = 363; scpFile = "train.scp"  # or a list: ("a.scp":"b.scp")
                           contextWindow = 5                  # or 5:5, (left:right); optional
                           prefixPathInSCP = "/data"          # optional
                           expandToUtterance = false; definesMBSize = false ] ]

``dim`` is the file's frame dimension times the window ``left + 1 + right``. Without
``contextWindow`` an odd multiple ``k`` of the file's dimension means a context of ``(k-1)/2``
frames each side (CNTK's inference); with it, ``dim`` is the file's dimension or the expanded one.
Frames outside the utterance repeat its edge frame. In frame mode (the source's ``frame_mode``)
each frame is one sequence; otherwise an utterance is one sequence.

Frames are read from the archives with ``pread`` (never a memory map: an archive that another
process cuts short is then an error naming it, not SIGBUS): a chunk (about 15 minutes of speech,
as CNTK) is loaded by one read per run of consecutive utterances of a file, byte-swapped in place,
and the context expansion is one vectorized gather per chunk or per selection of frames. The deserializer has random access: a
randomized frame-mode reader holds a window of raw (unexpanded) chunks and expands only the
frames of each minibatch.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import sys
import threading
from typing import Any, Mapping

import numpy as np

from ..._native import native
from ...errors import FormatError
from ...streams import StreamInformation
from ...values import to_bool, to_int, to_str
from ...remote import is_remote, remote_options
from ..protocol import ChunkData, DenseStream, FetchAheadDeserializer, RandomAccessDeserializer, SequenceTable
from . import remote as remote_htk
from .common import FRAME_KEY, UtteranceCorpus
from .htkfile import HEADER_BYTES
from .options import context_of, dtype_of, numeric_keys_of, one_input, option, paths_of
from .scp import parse_scp_files

_NATIVE = "<" if sys.byteorder == "little" else ">"

__all__ = ["HTKFeatureDeserializerImpl", "TYPE_NAME"]

TYPE_NAME = "HTKFeatureDeserializer"
log = logging.getLogger("cntkio.deserializers.htk")


class HTKFeatureDeserializerImpl(UtteranceCorpus, RandomAccessDeserializer, FetchAheadDeserializer):
    """See the module docstring. ``config``: ``{'type': 'HTKFeatureDeserializer', 'input': {name:
    {...}}}`` as the factory or a reader section gives it."""

    def __init__(self, config: Mapping[str, Any], frame_mode: bool = False, trace_level: int = 1,
                 **_ignored: Any) -> None:
        name, spec = one_input(config, TYPE_NAME)
        self.name = name
        self.frame_mode = bool(frame_mode)
        self.dtype = dtype_of(config)
        scps = paths_of(spec, ("scpFile", "scp", "file"), f"input.{name}.scpFile")
        prefix = option(spec, config, "prefixPathInSCP")
        prefix = to_str(prefix, f"input.{name}.prefixPathInSCP") if prefix is not None else None
        dim = to_int(option(spec, None, "dim", "shape"), f"input.{name}.dim", minimum=1)
        given_ctx = context_of(option(spec, None, "contextWindow", "context"), f"input.{name}.contextWindow")
        self.broadcast = to_bool(option(spec, None, "expandToUtterance", "broadcast", default=False),
                                 f"input.{name}.expandToUtterance")
        defines = to_bool(option(spec, None, "definesMBSize", "defines_mb_size", default=False),
                          f"input.{name}.definesMBSize")
        self.max_sequence_length = to_int(option(spec, None, "maxSequenceLength", "max_sequence_length",
                                                 default=65535), f"input.{name}.maxSequenceLength", minimum=1)
        self.numeric_keys = numeric_keys_of(config, spec)
        self._remote_options = remote_options(config)     # for SCP files and features at URLs
        idx = parse_scp_files(scps, prefix, numeric=self.numeric_keys, config=config)
        if len(idx) == 0:
            raise FormatError("the SCP file(s) list no utterance", file=", ".join(scps))
        self.index = idx
        self.files = idx.files
        self._remote = any(is_remote(p) for p in idx.files)
        self.headers = remote_htk.read_headers(idx.files, self._remote_options)  # one open per physical file
        fdim = self.headers[0].dim
        for p, h in zip(idx.files, self.headers):
            if h.dim != fdim:
                raise FormatError("the HTK feature files differ in frame dimension", file=p,
                                  expected=f"sampSize {fdim * 4} ({fdim} floats, as {idx.files[0]})",
                                  found=f"sampSize {h.samp_size}")
        self.feature_dim = fdim
        self.context = self._context(dim, fdim, given_ctx, name, idx.files[0])
        left, right = self.context
        self.dim = fdim * (left + 1 + right)
        # ranges: the whole file where none was given; checked against the headers
        nframes = np.asarray([h.num_frames for h in self.headers], np.int64)[idx.file_ids]
        whole = idx.starts < 0
        starts = np.where(whole, 0, idx.starts)
        ends = np.where(whole, nframes - 1, idx.ends)
        empty = np.flatnonzero(whole & (nframes == 0))
        if len(empty):
            i = int(empty[0])
            raise FormatError("the utterance has no frames (an HTK file with nSamples 0)",
                              file=idx.scp_files[idx.scp_ids[i]], line=int(idx.lines[i]),
                              expected="at least one frame", found=idx.files[idx.file_ids[i]])
        self._check_ranges(starts, ends, nframes)
        self._starts = starts
        self._lengths = ends - starts + 1

        self._keys = idx.keys
        if self.broadcast:
            long_ = np.flatnonzero(self._lengths != 1)
            if len(long_):
                i = int(long_[0])
                raise FormatError("expandToUtterance: every utterance must have exactly one frame",
                                  file=idx.scp_files[idx.scp_ids[i]], line=int(idx.lines[i]),
                                  expected="1 frame", found=f"{int(self._lengths[i])} frames")
        self._init_chunks()
        self._maps = remote_htk.RemoteFrameFiles(self._remote_options) if self._remote else None
        self._native = native("htk")     # None under CNTKIO_PURE_PYTHON=1: the NumPy reference
        self._pool: cf.ThreadPoolExecutor | None = None      # the reader threads, started on first use
        self._lock = threading.Lock()
        self._stream = StreamInformation(name, 0, "dense", self.dtype, (self.dim,), defines_mb_size=defines)
        if trace_level >= 2:
            log.info("HTKDeserializer: %d utterances grouped into %d chunks; feature kind %s, %d-dimensional, "
                     "frame shift %.1f ms, context %s", len(idx), len(self._infos), self.headers[0].kind_name,
                     fdim, self.headers[0].samp_period / 1e4, self.context)

    # --- configuration ------------------------------------------------------------------------
    @staticmethod
    def _context(dim: int, fdim: int, given: tuple[int, int] | None, name: str, first: str) -> tuple[int, int]:
        if given is not None and given != (0, 0):
            l, r = given
            if dim not in (fdim, fdim * (l + 1 + r)):
                raise FormatError(f"input.{name}.dim {dim} does not match the feature files with "
                                  f"contextWindow {l}:{r}", file=first,
                                  expected=f"dim {fdim} (the files' dimension) or {fdim * (l + 1 + r)}",
                                  found=f"dim {dim}")
            return l, r
        if dim % fdim:
            raise FormatError("HTKDeserializer: model vector size is not multiple of input features",
                              file=first, expected=f"a multiple of the files' dimension {fdim}", found=f"dim {dim}")
        k = dim // fdim
        if k % 2 == 0:
            raise FormatError(f"HTKDeserializer: neighbor expansion of input features to '{k}' is not symmetrical",
                              file=first, expected=f"an odd multiple of {fdim}", found=f"dim {dim}")
        return (k - 1) // 2, (k - 1) // 2

    @property
    def file(self) -> str:
        """The SCP file(s), for messages."""
        return ", ".join(self.index.scp_files)

    def _origin(self, u: int) -> str:
        idx = self.index
        return f"{idx.scp_files[idx.scp_ids[u]]}:{int(idx.lines[u])}"

    def _check_ranges(self, starts: np.ndarray, ends: np.ndarray, nframes: np.ndarray) -> None:
        idx = self.index
        bad = np.flatnonzero((starts > ends) | (ends >= nframes))
        if len(bad):
            i = int(bad[0])
            scp, line = idx.scp_files[idx.scp_ids[i]], int(idx.lines[i])
            path = idx.files[idx.file_ids[i]]
            if starts[i] > ends[i]:
                raise FormatError(f"open: start frame {starts[i]} > end frame {ends[i]} in '{path}'",
                                  file=scp, line=line, expected="start <= end", found=f"[{starts[i]},{ends[i]}]")
            raise FormatError(f"open: end frame exceeds archive's total number of frames {nframes[i]} in '{path}'",
                              file=scp, line=line, expected=f"end frame below {nframes[i]}",
                              found=f"[{starts[i]},{ends[i]}]")

    @property
    def _from_files(self) -> bool:
        """Sequence mode without context: a selection is read straight from the files into the
        minibatch's rows (one read, byte-swapped in place); the window holds no copy of its chunks."""
        return (not self.frame_mode and self.context == (0, 0) and self._native is not None
                and self.dtype == np.float32 and not self._remote)

    # --- protocol -----------------------------------------------------------------------------
    def stream_infos(self) -> list[StreamInformation]:
        return [self._stream]

    def fetches_ahead(self) -> bool:
        """Feature files at URLs: the frame ranges of the next chunks are fetched ahead."""
        return self._remote

    def fetch_ahead(self, chunk_ids) -> None:
        """Start fetching the frame ranges of these chunks' utterances, one range per file."""
        for c in chunk_ids:
            a, b = self._chunk_utts(c)
            fids, st, ln = self.index.file_ids[a:b], self._starts[a:b], self._lengths[a:b]
            for f in np.unique(fids).tolist():
                m = fids == f
                self._maps.prefetch(self.files[f], self.headers[f], int(st[m].min()), int((st[m] + ln[m]).max()))

    def _raw(self, c: int) -> np.ndarray:
        """The chunk's frames, utterance after utterance, unexpanded (float32, native order), each
        utterance padded with ``left`` copies of its first frame and ``right`` of its last: the
        context of a frame is then ``left + 1 + right`` consecutive rows."""
        a, b = self._chunk_utts(c)
        left, right = self.context
        pad = left + right
        fids, st, ln = self.index.file_ids[a:b], self._starts[a:b], self._lengths[a:b]
        out = np.empty((int(ln.sum()) + pad * (b - a), self.feature_dim), np.float32)
        dst = np.cumsum(ln + pad) - ln - right                        # row of each utterance's frame 0
        if not self._remote:                 # one read per run of utterances of a file (pread, no map)
            self._read_frames(out, dst, fids, st, ln)
        else:                                # utterances at URLs fetched as ranged GETs, local ones read
            local = np.array([not is_remote(p) for p in self.files], bool)[fids]
            if local.any():
                self._read_frames(out, dst[local], fids[local], st[local], ln[local])
            for f, d, s, n in zip(fids[~local].tolist(), dst[~local].tolist(), st[~local].tolist(),
                                  ln[~local].tolist()):
                out[d:d + n] = self._maps.frames(self.files[f], self.headers[f])[s:s + n]
        if pad:
            first = dst
            last = first + ln - 1
            if left:
                out[(first[:, None] - np.arange(1, left + 1)).ravel()] = np.repeat(out[first], left, axis=0)
            if right:
                out[(last[:, None] + np.arange(1, right + 1)).ravel()] = np.repeat(out[last], right, axis=0)
        return out

    def _copy_utterances(self, out: np.ndarray, utts: np.ndarray, rows: np.ndarray) -> None:
        """Utterances ``utts`` (in any order) read to rows ``rows`` of ``out`` (float32, native
        order), as :meth:`_read_frames` reads them: nothing of the files stays resident once
        delivered."""
        self._read_frames(out, rows, self.index.file_ids[utts], self._starts[utts], self._lengths[utts])

    def _read_frames(self, out: np.ndarray, rows: np.ndarray, fids: np.ndarray, starts: np.ndarray,
                     lengths: np.ndarray) -> None:
        """Frames ``starts[i] .. starts[i] + lengths[i] - 1`` of file ``fids[i]`` to rows ``rows[i]
        ..`` of ``out`` (float32, native order, C-contiguous): one C call per physical file,
        without the GIL, that reads each run of consecutive utterances with ``pread`` straight into
        ``out`` and byte-swaps it there (a NumPy twin under CNTKIO_PURE_PYTHON). A file shorter
        than its header says (cut after it was indexed) is a FormatError naming it."""
        fd = self.feature_dim
        files = np.unique(fids).tolist()
        for f in files:
            m = fids == f if len(files) > 1 else slice(None)
            h = self.headers[f]
            path = self.files[f]
            src = _i64(starts[m] * (4 * fd) + HEADER_BYTES)
            try:
                handle = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                try:
                    if self._native is not None:
                        self._native.pread_swap(out, _i64(rows[m] * fd), handle, src, _i64(lengths[m] * fd),
                                                h.byteorder != _NATIVE)
                    else:
                        _pread_rows(handle, out, rows[m], src, lengths[m], h.byteorder != _NATIVE)
                finally:
                    os.close(handle)
            except OSError as exc:
                raise FormatError(f"reading frames failed: {exc}", file=path,
                                  expected=f"{h.num_frames} frames as its header says") from exc

    def _expand(self, padded: np.ndarray, win: np.ndarray) -> np.ndarray:
        """The context windows starting at rows ``win`` of a padded chunk: one row gather from a
        sliding-window view (each window is ``left + 1 + right`` contiguous frames)."""
        left, right = self.context
        if left == 0 and right == 0:
            out = padded[win]
        else:
            rows = padded.shape[0] - left - right
            view = np.lib.stride_tricks.as_strided(padded, shape=(rows, self.dim),
                                                   strides=(padded.strides[0], padded.strides[1]),
                                                   writeable=False)
            out = view[win]
        return out if out.dtype == self.dtype else out.astype(self.dtype)

    def _chunk_rows(self, c: int, local_utts: np.ndarray) -> np.ndarray:
        """Window starts in the chunk's padded frames for every frame of these utterances."""
        a, _ = self._chunk_utts(c)
        left, right = self.context
        ustart = self._utt_offsets[a + local_utts] - self._utt_offsets[a] + local_utts * (left + right)
        lens = self._lengths[a + local_utts]
        total = int(lens.sum())
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        return np.repeat(ustart, lens) + within

    def _gather(self, out: np.ndarray, srcs: list, which: np.ndarray, rows: np.ndarray) -> None:
        """``out[i]`` = the context window starting at row ``rows[i]`` of the padded chunk
        ``srcs[which[i]]``: written once, in place (C), or by one gather per chunk (NumPy)."""
        if self._native is not None and out.flags.c_contiguous:
            self._native.gather_rows(out, srcs, _i64(which), _i64(rows), self.feature_dim, self.dim,
                             out.dtype == np.float64)
            return
        for j, src in enumerate(srcs):
            m = np.flatnonzero(which == j) if len(srcs) > 1 else slice(None)
            out[m] = self._expand(src, rows[m])

    def _select(self, raws, chunk_ids: np.ndarray, indices: np.ndarray):
        """The selected sequences as a :class:`ChunkData`; reading from the files
        (``_from_files``): ``(data, job)``, ``data`` filled once :meth:`_copy_utterances` ``(*job)``
        has run."""
        n = len(chunk_ids)
        keys = np.empty(n, self._sequence_key_dtype())
        uniq, which = self._chunk_groups(chunk_ids)
        srcs = [raws[c] for c in uniq]
        if self.frame_mode:       # the whole selection at once, whatever chunks it spans
            lengths = np.ones(n, np.int64)
            utt, frames, local = self._frames_at(chunk_ids, indices, which,
                                                 [getattr(r, "local", None) for r in srcs])
            left, right = self.context
            # a chunk's padded rows: each utterance before this one adds left + right rows
            rows = indices + local * (left + right) if left + right else indices
            keys["utt"] = self._keys[utt]
            keys["frame"] = frames
            values = np.empty((n, self.dim), self.dtype)
            self._gather(values, srcs, which, rows)
            offsets = np.arange(n + 1, dtype=np.int64)
        else:
            first = self._bounds[chunk_ids]
            utts = first + indices
            lengths = self._lengths[utts].astype(np.int64)
            keys[:] = self._keys[utts]
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(lengths, out=offsets[1:])
            if self._from_files:
                values = np.empty((int(offsets[-1]), self.dim), np.float32)
                data = ChunkData(SequenceTable(keys, lengths), {self.name: DenseStream(values, offsets)})
                return data, (values, utts, offsets[:-1])
            # window starts of every frame: the utterance's first row in its padded chunk + frame
            left, right = self.context
            ustart = self._utt_offsets[utts] - self._utt_offsets[first] + indices * (left + right)
            rows = _ranges(ustart, lengths)
            values = np.empty((int(offsets[-1]), self.dim), self.dtype)
            self._gather(values, srcs, np.repeat(which, lengths), rows)
        return ChunkData(SequenceTable(keys, lengths), {self.name: DenseStream(values, offsets)})

    def _sequence_key_dtype(self) -> np.dtype:
        return FRAME_KEY if self.frame_mode else np.dtype(np.uint64)

    def get_chunk(self, chunk_id: int) -> ChunkData:
        table = self.sequence_infos(chunk_id)
        raw = self._raw(chunk_id)
        a, b = self._chunk_utts(chunk_id)
        if self.context == (0, 0):      # the chunk's frames are the sequences' frames, in order
            values = raw if raw.dtype == self.dtype else raw.astype(self.dtype)
        else:
            rows = self._chunk_rows(chunk_id, np.arange(b - a, dtype=np.int64))
            values = np.empty((len(rows), self.dim), self.dtype)
            self._gather(values, [raw], np.zeros(len(rows), np.int64), rows)
        offsets = np.zeros(len(table) + 1, np.int64)
        np.cumsum(table.lengths, out=offsets[1:])
        return ChunkData(table, {self.name: DenseStream(values, offsets)})

    # --- random access: raw chunks held, frames expanded per selection ------------------------
    def supports_random_access(self) -> bool:
        return True

    def read_bytes(self, chunk_id: int):
        """The chunk's padded frames (:meth:`_raw`); in sequence mode without context nothing is
        copied ahead (the chunk id: its selections are read straight from the files)."""
        if self._from_files:
            return _Unread(chunk_id)
        raw = self._raw(chunk_id)
        if not self.frame_mode:
            return raw
        out = raw.view(_Padded)
        out.local = self._frame_map(chunk_id)
        return out

    def read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData:
        return self.begin_read_sequences(raw, chunk_ids, indices)()

    def begin_read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray):
        """:meth:`read_sequences` started: in sequence mode without context the frames are read
        on a reader thread (C, without the GIL), so that the caller packs meanwhile and two halves
        of a batch are read at once."""
        chunk_ids, indices = np.asarray(chunk_ids, np.int64), np.asarray(indices, np.int64)
        if not self._from_files:       # as the base class: read when the result is asked for
            return lambda: self._select(raw, chunk_ids, indices)
        data, job = self._select(raw, chunk_ids, indices)
        with self._lock:
            if self._pool is None:
                self._pool = cf.ThreadPoolExecutor(2, thread_name_prefix="cntkio-htk")
            pool = self._pool
        future = pool.submit(self._copy_utterances, *job)

        def finish() -> ChunkData:
            future.result()
            return data
        return finish

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


class _Padded(np.ndarray):
    """Frame mode's raw chunk: the padded frames (:meth:`HTKFeatureDeserializerImpl._raw`) and
    ``local``, each frame's utterance within the chunk (:meth:`UtteranceCorpus._frame_map`)."""

    local: np.ndarray | None = None


class _Unread:
    """A window's chunk whose frames are read from the files only when selected."""

    __slots__ = ("chunk",)

    def __init__(self, chunk: int) -> None:
        self.chunk = chunk


def _pread_rows(handle: int, out: np.ndarray, rows: np.ndarray, offsets: np.ndarray, counts: np.ndarray,
                swap: bool) -> None:
    """The NumPy twin of the C core's ``pread_swap`` (rows of ``out`` from byte offsets)."""
    for r, off, n in zip(rows.tolist(), offsets.tolist(), counts.tolist()):
        block = out[r:r + n]
        view, done = memoryview(block.reshape(-1).view(np.uint8)), 0
        while done < len(view):
            got = os.preadv(handle, [view[done:]], off + done)
            if got <= 0:
                raise OSError(f"the file ends before byte {off + len(view)} (it shrank after it was indexed?)")
            done += got
        if swap:
            block.byteswap(inplace=True)


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.int64)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
