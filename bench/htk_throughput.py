#!/usr/bin/env python3
"""HTK throughput: frame mode with context and randomization, cntkio vs CNTK 2.7's own HTK
deserializers (the cntk27 rig), sequence mode vs ``numpy.fromfile`` of the same bytes, and the
peak RSS of each run.

    bash /work/shared/cntk27/setup_cntk27.sh .cache/cntk27          # once, for the CNTK column
    python bench/htk_throughput.py bench/data/htk --gb 1.0 [--repeat 2] [--json out.json]
    python bench/htk_throughput.py /tmp/htk_small --small           # smoke run
    python bench/htk_throughput.py bench/data/htk --gb 1.0 --rss    # frame-mode peak RSS per window
    python bench/htk_throughput.py bench/data/htk_q --gb 0.25 --rss --rss-frames 156000,625000  # the same
    python bench/htk_throughput.py bench/data/htk --gb 1.0 --rss --rss-frames 156000,625000     # windows, 2 sizes

The corpus (generated once into the folder, reused while its manifest matches): ``--gb`` GB of
40-dim float32 frames in 100 MB HTK archives, utterances of 100-1500 frames skewed to the short end
(mean about 300: 20,900 of them for 1 GB), listed in one SCP with archive entries, labelled by one
MLF over a 120-state list.

Measurements, each in its own subprocess (so that ``ru_maxrss`` is that run's peak RSS):

* ``cntkio frame``: frame mode, ``contextWindow = 5`` (11 frames, 440 values a frame), randomized
  with a window of ``--window`` of the corpus (default 10%) in frames, 1 sweep of 4096-frame
  minibatches, NumPy outputs (features and labels);
* ``cntk27 frame``: the same through CNTK 2.7 (rig), same window, same sweep;
* ``cntkio seq``: sequence mode without context, not randomized, 1 sweep of 20000-frame minibatches,
  each utterance taken as an array (``as_sequences``);
* ``cntkio seqpad``: the same, taken as the padded ``(utterances, longest, 40)`` array (``asarray``);
* ``fromfile``: ``numpy.fromfile`` of every archive (the same bytes);

``--loads`` measures only the chunk loads (each in its own subprocess, best of ``--repeat``):
``loads-frame``: every chunk's padded frames as frame mode with ``contextWindow = 5`` holds them
(``read_bytes``), ``loads-context``: every chunk as ``get_chunk`` gives it in sequence mode with
the same context (the frames read, then the windows expanded), ``loads-seq``: ``get_chunk`` without
context. Since issue 30 the frames are read with ``pread`` (a memory map before).

Reported: frames/s, MB/s of feature bytes, peak RSS; ratios cntkio/CNTK (frame) and
cntkio/fromfile (sequence; with and without the time to index the SCP and MLF files, which
``numpy.fromfile`` does not have to do). Figures are the best of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

DIM = 40
STATES = 120
ARCHIVE_BYTES = 100 * 1000 * 1000
FRAME_MB = 4096
SEQ_MB = 20000


def generate(folder: str, gb: float, seed: int = 1) -> dict:
    """The corpus in ``folder`` (regenerated when its manifest differs)."""
    os.makedirs(folder, exist_ok=True)
    manifest = os.path.join(folder, "manifest.json")
    want = {"gb": gb, "dim": DIM, "seed": seed, "version": 2}
    if os.path.exists(manifest):
        with open(manifest) as f:
            have = json.load(f)
        if {k: have.get(k) for k in want} == want:
            return have
    rng = np.random.default_rng(seed)
    target_frames = int(gb * 1e9 / (DIM * 4))
    # Utterance lengths skewed to the short end as in read speech: 100 frames plus an exponential
    # of mean 200 frames, drawn again above 1,500 (mean about 299 frames), so that 1 GB holds
    # about 20,900 utterances of 100-1,500 frames (a uniform 100-1,500 draw would hold 7,800).
    lengths = []
    total = 0
    while total < target_frames:
        n = 100 + int(rng.exponential(200.0))
        if n > 1500:
            continue
        lengths.append(n)
        total += n
    per_archive = ARCHIVE_BYTES // (DIM * 4)
    scp, mlf = [], ["#!MLF!#"]
    arch, arch_frames, pending = 0, 0, []

    def flush():
        nonlocal arch, arch_frames, pending
        if not pending:
            return
        frames = sum(p.shape[0] for p in pending)
        path = os.path.join(folder, f"arch{arch:04d}.htk")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(struct.pack(">iihh", frames, 100000, DIM * 4, 9))
            for p in pending:
                f.write(p.astype(">f4").tobytes())
        os.replace(tmp, path)
        arch, arch_frames, pending = arch + 1, 0, []

    for u, n in enumerate(lengths):
        if arch_frames + n > per_archive:
            flush()
        pending.append(rng.standard_normal((n, DIM), dtype=np.float32))
        scp.append(f"utt{u:07d}.fbank=arch{arch:04d}.htk[{arch_frames},{arch_frames + n - 1}]")
        arch_frames += n
        mlf.append(f'"*/utt{u:07d}.lab"')
        cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, max(1, n // 20)), replace=False))
        bounds = [0, *cuts.tolist(), n]
        for a, b in zip(bounds, bounds[1:]):
            mlf.append(f"{a * 100000} {b * 100000} s{int(rng.integers(STATES))}")
        mlf.append(".")
    flush()
    for name, lines in (("train.scp", scp), ("train.mlf", mlf), ("states.list", [f"s{i}" for i in range(STATES)])):
        with open(os.path.join(folder, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    info = dict(want, utterances=len(lengths), frames=total, archives=arch)
    with open(manifest, "w") as f:
        json.dump(info, f)
    return info


# --- one measurement per subprocess ------------------------------------------------------------

def run_cntkio(folder: str, mode: str, window: int) -> dict:
    import warnings

    import scipy.sparse  # noqa: F401  (imported before the clock starts, as a training script has it)

    from cntkio import HTKFeatureDeserializer, HTKMLFDeserializer, MinibatchSource, StreamDef
    warnings.filterwarnings("ignore", message="asarray")   # sequence mode: the padded array is wanted
    os.chdir(folder)
    t0 = time.perf_counter()
    ctx = (5, 5) if mode == "frame" else (0, 0)   # seq, seqpad: no context
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=DIM, scp="train.scp", context=ctx)})
    labels = HTKMLFDeserializer("states.list", {"labels": StreamDef(shape=STATES, mlf="train.mlf")})
    if mode == "frame":
        src = MinibatchSource([feats, labels], frame_mode=True, randomize=True, max_sweeps=1,
                              randomization_window_in_samples=window, randomization_window_in_chunks=0)
        size = FRAME_MB
    else:
        src = MinibatchSource([feats, labels], randomize=False, max_sweeps=1)
        size = SEQ_MB
    t_index = time.perf_counter() - t0
    fs, ls = src.streams["features"], src.streams["labels"]
    frames = 0
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            break
        # frame mode: the (4096, 1, 440) array; sequence mode: each utterance's frames as an array
        # (a view of the packed rows; padding to (utterances, longest, 40) is a layout the consumer
        # may choose on top, measured apart as ``cntkio-seqpad``)
        x = mb[fs].asarray() if mode in ("frame", "seqpad") else mb[fs].as_sequences()
        mb[ls].as_csr()
        frames += mb[fs].num_samples
        del x
    return {"frames": frames, "seconds": time.perf_counter() - t0, "index_seconds": t_index}


def run_cntk27(folder: str, window: int) -> dict:
    sys.path.insert(0, os.path.join(ROOT, ".cache", "cntk27", "shim"))
    import cntk27
    os.chdir(folder)
    t0 = time.perf_counter()
    f = cntk27.htk_feature_deserializer({"features": dict(scp="train.scp", dim=DIM, context=(5, 5))})
    lab = cntk27.htk_mlf_deserializer("states.list", "labels", STATES, ["train.mlf"])
    src = cntk27.MinibatchSource([f, lab], randomize=True, frame_mode=True, max_sweeps=1,
                                 rand_window_samples=window, seed=0)
    t_index = time.perf_counter() - t0
    frames = 0
    while True:
        mb = src.next_minibatch(FRAME_MB)
        if not mb:
            break
        frames += mb["features"]["nsamples"]
    return {"frames": frames, "seconds": time.perf_counter() - t0, "index_seconds": t_index}


def run_fromfile(folder: str) -> dict:
    t0 = time.perf_counter()
    frames = 0
    for name in sorted(os.listdir(folder)):
        if name.endswith(".htk"):
            a = np.fromfile(os.path.join(folder, name), np.uint8)
            frames += (a.size - 12) // (DIM * 4)
    return {"frames": frames, "seconds": time.perf_counter() - t0, "index_seconds": 0.0}


def run_loads(folder: str, mode: str) -> dict:
    from cntkio import HTKFeatureDeserializer, StreamDef
    from cntkio.registry import build_deserializer
    os.chdir(folder)
    ctx = (0, 0) if mode == "seq" else (5, 5)
    d = build_deserializer(HTKFeatureDeserializer({"features": StreamDef(shape=DIM, scp="train.scp", context=ctx)}),
                           frame_mode=mode == "frame")
    t0, c0 = time.perf_counter(), time.process_time()
    frames = 0
    for c in d.chunk_infos():
        if mode == "frame":
            frames += len(d.read_bytes(c.id))
        else:
            frames += d.get_chunk(c.id).streams["features"].values.shape[0]
    d.close()
    return {"frames": frames, "seconds": time.perf_counter() - t0, "index_seconds": 0.0,
            "cpu_seconds": time.process_time() - c0}


def child(args) -> None:
    if args.child.startswith("loads-"):
        r = run_loads(args.folder, args.child[6:])
    elif args.child == "cntkio-frame":
        r = run_cntkio(args.folder, "frame", args.window_frames)
    elif args.child == "cntkio-seq":
        r = run_cntkio(args.folder, "seq", 0)
    elif args.child == "cntkio-seqpad":
        r = run_cntkio(args.folder, "seqpad", 0)
    elif args.child == "cntk27-frame":
        r = run_cntk27(args.folder, args.window_frames)
    else:
        r = run_fromfile(args.folder)
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(r))


def measure(name: str, folder: str, window: int, repeat: int, env: dict | None = None) -> dict | None:
    best = None
    for _ in range(repeat):
        cmd = [sys.executable, os.path.abspath(__file__), folder, "--child", name, "--window-frames", str(window)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=None if env is None else {**os.environ, **env})
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if p.returncode != 0 or line is None:
            print(f"{name}: failed (rc {p.returncode}): {p.stderr.strip()[-400:]}", file=sys.stderr)
            return None
        r = json.loads(line[7:])
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    return best


def rss_windows(args, info: dict) -> None:
    """Frame mode (context 5, randomized) at each window of ``--rss-windows`` (shares of the corpus)
    or ``--rss-frames`` (frames: the same windows on corpora of two sizes show whether the peak
    depends on the corpus), one process each: its peak RSS. Bounded by the window, the peak follows
    the window and not the corpus; the last column is the peak above the first window's, per frame
    of window added. ``--rss-fixed-mmap`` runs each window again with glibc's mmap threshold fixed
    (``MALLOC_MMAP_THRESHOLD_=131072``): glibc otherwise raises it after large blocks are freed and
    keeps later ones in its heap, whose growth over a run is the allocator's, not the reader's."""
    if args.rss_frames:
        windows = [(int(x) / info["frames"], int(x)) for x in args.rss_frames.split(",")]
    else:
        windows = [(float(x), max(1, int(info["frames"] * float(x)))) for x in args.rss_windows.split(",")]
    variants = [("", None)] + ([(" (fixed mmap threshold)", {"MALLOC_MMAP_THRESHOLD_": "131072"})]
                               if args.rss_fixed_mmap else [])
    rows = []
    for share, w in windows:
        for label, env in variants:
            r = measure("cntkio-frame", args.folder, w, 1, env)
            if r is None:
                return
            rows.append((share, w, r["peak_rss_mb"], r["frames"] / r["seconds"], label))
    print(f"corpus {info['frames']} frames; frame mode, context 5")
    for share, w, rss, fps, label in rows:
        base = next(x for x in rows if x[4] == label)
        per = (rss - base[2]) * 1e6 / (w - base[1]) if w != base[1] else float("nan")
        print(f"window {share:6.1%} ({w:>9d} frames): peak RSS {rss:7.0f} MB ({rss * 1e6 / info['frames']:6.1f} B per "
              f"corpus frame; {per:6.1f} B per window frame added), {fps:>10.0f} frames/s{label}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"corpus": info, "rss": [dict(zip(("window_share", "window_frames", "peak_rss_mb",
                                                          "frames_per_s", "variant"), r)) for r in rows]}, f, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--window", type=float, default=0.1, help="randomization window, share of the corpus")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--small", action="store_true", help="smoke run on a tiny corpus (0.01 GB)")
    ap.add_argument("--no-cntk", action="store_true", help="skip the CNTK 2.7 column")
    ap.add_argument("--rss", action="store_true",
                    help="frame mode only, once per window of --rss-windows: peak RSS against the window")
    ap.add_argument("--rss-windows", default="0.025,0.1", help="windows (shares of the corpus) for --rss")
    ap.add_argument("--rss-frames", help="windows in frames for --rss (instead of --rss-windows): the same "
                    "windows on two corpus sizes show whether the peak depends on the corpus")
    ap.add_argument("--rss-fixed-mmap", action="store_true",
                    help="--rss: each window also with MALLOC_MMAP_THRESHOLD_=131072 (glibc's heap growth apart)")
    ap.add_argument("--json")
    ap.add_argument("--loads", action="store_true", help="only the chunk loads (frame, context, sequence)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--window-frames", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    gb = 0.01 if args.small else args.gb
    t0 = time.perf_counter()
    info = generate(args.folder, gb)
    print(f"corpus: {info['utterances']} utterances, {info['frames']} frames, {info['archives']} archives "
          f"({info['frames'] * DIM * 4 / 1e9:.2f} GB of features; ready in {time.perf_counter() - t0:.1f} s)")
    window = max(1, int(info["frames"] * args.window))
    repeat = 1 if args.small else args.repeat
    if args.rss:
        rss_windows(args, info)
        return
    names = ["cntkio-frame", "cntkio-seq", "cntkio-seqpad", "fromfile"]
    rig = os.path.join(ROOT, ".cache", "cntk27", "shim")
    if not args.no_cntk and os.path.isdir(rig) and not args.loads:
        names.insert(1, "cntk27-frame")
    if args.loads:
        names = ["loads-frame", "loads-context", "loads-seq", "fromfile"]
    results = {}
    for n in names:
        r = measure(n, args.folder, window, repeat)
        if r is None:
            continue
        r["frames_per_s"] = r["frames"] / r["seconds"]
        r["mb_per_s"] = r["frames"] * DIM * 4 / 1e6 / r["seconds"]
        r["read_seconds"] = r["seconds"] - r["index_seconds"]
        r["read_mb_per_s"] = r["frames"] * DIM * 4 / 1e6 / r["read_seconds"]
        results[n] = r
        print(f"{n:14s} {r['frames']:>11d} frames {r['seconds']:8.2f} s (index {r['index_seconds']:.2f} s) "
              f"{r['frames_per_s']:>12.0f} frames/s {r['mb_per_s']:8.1f} MB/s  peak RSS {r['peak_rss_mb']:.0f} MB"
              + (f"  CPU {r['cpu_seconds']:.2f} s" if "cpu_seconds" in r else ""))
    if "cntkio-frame" in results and "cntk27-frame" in results:
        print(f"frame mode, context 5, window {window} frames: cntkio / CNTK 2.7 = "
              f"{results['cntkio-frame']['frames_per_s'] / results['cntk27-frame']['frames_per_s']:.2f}x")
    for name in ("cntkio-seq", "cntkio-seqpad"):
        if name in results and "fromfile" in results:
            r, ff = results[name], results["fromfile"]["mb_per_s"]
            print(f"sequence mode ({name}): cntkio / numpy.fromfile = {r['mb_per_s'] / ff:.2f} with the index "
                  f"(SCP + MLF parsed), {r['read_mb_per_s'] / ff:.2f} reading only")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"corpus": info, "window_frames": window, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
