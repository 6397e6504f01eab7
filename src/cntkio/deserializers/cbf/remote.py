"""A CBF file at a URL (:mod:`cntkio.remote`): its header and its chunks' sequence lengths fetched
when it is opened (the start, the tail, then one small ranged GET per chunk, all in flight at
once), and a chunk's bytes fetched when it is loaded, with the header shifted onto them.

It never fetches a chunk's data to open the file, and never holds the whole file.
"""
from __future__ import annotations

import dataclasses
import mmap
import struct

from .layout import CBFHeader, read_header

__all__ = ["header_and_lengths", "chunk"]

_TAIL = 1 << 16


def header_and_lengths(obj, filename: str) -> tuple[CBFHeader, int, mmap.mmap]:
    """``(header, size, buffer)``: the parsed header and a buffer of the file's size (anonymous
    memory: only the pages written cost memory) holding the start, the header and every chunk's
    per-sequence sample counts at their offsets, for the deserializer's index. Close the buffer."""
    size = obj.size
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | getattr(mmap, "MAP_NORESERVE", 0)
    buf = mmap.mmap(-1, max(size, 1), flags=flags)
    try:
        tail_at = max(0, size - _TAIL)
        head, tail = obj.read_many([(0, min(12, size)), (tail_at, size)])
        buf[:len(head)] = head
        buf[tail_at:size] = tail
        if size >= 36:   # the header offset (the last 8 bytes); read_header checks it
            header_at = struct.unpack_from("<q", buf, size - 8)[0]
            if 12 <= header_at < tail_at:
                buf[header_at:tail_at] = obj.read(header_at, tail_at)
        header = read_header(memoryview(buf)[:size], filename)
        ranges = [(int(o), int(o) + 4 * int(n)) for o, n in zip(header.offsets, header.num_sequences)]
        for (a, b), data in zip(ranges, obj.read_many(ranges)):
            buf[a:b] = data
    except BaseException:
        buf.close()
        raise
    return header, header.size, buf


def chunk(obj, header: CBFHeader, c: int):
    """``(bytes, header)``: chunk ``c``'s bytes fetched, and the header with every offset shifted by
    the chunk's start, so that the chunk walk reads them as it reads the mapped file."""
    off, end = int(header.offsets[c]), int(header.ends[c])
    data = obj.read(off, end)
    return data, dataclasses.replace(header, offsets=header.offsets - off, ends=header.ends - off)
