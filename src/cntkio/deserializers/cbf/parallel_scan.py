"""The CTF index scan of ``ctf2bin`` on several threads.

The converter indexes the whole CTF file before it parses a chunk; that scan ran on one thread
while the other core idled (12-23 % of the conversion's critical path on two cores).
:class:`ParallelScanBackend` wraps the CTF parser module and replaces its ``scan_index`` with one
that cuts the buffer (one mapped window of ``ctf.index.scan_file``) into pieces at line ends,
scans the pieces at the same time (the C scan releases the GIL) and joins them. The result is
the same tuple as one ``scan_index`` over the whole buffer (tests/deserializers/cbf/
test_cbf_parallel_scan.py compares them at every cut of small files), so the chunks, keys, line
numbers and therefore the CBF bytes do not change.

Joining: a piece that starts mid-file may start inside a sequence (CTF sequences are consecutive
lines with the same id). The last sequence of the piece before is dropped, and the bytes from its
start to the end of the next piece's second sequence are scanned again (a few lines) from that
true sequence start. The rescan's last sequence must start where the next piece's second sequence
starts (then both scans agree from there on: a scan holds no state across a sequence start but
the sequence's own id); its sequences before that replace the dropped ones. Anything unexpected
(too few sequences in a piece, an ids mode or encoding that differs, a start that does not match)
falls back to one scan of the whole buffer.
"""
from __future__ import annotations

import concurrent.futures as cf

import numpy as np

from ..ctf import _reference
from ..ctf.index import chunk_bounds

__all__ = ["ParallelScanBackend", "parallel_scan_index"]

#: buffers smaller than this are scanned in one piece (threads cost more than they save)
MIN_PARALLEL_BYTES = 1 << 20

#: how far past a cut point a line end is looked for before the buffer is scanned in one piece
_FIND_LINE_END = 1 << 20


def _as(array, dtype) -> np.ndarray:
    if isinstance(array, np.ndarray):
        return np.ascontiguousarray(array, dtype=dtype)
    return np.frombuffer(array, dtype=dtype)


def _scan(backend, buf, aliases, skip_ids, defining_stream, chunk_size):
    enc, ids_mode, keys, starts, first_lines, lengths, _ = backend.scan_index(
        buf, aliases, skip_ids, defining_stream, chunk_size)
    return (int(enc), bool(ids_mode), _as(keys, np.uint64), _as(starts, np.int64),
            _as(first_lines, np.int64), _as(lengths, np.int64))


def _cuts(view: memoryview, pieces: int) -> list[int] | None:
    """Offsets just after a line end near ``k * len / pieces`` (k = 1 .. pieces-1), or None."""
    size = len(view)
    cuts = []
    for k in range(1, pieces):
        target = max(k * size // pieces, cuts[-1] if cuts else 0)
        at = bytes(view[target:target + _FIND_LINE_END]).find(b"\n")
        if at < 0 or target + at + 1 >= size:
            return None
        cut = target + at + 1
        if cuts and cut <= cuts[-1]:
            return None
        cuts.append(cut)
    return cuts


def parallel_scan_index(backend, pool: cf.Executor, pieces: int, buf, aliases, skip_ids: bool,
                        defining_stream: int, chunk_size: int):
    """``backend.scan_index(buf, ...)`` computed by ``pieces`` scans on ``pool``; the same tuple."""
    aliases = list(aliases)
    view = memoryview(buf)
    try:
        size = len(view)
        cuts = _cuts(view, pieces) if pieces > 1 and size >= MIN_PARALLEL_BYTES else None
        if cuts is not None:
            joined = _join(backend, pool, view, cuts, aliases, bool(skip_ids), int(defining_stream),
                           int(chunk_size))
            if joined is not None:
                return joined
        return backend.scan_index(buf, aliases, skip_ids, defining_stream, chunk_size)
    finally:
        view.release()


def _join(backend, pool, view, cuts, aliases, skip_ids, defining_stream, chunk_size):
    size = len(view)
    bounds = [0, *cuts, size]
    futs = [pool.submit(_scan, backend, view[bounds[k]:bounds[k + 1]], aliases, skip_ids,
                        defining_stream, chunk_size) for k in range(len(bounds) - 1)]
    scans = [f.result() for f in futs]
    enc, ids_mode = scans[0][0], scans[0][1]
    if enc >= _reference.ENCODING_UTF16LE:
        return None
    skip_later = skip_ids or not ids_mode
    runs: list[tuple] = []                      # (scan, first, stop, offset, line0, key0)
    count = 0                                   # sequences accepted so far

    def accept(scan, a, b, off, line0, key0):
        nonlocal count
        if b > a:
            runs.append((scan, a, b, off, line0, key0))
            count += b - a

    cur, cur_from, cur_off, cur_line0, cur_key0 = scans[0], 0, 0, 0, 0
    for k in range(1, len(scans)):
        nxt, m = scans[k], bounds[k]
        n_cur, n_nxt = len(cur[2]), len(nxt[2])
        if n_cur - cur_from < 2 or n_nxt < 3 or nxt[0] != _reference.ENCODING_PLAIN \
                or nxt[1] != ids_mode:
            return None
        accept(cur, cur_from, n_cur - 1, cur_off, cur_line0, cur_key0)
        last_start = cur_off + int(cur[3][n_cur - 1])
        last_line = cur_line0 + int(cur[4][n_cur - 1])
        end = m + int(nxt[3][2])
        r = _scan(backend, view[last_start:end], aliases, skip_later, defining_stream, chunk_size)
        n_r = len(r[2])
        if r[0] != _reference.ENCODING_PLAIN or n_r < 1 or r[1] != ids_mode:
            return None
        r_end = last_start + int(r[3][n_r - 1])
        if r_end != m + int(nxt[3][1]):
            return None
        accept(r, 0, n_r - 1, last_start, last_line - 1, count)
        r_line = last_line - 1 + int(r[4][n_r - 1])
        cur, cur_from, cur_off = nxt, 1, m
        cur_line0 = r_line - int(nxt[4][1])
        cur_key0 = count - 1                    # without ids a scan's keys are 0, 1, ...
    accept(cur, cur_from, len(cur[2]), cur_off, cur_line0, cur_key0)
    # one output array each, filled in place (no temporaries of the size of the index)
    keys = np.empty(count, np.uint64)
    starts = np.empty(count + 1, np.int64)
    lines = np.empty(count, np.int64)
    lengths = np.empty(count, np.int64)
    at = 0
    for scan, a, b, off, line0, key0 in runs:
        z = at + b - a
        if ids_mode:
            keys[at:z] = scan[2][a:b]
        else:
            np.add(scan[2][a:b], np.uint64(key0), out=keys[at:z])
        np.add(scan[3][a:b], off, out=starts[at:z])
        np.add(scan[4][a:b], line0, out=lines[at:z])
        lengths[at:z] = scan[5][a:b]
        at = z
    starts[count] = size
    chunks = chunk_bounds(starts, min(int(chunk_size), size)) if count else np.zeros(1, np.int64)
    return (enc, ids_mode, keys, starts, lines, lengths, chunks)


class ParallelScanBackend:
    """A CTF parser module whose ``scan_index`` runs on ``threads`` threads; everything else
    (``parse_chunk`` ...) is the module's own. :meth:`close` ends the threads."""

    def __init__(self, backend, threads: int = 2) -> None:
        self._backend = backend
        self._threads = max(1, int(threads))
        self._pool = cf.ThreadPoolExecutor(max_workers=self._threads,
                                           thread_name_prefix="cntkio-ctf2bin-scan")
        self.__name__ = backend.__name__

    def scan_index(self, buf, aliases, skip_ids, defining_stream, chunk_size):
        return parallel_scan_index(self._backend, self._pool, self._threads, buf, aliases,
                                   skip_ids, defining_stream, chunk_size)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __getattr__(self, name):
        return getattr(self._backend, name)
