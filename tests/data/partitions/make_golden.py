"""Regenerate the partitioned-reading golden fixtures with CNTK 2.7's own reader (developer tool).

    bash ../shared/cntk27/setup_cntk27.sh .cache/cntk27      # once
    python tests/data/partitions/make_golden.py             # from the project root
    python tests/data/partitions/make_golden.py --check N   # compare cntkio with the rig on N
                                                            # more random cases (nothing written)

Each case is a small random CTF file whose sequence ``K`` holds the values ``10*K, 10*K+1, ...``
(one per line; stream ``x`` dense, ``y`` the same as one-hot sparse), read by CNTK 2.7 with 2 and 3 workers (one reader per rank) in one of the modes
below. ``golden.json`` keeps, per case, the file's text, the reading options and, per rank and
call, ``[values of each sequence, sweep_end, checkpoint position after the call]``; in
truncated BPTT (``truncation_length`` 2), where CNTK cannot unpack the values of truncated
sequences and its rows are sequence fragments where cntkio's are slots, the number of samples
stands for the values; a call that returns ``{}`` has ``None`` there.
tests/engine/test_partitions_golden.py reads the same files with cntkio and compares call by
call; CI never needs the rig.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
RIG = os.environ.get("CNTK27_DIR", os.path.join(ROOT, ".cache", "cntk27"))
#: calls per rank at most (a case that reaches this has an endless epoch)
MAX_CALLS = 60
#: the numbers of workers of the fixtures (``--check`` takes ``CHECK_WORKERS=1,2``)
WORKERS = [int(w) for w in os.environ.get("CHECK_WORKERS", "2,3").split(",")]

# modes: (name, randomize, frame_mode, truncation_length)
MODES = [("sequential", False, False, 0), ("randomized", True, False, 0),
         ("frame_sequential", False, True, 0), ("frame_randomized", True, True, 0),
         ("bptt_sequential", False, False, 2), ("bptt_randomized", True, False, 2)]


def make_case(rng, mode, workers):
    name, randomize, frame, tbptt = mode
    n = int(rng.integers(1, 13))
    lengths = [1] * n if frame else [int(x) for x in rng.integers(1, 5, size=n)]
    lines = [f"{k} |x {10 * k + t} |y {10 * k + t}:1" for k, ln in enumerate(lengths) for t in range(ln)]
    text = "\n".join(lines) + "\n"
    per_line = max(1, len(text) // max(1, len(lines)))
    chunk = int(rng.choice([per_line, 2 * per_line, 3 * per_line, 10 ** 6]))
    opts = dict(randomize=randomize, frame_mode=frame, truncation_length=tbptt, chunk=chunk,
                seed=int(rng.integers(0, 5)), window=int(rng.integers(1, 4)))
    if rng.random() < 0.3:
        opts["max_samples"] = int(rng.integers(1, 2 * sum(lengths) + 2))
    else:
        opts["max_sweeps"] = int(rng.integers(1, 4))
    mb = int(rng.integers(max(1, tbptt * workers), 17))
    return dict(mode=name, workers=workers, text=text, options=opts, mb=mb)


def _rows(mb):
    """Per sequence (slot) of a rig minibatch, the values of its samples (sparse stream ``y``: the
    value is the index of the one non-zero; CNTK cannot unpack dense truncated sequences)."""
    y = mb["x"]
    if y.get("csc") is None:
        return []
    _, rows, starts = y["csc"]
    nseq, seqlen = y["shape"][0], y["shape"][1]
    mask = y["mask"]
    out = []
    for s in range(nseq):
        vals = []
        for t in range(seqlen):
            if mask is not None and mask[s, t] == 0:
                continue
            c = s * seqlen + t
            vals.extend(int(v) for v in rows[starts[c]:starts[c + 1]])
        out.append(vals)
    return out


def _rig_masks(cntk27, src, mb_size, workers, rank):
    """One truncated-BPTT call through the shim: ``(samples, sweep_end)`` or None for ``{}``.
    CNTK cannot unpack the values of truncated sequences, and its rows are sequence fragments
    where cntkio's are slots, so a truncated minibatch is compared by its number of samples."""
    import ctypes as C
    lib = cntk27._lib
    r = lib.cntkshim_next2(src.h, mb_size, 0, workers, rank)
    if r < 0:
        raise RuntimeError(lib.cntkshim_last_error().decode(errors="replace"))
    if r == 0:
        return None
    nseq, nsamp, se, st, rk = C.c_size_t(), C.c_size_t(), C.c_int(), C.c_int(), C.c_int()
    shape = (C.c_size_t * 8)()
    if lib.cntkshim_stream_info(src.h, 0, nseq, nsamp, se, st, shape, rk) != 1 or st.value == -1:
        return 0, bool(se.value)
    return int(nsamp.value), bool(se.value)


def rig_read(case, path):
    sys.path.insert(0, RIG + "/shim")
    import cntk27
    o = case["options"]
    out = []
    for rank in range(case["workers"]):
        d = cntk27.ctf_deserializer(path, [("x", 200, True, "y")], options={"chunkSizeInBytes": o["chunk"]})
        kw = dict(randomize=o["randomize"], seed=o["seed"], frame_mode=o["frame_mode"],
                  truncation_length=o["truncation_length"], rand_window_chunks=o["window"])
        if "max_samples" in o:
            kw["max_samples"] = o["max_samples"]
        else:
            kw["max_sweeps"] = o["max_sweeps"]
        src = cntk27.MinibatchSource([d], **kw)
        calls = []
        for _ in range(MAX_CALLS):
            if o["truncation_length"]:
                got = _rig_masks(cntk27, src, case["mb"], case["workers"], rank)
            else:
                mb = src.next_minibatch(case["mb"], num_workers=case["workers"], worker_rank=rank)
                got = (_rows(mb), bool(mb["x"]["sweep_end"])) if mb else None
            pos = int(src.get_checkpoint_state()["minibatchSourcePosition"])
            if got is None:
                calls.append([None, False, pos])
                break
            calls.append([got[0], got[1], pos])
        out.append(calls)
    return out


def cntkio_read(case, path):
    sys.path.insert(0, os.environ.get("CNTKIO_SRC", os.path.join(ROOT, "src")))
    from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
    o = case["options"]
    out = []
    for rank in range(case["workers"]):
        cfg = CTFDeserializer(path, StreamDefs(x=StreamDef(field="x", shape=1)))
        cfg["chunkSizeInBytes"] = o["chunk"]
        kw = dict(randomize=o["randomize"], randomization_seed=o["seed"], frame_mode=o["frame_mode"],
                  truncation_length=o["truncation_length"], randomization_window_in_chunks=o["window"])
        if "max_samples" in o:
            kw["max_samples"] = o["max_samples"]
        else:
            kw["max_sweeps"] = o["max_sweeps"]
        calls = []
        with MinibatchSource(cfg, **kw) as src:
            for _ in range(MAX_CALLS):
                mb = src.next_minibatch(case["mb"], num_data_partitions=case["workers"], partition_index=rank)
                pos = int(src.get_checkpoint_state()["minibatchSourcePosition"])
                if not mb:
                    calls.append([None, False, pos])
                    break
                (md,) = mb.values()
                if not md.num_sequences:
                    rows = 0 if o["truncation_length"] else []
                elif o["truncation_length"]:
                    rows = int(md.num_samples)
                else:
                    rows = [[int(v) for v in q.reshape(-1)] for q in md.as_sequences()]
                calls.append([rows, bool(md.end_of_sweep), pos])
        out.append(calls)
    return out


def run(case, tmpdir):
    path = os.path.join(tmpdir, "p.ctf")
    with open(path, "w") as f:
        f.write(case["text"])
    return path


def main(argv):
    import tempfile
    check = "--check" in argv
    count = int(argv[argv.index("--check") + 1]) if check else 6
    rng = np.random.default_rng(12345 if not check else int.from_bytes(os.urandom(4), "little"))
    cases, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for mode in MODES:
            for workers in WORKERS:
                for _ in range(count):
                    case = make_case(rng, mode, workers)
                    path = run(case, tmp)
                    case["calls"] = rig_read(case, path)
                    if check:
                        got = cntkio_read(case, path)
                        if got != case["calls"]:
                            bad += 1
                            print(json.dumps({k: v for k, v in case.items() if k != "calls"}))
                            print("  cntk27:", case["calls"])
                            print("  cntkio:", got)
                    cases.append(case)
    if check:
        print(f"{bad} of {len(cases)} cases differ")
        return 1 if bad else 0
    with open(os.path.join(HERE, "golden.json"), "w") as f:
        json.dump(cases, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
