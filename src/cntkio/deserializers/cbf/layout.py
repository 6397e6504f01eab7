"""The CNTK binary format (CBF) byte layout: header and chunk table parsing, chunk walking.

Little-endian, as CNTK 2.7's ``CNTKBinaryFormatDeserializer`` reads it (and CNTK's
``Scripts/ctf2bin.py`` writes it)::

    file   = u64 magic | u32 version (1) | chunk* | header | i64 header offset (last 8 bytes)
    chunk  = u32 samples[nseq]                  (per sequence: the largest count over the streams)
             then per stream (header order), per sequence:
               dense : u32 n, value[n * dim]
               sparse: u32 n, i32 nnz, value[nnz], i32 row[nnz], i32 nnz_per_sample[n]
    header = u64 magic | u32 nchunks | u32 nstreams
             | per stream: u8 storage (0 dense, 1 sparse), u32 name length, name (UTF-8),
                           u8 element type (0 float32, 1 float64), u32 dim
             | per chunk: i64 offset, u32 nseq, u32 nsamples

Every field is a multiple of 4 bytes, so a chunk is walked in 32-bit words relative to its start.
Everything here checks bounds before it reads: a corrupt file raises :class:`FormatError` naming
the file, the chunk and the field, never reads past the buffer.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..._native import native
from ...errors import FormatError
from ..ranges import BytesRanges, Ranges

__all__ = ["MAGIC", "VERSION", "DENSE", "SPARSE", "FLOAT32", "FLOAT64", "CBFStream", "CBFHeader",
           "ChunkLayout", "read_header", "chunk_lengths", "chunk_words", "walk_chunk", "gather_words"]

#: ``cntk_bin`` as a little-endian u64 (the file's first 8 bytes read ``nib_ktnc``)
MAGIC = 0x636E746B5F62696E
#: the only version CNTK 2.7's reader accepts
VERSION = 1
DENSE, SPARSE = 0, 1
FLOAT32, FLOAT64 = 0, 1
_TYPE_NAMES = {FLOAT32: "float32", FLOAT64: "float64"}
#: smallest file: magic, version, an empty header (magic, 0 chunks, 0 streams), header offset
_MIN_SIZE = 12 + 16 + 8


@dataclass(frozen=True)
class CBFStream:
    """One stream of the file header."""

    name: str
    sparse: bool
    element_type: int  # FLOAT32 or FLOAT64
    dim: int

    @property
    def value_words(self) -> int:
        """32-bit words per value (1 for float32, 2 for float64)."""
        return 2 if self.element_type == FLOAT64 else 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype("<f8" if self.element_type == FLOAT64 else "<f4")


@dataclass
class CBFHeader:
    """The parsed header: streams, and the chunk table as arrays (offsets, sequence and sample
    counts); ``ends[i]`` is where chunk i's bytes end (the next chunk, or the header)."""

    version: int
    streams: list[CBFStream]
    offsets: np.ndarray
    num_sequences: np.ndarray
    num_samples: np.ndarray
    ends: np.ndarray
    header_offset: int
    size: int


def _err(file: str, message: str, *, offset: int | None = None, expected: str | None = None,
         found: str | None = None) -> FormatError:
    return FormatError(message, file=file, offset=offset, expected=expected, found=found)


class _Cursor:
    """Bounds-checked little-endian reads from ``buf``, the file's bytes from offset ``base`` on; a
    read past ``limit`` (an offset in the file) raises."""

    def __init__(self, buf, base: int, pos: int, limit: int, file: str) -> None:
        self.buf, self.base, self.pos, self.limit, self.file = buf, base, pos, limit, file

    def _room(self, n: int, field: str) -> None:
        if self.pos + n > self.limit:
            raise _err(self.file, f"the file is truncated: the header's {field} runs past the end "
                       f"(Error reading file '{self.file}')", offset=self.pos,
                       expected=f"{n} bytes at offset {self.pos}",
                       found=f"{max(self.limit - self.pos, 0)} bytes before the end of the header")

    def read(self, fmt: str, field: str) -> tuple:
        n = struct.calcsize(fmt)
        self._room(n, field)
        out = struct.unpack_from("<" + fmt, self.buf, self.pos - self.base)
        self.pos += n
        return out

    def bytes(self, n: int, field: str) -> bytes:
        self._room(n, field)
        at = self.pos - self.base
        out = bytes(self.buf[at:at + n])
        self.pos += n
        return out


def _not_cbf(file: str, where: str, found: bytes, offset: int) -> FormatError:
    return _err(file, f"The input ({file}) is not a valid CNTK binary format file: wrong magic number "
                f"{where}", offset=offset, expected="the 8 bytes 'nib_ktnc' (0x636E746B5F62696E)",
                found=repr(found))


def _ranges(src, file: str) -> Ranges:
    return src if hasattr(src, "read_into") else BytesRanges(src, file, what="CBF file")


def read_header(src, file: str) -> CBFHeader:
    """Parse and validate the start, the header and the chunk table of a CBF file: ``src`` is the
    file read by ranges (:mod:`..ranges`) or its bytes. Only the first 12 bytes and the header
    (from the offset in the last 8 bytes to the end) are read."""
    src = _ranges(src, file)
    size = src.size
    start = bytes(src.read(0, min(size, 12)))
    if size < 8 or struct.unpack_from("<Q", start, 0)[0] != MAGIC:
        raise _not_cbf(file, "at the start of the file", start[:8], 0)
    if size < 12:
        raise _err(file, f"the file is truncated after the magic number (Error reading file '{file}')",
                   offset=8, expected="a u32 version", found=f"{size} bytes in all")
    version = struct.unpack_from("<I", start, 8)[0]
    if version != VERSION:
        raise _err(file, f"unsupported version: the reader version is {VERSION}, but the data file "
                   f"was created for version {version}", offset=8, expected=f"version {VERSION}",
                   found=f"version {version}")
    if size < _MIN_SIZE:
        raise _err(file, f"the file is truncated: no room for a header (Error reading file '{file}')",
                   expected=f"at least {_MIN_SIZE} bytes", found=f"{size} bytes")
    header_offset = struct.unpack_from("<q", bytes(src.read(size - 8, 8)), 0)[0]
    limit = size - 8
    if not 12 <= header_offset <= limit - 16:
        raise _err(file, "the header offset (the last 8 bytes) points outside the file "
                   "(truncated or not a CBF file)", offset=size - 8,
                   expected=f"an offset in [12, {limit - 16}]", found=str(header_offset))
    buf = src.read(header_offset, limit - header_offset)     # the header: at most the file's size
    cur = _Cursor(buf, header_offset, header_offset, limit, file)
    magic = cur.read("Q", "magic number")[0]
    if magic != MAGIC:
        raise _not_cbf(file, f"at the header (offset {header_offset})", bytes(buf[:8]), header_offset)
    nchunks, nstreams = cur.read("II", "chunk and stream counts")
    # every stream takes at least 10 bytes and every chunk 16: reject absurd counts before looping
    room = limit - cur.pos
    if nstreams * 10 + nchunks * 16 > room:
        raise _err(file, "the header's chunk or stream count does not fit in the file "
                   f"(Error reading file '{file}')", offset=header_offset + 8,
                   expected=f"{nchunks} chunks and {nstreams} streams in {room} bytes",
                   found=f"{nchunks} chunks, {nstreams} streams")
    if nstreams == 0:
        raise _err(file, "the header declares no stream", offset=header_offset + 12,
                   expected="at least one stream", found="0 streams")
    streams: list[CBFStream] = []
    names: set[str] = set()
    for i in range(nstreams):
        field = f"stream {i}"
        storage = cur.read("B", field + " storage")[0]
        if storage not in (DENSE, SPARSE):
            raise _err(file, f"stream {i}: unknown storage format", offset=cur.pos - 1,
                       expected="0 (dense) or 1 (sparse)", found=str(storage))
        nlen = cur.read("I", field + " name length")[0]
        raw = cur.bytes(nlen, field + " name")
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _err(file, f"stream {i}: the name is not UTF-8", offset=cur.pos - nlen,
                       expected="a UTF-8 name", found=repr(raw[:40])) from e
        if not name:
            raise _err(file, f"stream {i}: empty name", offset=cur.pos - 4 - nlen,
                       expected="a name of at least one byte", found="length 0")
        if name in names:
            raise _err(file, f"stream {i}: the name {name!r} is used by two streams",
                       offset=cur.pos - nlen, expected="distinct stream names", found=repr(name))
        names.add(name)
        etype = cur.read("B", field + " element type")[0]
        if etype not in (FLOAT32, FLOAT64):
            raise _err(file, f"stream {i} ({name!r}): unsupported element type", offset=cur.pos - 1,
                       expected="0 (float32) or 1 (float64)", found=str(etype))
        dim = cur.read("I", field + " dim")[0]
        if dim == 0 or dim > 0x7FFFFFFF:
            raise _err(file, f"stream {i} ({name!r}): invalid sample dimension", offset=cur.pos - 4,
                       expected="a dim in [1, 2**31 - 1]", found=str(dim))
        streams.append(CBFStream(name, storage == SPARSE, etype, dim))
    table_at = cur.pos
    if table_at + 16 * nchunks != limit:
        raise _err(file, "the chunk table does not end where the header offset begins "
                   "(truncated file or wrong chunk count)", offset=table_at,
                   expected=f"{nchunks} entries of 16 bytes ending at offset {limit}",
                   found=f"{limit - table_at} bytes")
    table = np.frombuffer(buf, dtype=np.dtype([("off", "<i8"), ("nseq", "<u4"), ("nsamp", "<u4")]),
                          count=nchunks, offset=table_at - header_offset)
    offsets = table["off"].astype(np.int64)
    nseq = table["nseq"].astype(np.int64)
    nsamp = table["nsamp"].astype(np.int64)
    ends = np.empty(nchunks, np.int64)
    if nchunks:
        ends[:-1] = offsets[1:]
        ends[-1] = header_offset
        bad = np.flatnonzero((offsets < 12) | (offsets > header_offset))
        if len(bad):
            c = int(bad[0])
            raise _err(file, f"chunk {c}: the chunk table's offset points outside the data",
                       offset=table_at + 16 * c, expected=f"an offset in [12, {header_offset}]",
                       found=str(int(offsets[c])))
        bad = np.flatnonzero(ends < offsets)
        if len(bad):
            c = int(bad[0])
            raise _err(file, f"chunk {c}: the chunk table's offsets are not in file order",
                       offset=table_at + 16 * c, expected=f"an offset <= {int(ends[c])} (the next "
                       "chunk's)", found=str(int(offsets[c])))
        bad = np.flatnonzero(nseq * 4 > ends - offsets)
        if len(bad):
            c = int(bad[0])
            raise _err(file, f"chunk {c}: the sequence count does not fit in the chunk's bytes",
                       offset=table_at + 16 * c + 8,
                       expected=f"at most {(int(ends[c]) - int(offsets[c])) // 4} sequences",
                       found=str(int(nseq[c])))
    return CBFHeader(version, streams, offsets, nseq, nsamp, ends, int(header_offset), size)


def chunk_lengths(src, header: CBFHeader, c: int, file: str) -> np.ndarray:
    """The per-sequence sample counts at the start of chunk ``c`` (int64), checked against the
    chunk table's sample count; ``src`` as :func:`read_header`'s (the table's sequence count was
    checked to fit in the chunk's bytes)."""
    off, n = int(header.offsets[c]), int(header.num_sequences[c])
    lengths = _ranges(src, file).read(off, 4 * n).view("<u4").astype(np.int64)
    total = int(lengths.sum())
    room = (int(header.ends[c]) - off) // 4 - n
    if total > room:      # every sample takes a word at least (of its longest stream): no file holds more
        raise _err(file, f"chunk {c}: the per-sequence sample counts do not fit in the chunk's bytes",
                   offset=off, expected=f"at most {room} samples in all (one 4-byte word each at least)",
                   found=f"{total} samples")
    if total != int(header.num_samples[c]):
        raise _err(file, f"chunk {c}: the counts do not add up: the chunk table's sample count "
                   "differs from the sum of the chunk's per-sequence sample counts", offset=off,
                   expected=f"nsamples = {total} (the sum of {n} per-sequence counts)",
                   found=f"nsamples = {int(header.num_samples[c])}")
    return lengths


@dataclass
class ChunkLayout:
    """Where each stream's sequences are in a chunk, in 32-bit words from the chunk's start:
    ``starts[s][i]`` is sequence i's block of stream s, ``counts[s][i]`` its sample count and
    ``nnz[s][i]`` (sparse streams; None for dense) its non-zero count. ``filled[s]`` is a sparse
    stream's CSR when the C core assembled it during the walk (``(data_words, indices, indptr)``,
    already checked: indices in [0, dim), per-sample counts >= 0 summing to each nnz), else None."""

    words: np.ndarray
    starts: list[np.ndarray]
    counts: list[np.ndarray]
    nnz: list[np.ndarray | None]
    filled: list[tuple[np.ndarray, np.ndarray, np.ndarray] | None]


def _chunk_error(file, c, stream: CBFStream | None, message, **kw) -> FormatError:
    where = f"chunk {c}" + ("" if stream is None else f", stream {stream.name!r}")
    return _err(file, f"{where}: {message}", **kw)


def chunk_words(src, header: CBFHeader, c: int, file: str, out: np.ndarray | None = None) -> np.ndarray:
    """Chunk ``c``'s bytes read into ``out`` (uint8, exactly the chunk's size; new memory when
    None), viewed as little-endian 32-bit words (a last partial word left out)."""
    off, end = int(header.offsets[c]), int(header.ends[c])
    raw = np.empty(end - off, np.uint8) if out is None else out
    _ranges(src, file).read_into(raw, off)
    return raw[:(end - off) // 4 * 4].view("<u4")


def walk_chunk(words: np.ndarray, header: CBFHeader, c: int, lengths: np.ndarray, file: str,
               fill_sparse: bool = True) -> ChunkLayout:
    """Locate every stream's sequence blocks in chunk ``c`` (``words``: its bytes as little-endian
    32-bit words, :func:`chunk_words`) and check that the counts add up: each block inside the
    chunk, the blocks ending exactly at the chunk's end, each sequence's sample count the largest
    of its streams' counts. With ``fill_sparse`` and the C core built, a sparse stream's CSR
    arrays are filled during its walk (one pass; see ``ChunkLayout``)."""
    off, end = int(header.offsets[c]), int(header.ends[c])
    n = len(lengths)
    nbytes = end - off
    total = len(words)
    pos = n
    starts, counts, nnzs, filled = [], [], [], []
    mod = native("cbf") if fill_sparse and words.flags.c_contiguous else None
    lengths64 = np.ascontiguousarray(lengths, np.int64)
    for st in header.streams:
        fill = None
        ew = st.value_words
        if not st.sparse:
            # every sequence's count is most likely its length: place the blocks on that guess
            # (one cumsum), then confirm every count where the guess put it; only where no
            # length could make a block larger than the chunk (the products stay far from 2^63)
            guess = bool(n) and int(lengths.max()) <= total // (st.dim * ew)
            if guess:
                block = 1 + lengths * (st.dim * ew)
                s = np.empty(n, np.int64)
                s[0] = pos
                np.cumsum(block[:-1], out=s[1:])
                s[1:] += pos
            if guess and int(s[-1]) < total and int(s[-1] + block[-1]) <= total and \
                    np.array_equal(words[s], lengths):
                cnt = lengths
                pos = int(s[-1] + block[-1])
            else:
                s, cnt, nz, pos = _walk(words, pos, n, False, st.dim * ew, file, c, st, off)
            nz = None
        else:
            got = None if mod is None else mod.sparse_fill(words, pos, lengths64, ew, st.dim)
            if got is not None:
                s, cnt, nz, pos = got[:4]
                fill = got[4:]
            else:  # not built, or a count or index to report: the walk (and NumPy) name it
                s, cnt, nz, pos = _walk(words, pos, n, True, ew, file, c, st, off)
        starts.append(s)
        counts.append(cnt)
        nnzs.append(nz)
        filled.append(fill)
    if pos * 4 != nbytes:
        raise _chunk_error(file, c, None, "the counts do not add up: the streams' data does not end "
                           "where the chunk ends", offset=off + pos * 4,
                           expected=f"{nbytes} bytes of chunk data (up to offset {end})",
                           found=f"{pos * 4} bytes")
    if header.streams and n:
        longest = np.max(np.stack(counts), axis=0)
        bad = np.flatnonzero(longest != lengths)
        if len(bad):
            i = int(bad[0])
            raise _chunk_error(file, c, None, f"sequence {i}: the counts do not add up: the "
                               "sequence's sample count is not the largest of its streams' counts",
                               offset=off + 4 * i, expected=f"{int(longest[i])} samples",
                               found=f"{int(lengths[i])}")
    return ChunkLayout(words, starts, counts, nnzs, filled)


def _walk(words, pos, n, sparse, w, file, c, st, off):
    """Locate one stream's ``n`` sequence blocks from word ``pos``: ``(starts, counts, nnz or
    None, end)``. The C walk when built (no Python object per sequence); the Python walks below
    when it is not, or when a count runs past the chunk (they name the sequence and the field)."""
    mod = native("cbf")
    if mod is not None and words.flags.c_contiguous:
        got = mod.walk(words, pos, n, sparse, w)
        if got is not None:
            return got
    if sparse:
        return _walk_sparse(words, pos, n, w, file, c, st, off)
    starts, counts, end = _walk_dense(words, pos, n, w, file, c, st, off)
    return starts, counts, None, end


def _walk_dense(words, pos, n, sample_words, file, c, st, off):
    s = np.empty(n, np.int64)
    cnt = np.empty(n, np.int64)
    total = len(words)
    mv = memoryview(words).cast("B").cast("I") if total else None
    for i in range(n):
        if pos >= total:
            raise _chunk_error(file, c, st, f"sequence {i}: the sample count runs past the chunk's end",
                               offset=off + pos * 4, expected="a u32 sample count",
                               found="the end of the chunk")
        k = mv[pos]
        nxt = pos + 1 + k * sample_words
        if nxt > total:
            raise _chunk_error(file, c, st, f"sequence {i}: {k} samples run past the chunk's end",
                               offset=off + pos * 4,
                               expected=f"at most {(total - pos - 1) // max(sample_words, 1)} samples",
                               found=str(k))
        s[i], cnt[i], pos = pos, k, nxt
    return s, cnt, pos


def _walk_sparse(words, pos, n, ew, file, c, st, off):
    s = np.empty(n, np.int64)
    cnt = np.empty(n, np.int64)
    nz = np.empty(n, np.int64)
    total = len(words)
    mv = memoryview(words).cast("B").cast("I") if total else None
    for i in range(n):
        if pos + 2 > total:
            raise _chunk_error(file, c, st, f"sequence {i}: the sample and non-zero counts run past "
                               "the chunk's end", offset=off + pos * 4,
                               expected="u32 samples, i32 nnz", found="the end of the chunk")
        k, z = mv[pos], mv[pos + 1]
        if z >= 0x80000000:
            raise _chunk_error(file, c, st, f"sequence {i}: negative non-zero count",
                               offset=off + pos * 4 + 4, expected="nnz >= 0",
                               found=str(z - (1 << 32)))
        nxt = pos + 2 + z * (ew + 1) + k
        if nxt > total:
            raise _chunk_error(file, c, st, f"sequence {i}: {k} samples with {z} non-zeros run past "
                               "the chunk's end", offset=off + pos * 4,
                               expected=f"at most {(total - pos - 2) * 4} bytes of sequence data",
                               found=f"{(nxt - pos - 2) * 4} bytes")
        s[i], cnt[i], nz[i], pos = pos, k, z, nxt
    return s, cnt, nz, pos


def gather_words(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate(words[s:s+n] for s, n in zip(starts, lengths))`` as one copy (C memcpy per
    segment when the C core is built; bounds are checked either way)."""
    lengths = np.asarray(lengths, np.int64)
    n = len(lengths)
    dst_starts = np.zeros(n, np.int64)
    if n > 1:
        np.cumsum(lengths[:-1], out=dst_starts[1:])
    total = int(lengths.sum()) if n else 0
    out = np.empty(total, words.dtype)
    if total == 0:
        return out
    starts = np.asarray(starts, np.int64)
    mod = native("rand")
    if mod is not None and words.flags.c_contiguous and words.flags.aligned:
        mod.copy_segments(words, starts, out, dst_starts, lengths)
        return out
    if int(starts.min()) < 0 or int((starts + lengths).max()) > len(words):
        raise IndexError("gather_words: a segment is outside the buffer")
    idx = np.arange(total, dtype=np.int64)
    idx += np.repeat(starts - dst_starts, lengths)
    out[:] = words[idx]
    return out
