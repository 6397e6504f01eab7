#!/usr/bin/env python3
"""CTF reading throughput of cntkio beside the peer parsers, in one run (a benchmark, not a test).

    python bench/ctf_throughput.py [DATADIR] [--generate] [--repeat 3] [--warmup 1]
                                   [--datasets dense,sparse,seq,float] [--peers-dir DIR]
                                   [--no-peers] [--methods SUBSTR,...] [--out FILE]
    python bench/ctf_throughput.py [DATADIR] --scaling [--repeat 3]

DATADIR (default bench/data, git-ignored) holds the files of ``bench/peers/gen_data.py`` (about
1.1 GB; ``--generate`` writes them when the manifest is missing). For every dataset it times, each
as the best of --repeat runs after --warmup untimed runs with the file in the page cache:

* ``cntkio index scan``: ``scan_index`` of the C module over an mmap of the whole file;
* ``cntkio CTF, 1 thread``: a ``CNTKTextFormatDeserializer`` built on the file (index scan
  included) and every chunk read with ``get_chunk`` into columnar arrays (default 32 MB chunks);
* ``cntkio CTF, 2 threads``: the same with the chunks read by two threads;
* ``cntkio parse only, 1 thread``: ``parse_chunk`` over each chunk of an mmap, no index scan and no
  deserializer bookkeeping: the C parser's own speed;
* the peers of ``bench/peers/peers.py`` (read()/wc -l, numpy.loadtxt, pandas C/pyarrow engines,
  pyarrow.csv, sklearn svmlight, the naive Python CTF parser) on the same content in their formats.

``--scaling`` instead times the C parser on the first two chunks of each file (the file cut in
halves) parsed one after the other on one thread and at once on two threads: the parser releases
the GIL, so the ratio shows how far two chunks parse in parallel on this machine.

Ratios: ``x pandas c`` = pandas.read_csv(engine='c') time on the same content (the .csv file) over
this method's time (sparse has no pandas form: sklearn's svmlight loader stands in, and the column
says so); ``x CNTK 2.7`` = MB/s over CNTK 2.7's measured CTF reader figures (dense 158 MB/s,
sparse 116, seq 32 MB/s = 1.09 M lines/s, float 189). Prints the table and writes it as markdown
(default ``bench/results/ctf-<date>.md``) with the machine, versions, date and command.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import importlib.util
import json
import mmap
import os
import pathlib
import shlex
import subprocess
import sys
import time


ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cntkio.deserializers.ctf import CNTKTextFormatDeserializer, ctf_backend  # noqa: E402

MB = 1_000_000
CNTK27 = {"dense": 158.0, "sparse": 116.0, "seq": 32.0, "float": 189.0}  # MB/s, measured
CNTK27_SEQ_LINES = 1.09e6
STREAMS = {  # name -> (alias, dim, sparse), as gen_data.py writes them
    "dense": [("features", 784, False), ("labels", 10, False)],
    "sparse": [("src", 50000, True), ("tgt", 50000, True)],
    "seq": [("word", 40000, True), ("tag", 45, True)],
    "float": [("x", 150, False), ("y", 1, False)],
}
SAME_CONTENT = {"dense": "csv", "sparse": "svm", "seq": "csv", "float": "csv"}


def load_peers(peers_dir: pathlib.Path):
    spec = importlib.util.spec_from_file_location("peers", peers_dir / "peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(peers_dir))
    spec.loader.exec_module(module)
    return module


def config(path: str, name: str, chunk_size: int) -> dict:
    inputs = {alias: {"dim": dim, "format": "sparse" if sparse else "dense", "alias": alias}
              for alias, dim, sparse in STREAMS[name]}
    return {"type": "CNTKTextFormatDeserializer", "file": path, "input": inputs,
            "chunkSizeInBytes": chunk_size, "traceLevel": 0}


def samples_of(chunk) -> int:
    first = next(iter(chunk.streams.values()))
    return first.num_samples


def cntkio_methods(name: str, chunk_size: int):
    """(label, fn(path) -> samples) for the cntkio rows of one dataset."""
    backend = ctf_backend()
    streams = [(a.encode(), d, s) for a, d, s in STREAMS[name]]
    aliases = [s[0] for s in streams]

    def scan(path):
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            res = backend.scan_index(m, aliases, False, -1, chunk_size)
            return int(len(res[2]))  # sequences: not lines, so the 'rows' column flags it

    def one_thread(path):
        d = CNTKTextFormatDeserializer(config(path, name, chunk_size))
        try:
            return sum(samples_of(d.get_chunk(c.id)) for c in d.chunk_infos())
        finally:
            d.close()

    def two_threads(path):
        d = CNTKTextFormatDeserializer(config(path, name, chunk_size))
        try:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                return sum(pool.map(lambda c: samples_of(d.get_chunk(c.id)), d.chunk_infos()))
        finally:
            d.close()

    index_cache = {}

    def parse_only(path):
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if path not in index_cache:  # the scan is not part of this row
                index_cache[path] = backend.scan_index(m, aliases, False, -1, chunk_size)
            _, ids_mode, _, starts, first_lines, _, cs = index_cache[path]
            total = 0
            view = memoryview(m)
            try:
                for c in range(len(cs) - 1):
                    a, b = int(cs[c]), int(cs[c + 1])
                    outputs, *_ = backend.parse_chunk(view, 0, starts[a:b + 1], first_lines[a:b],
                                                      ids_mode, streams, False, -1, 10)
                    total += int(outputs[0][-1][-1])
                    del outputs
            finally:
                view.release()
            return total

    return [("cntkio index scan", scan), ("cntkio CTF, 1 thread", one_thread),
            ("cntkio CTF, 2 threads", two_threads), ("cntkio parse only, 1 thread", parse_only)]


def scaling(datadir: str, names, repeat: int) -> None:
    """Two chunks of each file: one thread after the other vs two threads at once (C parse)."""
    import threading
    backend = ctf_backend()
    print("dataset | chunk MB | 1 thread s | 2 threads s | speedup")
    for name in names:
        path = os.path.join(datadir, f"{name}.ctf")
        streams = [(a.encode(), d, s) for a, d, s in STREAMS[name]]
        with open(path, "rb") as f:
            buf = f.read()
        _, ids_mode, _, starts, first_lines, _, cs = backend.scan_index(
            buf, [s[0] for s in streams], False, -1, len(buf) // 2 + 1)

        def run(c, cs=cs, buf=buf, starts=starts, first_lines=first_lines, ids_mode=ids_mode,
                streams=streams):
            a, b = int(cs[c]), int(cs[c + 1])
            backend.parse_chunk(buf, 0, starts[a:b + 1], first_lines[a:b], ids_mode, streams,
                                False, -1, 10)

        best = {1: float("inf"), 2: float("inf")}
        for _ in range(repeat):
            for threads in (1, 2):
                t0 = time.perf_counter()
                if threads == 1:
                    run(0)
                    run(1)
                else:
                    ts = [threading.Thread(target=run, args=(c,)) for c in (0, 1)]
                    for t in ts:
                        t.start()
                    for t in ts:
                        t.join()
                best[threads] = min(best[threads], time.perf_counter() - t0)
        mb = (int(starts[int(cs[2])]) - int(starts[0])) / 2 / MB
        print(f"{name} | {mb:.0f} | {best[1]:.3f} | {best[2]:.3f} | {best[1] / best[2]:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datadir", nargs="?", default=str(ROOT / "bench" / "data"))
    ap.add_argument("--generate", action="store_true", help="run gen_data.py when the manifest is missing")
    ap.add_argument("--peers-dir", default=str(ROOT / "bench" / "peers"))
    ap.add_argument("--no-peers", action="store_true", help="time only the cntkio rows")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--chunk-size", type=int, default=32 * 1024 * 1024)
    ap.add_argument("--datasets", default="dense,sparse,seq,float")
    ap.add_argument("--methods", help="comma-separated substrings; run only matching methods")
    ap.add_argument("--out", help="markdown file (default bench/results/ctf-<date>.md)")
    ap.add_argument("--scaling", action="store_true",
                    help="only time two chunks on one thread vs two threads (C parse)")
    a = ap.parse_args()
    if a.scaling:
        scaling(a.datadir, a.datasets.split(","), a.repeat)
        return

    peers_dir = pathlib.Path(a.peers_dir)
    peers = load_peers(peers_dir)
    manifest_path = pathlib.Path(a.datadir) / "manifest.json"
    if not manifest_path.exists():
        if not a.generate:
            sys.exit(f"{manifest_path} not found: run with --generate (writes ~1.1 GB) or "
                     f"python {peers_dir / 'gen_data.py'} {a.datadir}")
        subprocess.run([sys.executable, str(peers_dir / "gen_data.py"), a.datadir], check=True)
    manifest = json.loads(manifest_path.read_text())
    names = [n for n in a.datasets.split(",") if n in manifest]

    head = ["dataset", "file", "MB", "method", "best s", "MB/s", "lines/s", "x pandas c",
            "x CNTK 2.7", "rows"]
    rows = [head, ["---"] * len(head)]
    print(" | ".join(head), flush=True)
    for name in names:
        d = manifest[name]
        lines = d["lines"]
        results = []  # (file, size, label, t, n)
        for ext, f in d["files"].items():
            path = os.path.join(a.datadir, f["path"])
            peers.read_bytes(path)  # into the page cache
            methods = [] if a.no_peers else peers.methods_for(ext, 2 * 50000, [])
            if ext == "ctf":
                methods = methods + cntkio_methods(name, a.chunk_size)
            wanted = a.methods.split(",") if a.methods else None
            for label, fn in methods:
                if wanted and not any(w in label for w in wanted):
                    continue
                t, n = peers.bench(fn, path, a.repeat, a.warmup)
                results.append((f["path"], f["bytes"], label, t, n))
                print(f"{name} | {f['path']} | {label} | {t:.3f} s | {f['bytes'] / MB / t:,.1f} MB/s",
                      flush=True)
        same = SAME_CONTENT[name]
        ref_label = "pandas.read_csv c" if same == "csv" else "sklearn load_svmlight_file"
        ref_t = next((t for fp, _, lab, t, _ in results if fp.endswith("." + same) and lab == ref_label),
                     None)
        for fp, size, label, t, n in results:
            mbs = size / MB / t
            vs_pandas = ""
            if ref_t is not None and fp.endswith(".ctf") and label.startswith("cntkio") \
                    and label != "cntkio index scan":
                vs_pandas = f"{ref_t / t:.2f}" + ("" if same == "csv" else " (vs sklearn)")
            vs_cntk = f"{mbs / CNTK27[name]:.2f}" if fp.endswith(".ctf") and label.startswith("cntkio") \
                and label != "cntkio index scan" else ""
            if label == "cntkio index scan":
                ok = f"{n:,} sequences"
            else:
                ok = "ok" if n == lines else f"**{n:,} != {lines:,}**"
            rows.append([name, fp, f"{size / MB:.0f}", label, f"{t:.3f}", f"{mbs:,.1f}",
                         f"{lines / t:,.0f}", vs_pandas, vs_cntk, ok])

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = pathlib.Path(a.out) if a.out else ROOT / "bench" / "results" / \
        f"ctf-{datetime.date.today().isoformat()}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    backend = ctf_backend()
    with open(out, "w") as fh:
        fh.write(f"# CTF throughput: cntkio beside the peer parsers, {date}\n\n"
                 f"- machine: {peers.cpu()}; load average at the end {load[0]:.2f} / {load[1]:.2f} / "
                 f"{load[2]:.2f} (1/5/15 min)\n- {peers.versions()}; cntkio parser "
                 f"`{backend.__name__}`\n"
                 f"- command: `python {' '.join(shlex.quote(x) for x in sys.argv)}`\n"
                 f"- data: gen_data.py files, lines: "
                 + ", ".join(f"{n} {manifest[n]['lines']:,}" for n in names) + "\n"
                 f"- best of {a.repeat} after {a.warmup} warm-up run(s), file in the page cache; "
                 "MB = 10^6 bytes; lines/s uses the manifest line count; chunks of "
                 f"{a.chunk_size:,} bytes; float32 values\n"
                 "- 'x pandas c' = pandas.read_csv(engine='c') time on the same content (.csv) / this "
                 "time (sparse: sklearn load_svmlight_file on the .svm file); 'x CNTK 2.7' = MB/s / "
                 "CNTK 2.7's measured MB/s (dense 158, sparse 116, seq 32, float 189)\n"
                 "- 'rows' = samples the method returned vs the manifest's lines (the index scan "
                 "returns sequences)\n\n")
        fh.write("\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n")
    print("\n".join("| " + " | ".join(r) + " |" for r in rows))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
