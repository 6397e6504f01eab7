"""Binary MLF files (CNTK's ``HTKMLFBinaryDeserializer``): frame labels as state-id runs.

The layout CNTK 2.7 reads (its MLF-to-binary converter writes it, little-endian as on x86)::

    "MLF"                      3 bytes
    version                    int16: 1 or 2
    then per utterance:
      key                      version 1: uint32, the key is its decimal form ("7")
                               version 2: uint16 length n (at most 256), then n bytes of key
      frames                   uint32: the utterance's number of frames
      runs                     uint16: the number of runs that follow
      runs x (state, count)    uint16 state index (into the state list), uint16 frames

The runs are consecutive from frame 0. Errors name the file and the byte offset of the
utterance: a file not starting with ``MLF`` (CNTK's ``MLFBinaryIndexBuilder: MLF binary file is
malformed.``), another version (``Not supported MLF model version.``), a key longer than 256
bytes, a record cut short, runs whose frames do not add up to the utterance's frame count (CNTK
read past the utterance; cntkio refuses), a state index not below ``dim`` (CNTK: ``Class id ...
exceeds the model output dimension``).
"""
from __future__ import annotations

import logging
import struct

import numpy as np

from ...errors import FormatError
from .mlf import MLFIndex
from .text import hash_names

__all__ = ["parse_binary_mlf_files", "write_binary_mlf", "MAGIC", "MAX_KEY_BYTES"]

log = logging.getLogger("cntkio.deserializers.htk")

MAGIC = b"MLF"
MAX_KEY_BYTES = 256
_U16, _U32 = struct.Struct("<H"), struct.Struct("<I")


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise FormatError(f"cannot open the binary MLF file: {e.strerror}", file=path) from e


def _scan(path: str, dim: int) -> dict:
    """One file: ``{names, counts, runs (state, frames) int64 [n, 2], frames, offsets}``."""
    data = _read(path)
    if len(data) < 5 or data[:3] != MAGIC:
        raise FormatError("MLFBinaryIndexBuilder: MLF binary file is malformed.", file=path,
                          expected="the bytes 'MLF' then an int16 version", found=repr(data[:5]))
    version = struct.unpack_from("<h", data, 3)[0]
    if version not in (1, 2):
        raise FormatError("Not supported MLF model version.", file=path, expected="version 1 or 2",
                          found=f"version {version}")
    names: list[str] = []
    counts: list[int] = []
    frames: list[int] = []
    where: list[int] = []
    run_at: list[int] = []
    pos, end = 5, len(data)

    def short(at: int, need: int, what: str) -> None:
        if at + need > end:
            raise FormatError(f"binary MLF record cut short: {what}", file=path,
                              expected=f"{need} more bytes at offset {at}", found=f"{end - at}")

    while pos < end:                 # one step per utterance (the runs are read as one array below)
        start = pos
        if version == 1:
            short(pos, 4, "utterance key")
            name = str(_U32.unpack_from(data, pos)[0])
            pos += 4
        else:
            short(pos, 2, "key length")
            n = _U16.unpack_from(data, pos)[0]
            if n > MAX_KEY_BYTES:
                raise FormatError(f"Utterance label length is greater than limit {MAX_KEY_BYTES}", file=path,
                                  expected=f"a key of at most {MAX_KEY_BYTES} bytes at offset {pos}",
                                  found=f"{n} bytes")
            short(pos + 2, n, "utterance key")
            name = data[pos + 2:pos + 2 + n].decode("utf-8", "surrogateescape")
            pos += 2 + n
        short(pos, 6, f"frame and run counts of utterance '{name}'")
        nframes = _U32.unpack_from(data, pos)[0]
        nruns = _U16.unpack_from(data, pos + 4)[0]
        pos += 6
        short(pos, 4 * nruns, f"runs of utterance '{name}'")
        names.append(name)
        counts.append(nruns)
        frames.append(nframes)
        where.append(start)
        run_at.append(pos)
        pos += 4 * nruns
    counts_a = np.asarray(counts, np.int64)
    # every run's two uint16 in one gather
    run_pos = np.repeat(np.asarray(run_at, np.int64), counts_a) + 4 * (
        np.arange(int(counts_a.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts_a) - counts_a, counts_a))
    words = np.frombuffer(data, np.uint8)
    state = words[run_pos].astype(np.int64) | (words[run_pos + 1].astype(np.int64) << 8)
    length = words[run_pos + 2].astype(np.int64) | (words[run_pos + 3].astype(np.int64) << 8)
    return {"names": names, "counts": counts_a, "states": state, "lengths": length,
            "frames": np.asarray(frames, np.int64), "where": where}


def parse_binary_mlf_files(paths: list[str], dim: int) -> MLFIndex:
    """Several binary MLF files, their union in order (a key's first entry wins), as the
    :class:`~cntkio.deserializers.htk.mlf.MLFIndex` the text MLF gives."""
    names: list = []
    where: list = []
    counts, starts, ends, labels = [], [], [], []
    seen: set = set()
    for p in paths:
        part = _scan(p, dim)
        c = part["counts"]
        off = np.concatenate(([0], np.cumsum(c)))
        cs = np.concatenate(([0], np.cumsum(part["lengths"])))     # frames before each run, file-wide
        covered = cs[off[1:]] - cs[off[:-1]]                            # frames the runs of each utterance cover
        bad = np.flatnonzero(covered != part["frames"])
        if len(bad):
            u = int(bad[0])
            raise FormatError(f"binary MLF utterance '{part['names'][u]}': its runs do not cover its frames",
                              file=p, expected=f"runs adding up to {int(part['frames'][u])} frames "
                                               f"(the record at byte offset {part['where'][u]})",
                              found=f"{int(covered[u])} frames")
        big = np.flatnonzero(part["states"] >= dim)
        if len(big):
            r = int(big[0])
            u = int(np.searchsorted(off, r, side="right") - 1)
            raise FormatError(f"Class id '{int(part['states'][r])}' exceeds the model output dimension '{dim}'.",
                              file=p, expected=f"state indices below dim {dim}",
                              found=f"{int(part['states'][r])} in utterance '{part['names'][u]}' "
                                    f"(record at byte offset {part['where'][u]})")
        seg_start = cs[:-1] - np.repeat(cs[off[:-1]], c)
        seg_end = seg_start + part["lengths"]
        keep = []
        for j, nm in enumerate(part["names"]):            # one step per utterance: first entry wins
            if nm not in seen:
                seen.add(nm)
                keep.append(j)
        ke = np.asarray(keep, np.int64)
        sel = np.concatenate([np.arange(off[j], off[j + 1]) for j in keep]).astype(np.int64) \
            if len(ke) and len(ke) != len(c) else np.arange(int(off[-1]), dtype=np.int64)
        names.extend(part["names"][j] for j in keep)
        where.extend((p, int(part["where"][j])) for j in keep)
        counts.append(c[ke] if len(ke) else np.zeros(0, np.int64))
        starts.append(seg_start[sel])
        ends.append(seg_end[sel])
        labels.append(part["states"][sel])
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
    counts_a = cat(counts, np.int64)
    offsets = np.zeros(len(counts_a) + 1, np.int64)
    np.cumsum(counts_a, out=offsets[1:])
    valid = counts_a > 0           # runs are contiguous from 0 by construction; an empty one is invalid
    idx = MLFIndex(hash_names(names), offsets, cat(starts, np.int64), cat(ends, np.int64), cat(labels, np.int32),
                   valid, names, where)
    log.info("MLFBinaryDeserializer: '%d' utterances with '%d' frames", len(idx), int(idx.lengths.sum()))
    return idx


def write_binary_mlf(path: str, entries, version: int = 2) -> None:
    """Write a binary MLF: ``entries`` is ``[(key, [(state index, frames), ...]), ...]`` (version
    1 needs numeric keys). Written to a temporary name and renamed."""
    import os
    out = [MAGIC, struct.pack("<h", version)]
    for key, runs in entries:
        if version == 1:
            out.append(_U32.pack(int(key)))
        else:
            k = str(key).encode("utf-8")
            if len(k) > MAX_KEY_BYTES:
                raise ValueError(f"binary MLF key longer than {MAX_KEY_BYTES} bytes: {key!r}")
            out.append(_U16.pack(len(k)) + k)
        out.append(_U32.pack(sum(int(n) for _, n in runs)) + _U16.pack(len(runs)))
        out.extend(struct.pack("<HH", int(s), int(n)) for s, n in runs)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(b"".join(out))
    os.replace(tmp, path)
