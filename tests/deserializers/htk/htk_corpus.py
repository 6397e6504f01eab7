"""Deterministic small speech corpora for the HTK tests and for tests/data/htk/make_golden.py.

Every frame's values say where it came from, so a delivered minibatch can be checked against the
corpus without storing features: corpus "small" has 2-dim frames ``[utterance index, frame
index]``; corpus "big" (several CNTK chunks of 90000 frames) has 1-dim frames holding the global
frame number. The writers produce what CNTK 2.7 reads: big-endian HTK files (USER kind), SCP
archive entries ``logical=physical[start,end]``, MLF files, a state list.
"""
from __future__ import annotations

import os
import struct

import numpy as np

STATES = ["s0", "s1", "s2", "s3", "s4", "s5"]
SMALL_LENGTHS = [7, 3, 10, 1, 5]
SMALL_KEYS = ["spk1/u0", "spk1/u1", "spk2/u2", "u3", "u4.x"]


def write_htk(path, frames: np.ndarray, kind: int = 9, period: int = 100000) -> None:
    frames = np.asarray(frames, ">f4")
    with open(path, "wb") as f:
        f.write(struct.pack(">iihh", frames.shape[0], period, frames.shape[1] * 4, kind))
        f.write(frames.tobytes())


def write_mlf(path, entries: dict, name_format: str = '"*/{key}.lab"') -> None:
    """entries: key -> [(start frame, end frame, label)]."""
    with open(path, "w") as f:
        f.write("#!MLF!#\n")
        for key, segs in entries.items():
            f.write(name_format.format(key=key) + "\n")
            for a, b, lab in segs:
                f.write(f"{a * 100000} {b * 100000} {lab} -1.5\n")
            f.write(".\n")


def small_segments(u: int, n: int) -> list:
    """Label segments of utterance u (n frames): about three segments."""
    cut1, cut2 = max(1, n // 3), max(1, (2 * n) // 3)
    segs, start = [], 0
    for j, end in enumerate(sorted({cut1, cut2, n})):
        if end > start:
            segs.append((start, end, STATES[(u + j) % len(STATES)]))
            start = end
    return segs


def small_frame_labels(u: int, n: int) -> np.ndarray:
    out = np.empty(n, np.int64)
    for a, b, lab in small_segments(u, n):
        out[a:b] = STATES.index(lab)
    return out


def write_small(d) -> dict:
    """Corpus "small" in folder d: two archives, one SCP (archive entries), two MLF files (the
    second repeats u0 with other labels: the first file's entry wins), a state list."""
    d = os.fspath(d)
    frames = [np.stack([np.full(n, u, np.float32), np.arange(n, dtype=np.float32)], 1)
              for u, n in enumerate(SMALL_LENGTHS)]
    write_htk(os.path.join(d, "a.htk"), np.concatenate(frames[:3]))
    write_htk(os.path.join(d, "b.htk"), np.concatenate(frames[3:]))
    lines, pos = [], 0
    for u, (k, n) in enumerate(zip(SMALL_KEYS, SMALL_LENGTHS)):
        if u == 3:
            pos = 0
        arch = "a.htk" if u < 3 else "b.htk"
        lines.append(f"{k}.mfc={arch}[{pos},{pos + n - 1}]")
        pos += n
    with open(os.path.join(d, "feat.scp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    ents = {k: small_segments(u, n) for u, (k, n) in enumerate(zip(SMALL_KEYS, SMALL_LENGTHS))}
    write_mlf(os.path.join(d, "a.mlf"), {k: ents[k] for k in SMALL_KEYS[:3]})
    second = {k: ents[k] for k in SMALL_KEYS[3:]}
    second[SMALL_KEYS[0]] = [(0, SMALL_LENGTHS[0], "s5")]
    write_mlf(os.path.join(d, "b.mlf"), second)
    with open(os.path.join(d, "states.list"), "w") as f:
        f.write("\n".join(STATES) + "\n")
    return {"scp": os.path.join(d, "feat.scp"), "mlf": [os.path.join(d, "a.mlf"), os.path.join(d, "b.mlf")],
            "states": os.path.join(d, "states.list"), "dim": 2, "labels": len(STATES), "dir": d}


def big_lengths(n_utts: int = 60, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).integers(500, 9000, n_utts)


def write_big(d, n_utts: int = 60) -> dict:
    """Corpus "big": n_utts utterances of 500-9000 frames (about 290k frames, 4 CNTK chunks), one
    archive, 1-dim frames holding the global frame number; one MLF segment per utterance."""
    d = os.fspath(d)
    lens = big_lengths(n_utts)
    total = int(lens.sum())
    write_htk(os.path.join(d, "big.htk"), np.arange(total, dtype=np.float32)[:, None])
    pos, lines, ents = 0, [], {}
    for u, n in enumerate(lens.tolist()):
        lines.append(f"utt{u:03d}.fbank=big.htk[{pos},{pos + n - 1}]")
        ents[f"utt{u:03d}"] = [(0, n, STATES[u % len(STATES)])]
        pos += n
    with open(os.path.join(d, "big.scp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    write_mlf(os.path.join(d, "big.mlf"), ents)
    with open(os.path.join(d, "states.list"), "w") as f:
        f.write("\n".join(STATES) + "\n")
    return {"scp": os.path.join(d, "big.scp"), "mlf": [os.path.join(d, "big.mlf")],
            "states": os.path.join(d, "states.list"), "dim": 1, "labels": len(STATES),
            "lengths": lens, "dir": d}


BINARY_KEYS = ["10", "3", "7", "0", "12"]


def binary_runs(u: int, n: int) -> list:
    """The (state, frames) runs of utterance u (n frames) in the binary corpus."""
    return [(s, b - a) for a, b, s in ((a, b, STATES.index(lab)) for a, b, lab in small_segments(u, n))]


def write_binary(d) -> dict:
    """Corpus "binary" in folder d: the small corpus's frames and runs under numeric keys (so that
    version 1 files can hold them), one archive and SCP, binary MLF files of version 1 and 2 (in
    reverse key order), and a second version-2 file that repeats key "10" with other labels (the
    first file's entry wins)."""
    from cntkio.deserializers.htk.mlfbin import write_binary_mlf
    d = os.fspath(d)
    frames = [np.stack([np.full(n, u, np.float32), np.arange(n, dtype=np.float32)], 1)
              for u, n in enumerate(SMALL_LENGTHS)]
    write_htk(os.path.join(d, "a.htk"), np.concatenate(frames))
    lines, pos = [], 0
    for k, n in zip(BINARY_KEYS, SMALL_LENGTHS):
        lines.append(f"{k}.mfc=a.htk[{pos},{pos + n - 1}]")
        pos += n
    with open(os.path.join(d, "feat.scp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    entries = [(k, binary_runs(u, n)) for u, (k, n) in enumerate(zip(BINARY_KEYS, SMALL_LENGTHS))][::-1]
    write_binary_mlf(os.path.join(d, "v1.bmlf"), entries, version=1)
    write_binary_mlf(os.path.join(d, "v2.bmlf"), entries, version=2)
    write_binary_mlf(os.path.join(d, "v2b.bmlf"), [("10", [(5, SMALL_LENGTHS[0])])], version=2)
    with open(os.path.join(d, "states.list"), "w") as f:
        f.write("\n".join(STATES) + "\n")
    return {"scp": os.path.join(d, "feat.scp"), "v1": os.path.join(d, "v1.bmlf"), "v2": os.path.join(d, "v2.bmlf"),
            "v2b": os.path.join(d, "v2b.bmlf"), "states": os.path.join(d, "states.list"), "dim": 2,
            "labels": len(STATES), "dir": d}
