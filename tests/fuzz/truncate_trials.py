#!/usr/bin/env python3
"""Files cut short while a reader reads them: the reader must end with an error naming the file (or
finish, when the cut came after what it read), never with a signal (SIGBUS, SIGSEGV) or a hang.

    python tests/fuzz/truncate_trials.py --trials 100                   # the campaign (docs/reliability.md)
    python tests/fuzz/truncate_trials.py --trials 3 --formats cbf,ctf   # a few trials of two formats

Formats (each trial a fresh copy of the format's data, read by a child process):

* ``cbf``: a CBF file of 256 KiB chunks, a randomized MinibatchSource (2-chunk window);
* ``htk-frame``, ``htk-seq``, ``htk-context``: HTK archives (4 of about 10 MB) read in frame mode
  (randomized, no context), in sequence mode (no context: frames read straight from the files),
  and in frame mode with a context window of 5 frames each side; one archive is cut;
* ``image-zip``: PNG images in a zip archive, the ImageDeserializer's ``archive.zip@/member`` paths;
* ``cache``: a UCIFastReader binary cache read by ``BinaryReader``'s deserializer in chunks of 500
  records, randomized and not;
* ``uci``: UCIFastReader text (no cache), chunks of 256 KiB;
* ``ctf``: a CTF file of 256 KiB chunks, randomized (random access) and not.

The child reads up to 200 sweeps and signals when it has read its first minibatch; the parent waits 0 to 300 ms more, cuts
the file to a random length (0 included) and waits for the child. Every minibatch is summed, as a
consumer touches its data. The target: no trial ends with a signal or a hang (30 s); an exception
that is neither a cntkio error nor an OSError naming the file is counted apart (the error rule) and
shown. Prints a Markdown table; exit status 1 on any signal or hang.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "src"))

FORMATS = ("cbf", "htk-frame", "htk-seq", "htk-context", "image-zip", "cache", "uci", "ctf")
HANG_SECONDS = 30
SWEEPS = 200         # the reader goes on well past the cut (the cut may spare what it reads)


# --- data, made once per format; ``target`` is the file a trial cuts -----------------------------

def make_data(fmt: str, folder: str, scale: float = 1.0) -> str:
    rng = np.random.default_rng(30)
    os.makedirs(folder, exist_ok=True)
    if fmt in ("cbf", "ctf"):
        n = int(24000 * scale)
        ctf = os.path.join(folder, "data.ctf")
        with open(ctf, "w") as f:
            for i in range(n):
                for _ in range(int(rng.integers(1, 4))):
                    f.write(f"{i} |x " + " ".join(f"{v:.3f}" for v in rng.normal(size=20)) +
                            f" |y {int(rng.integers(50))}:1\n")
        if fmt == "ctf":
            return ctf
        from cntkio.deserializers.cbf import ctf2bin
        out = os.path.join(folder, "data.cbf")
        ctf2bin(ctf, out, {"x": {"dim": 20, "format": "dense"}, "y": {"dim": 50, "format": "sparse"}},
                chunk_size=1 << 18, progress=False)
        return out
    if fmt.startswith("htk"):
        scp = []
        for a in range(4):
            frames, utts, off = [], [], 0
            while off < int(60000 * scale):       # 4 x 60,000 frames: 3 chunks of CNTK's 90,000
                n = int(rng.integers(50, 400))
                frames.append(rng.normal(size=(n, 40)).astype(">f4"))
                utts.append((off, n))
                off += n
            path = os.path.join(folder, f"arch{a}.htk")
            with open(path, "wb") as f:
                f.write(struct.pack(">iihh", off, 100000, 160, 9))
                for fr in frames:
                    f.write(fr.tobytes())
            scp += [f"u{a}_{k}=arch{a}.htk[{o},{o + n - 1}]" for k, (o, n) in enumerate(utts)]
        with open(os.path.join(folder, "train.scp"), "w") as f:
            f.write("\n".join(scp) + "\n")
        return os.path.join(folder, "arch1.htk")
    if fmt == "image-zip":
        import cv2
        zpath = os.path.join(folder, "images.zip")
        lines = []
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_STORED) as z:
            for i in range(int(400 * scale)):
                img = rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)
                ok, png = cv2.imencode(".png", img)
                z.writestr(f"img/{i}.png", png.tobytes())
                lines.append(f"images.zip@/img/{i}.png\t{i % 10}\n")
        with open(os.path.join(folder, "map.txt"), "w") as f:
            f.write("".join(lines))
        return zpath
    if fmt in ("cache", "uci"):
        from cntkio.legacy import DataReader
        rows = rng.integers(0, 256, (int(6000 * scale), 201))
        rows[:, 0] = rng.integers(0, 10, len(rows))
        text = os.path.join(folder, "uci.txt")
        with open(text, "w") as f:
            f.write("".join(" ".join(map(str, r)) + "\n" for r in rows.tolist()))
        if fmt == "uci":
            return text
        DataReader(_uci_section(folder)).destroy()           # writes the cache
        return os.path.join(folder, "uci.bin")
    raise ValueError(fmt)


def _uci_section(folder: str) -> dict:
    return {"readerType": "UCIFastReader", "file": os.path.join(folder, "uci.txt"), "randomize": "None",
            "writerType": "BinaryReader", "wfile": os.path.join(folder, "uci.bin"),
            "features": {"dim": "200", "start": "1"}, "labels": {"dim": "1", "start": "0", "labelDim": "10"}}


# --- the child: read, touching every minibatch ------------------------------------------------

def _source(fmt: str, folder: str, variant: int):
    from cntkio import (CBFDeserializer, CTFDeserializer, HTKFeatureDeserializer, ImageDeserializer,
                        MinibatchSource, StreamDef, StreamDefs)
    if fmt == "cbf":
        return MinibatchSource(CBFDeserializer(os.path.join(folder, "data.cbf")), max_sweeps=SWEEPS,
                               randomization_window_in_chunks=2)
    if fmt == "ctf":
        d = CTFDeserializer(os.path.join(folder, "data.ctf"),
                            StreamDefs(x=StreamDef(field="x", shape=20), y=StreamDef(field="y", shape=50, is_sparse=True)))
        d["chunkSizeInBytes"] = 1 << 18
        return MinibatchSource(d, max_sweeps=SWEEPS, randomize=bool(variant % 2), randomization_window_in_chunks=2)
    if fmt.startswith("htk"):
        os.chdir(folder)
        ctx = (5, 5) if fmt == "htk-context" else (0, 0)
        feats = HTKFeatureDeserializer({"f": StreamDef(shape=40, scp="train.scp", context=ctx)})
        return MinibatchSource([feats], max_sweeps=SWEEPS, frame_mode=fmt != "htk-seq",
                               randomization_window_in_chunks=0, randomization_window_in_samples=8000)
    if fmt == "image-zip":
        return MinibatchSource([ImageDeserializer(os.path.join(folder, "map.txt"),
                                                  StreamDefs(features=StreamDef(field="image"),
                                                             labels=StreamDef(field="label", shape=10)))],
                               max_sweeps=SWEEPS, randomize=bool(variant % 2))
    if fmt == "cache":
        return MinibatchSource({"type": "BinaryReaderDeserializer", "file": os.path.join(folder, "uci.bin"),
                                "recordsPerChunk": 500}, max_sweeps=SWEEPS, randomize=bool(variant % 2))
    if fmt == "uci":
        from cntkio.readers import build_reader
        sec = _uci_section(folder)
        for k in ("writerType", "wfile"):
            del sec[k]
        sec["chunkSizeInBytes"] = str(1 << 18)
        return build_reader(sec, max_sweeps=SWEEPS)
    raise ValueError(fmt)


def child(fmt: str, folder: str, variant: int, ready_at_open: bool = False) -> None:
    from cntkio.errors import CntkioError
    try:
        src = _source(fmt, folder, variant)
        if ready_at_open:
            print("READY", flush=True)
            sys.stdin.readline()               # cut: go on
        first = not ready_at_open
        while True:
            mb = src.next_minibatch(256)
            if not mb:
                break
            for _, v in mb.items():
                a = v.as_csr() if v.is_sparse else v.asarray()
                float(a.sum())
            if first:
                print("READY", flush=True)
                first = False
        print("DONE", flush=True)
    except (CntkioError, OSError) as e:
        print("READY", flush=True)
        print("ERROR " + json.dumps({"type": type(e).__name__, "message": str(e)}), flush=True)


# --- the parent -------------------------------------------------------------------------------

def trial(fmt: str, data: str, work: str, rng: random.Random, variant: int, cut: float | None = None,
          delay: float | None = None, at_open: bool = False) -> dict:
    """One trial: a fresh copy of the data in ``work``, read by a child while it is cut (to a random
    length after a random delay, or to ``cut`` of its size after ``delay`` seconds), after the
    child's first minibatch or (``at_open``) once its reader is built, before it reads data."""
    if os.path.exists(work):
        shutil.rmtree(work)
    shutil.copytree(os.path.dirname(data), work)
    target = os.path.join(work, os.path.basename(data))
    size = os.path.getsize(target)
    if cut is None:
        cut = 0 if rng.random() < 0.1 else rng.randrange(size)
    else:
        cut = int(size * cut)
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", fmt, work, str(variant)] +
                         (["--at-open"] if at_open else []),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    ready = p.stdout.readline().strip() == "READY"
    time.sleep(rng.random() * 0.3 if delay is None else delay)
    os.truncate(target, cut)
    try:
        out, err = p.communicate("go\n", timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return {"outcome": "hang", "cut": cut, "size": size}
    seconds = time.time() - t0
    if p.returncode < 0:
        return {"outcome": "signal", "signal": -p.returncode, "cut": cut, "size": size, "stderr": err[-2000:]}
    line = next((ln for ln in out.splitlines() if ln.startswith("ERROR ")), None)
    if line is not None:
        e = json.loads(line[6:])
        named = os.path.basename(target) in e["message"] or work in e["message"]
        return {"outcome": "error" if named else "unnamed-error", "error": e, "cut": cut, "size": size,
                "seconds": seconds}
    if p.returncode != 0 or "DONE" not in out:
        return {"outcome": "exception", "stderr": err[-2000:], "cut": cut, "size": size}
    return {"outcome": "read" if ready else "read-before", "cut": cut, "size": size, "seconds": seconds}


def run(formats, trials: int, seed: int, scale: float, keep: str | None = None) -> list[dict]:
    rows = []
    base = keep or tempfile.mkdtemp(prefix="cntkio-trunc-")
    try:
        for fmt in formats:
            data = make_data(fmt, os.path.join(base, fmt, "data"), scale)
            rng = random.Random(f"{seed}-{fmt}")
            results = [trial(fmt, data, os.path.join(base, fmt, "work"), rng, k) for k in range(trials)]
            count = {k: sum(r["outcome"] == k for r in results)
                     for k in ("error", "read", "read-before", "signal", "hang", "exception", "unnamed-error")}
            bad = [r for r in results if r["outcome"] in ("signal", "hang", "exception", "unnamed-error")]
            bad.sort(key=lambda r: r["outcome"] not in ("signal", "hang"))      # the target's first
            rows.append({"format": fmt, "trials": trials, **count, "failures": bad[:5],
                         "errors": sorted({r["error"]["type"] for r in results if "error" in r})})
            print(f"| {fmt} | {trials} | {count['signal']} | {count['hang']} | "
                  f"{count['exception'] + count['unnamed-error']} | {count['error']} | "
                  f"{count['read'] + count['read-before']} | {', '.join(rows[-1]['errors'])} |", flush=True)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--scale", type=float, default=1.0, help="data size (1.0: 5-10 MB a format)")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--at-open", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1], int(a.child[2]), a.at_open)
        return 0
    formats = a.formats.split(",")
    for f in formats:
        if f not in FORMATS:
            ap.error(f"unknown format {f!r} (known: {', '.join(FORMATS)})")
    print("| format | trials | signals | hangs | other exceptions | errors naming the file | read whole | error types |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    rows = run(formats, a.trials, a.seed, a.scale)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    failed = [r for r in rows if r["signal"] or r["hang"]]
    for r in failed:
        print(f"{r['format']}: {json.dumps(r['failures'][:2])[:3000]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
