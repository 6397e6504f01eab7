#!/usr/bin/env python3
"""Deterministic CTF benchmark data, plus the same content in peer formats.

    python gen_data.py OUTDIR [--small] [--scale F] [--seed N] [--only dense,sparse,seq,float]

Datasets (CTF file size targets; default 200/100/100/100 MB, --small 5 MB each):
  dense   |features <784 ints 0..255> |labels <10 one-hot>  -> dense.csv, dense.txt (space-separated)
  sparse  |src i:1 ... |tgt i:1 ...  (dim 50000, ~30 pairs each) -> sparse.svm
          svmlight line: '<first tgt index> <src i:1 ...> <tgt (i+50000):1 ...>', 0-based indices
  seq     '<seqid> |word i:1 |tag j:1', ~20 lines per sequence    -> seq.csv ('seqid,word,tag')
  float   |x <150 floats, %.6g> |y <1 float>                         -> float.csv (151 columns)
No header lines anywhere. Writes OUTDIR/manifest.json (line counts, sizes) for peers.py.
Stdlib + numpy only.
"""
import argparse
import json
import os
import time

import numpy as np

MB = 1_000_000
TARGET_MB = {'dense': 200, 'sparse': 100, 'seq': 100, 'float': 100}
DIM, VOCAB, NTAGS = 50000, 40000, 45
INT_STR = np.array([str(i) for i in range(256)], dtype=object)
PAIR = np.array([f'{i}:1' for i in range(2 * DIM)], dtype=object)


PERM = {d: np.random.default_rng(d).permutation(d) for d in (DIM, VOCAB)}


def zipfish(rng, n, dim):
    """Zipf-like ids in [0, dim): log-uniform ranks, mapped to ids by a fixed permutation
    (as a hashed or alphabetical vocabulary would), so ids have realistic digit counts."""
    return PERM[dim][(dim ** rng.random(n)).astype(np.int64) - 1]


# Each generator returns a list of records; a record is a tuple of strings, one per format
# (CTF first, same order as EXTS), each holding one or more complete lines.
def dense(rng, k):
    # MNIST-like: ink only in the central 20x20 box, ~19% non-zero pixels, half of them saturated.
    on = rng.random((k, 20, 20)) < 0.37
    val = np.where(rng.random((k, 20, 20)) < 0.5, rng.integers(253, 256, (k, 20, 20)),
                   rng.integers(1, 253, (k, 20, 20)))
    img = np.zeros((k, 28, 28), np.int64)
    img[:, 4:24, 4:24] = np.where(on, val, 0)
    pix = INT_STR[img.reshape(k, 784)].tolist()
    hot = INT_STR[np.eye(10, dtype=np.int64)[rng.integers(0, 10, k)]].tolist()
    return [(f"|features {' '.join(p)} |labels {' '.join(h)}\n",
             ','.join(p + h) + '\n', ' '.join(p + h) + '\n') for p, h in zip(pix, hot)]


def sparse(rng, k):
    out = []
    for _ in range(k):
        src = np.unique(zipfish(rng, max(1, rng.poisson(33)), DIM))
        tgt = np.unique(zipfish(rng, max(1, rng.poisson(33)), DIM))
        s, t = ' '.join(PAIR[src].tolist()), ' '.join(PAIR[tgt].tolist())
        out.append((f'|src {s} |tgt {t}\n', f"{tgt[0]} {s} {' '.join(PAIR[tgt + DIM].tolist())}\n"))
    return out


def seq(rng, k, first_id=0):
    out = []
    for sid in range(first_id, first_id + k):
        n = int(rng.integers(10, 31))  # 10..30, mean 20
        words = zipfish(rng, n, VOCAB)
        tags = rng.integers(0, NTAGS, n)
        pairs = list(zip(words.tolist(), tags.tolist()))
        out.append((''.join(f'{sid} |word {w}:1 |tag {t}:1\n' for w, t in pairs),
                    ''.join(f'{sid},{w},{t}\n' for w, t in pairs)))
    return out


def floats(rng, k):
    x = rng.standard_normal((k, 150))
    y = x @ np.linspace(-1, 1, 150) + 0.1 * rng.standard_normal(k)
    out = []
    for row, yv in zip(x.tolist(), y.tolist()):
        t, ys = ['%.6g' % v for v in row], '%.6g' % yv
        out.append((f"|x {' '.join(t)} |y {ys}\n", ','.join(t) + ',' + ys + '\n'))
    return out


GENS = {'dense': (dense, ['ctf', 'csv', 'txt'], 500), 'sparse': (sparse, ['ctf', 'svm'], 2000),
        'seq': (seq, ['ctf', 'csv'], 500), 'float': (floats, ['ctf', 'csv'], 1000)}


def build(name, outdir, target, seed):
    gen, exts, chunk = GENS[name]
    rng = np.random.default_rng([seed, list(GENS).index(name)])
    paths = {e: os.path.join(outdir, f'{name}.{e}') for e in exts}
    files = {e: open(p, 'w', newline='\n') for e, p in paths.items()}
    written = lines = records = 0
    while written < target:
        buf = [[] for _ in exts]
        kw = {'first_id': records} if name == 'seq' else {}
        for rec in gen(rng, chunk, **kw):
            if written >= target:
                break
            for b, s in zip(buf, rec):
                b.append(s)
            written += len(rec[0])  # ASCII: chars == bytes
            lines += rec[0].count('\n')
            records += 1
        for b, e in zip(buf, exts):
            files[e].write(''.join(b))
    for f in files.values():
        f.close()
    return {'lines': lines, 'sequences': records if name == 'seq' else lines,
            'files': {e: {'path': os.path.basename(p), 'bytes': os.path.getsize(p)}
                      for e, p in paths.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir')
    ap.add_argument('--small', action='store_true', help='5 MB CTF files')
    ap.add_argument('--scale', type=float, default=1.0, help='multiply the CTF size targets')
    ap.add_argument('--seed', type=int, default=1234)
    ap.add_argument('--only', default=','.join(GENS), help='comma-separated datasets')
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    mpath = os.path.join(a.outdir, 'manifest.json')
    manifest = json.load(open(mpath)) if os.path.exists(mpath) else {}
    for name in a.only.split(','):
        target = int((5 if a.small else TARGET_MB[name]) * MB * a.scale)
        t0 = time.perf_counter()
        manifest[name] = dict(build(name, a.outdir, target, a.seed), seed=a.seed, target_bytes=target)
        m = manifest[name]
        print(f"{name}: {m['lines']:,} lines, {m['sequences']:,} sequences "
              f"({time.perf_counter() - t0:.1f} s)")
        for f in m['files'].values():
            print(f"  {f['path']:<12} {f['bytes'] / MB:9.1f} MB")
    with open(mpath, 'w') as f:
        json.dump(manifest, f, indent=1)


if __name__ == '__main__':
    main()
