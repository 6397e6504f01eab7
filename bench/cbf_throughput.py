#!/usr/bin/env python3
"""CBF throughput: one sweep of each benchmark dataset converted to CBF, through cntkio's
MinibatchSource, beside CNTK 2.7's CBF reader (the cntk27 rig), ``read()`` of the same bytes and
cntkio's CTF read of the same data; and the conversion speed against the CTF parse speed.

    python bench/peers/gen_data.py bench/data               # once (git-ignored)
    bash /work/shared/cntk27/setup_cntk27.sh .cache/cntk27          # once, for the CNTK column
    python bench/cbf_throughput.py bench/data [--only dense,seq] [--repeat 3] [--json out.json]

Per dataset (``<name>.ctf`` from gen_data.py, converted once to ``<name>.cbf`` beside it with
``ctf2bin``, 32 MiB chunks; reused while newer than the CTF):

* ``convert``: ``ctf2bin`` of the CTF file (its parse on two threads, each chunk encoded on the
  thread that parsed it, the output written by a thread of its own), CTF MB/s (10^6 bytes of
  text per second), also
  without the final fsync (the same run, less the seconds of the fsync before the rename, also
  shown); each run writes a new file (the previous run's output is deleted first, untimed: a
  rename over an existing 341 MB file also frees its blocks, ~0.06 s), beside ``ctf parse``: the
  CTF deserializer's index + ``get_chunk`` of every chunk, on one thread (the CTF parse speed).
  Both also in CPU seconds of the process (all threads; the least of the runs) with the load
  average: the conversion needs its two cores to beat the one-thread parse (it does the parse's
  work and more), so its wall time says little where another process holds a core;
* ``read()``: reading the CBF file's bytes into memory (page cache warm);
* ``cbf source``: ``MinibatchSource`` over ``CBFDeserializer``, ``randomize=False``, one sweep of
  256-sample minibatches, NumPy outputs; ``cbf random``: the same randomized (4-chunk window);
* ``ctf source``: the same sweep over the CTF file with cntkio (``randomize=False``);
* ``cntk27 cbf``: CNTK 2.7's CBF reader through the rig (``randomize=False``, one sweep, 256), in
  a subprocess (CNTK may abort the whole process on errors).

MB/s is the CBF file's size over wall time (CTF size for ``convert``/``ctf parse``/``ctf
source``); ratios compare times of one sweep. Each figure is the best of ``--repeat`` runs.
``--small`` runs a smoke test on tiny generated data (no gen_data.py needed).

``--loads`` measures only the chunk loads: ``get_chunk`` of every chunk of each CBF file, one
thread, best of ``--repeat`` (MB/s of the file; the chunks are read with ``pread`` since issue 30,
from a memory map before), and ``CTF loads`` the same for the CTF file (its chunks parsed), and
prints one line per dataset (``--json`` as usual). ``--sweeps`` measures only the sweeps
(``cbf source``, ``cbf random``, ``ctf source`` and ``ctf random``: the same randomized, a
4-chunk window), each as wall and CPU time of the process (best of ``--repeat``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from cntkio import CBFDeserializer, CTFDeserializer, MinibatchSource, StreamDef  # noqa: E402
from cntkio.deserializers.cbf import ctf2bin  # noqa: E402
from cntkio.registry import build_deserializer  # noqa: E402

STREAMS = {
    "dense": dict(features=StreamDef(field="features", shape=784), labels=StreamDef(field="labels", shape=10)),
    "sparse": dict(src=StreamDef(field="src", shape=50000, is_sparse=True),
                   tgt=StreamDef(field="tgt", shape=50000, is_sparse=True)),
    "seq": dict(word=StreamDef(field="word", shape=40000, is_sparse=True),
                tag=StreamDef(field="tag", shape=45, is_sparse=True)),
    "float": dict(x=StreamDef(field="x", shape=150), y=StreamDef(field="y", shape=1)),
}
MB_SIZE = 256
CHUNK = 32 * 1024 * 1024


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _cpu() -> float:
    """CPU seconds of this process so far, all threads, user + system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best_cpu(fn, repeat):
    """(best wall seconds, the least CPU seconds of the process) of ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0, _cpu() - c0))
    return min(w for w, _ in runs), min(c for _, c in runs)


def best_convert(ctf, cbf, name, repeat):
    """Best of ``repeat`` conversions: (seconds, seconds less the final fsync) of the fastest, and
    the least CPU seconds (all threads) of one conversion."""
    runs, cpus = [], []
    for _ in range(repeat):
        if os.path.exists(cbf):  # each run writes a new file (not timed: freeing the old one's blocks)
            os.unlink(cbf)
        c0, t0 = _cpu(), time.perf_counter()
        info = ctf2bin(ctf, cbf, STREAMS[name], chunk_size=CHUNK, progress=False)
        t = time.perf_counter() - t0
        cpus.append(_cpu() - c0)
        runs.append((t, t - info["fsync_seconds"]))
    return (*min(runs), min(cpus))


def sweep(cfg, randomize=False):
    kw = dict(randomize=randomize, max_sweeps=1)
    if randomize:
        kw["randomization_window_in_chunks"] = 4
    src = MinibatchSource(cfg, **kw)
    n = 0
    while True:
        mb = src.next_minibatch(MB_SIZE)
        if not mb:
            break
        for d in mb.values():  # materialize the NumPy outputs
            d.asarray() if not d.is_sparse else d.as_csr()
        n += 1
    src.close()
    return n


def ctf_parse(ctf, name):
    d = build_deserializer(CTFDeserializer(ctf, STREAMS[name]))
    for c in d.chunk_infos():
        d.get_chunk(c.id)
    d.close()


def read_bytes(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


_CNTK_SCRIPT = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import cntk27
t0 = time.perf_counter()
src = cntk27.MinibatchSource([cntk27.cbf_deserializer(sys.argv[2], ())], randomize=False, max_sweeps=1)
while src.next_minibatch(int(sys.argv[3])):
    pass
print(time.perf_counter() - t0)
"""


def cntk27_cbf(cbf, rig, repeat):
    shim = os.path.join(rig, "shim")
    if not os.path.isdir(shim):
        return None
    env = dict(os.environ, LD_PRELOAD=os.path.join(rig, "stub", "libnosleep.so"))
    times = []
    for _ in range(repeat):
        r = subprocess.run([sys.executable, "-c", _CNTK_SCRIPT, shim, cbf, str(MB_SIZE)],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"CNTK 2.7's CBF reader failed on {cbf}: {r.stderr[-2000:]}")
        times.append(float(r.stdout.strip().splitlines()[-1]))
    return min(times)


def small_data(folder):
    """Tiny stand-ins for the four datasets (smoke runs only)."""
    import numpy as np
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "dense.ctf"), "w") as f:
        for _ in range(300):
            f.write("|features " + " ".join(str(int(v)) for v in rng.integers(0, 255, 784))
                    + f" |labels {' '.join('1' if i == 3 else '0' for i in range(10))}\n")
    with open(os.path.join(folder, "sparse.ctf"), "w") as f:
        for i in range(300):
            f.write(f"{i} |src " + " ".join(f"{j}:1" for j in rng.integers(0, 50000, 5))
                    + " |tgt " + " ".join(f"{j}:1" for j in rng.integers(0, 50000, 5)) + "\n")
    with open(os.path.join(folder, "seq.ctf"), "w") as f:
        for i in range(200):
            for _ in range(int(rng.integers(1, 20))):
                f.write(f"{i} |word {int(rng.integers(0, 40000))}:1 |tag {int(rng.integers(0, 45))}:1\n")
    with open(os.path.join(folder, "float.ctf"), "w") as f:
        for _ in range(500):
            f.write("|x " + " ".join("%.6g" % v for v in rng.normal(size=150)) + f" |y {rng.normal():.6g}\n")


def measure(name, ctf, cbf, args) -> dict:
    ctf_mb, t_conv, t_conv_nofsync, cpu_conv = os.path.getsize(ctf) / 1e6, None, None, None
    if not os.path.exists(cbf) or os.path.getmtime(cbf) < os.path.getmtime(ctf):
        t_conv, t_conv_nofsync, cpu_conv = best_convert(ctf, cbf, name, args.repeat)
    cbf_mb = os.path.getsize(cbf) / 1e6
    t_parse, cpu_parse = best_cpu(lambda: ctf_parse(ctf, name), args.repeat)
    t_read = best(lambda: read_bytes(cbf), args.repeat)
    t_cbf = best(lambda: sweep(CBFDeserializer(cbf)), args.repeat)
    t_rand = best(lambda: sweep(CBFDeserializer(cbf), randomize=True), args.repeat)
    t_ctf = best(lambda: sweep(CTFDeserializer(ctf, STREAMS[name])), args.repeat)
    t_cntk = None if args.no_cntk else cntk27_cbf(cbf, args.rig, args.repeat)
    row = dict(ctf_MB=ctf_mb, cbf_MB=cbf_mb,
               convert_MBps=None if t_conv is None else ctf_mb / t_conv,
               convert_no_fsync_MBps=None if t_conv is None else ctf_mb / t_conv_nofsync,
               fsync_s=None if t_conv is None else t_conv - t_conv_nofsync,
               ctf_parse_MBps=ctf_mb / t_parse,
               convert_cpu_s=cpu_conv, ctf_parse_cpu_s=cpu_parse, load_average=os.getloadavg()[0],
               read_MBps=cbf_mb / t_read, cbf_source_MBps=cbf_mb / t_cbf, cbf_random_MBps=cbf_mb / t_rand,
               ctf_source_s=t_ctf, cbf_source_s=t_cbf,
               cntk27_cbf_MBps=None if t_cntk is None else cbf_mb / t_cntk,
               vs_cntk27=None if t_cntk is None else t_cntk / t_cbf,
               vs_read=t_read / t_cbf, vs_ctf=t_ctf / t_cbf)

    def f(v, p="%.1f"):
        return "-" if v is None else p % v
    print(f"{name:7s} ctf {ctf_mb:8.1f} MB  cbf {cbf_mb:8.1f} MB | convert {f(row['convert_MBps'])} MB/s "
          f"(without the final fsync {f(row['convert_no_fsync_MBps'])}, fsync {f(row['fsync_s'], '%.3f')} s; "
          f"ctf parse {f(row['ctf_parse_MBps'])}; CPU s convert {f(cpu_conv, '%.3f')} parse "
          f"{cpu_parse:.3f}, load {row['load_average']:.2f}) | read() {f(row['read_MBps'])} | cbf source "
          f"{f(row['cbf_source_MBps'])} random {f(row['cbf_random_MBps'])} | cntk27 cbf "
          f"{f(row['cntk27_cbf_MBps'])} | x cntk27 {f(row['vs_cntk27'], '%.2f')} "
          f"x read() {f(row['vs_read'], '%.2f')} x ctf {f(row['vs_ctf'], '%.2f')}", flush=True)
    return row


def chunk_loads(path, cfg):
    """Every chunk of ``cfg``'s deserializer loaded once (what a sweep's chunk loads cost)."""
    d = build_deserializer(cfg)
    for c in d.chunk_infos():
        d.get_chunk(c.id)
    d.close()


def measure_loads(name, ctf, cbf, args) -> dict:
    if not os.path.exists(cbf) or os.path.getmtime(cbf) < os.path.getmtime(ctf):
        ctf2bin(ctf, cbf, STREAMS[name], chunk_size=CHUNK, progress=False)
    cbf_mb, ctf_mb = os.path.getsize(cbf) / 1e6, os.path.getsize(ctf) / 1e6
    t_cbf, cpu_cbf = best_cpu(lambda: chunk_loads(cbf, CBFDeserializer(cbf)), args.repeat)
    t_ctf, cpu_ctf = best_cpu(lambda: chunk_loads(ctf, CTFDeserializer(ctf, STREAMS[name])), args.repeat)
    row = dict(cbf_MB=cbf_mb, ctf_MB=ctf_mb, cbf_loads_s=t_cbf, cbf_loads_MBps=cbf_mb / t_cbf, cbf_loads_cpu_s=cpu_cbf,
               ctf_loads_s=t_ctf, ctf_loads_MBps=ctf_mb / t_ctf, ctf_loads_cpu_s=cpu_ctf,
               load_average=os.getloadavg()[0])
    print(f"{name:7s} cbf {cbf_mb:7.1f} MB loads {t_cbf * 1e3:8.1f} ms ({cbf_mb / t_cbf:7.0f} MB/s, CPU "
          f"{cpu_cbf * 1e3:.1f} ms) | ctf {ctf_mb:7.1f} MB loads {t_ctf * 1e3:8.1f} ms ({ctf_mb / t_ctf:6.0f} MB/s, "
          f"CPU {cpu_ctf * 1e3:.1f} ms) | load {row['load_average']:.1f}", flush=True)
    return row


def measure_sweeps(name, ctf, cbf, args) -> dict:
    if not os.path.exists(cbf) or os.path.getmtime(cbf) < os.path.getmtime(ctf):
        ctf2bin(ctf, cbf, STREAMS[name], chunk_size=CHUNK, progress=False)
    row = {}
    for key, fn in (("cbf_source", lambda: sweep(CBFDeserializer(cbf))),
                    ("cbf_random", lambda: sweep(CBFDeserializer(cbf), randomize=True)),
                    ("ctf_source", lambda: sweep(CTFDeserializer(ctf, STREAMS[name]))),
                    ("ctf_random", lambda: sweep(CTFDeserializer(ctf, STREAMS[name]), randomize=True))):
        row[key + "_s"], row[key + "_cpu_s"] = best_cpu(fn, args.repeat)
    row["load_average"] = os.getloadavg()[0]
    print(f"{name:7s} " + " | ".join(f"{k.replace('_', ' ')} {row[k + '_s'] * 1e3:7.1f} ms (CPU {row[k + '_cpu_s'] * 1e3:6.1f})"
                                     for k in ("cbf_source", "cbf_random", "ctf_source", "ctf_random"))
          + f" | load {row['load_average']:.1f}", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="folder written by gen_data.py (with --small: a scratch folder)")
    ap.add_argument("--only", default="dense,sparse,seq,float")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--rig", default=os.path.join(ROOT, ".cache", "cntk27"))
    ap.add_argument("--no-cntk", action="store_true", help="skip CNTK 2.7's column")
    ap.add_argument("--small", action="store_true", help="smoke run on tiny generated data")
    ap.add_argument("--json", help="write the numbers here too")
    ap.add_argument("--loads", action="store_true", help="only the chunk loads (CBF and CTF)")
    ap.add_argument("--sweeps", action="store_true", help="only the sweeps (CBF and CTF, plain and randomized)")
    args = ap.parse_args()
    if args.small:
        small_data(args.data)
    rows = {}
    for name in args.only.split(","):
        fn = measure_loads if args.loads else measure_sweeps if args.sweeps else measure
        rows[name] = fn(name, os.path.join(args.data, name + ".ctf"), os.path.join(args.data, name + ".cbf"), args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
