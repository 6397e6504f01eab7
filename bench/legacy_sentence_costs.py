#!/usr/bin/env python3
"""SequenceReader / LUSequenceReader alone: tokens/s of the whole-sentence and the parallel mode
(``nbrUttsInEachRecurrentIter``), and where the parallel mode's time goes.

    python bench/legacy_sentence_costs.py bench/data/ls [--corpus-mb 10] [--repeat 3] [--parallel 10]
    python bench/legacy_sentence_costs.py bench/data/ls --corpus-mb 100 --build-only   # reading the corpus

The corpus is ``bench/legacy_throughput.py``'s (``lm.txt``, ``lu.txt`` and the LU token files,
written into the folder when missing or of another size), and the sections and the measure are
that script's (build + one sweep, sparse values left packed; the parallel mode reads 20 steps a
row). Runs are interleaved (whole, parallel, whole, parallel, ...; best of ``--repeat``) so that a
busy machine skews both alike. It then sweeps the parallel mode once more with timers around the
engine's per-sentence and per-minibatch steps of grouped sentences (the timers add about 0.5 us
a call) and prints calls, total and per-call time of each:

* ``take_sequences``: the next sentences of the sweep taken in one step, their arrays copied
  out of their chunks (one worker; ``next_local`` and ``sequence``: one sentence at a time, the
  path taken otherwise, e.g. with several workers);
* ``_form_group``: a group of sentences of one length (includes the above);
* ``emit_group``: one minibatch of a group (``_join_rows``: its arrays of one sparse stream;
  ``_join_pieces``: the same for a dense stream or an uneven layout).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import legacy_throughput as lt  # noqa: E402

from cntkio.engine import global_timeline, packer, reader, walk  # noqa: E402


def _sections(folder: str) -> dict:
    lm = {"readerType": "SequenceReader", "file": os.path.join(folder, "lm.txt"), "randomize": "None",
          "labelIn": {"labelDim": "10002"}, "labels": {"labelType": "NextWord", "labelDim": "10002"}}
    lu = {"readerType": "LUSequenceReader", "file": os.path.join(folder, "lu.txt"), "randomize": "None",
          "unk": "<unk>", "labelIn": {"token": os.path.join(folder, "lu_in.txt")},
          "labels": {"token": os.path.join(folder, "lu_out.txt")}}
    return {"SequenceReader": lm, "LUSequenceReader": lu}


def _timed_sweep(section: dict) -> dict:
    """One parallel sweep with timers around the grouped path's steps: ``{step: [calls, seconds]}``."""
    acc: dict = {}
    targets = [(walk.TimelineWalker, "next_local"), (global_timeline.GlobalTimeline, "sequence"),
               (global_timeline.GlobalTimeline, "take_sequences"), (reader.Reader, "_form_group"),
               (packer.TruncatedSlots, "emit_group"), (packer, "_join_rows"), (packer, "_join_pieces")]
    saved = [(obj, name, getattr(obj, name)) for obj, name in targets]

    def timer(name, f):
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                c = acc.setdefault(name, [0, 0.0])
                c[0] += 1
                c[1] += time.perf_counter() - t
        return g
    try:
        for obj, name, f in saved:
            setattr(obj, name, timer(name, f))
        s, n = lt._sweep(section, 20)
    finally:
        for obj, name, f in saved:
            setattr(obj, name, f)
    acc["sweep (timed)"] = [n, s]
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--corpus-mb", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=10, help="nbrUttsInEachRecurrentIter (default 10)")
    ap.add_argument("--build-only", action="store_true",
                    help="time only the readers' build (reading and indexing the corpus), best of --repeat")
    args = ap.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    lm_path = os.path.join(args.folder, "lm.txt")
    mb = args.corpus_mb
    if not os.path.exists(lm_path) or abs(os.path.getsize(lm_path) - mb * 1e6) > 0.1 * mb * 1e6 + 1e5:
        lt._write_corpora(args.folder, mb)
    if args.build_only:
        print(f"lm.txt {os.path.getsize(lm_path) / 1e6:.1f} MB; build only, best of {args.repeat}")
        for name, sec in _sections(args.folder).items():
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                lt.build_reader(sec, max_sweeps=1).close()
                times.append(time.perf_counter() - t0)
            print(f"{name:17s} build {min(times):6.2f} s")
        return
    print(f"lm.txt {os.path.getsize(lm_path) / 1e6:.1f} MB; best of {args.repeat} interleaved runs "
          "(build + one sweep)")
    for name, sec in _sections(args.folder).items():
        par = dict(sec, nbrUttsInEachRecurrentIter=str(args.parallel))
        whole, parallel = [], []
        for _ in range(args.repeat):
            whole.append(lt._sweep(sec))
            parallel.append(lt._sweep(par, 20))
        (ws, wn), (ps, pn) = min(whole), min(parallel)
        print(f"{name:17s} whole sentences {wn / ws / 1e6:5.2f} M tokens/s   "
              f"{args.parallel} parallel grouped {pn / ps / 1e6:5.2f} M tokens/s ({pn} tokens)")
        for step, (calls, secs) in _timed_sweep(par).items():
            unit = "tokens" if step.startswith("sweep") else "calls"
            per = f"{secs / calls * 1e6:7.1f} us per call" if unit == "calls" else ""
            print(f"    {step:15s} {calls:8d} {unit:6s} {secs:7.3f} s  {per}")


if __name__ == "__main__":
    main()
