"""Regenerate the CBF golden fixtures with CNTK 2.7's own readers (developer tool, needs the rig).

    bash ../shared/cntk27/setup_cntk27.sh .cache/cntk27      # once
    python tests/data/cbf/make_golden.py                     # from the project root

For each case: a CTF file (written here, deterministic), the CBF file cntkio's ``ctf2bin`` makes
of it (``<case>.cbf``, committed), and CNTK 2.7's minibatches of that CBF under several reading
modes (``<case>.npz`` + ``golden.json``). While generating, CNTK 2.7's CBF reads are checked to
equal CNTK 2.7's CTF reads of the source CTF (not randomized, and partitioned), which is the
round trip CTF -> cntkio's converter -> CNTK's CBF reader. ``rig_written.cbf`` is written by the
rig's own CBF writer (``datagen.write_cbf``). tests/deserializers/test_cbf_golden.py compares
cntkio's reads of the committed files with the committed minibatches; CI never needs the rig.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.environ.get("CNTK27_DIR", os.path.join(ROOT, ".cache", "cntk27")) + "/shim")
import cntk27  # noqa: E402
import datagen  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "src"))
from cntkio.deserializers.cbf import ctf2bin  # noqa: E402

# (mode name, source kwargs, minibatch size, workers, rank)
MODES = [
    ("plain", dict(randomize=False, max_sweeps=1), 7, 1, 0),
    ("sweeps2", dict(randomize=False, max_sweeps=2), 11, 1, 0),
    ("random", dict(randomize=True, max_sweeps=2, seed=3, rand_window_chunks=2), 6, 1, 0),
    ("worker1of2", dict(randomize=False, max_sweeps=1), 8, 2, 1),
]
#: frame mode needs sequences of one sample: only for the cases that have them
FRAME_MODES = [("frames", dict(randomize=True, max_sweeps=1, seed=1, frame_mode=True,
                               rand_window_chunks=2), 9, 1, 0),
               ("frames_worker0of3", dict(randomize=True, max_sweeps=1, seed=2, frame_mode=True), 10, 3, 0)]


def _fmt(v) -> str:
    return ("%.6g" % v)


def case_dense_seq(rng):
    lines, streams = [], [("x", 3, False), ("y", 2, False)]
    for sid in range(40):
        n = int(rng.integers(1, 6))
        for _t in range(n):
            x = " ".join(_fmt(v) for v in rng.normal(size=3).astype(np.float32))
            y = " ".join(_fmt(v) for v in rng.normal(size=2).astype(np.float32))
            lines.append(f"{sid} |x {x} |y {y}")
    return lines, streams, 120


def case_mixed(rng):
    # dense x (length n), sparse s with empty samples (length n), sparse label (length 1)
    lines, streams = [], [("x", 4, False), ("s", 20, True), ("l", 5, True)]
    for sid in range(30):
        n = int(rng.integers(1, 5))
        for t in range(n):
            x = " ".join(_fmt(v) for v in rng.normal(size=4).astype(np.float32))
            k = int(rng.integers(0, 4))
            idx = sorted(rng.choice(20, size=k, replace=False).tolist())
            s = " ".join(f"{i}:{_fmt(v)}" for i, v in zip(idx, rng.normal(size=k).astype(np.float32)))
            line = f"{sid} |x {x} |s {s}".rstrip()
            if t == 0:
                line += f" |l {int(rng.integers(0, 5))}:1"
            lines.append(line)
    return lines, streams, 200


def case_sparse_only(rng):
    lines, streams = [], [("w", 50, True)]
    for sid in range(25):
        for _t in range(int(rng.integers(1, 4))):
            k = int(rng.integers(0, 5))
            idx = sorted(rng.choice(50, size=k, replace=False).tolist())
            lines.append(f"{sid} |w " + " ".join(f"{i}:{_fmt(v)}" for i, v in
                                                zip(idx, rng.normal(size=k).astype(np.float32))))
    return [ln.rstrip() for ln in lines], streams, 150


def case_frames(rng):
    # every sequence one sample (frame data): dense features, a sparse one-hot label
    lines, streams = [], [("features", 6, False), ("labels", 4, True)]
    for _sid in range(60):
        x = " ".join(_fmt(v) for v in rng.normal(size=6).astype(np.float32))
        lines.append(f"|features {x} |labels {int(rng.integers(0, 4))}:1")
    return lines, streams, 300


CASES = {"frames": case_frames, "dense_seq": case_dense_seq, "mixed": case_mixed, "sparse_only": case_sparse_only}


def drain(source, mb_size, workers, rank, names_dims):
    out = []
    while True:
        mb = source.next_minibatch(mb_size, num_workers=workers, worker_rank=rank)
        if not mb:
            return out
        rec = {}
        for name, d in mb.items():
            if d.get("shape") is None:
                rec[name] = None
                continue
            nseq, maxlen = d["shape"][0], d["shape"][1]
            if "csc" in d:
                dense = cntk27.decode_sparse(d, d["shape"][-1])[1]
            else:
                dense = d["data"].reshape(nseq, maxlen, -1)
            mask = d["mask"]
            lengths = (np.full(nseq, maxlen) if mask is None else (mask > 0).sum(axis=1)).astype(np.int64)
            values = np.concatenate([dense[i, :lengths[i]] for i in range(nseq)]).astype(np.float32)
            rec[name] = dict(lengths=lengths, values=values, nsamples=int(d["nsamples"]),
                             sweep_end=bool(d["sweep_end"]))
        out.append(rec)


def cbf_source(path, streams, kw):
    return cntk27.MinibatchSource([cntk27.cbf_deserializer(path, streams)], **kw)


def same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if set(x) != set(y):
            return False
        for k in x:
            if (x[k] is None) != (y[k] is None):
                return False
            if x[k] is None:
                continue
            if not (np.array_equal(x[k]["lengths"], y[k]["lengths"]) and
                    np.array_equal(x[k]["values"], y[k]["values"]) and x[k]["nsamples"] == y[k]["nsamples"]):
                return False
    return True


def save(name, readings, meta):
    arrays = {}
    for mode, mbs in readings.items():
        meta[mode] = []
        for i, rec in enumerate(mbs):
            m = {}
            for s, d in rec.items():
                if d is None:
                    m[s] = None
                    continue
                arrays[f"{mode}/{i}/{s}/lengths"] = d["lengths"]
                arrays[f"{mode}/{i}/{s}/values"] = d["values"]
                m[s] = dict(nsamples=d["nsamples"], sweep_end=d["sweep_end"])
            meta[mode].append(m)
    np.savez_compressed(os.path.join(HERE, name + ".npz"), **arrays)


def main():
    golden = {}
    for case, make in CASES.items():
        rng = np.random.default_rng(sum(map(ord, case)))
        lines, streams, chunk = make(rng)
        ctf = os.path.join(HERE, case + ".ctf")
        with open(ctf, "w") as f:
            f.write("\n".join(lines) + "\n")
        cbf = os.path.join(HERE, case + ".cbf")
        ctf2bin(ctf, cbf, [(n, n, sp, d) for n, d, sp in streams], chunk_size=chunk)
        readings, meta = {}, {"streams": streams, "chunk_size": chunk}
        modes = MODES + (FRAME_MODES if case == "frames" else [])
        for mode, kw, mb, w, r in modes:
            readings[mode] = drain(cbf_source(cbf, (), kw), mb, w, r, streams)
            if not kw.get("randomize"):  # round trip: CNTK's CBF read == CNTK's CTF read
                src = cntk27.MinibatchSource([cntk27.ctf_deserializer(ctf, [(n, d, sp, n) for n, d, sp in streams])],
                                             **kw)
                assert same(readings[mode], drain(src, mb, w, r, streams)), (case, mode)
        # an alias renames a file stream; the others keep their names
        first = streams[0]
        readings["alias"] = drain(cbf_source(cbf, [("renamed", first[1], first[2], first[0])],
                                             dict(randomize=False, max_sweeps=1)), 7, 1, 0, streams)
        meta["modes"] = {m: dict(kw=kw, mb=mb, workers=w, rank=r) for m, kw, mb, w, r in modes}
        save(case, readings, meta)
        golden[case] = meta
    # a file written by the rig's own CBF writer (float32, 2 sequences per chunk)
    rng = np.random.default_rng(7)
    seqs = []
    for _i in range(12):
        n = int(rng.integers(1, 4))
        seqs.append({"a": rng.normal(size=(n, 2)).astype(np.float32).tolist(),
                     "b": [{int(j): float(np.float32(rng.normal()))} for j in rng.integers(0, 6, size=n)]})
    rig = os.path.join(HERE, "rig_written.cbf")
    datagen.write_cbf(rig, [("a", 2, False), ("b", 6, True)], seqs, seqs_per_chunk=2)
    readings, meta = {}, {"streams": [("a", 2, False), ("b", 6, True)]}
    for mode, kw, mb, w, r in MODES:
        readings[mode] = drain(cbf_source(rig, (), kw), mb, w, r, None)
    meta["modes"] = {m: dict(kw=kw, mb=mb, workers=w, rank=r) for m, kw, mb, w, r in MODES}
    save("rig_written", readings, meta)
    golden["rig_written"] = meta
    # CNTK's own CBF unit-test files (shared conformance data) are read by the tests directly
    with open(os.path.join(HERE, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
    print("written:", ", ".join(sorted(golden)))


if __name__ == "__main__":
    main()
