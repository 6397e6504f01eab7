"""Writing CBF files (the converters ``ctf2bin`` and ``bin2ctf`` are in :mod:`.convert`).

:class:`CBFWriter` takes columnar chunks (``ChunkData``, as every deserializer produces) and
encodes each chunk with a few vectorized copies into one word array. The file is written under a
temporary name next to the target and renamed when complete, so a failed conversion never leaves
a half-written file under the target name. The file is fsync'ed before the rename (durable).
Where the file system allows it (Linux ``O_DIRECT``; ext4, xfs...), the file is written around
the page cache: the output is staged in page-aligned blocks that a thread of its own writes with
``pwrite`` (GIL released) while the next chunks are parsed and encoded -- no copy into the page
cache (for dense data most of the conversion's system CPU), and nothing left for the final fsync
to write. Elsewhere (``EINVAL`` at the open or a write: tmpfs, some network file systems) the
writes are buffered, and to keep the final fsync short the kernel is asked to start writing each
chunk back as soon as it is written (``sync_file_range(SYNC_FILE_RANGE_WRITE)``, on a thread of
its own: it starts the writeback without waiting for the disk and keeps the pages cached).
"""
from __future__ import annotations

import concurrent.futures as cf
import errno
import os
import struct
import sys
import threading
import time
import uuid
from collections import deque
from typing import Sequence

import numpy as np

from ..._native import native
from ...errors import ConfigError, FormatError
from ..protocol import ChunkData, gather_stream
from .layout import FLOAT32, FLOAT64, MAGIC, VERSION, CBFStream, gather_words

__all__ = ["CBFWriter", "DEFAULT_CHUNK_SIZE"]

def _writeback_starter():
    """``start(fd, offset, nbytes)``: begin writing a range of a file back to disk, without
    waiting (Linux ``sync_file_range`` with ``SYNC_FILE_RANGE_WRITE``); ``None`` elsewhere. Only
    a hint: durability comes from the fsync before the rename."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_SYNC_FILE_RANGE_WRITE = 2
_start_writeback = _writeback_starter()
#: start the writeback from a thread of its own (False: in the writing thread)
_WRITEBACK_THREAD = True
#: write the file around the page cache (``O_DIRECT``) where the file system allows it: the output
#: is staged in page-aligned buffers and written by a thread of its own (False: buffered writes,
#: each chunk's writeback started as it is written)
_DIRECT_IO = hasattr(os, "O_DIRECT")
#: bytes per direct write (a staging buffer)
_DIRECT_STAGE_BYTES = 2 * 1024 * 1024
#: staging buffers in flight at most: room for about 1.5 chunks (a chunk is written in one burst,
#: which should not wait for the disk), within these bounds; made as needed
_DIRECT_STAGES = 4
_DIRECT_STAGES_MAX = 64
#: alignment of a direct write's memory, file offset and length
_DIRECT_ALIGN = 4096

#: written-out encode buffers kept for reuse (the largest; shared by all writers, so that the
#: next file's chunks are encoded into memory already faulted in)
_SPARE_BUFFERS = 8
_SPARE_BYTES = 96 * 1024 * 1024
_encode_spare: list = []
_encode_spare_lock = threading.Lock()

#: bytes of a written chunk before a new one starts (as ctf2bin.py's --chunk_size)
DEFAULT_CHUNK_SIZE = 32 * 1024 * 1024


class CBFWriter:
    """Writes a CBF file chunk by chunk.

    ``streams``: ``(name, dim, is_sparse)`` triples in header order. ``precision``: ``"float"``
    (float32 values, as CNTK reads by default) or ``"double"``. ``chunk_size``: a chunk is closed
    once it holds at least this many bytes (sequences are never split); ``None`` writes every
    :meth:`write` call as one chunk. Use as a context manager: the file appears under ``path``
    only when the writer closes without an error.
    """

    #: sparse blocks laid out by the C core in one pass (``_cbf.sparse_emit``); False takes the
    #: NumPy scatters (the tested twin; also the path where the C core is not built)
    emit_native = True

    def __init__(self, path: str, streams: Sequence[tuple[str, int, bool]], precision: str = "float",
                 chunk_size: int | None = DEFAULT_CHUNK_SIZE) -> None:
        if precision not in ("float", "double"):
            raise ConfigError(f"expected 'float' or 'double', found {precision!r}", path="precision")
        if chunk_size is not None and chunk_size < 1:
            raise ConfigError(f"expected a chunk size >= 1, found {chunk_size}", path="chunk_size")
        if not streams:
            raise ConfigError("a CBF file needs at least one stream", path="streams")
        etype = FLOAT64 if precision == "double" else FLOAT32
        self.streams = [CBFStream(str(n), bool(sp), etype, int(d)) for n, d, sp in streams]
        for s in self.streams:
            if not 1 <= s.dim <= 0x7FFFFFFF:
                raise ConfigError(f"stream {s.name!r}: dim must be in [1, 2**31 - 1], found {s.dim}",
                                  path=f"streams.{s.name}.dim")
        if len({s.name for s in self.streams}) != len(self.streams):
            raise ConfigError("two streams have the same name", path="streams")
        self.path = os.fspath(path)
        self.chunk_size = chunk_size
        self._tmp = _temp_name(self.path)
        inflight = (chunk_size if chunk_size is not None else DEFAULT_CHUNK_SIZE) * 3 // 2
        stages = min(max(_DIRECT_STAGES, -(-inflight // _DIRECT_STAGE_BYTES)), _DIRECT_STAGES_MAX)
        self._f = _DirectFile.open(self._tmp, stages) if _DIRECT_IO and hasattr(os, "O_DIRECT") else None
        if self._f is None:
            self._f = open(self._tmp, "xb")
        self._f.write(struct.pack("<QI", MAGIC, VERSION))
        self._table: list[tuple[int, int, int]] = []
        self._pending: list[tuple[np.ndarray, list[np.ndarray]]] = []  # (lengths, words per stream)
        self._pending_bytes = 0
        # encode buffers: fresh memory costs a page fault and zeroing per page, so the buffers of
        # written chunks are kept (a few) and reused; a buffer is reused only once written out
        # and no longer used by the write() in progress
        self._spare, self._spare_lock = _encode_spare, _encode_spare_lock  # shared by writers
        self._pending_bufs: dict[int, np.ndarray] = {}   # buffers that pending parts view
        self._active: dict[int, np.ndarray] = {}         # buffers of the write() in progress
        self.num_sequences = 0
        self.num_samples = 0
        #: seconds the final fsync took (set by close)
        self.fsync_seconds = 0.0
        #: True when every block of the file went out with O_DIRECT (set by close)
        self.direct_io = False
        self._writeback: cf.ThreadPoolExecutor | None = None
        self._closed = False

    # -- encoding -----------------------------------------------------------------------------

    def encode(self, chunk: ChunkData, names: Sequence[str] | None = None,
               indices_checked: bool = False) -> "Encoded":
        """The chunk encoded for :meth:`write` (``write(chunk, names, encoded=...)``). Thread-safe
        and mostly GIL-free (NumPy and the C core): ``ctf2bin`` encodes each chunk on the thread
        that parsed it, so the writing thread only cuts the chunks and writes.
        ``indices_checked``: every sparse index is known to be in ``[0, dim)`` of its stream
        (``ctf2bin``: the CTF parser checked them against the same dims), so they are not
        checked again."""
        names = [s.name for s in self.streams] if names is None else list(names)
        bufs: list[np.ndarray] = []
        lengths, blocks, sizes = self._encode(chunk, names, bufs, indices_checked)
        # the chunk is kept only when sequences must be dropped (see _write): else its arrays
        # are freed now, on this thread (the parser reuses their memory for the next chunk)
        keep = chunk if len(lengths) and not lengths.all() else None
        return Encoded(keep, names, lengths, blocks, sizes, bufs)

    def _encode(self, chunk: ChunkData, names: Sequence[str], bufs: list,
                indices_checked: bool = False) -> tuple[np.ndarray, list, np.ndarray]:
        """Per stream the blocks of every sequence as one word array, with the sequences' lengths
        and byte sizes (to cut chunks at sequence boundaries). The word arrays' buffers are
        appended to ``bufs``."""
        n = len(chunk.sequences)
        counts = []
        for st, name in zip(self.streams, names):
            data = chunk.streams[name]
            if data.is_sparse != st.sparse:
                raise ConfigError(f"stream {st.name!r} is {'sparse' if st.sparse else 'dense'} in the "
                                  "CBF header but the data is not", path=f"streams.{st.name}")
            counts.append(np.diff(np.asarray(data.offsets, np.int64)))
        lengths = np.max(np.stack(counts), axis=0) if n else np.zeros(0, np.int64)
        blocks, sizes = [], 4 * np.ones(n, np.int64)
        for st, name, cnt in zip(self.streams, names, counts):
            words, block = self._encode_stream(st, chunk.streams[name], cnt, bufs, indices_checked)
            blocks.append((words, block))
            sizes += 4 * block
        return lengths, blocks, sizes

    def _encode_stream(self, st: CBFStream, data, cnt: np.ndarray, bufs: list,
                       indices_checked: bool = False):
        ew = st.value_words
        n = len(cnt)
        if not st.sparse:
            vals = np.ascontiguousarray(np.asarray(data.values).reshape(-1, st.dim), st.dtype)
            if int(np.asarray(data.offsets)[0]) != 0:
                vals = vals[int(data.offsets[0]):]
            block = 1 + cnt * (st.dim * ew)
            start = np.zeros(n, np.int64)
            if n > 1:
                np.cumsum(block[:-1], out=start[1:])
            words = self._take(int(block.sum()), bufs)
            words[start] = cnt
            src = vals.reshape(-1).view("<u4")
            seg = cnt * (st.dim * ew)
            src_start = np.zeros(n, np.int64)
            if n > 1:
                np.cumsum(seg[:-1], out=src_start[1:])
            _scatter(words, src, src_start, start + 1, seg)
            return words, block
        indptr = np.asarray(data.indptr, np.int64)
        off = np.asarray(data.offsets, np.int64)
        nnz = indptr[off[1:]] - indptr[off[:-1]]
        e0 = indptr[off[:-1]]
        if not indices_checked and len(data.indices) and \
                (int(np.min(data.indices)) < 0 or int(np.max(data.indices)) >= st.dim):
            bad = int(np.flatnonzero((np.asarray(data.indices) < 0) |
                                     (np.asarray(data.indices) >= st.dim))[0])
            raise FormatError(f"stream {st.name!r}: sparse index out of range",
                              expected=f"an index below dim = {st.dim}",
                              found=str(int(data.indices[bad])))
        block = 2 + nnz * (ew + 1) + cnt
        start = np.zeros(n, np.int64)
        if n > 1:
            np.cumsum(block[:-1], out=start[1:])
        words = self._take(int(block.sum()), bufs)
        values = np.ascontiguousarray(data.data, st.dtype).view("<u4")
        indices = np.ascontiguousarray(data.indices, "<i4").view("<u4")
        mod = native("cbf") if self.emit_native else None
        if mod is not None:  # one pass over the sequences (the NumPy path below is its twin)
            mod.sparse_emit(words, start, values, indices, np.ascontiguousarray(indptr),
                            np.ascontiguousarray(off), ew)
            return words, block
        words[start] = cnt
        words[start + 1] = nnz
        sizes = np.diff(indptr).astype("<i4").view("<u4")
        _scatter(words, values, e0 * ew, start + 2, nnz * ew)
        _scatter(words, indices, e0, start + 2 + nnz * ew, nnz)
        _scatter(words, sizes, off[:-1], start + 2 + nnz * (ew + 1), cnt)
        return words, block

    def _take(self, n: int, bufs: list) -> np.ndarray:
        """An uninitialized uint32 array of ``n`` words, from a spare buffer when one fits (its
        buffer appended to ``bufs``). Thread-safe."""
        with self._spare_lock:
            best = None
            for i, b in enumerate(self._spare):
                if n <= len(b) <= 2 * n + (1 << 18) and (best is None or len(b) < len(self._spare[best])):
                    best = i
            buf = self._spare.pop(best) if best is not None else None
        if buf is None:
            buf = np.empty(max(n, 1), "<u4")
        bufs.append(buf)
        return buf[:n]

    def _give(self, bufs) -> None:
        """Keep written-out buffers for reuse (the largest few)."""
        with self._spare_lock:
            self._spare.extend(bufs)
            self._spare.sort(key=len, reverse=True)
            del self._spare[_SPARE_BUFFERS:]
            total = 0
            for i, b in enumerate(self._spare):
                total += b.nbytes
                if total > _SPARE_BYTES:
                    del self._spare[i:]
                    break

    def _end_write(self) -> None:
        """The write() in progress is done: its buffers no pending part views are spare."""
        active, self._active = self._active, {}
        self._give(b for k, b in active.items() if k not in self._pending_bufs)

    # -- writing ------------------------------------------------------------------------------

    def write(self, chunk: ChunkData | None, names: Sequence[str] | None = None,
              encoded: "Encoded | None" = None) -> None:
        """Append the sequences of a chunk (``names[i]`` is the chunk's stream for header stream
        ``i``; default: the header names), or of a chunk :meth:`encode` made (``encoded``; then
        ``chunk`` and ``names`` are its own). Sequences with no sample in any stream are
        skipped."""
        if encoded is None:
            assert chunk is not None
            encoded = self.encode(chunk, names)
        self._active = {id(b): b for b in encoded.bufs}
        try:
            self._write(encoded)
        finally:
            self._end_write()

    def _write(self, encoded: "Encoded") -> None:
        chunk, names = encoded.chunk, encoded.names
        lengths, blocks, sizes = encoded.lengths, encoded.blocks, encoded.sizes
        keep = lengths > 0
        if not keep.all():
            assert chunk is not None  # kept by encode() for this
            chunk = _select(chunk, np.flatnonzero(keep), names)
            self._end_write()  # the first encoding is not used
            bufs: list[np.ndarray] = []
            lengths, blocks, sizes = self._encode(chunk, names, bufs)
            self._active = {id(b): b for b in bufs}
        n = len(lengths)
        if n == 0:
            return
        if self.chunk_size is None:
            self._add(lengths, blocks, 0, n)
            self._flush()
            return
        ends = np.cumsum(sizes)
        begin = 0
        while begin < n:
            need = self.chunk_size - self._pending_bytes
            base = int(ends[begin - 1]) if begin else 0
            # the first sequence at which the pending chunk reaches chunk_size closes it
            cut = int(np.searchsorted(ends, base + need, "left")) + 1
            if cut > n:
                self._add(lengths, blocks, begin, n)
                self._pending_bytes += int(ends[-1]) - base
                return
            self._add(lengths, blocks, begin, cut)
            self._flush()
            begin = cut

    def _add(self, lengths, blocks, a: int, b: int) -> None:
        parts = []
        for words, block in blocks:
            w0 = int(block[:a].sum())
            w1 = w0 + int(block[a:b].sum())
            parts.append(words[w0:w1])
            buf = words.base if words.base is not None else words
            self._pending_bufs[id(buf)] = buf
        self._pending.append((lengths[a:b], parts))

    def _flush(self) -> None:
        if not self._pending:
            return
        offset = self._f.tell()
        lengths = np.concatenate([p[0] for p in self._pending])
        self._f.write(lengths.astype("<u4"))  # arrays are buffers: written without a copy
        for k in range(len(self.streams)):
            for _, parts in self._pending:
                self._f.write(np.ascontiguousarray(parts[k]))
        nseq, nsamp = len(lengths), int(lengths.sum())
        if nsamp > 0xFFFFFFFF:
            raise FormatError("a chunk holds more than 2**32 - 1 samples; use a smaller chunk size",
                              file=self.path, expected="at most 4294967295 samples per chunk",
                              found=str(nsamp))
        self._table.append((offset, nseq, nsamp))
        if _start_writeback is not None and not isinstance(self._f, _DirectFile):
            self._f.flush()
            # on a thread of its own: starting the writeback submits the pages' I/O in the caller
            # (~0.1 s per GB), which would hold up the encoding. A failed hint is harmless: the
            # fsync in close() writes everything back anyway
            args = (self._f.fileno(), offset, self._f.tell() - offset, _SYNC_FILE_RANGE_WRITE)
            if not _WRITEBACK_THREAD:
                _start_writeback(*args)
            else:
                if self._writeback is None:
                    self._writeback = cf.ThreadPoolExecutor(1, thread_name_prefix="cntkio-cbf-writeback")
                self._writeback.submit(_start_writeback, *args)
        self.num_sequences += nseq
        self.num_samples += nsamp
        self._pending, self._pending_bytes = [], 0
        written, self._pending_bufs = self._pending_bufs, {}
        self._give(b for k, b in written.items() if k not in self._active)

    def close(self) -> None:
        """Write the last chunk, the header and the chunk table, and rename into place."""
        if self._closed:
            return
        try:
            self._flush()
            f = self._f
            header = f.tell()
            out = [struct.pack("<QII", MAGIC, len(self._table), len(self.streams))]
            for s in self.streams:
                name = s.name.encode("utf-8")
                out.append(struct.pack("<BI", 1 if s.sparse else 0, len(name)) + name
                           + struct.pack("<BI", s.element_type, s.dim))
            for off, nseq, nsamp in self._table:
                out.append(struct.pack("<qII", off, nseq, nsamp))
            out.append(struct.pack("<q", header))
            f.write(b"".join(out))
            f.flush()
            self._stop_writeback()
            if isinstance(f, _DirectFile):
                f.finish()
                self.direct_io = f.direct
            t0 = time.perf_counter()
            os.fsync(f.fileno())
            self.fsync_seconds = time.perf_counter() - t0
            f.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def _stop_writeback(self) -> None:
        pool, self._writeback = self._writeback, None
        if pool is not None:
            pool.shutdown(wait=True)

    def abort(self) -> None:
        """Discard the temporary file; nothing appears under ``path``."""
        self._closed = True
        try:
            self._stop_writeback()  # before the file is closed: the thread uses its descriptor
            self._f.close()
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)

    def __enter__(self) -> "CBFWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class _DirectFile:
    """A new file written with ``O_DIRECT``: what :meth:`write` gets is copied into page-aligned
    staging buffers, and each full buffer is written at its offset by a thread of its own
    (``pwrite`` releases the GIL; no page-cache copy, no writeback left for the fsync). The last
    partial block is written without ``O_DIRECT`` by :meth:`finish`. A file system that refuses
    ``O_DIRECT`` (``EINVAL``) at open or at a write gets buffered writes from there on."""

    @classmethod
    def open(cls, path: str, stages: int = _DIRECT_STAGES) -> "_DirectFile | None":
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags | os.O_DIRECT, 0o666)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
            # refused: some file systems create the file before they refuse the flag (the name
            # is new and unique, so a file under it now is that one)
            if os.path.exists(path):
                os.unlink(path)
            return None  # the caller opens it buffered ('x': the same create-new rule)
        return cls(fd, stages)

    def __init__(self, fd: int, stages: int = _DIRECT_STAGES) -> None:
        self.fd = fd
        self.direct = True
        self._pos = 0  # bytes written so far (staged or out)
        self._mmap = _stage_take
        self._finished = False
        self._stages = max(int(stages), 2)
        self._free: list = []  # staging buffers written out (made as needed, up to self._stages)
        self._made = 1
        self._busy: deque = deque()  # (future, buffer) in write order
        self._pool = cf.ThreadPoolExecutor(1, thread_name_prefix="cntkio-cbf-write")
        self._buf = self._mmap()
        self._fill = 0   # bytes staged in self._buf
        self._base = 0   # file offset of self._buf

    def tell(self) -> int:
        return self._pos

    def fileno(self) -> int:
        return self.fd

    def flush(self) -> None:
        pass

    def write(self, data) -> int:
        mv = memoryview(data).cast("B")
        n, done = len(mv), 0
        while done < n:
            k = min(n - done, _DIRECT_STAGE_BYTES - self._fill)
            self._buf[self._fill:self._fill + k] = mv[done:done + k]
            self._fill += k
            done += k
            if self._fill == _DIRECT_STAGE_BYTES:
                self._submit()
        self._pos += n
        return n

    def _submit(self) -> None:
        buf, base = self._buf, self._base
        self._busy.append((self._pool.submit(self._pwrite, buf, _DIRECT_STAGE_BYTES, base), buf))
        self._base += _DIRECT_STAGE_BYTES
        self._fill = 0
        if not self._free and self._made < self._stages:
            self._free.append(self._mmap())
            self._made += 1
        elif not self._free:  # every buffer in flight: wait for the oldest
            fut, old = self._busy.popleft()
            fut.result()
            self._free.append(old)
        while self._busy and self._busy[0][0].done():
            fut, old = self._busy.popleft()
            fut.result()
            self._free.append(old)
        self._buf = self._free.pop()

    def _pwrite(self, buf, n: int, offset: int) -> None:
        with memoryview(buf) as whole, whole[:n] as mv:
            done = 0
            while done < n:
                try:
                    done += os.pwrite(self.fd, mv[done:], offset + done)
                except OSError as e:
                    if e.errno != errno.EINVAL or not self.direct:
                        raise
                    self._buffered()  # the file system takes no direct writes: plain ones from here
                    self.direct = False

    def _buffered(self) -> None:
        import fcntl
        fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) & ~os.O_DIRECT)

    def _drain(self) -> None:
        while self._busy:
            fut, buf = self._busy.popleft()
            fut.result()
            self._free.append(buf)

    def finish(self) -> None:
        """Write what is staged (the whole blocks directly, the rest buffered) and wait."""
        self._drain()
        whole = self._fill - self._fill % _DIRECT_ALIGN
        if whole:
            self._pwrite(self._buf, whole, self._base)
        if whole < self._fill:
            if self.direct:
                self._buffered()
            with memoryview(self._buf) as all_, all_[whole:self._fill] as mv:
                done = 0
                while done < len(mv):
                    done += os.pwrite(self.fd, mv[done:], self._base + whole + done)
        self._base += self._fill
        self._fill = 0
        self._finished = True

    def close(self) -> None:
        if self.fd < 0:  # closed already (an abort after a failed rename closes again)
            return
        try:
            self._pool.shutdown(wait=True)
            self._busy.clear()
        finally:
            fd, self.fd = self.fd, -1
            os.close(fd)
            bufs, self._free = self._free + [self._buf], []
            if self._finished and not self._busy:  # every write done: kept for the next file
                _stage_give(bufs)
            else:
                _stage_close(bufs)


#: staging buffers of finished files, kept (faulted in) for the next file: each new buffer costs
#: a page fault and a zeroing per page, 12k faults for the 24 buffers of a 32 MiB-chunk conversion
_stage_cache: list = []
_stage_cache_lock = threading.Lock()
_STAGE_CACHE_BYTES = 64 * 1024 * 1024


def _after_fork_in_child() -> None:
    """A fork while another thread held a pool's lock must not leave it held in the child."""
    global _encode_spare_lock, _stage_cache_lock
    _encode_spare_lock = threading.Lock()
    _stage_cache_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _stage_take():
    """A page-aligned staging buffer of ``_DIRECT_STAGE_BYTES``: a kept one, else a new mapping."""
    import mmap
    with _stage_cache_lock:
        while _stage_cache:
            buf = _stage_cache.pop()
            if len(buf) == _DIRECT_STAGE_BYTES:
                return buf
            _stage_close([buf])
    populate = getattr(mmap, "MAP_POPULATE", 0)  # one call, not a fault per page
    return mmap.mmap(-1, _DIRECT_STAGE_BYTES, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)


def _stage_give(bufs) -> None:
    """Keep written-out staging buffers for the next file (up to ``_STAGE_CACHE_BYTES``)."""
    rest = []
    with _stage_cache_lock:
        for buf in bufs:
            if len(buf) == _DIRECT_STAGE_BYTES and \
                    (len(_stage_cache) + 1) * _DIRECT_STAGE_BYTES <= _STAGE_CACHE_BYTES:
                _stage_cache.append(buf)
            else:
                rest.append(buf)
    _stage_close(rest)


def _stage_close(bufs) -> None:
    for buf in bufs:
        try:
            buf.close()
        except BufferError:  # still viewed (an exception's traceback): freed with it
            pass


class Encoded:
    """A chunk encoded by :meth:`CBFWriter.encode`, for :meth:`CBFWriter.write`."""

    __slots__ = ("chunk", "names", "lengths", "blocks", "sizes", "bufs")

    def __init__(self, chunk, names, lengths, blocks, sizes, bufs) -> None:
        self.chunk, self.names = chunk, names
        self.lengths, self.blocks, self.sizes, self.bufs = lengths, blocks, sizes, bufs


def _temp_name(path: str) -> str:
    """A new name beside ``path`` for writing before the rename (created with 'x': the umask's
    permissions, as a plain open would give)."""
    folder, base = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{base}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")


def _scatter(dst: np.ndarray, src: np.ndarray, src_starts, dst_starts, lengths) -> None:
    """``dst[d:d+n] = src[s:s+n]`` for every segment (C memcpy when the C core is built)."""
    lengths = np.asarray(lengths, np.int64)
    if not len(lengths) or int(lengths.sum()) == 0:
        return
    src_starts = np.asarray(src_starts, np.int64)
    dst_starts = np.asarray(dst_starts, np.int64)
    mod = native("rand")
    if mod is not None and src.flags.c_contiguous and src.flags.aligned:
        mod.copy_segments(src, src_starts, dst, dst_starts, lengths)
        return
    flat = gather_words(src, src_starts, lengths)
    pos = np.zeros(len(lengths), np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=pos[1:])
    idx = np.arange(len(flat), dtype=np.int64)
    idx += np.repeat(dst_starts - pos, lengths)
    dst[idx] = flat


def _select(chunk: ChunkData, kept: np.ndarray, names) -> ChunkData:
    streams = {name: gather_stream(chunk.streams[name], kept) for name in names}
    seq = chunk.sequences
    return ChunkData(type(seq)(seq.keys[kept], seq.lengths[kept]), streams)
