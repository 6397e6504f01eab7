#!/usr/bin/env python3
"""Image reading throughput: cntkio's ImageDeserializer against torchvision, a plain OpenCV
``Dataset`` and CNTK 2.7's own image reader, on the same images and cores.

    python bench/image_throughput.py --data bench/data/images --n 2000 [--repeat 2] [--json out.json]
    python bench/image_throughput.py --small          # smoke test: 60 tiny images, 1 repeat

The data (generated once into ``--data``, git-ignored): ``--n`` JPEGs of about 256 px (sides
224..288, smooth random content, quality 90) in 10 class folders, an ImageDeserializer map file, a
224x224 mean file, and BMP copies of the first ``--bmp`` images for the CNTK column (the cntk27 rig
decodes BMP/PPM only).

Runs (each in a subprocess of its own, one sweep, 64 images per minibatch; images/s = images over
the wall time from building the source/loader to the last minibatch, imports excluded (and the
imports' garbage collected before the clock in every run: torch leaves enough objects that the first
full collection takes ~0.1 s, which otherwise falls into whichever run first allocates enough
Python objects), best of ``--repeat``; CPU ms per image = the process's and its DataLoader workers' CPU time over the images,
imports excluded (a figure that a loaded machine changes much less than images/s); peak RSS of the
subprocess):

* ``cntkio``: ImageDeserializer, crop RandomSide (side ratio 0.5..1) + Scale 224 (linear) + Mean,
  randomized, ``to_torch()`` per minibatch (float32 [N, C, H, W] view);
* ``torchvision``: ``ImageFolder`` + ``RandomResizedCrop(224)`` + ``ToTensor`` + ``Normalize``,
  ``DataLoader(batch_size=64, num_workers=2, shuffle=True)``. torchvision is not a dependency of
  cntkio; give its folder with ``--peers`` (``pip install --no-deps --target DIR torchvision==0.28.0
  pillow``). Its CUDA build's C++ operators do not load beside CPU torch: the benchmark stubs the
  module that registers their meta kernels (``torchvision._meta_registrations``) before the import;
  ImageFolder and the v1 transforms are Pillow and torch code and need none of them;
* ``opencv+DataLoader``: a ``Dataset`` doing ``cv2.imread`` + the same random side crop + resize +
  mean + CHW in NumPy, ``DataLoader(batch_size=64, num_workers=2, shuffle=True)``;
* ``cntkio bmp`` and ``cntk27 bmp``: the same chain as ``cntkio`` on the BMP copies, through cntkio
  and through CNTK 2.7's image reader (the rig, ``.cache/cntk27``; skipped when absent).

``--bmp-ab R`` runs only the BMP pair, alternating ``cntkio bmp`` and ``cntk27 bmp`` for ``R`` rounds (each
run a cold process, as above), and reports every round's ratio and their median: on a machine shared
with other jobs the ratio of neighbouring runs is steadier than either figure.

``--rss-gb G`` adds ``cntkio large``: a sweep over the JPEG set repeated in the map until the
listed files total G GB, reporting peak RSS (bounded by the prefetch depth, not the data set).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

MB = 64
SIZE = 224


# --- data ---------------------------------------------------------------------------------------

def generate(data: str, n: int, n_bmp: int) -> None:
    import cv2
    import numpy as np
    marker = os.path.join(data, f"done-{n}-{n_bmp}")
    if os.path.exists(marker):
        return
    rng = np.random.default_rng(0)
    os.makedirs(os.path.join(data, "bmp"), exist_ok=True)
    lines, bmp_lines = [], []
    for i in range(n):
        c = i % 10
        folder = os.path.join(data, "jpg", f"class{c}")
        os.makedirs(folder, exist_ok=True)
        h, w = (int(v) for v in rng.integers(224, 289, 2))
        small = rng.integers(0, 256, (h // 16 + 1, w // 16 + 1, 3), dtype=np.uint8)
        img = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
        img = cv2.add(img, rng.integers(0, 24, img.shape, dtype=np.uint8))
        path = os.path.join(folder, f"{i:06d}.jpg")
        cv2.imwrite(path, img, [cv2.IMWRITE_JPEG_QUALITY, 90])
        lines.append(f"{path}\t{c}\n")
        if i < n_bmp:
            bp = os.path.join(data, "bmp", f"{i:06d}.bmp")
            cv2.imwrite(bp, img)
            bmp_lines.append(f"{bp}\t{c}\n")
    with open(os.path.join(data, "map.txt"), "w") as f:
        f.writelines(lines)
    with open(os.path.join(data, "map_bmp.txt"), "w") as f:
        f.writelines(bmp_lines)
    mean = rng.uniform(90, 160, (SIZE, SIZE, 3)).astype(np.float32)
    fs = cv2.FileStorage(os.path.join(data, "mean.xml"), cv2.FILE_STORAGE_WRITE)
    fs.write("Channel", 3)
    fs.write("Row", SIZE)
    fs.write("Col", SIZE)
    fs.write("MeanImg", mean.reshape(1, -1))
    fs.release()
    np.save(os.path.join(data, "mean.npy"), mean)
    open(marker, "w").close()


# --- workers (each runs in its own process) ------------------------------------------------------

def run_cntkio(data: str, map_name: str, repeat_map: int = 1) -> int:
    import cv2  # noqa: F401 (imported before the clock starts, as the peers import theirs)
    import torch  # noqa: F401 (to_torch imports it on first use)

    from cntkio import MinibatchSource, StreamDef, StreamDefs
    from cntkio import transforms as T
    from cntkio.deserializers.image import ImageDeserializer
    map_file = os.path.join(data, map_name)
    if repeat_map > 1:
        big = os.path.join(data, f"map_x{repeat_map}.txt")
        with open(map_file) as f:
            text = f.read()
        with open(big, "w") as f:
            f.write(text * repeat_map)
        map_file = big
    chain = [T.crop(crop_type="randomside", side_ratio=(0.5, 1.0)), T.scale(SIZE, SIZE, 3, "linear"),
             T.mean(os.path.join(data, "mean.xml"))]
    t0 = time.perf_counter()
    d = ImageDeserializer(map_file, StreamDefs(features=StreamDef(field="image", transforms=chain),
                                               labels=StreamDef(field="label", shape=10)))
    src = MinibatchSource(d, max_sweeps=1)
    n = 0
    while True:
        mb = src.next_minibatch(MB)
        if not mb:
            break
        x = mb[src.streams.features].to_torch()[:, 0]      # [N, C, H, W]
        n += x.shape[0]
    return n, time.perf_counter() - t0


def _import_torchvision(peers: str):
    import types
    if peers not in sys.path:
        sys.path.insert(0, peers)
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torchvision
    return torchvision


def run_torchvision(data: str, peers: str) -> int:
    import torch
    _import_torchvision(peers)
    from torchvision import datasets, transforms
    t0 = time.perf_counter()
    tf = transforms.Compose([transforms.RandomResizedCrop(SIZE), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(os.path.join(data, "jpg"), tf)
    n = 0
    for x, _ in torch.utils.data.DataLoader(ds, batch_size=MB, num_workers=2, shuffle=True):
        n += x.shape[0]
    return n, time.perf_counter() - t0


class OpenCVDataset:
    def __init__(self, data: str) -> None:
        import numpy as np
        with open(os.path.join(data, "map.txt")) as f:
            self.items = [line.rstrip("\n").split("\t") for line in f]
        self.mean = np.load(os.path.join(data, "mean.npy"))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        import cv2
        import numpy as np
        import torch
        path, label = self.items[i]
        img = cv2.imread(path, cv2.IMREAD_COLOR)
        h, w = img.shape[:2]
        rng = np.random.default_rng()
        side = int(round(rng.uniform(0.5, 1.0) * min(h, w)))
        y0, x0 = rng.integers(0, h - side + 1), rng.integers(0, w - side + 1)
        img = cv2.resize(img[y0:y0 + side, x0:x0 + side], (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
        x = (img.astype(np.float32) - self.mean).transpose(2, 0, 1)
        return torch.from_numpy(np.ascontiguousarray(x)), int(label)


def run_opencv(data: str) -> int:
    import torch
    t0 = time.perf_counter()
    n = 0
    for x, _ in torch.utils.data.DataLoader(OpenCVDataset(data), batch_size=MB, num_workers=2, shuffle=True):
        n += x.shape[0]
    return n, time.perf_counter() - t0


def run_cntk27(data: str) -> int:
    sys.path.insert(0, os.path.join(ROOT, ".cache", "cntk27", "shim"))
    import cntk27
    t0 = time.perf_counter()
    t = [cntk27.crop("randomside", side_ratio=(0.5, 1.0)), cntk27.scale(SIZE, SIZE, 3, "linear"),
         cntk27.mean(os.path.join(data, "mean.xml"))]
    src = cntk27.MinibatchSource([cntk27.image_deserializer(os.path.join(data, "map_bmp.txt"), 10, t)],
                                 randomize=True, max_sweeps=1)
    n = 0
    while True:
        mb = src.next_minibatch(MB)
        if not mb:
            break
        n += mb["features"]["nseq"]
    return n, time.perf_counter() - t0


def worker(args) -> None:
    def cpu() -> float:
        a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

    import cv2  # noqa: F401 (the imports are not measured)
    import torch  # noqa: F401
    if args.worker.startswith("cntkio"):
        import cntkio.deserializers.image  # noqa: F401
        import cntkio.transforms.ops  # noqa: F401
    elif args.worker == "torchvision":
        _import_torchvision(args.peers)
    gc.collect()    # the imports' garbage, before the clock (module docstring)
    c0 = cpu()
    if args.worker == "cntkio":
        n, dt = run_cntkio(args.data, "map.txt")
    elif args.worker == "cntkio-bmp":
        n, dt = run_cntkio(args.data, "map_bmp.txt")
    elif args.worker == "cntkio-large":
        n, dt = run_cntkio(args.data, "map.txt", args.repeat_map)
    elif args.worker == "torchvision":
        n, dt = run_torchvision(args.data, args.peers)
    elif args.worker == "opencv":
        n, dt = run_opencv(args.data)
    else:
        n, dt = run_cntk27(args.data)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"images": n, "seconds": dt, "rss_mb": rss, "cpu_ms_per_image": (cpu() - c0) * 1e3 / n}))


# --- driver --------------------------------------------------------------------------------------

def measure(name: str, args, extra=()) -> dict | None:
    best = None
    for _ in range(args.repeat):
        cmd = [sys.executable, __file__, "--worker", name, "--data", args.data, "--peers", args.peers or "",
               *extra]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"  {name}: failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
            return None
        r = json.loads(p.stdout.strip().splitlines()[-1])
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    best["images_per_s"] = best["images"] / best["seconds"]
    print(f"  {name:14s} {best['images']:7d} images  {best['images_per_s']:8.0f} images/s  "
          f"{best['cpu_ms_per_image']:6.2f} ms CPU/image  peak RSS {best['rss_mb']:7.0f} MB")
    return best


def interleaved_bmp(args) -> dict:
    """``cntkio bmp`` and ``cntk27 bmp`` alternately, one cold run each per round."""
    import statistics
    rounds = []
    for i in range(args.bmp_ab):
        pair = {}
        for name in ("cntkio-bmp", "cntk27"):
            cmd = [sys.executable, __file__, "--worker", name, "--data", args.data, "--peers", ""]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(f"{name} failed: {p.stderr.strip()[-2000:]}")
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["images_per_s"] = r["images"] / r["seconds"]
            pair[name] = r
        pair["ratio"] = pair["cntkio-bmp"]["images_per_s"] / pair["cntk27"]["images_per_s"]
        rounds.append(pair)
        print(f"  round {i + 1}: cntkio bmp {pair['cntkio-bmp']['images_per_s']:6.0f} images/s "
              f"({pair['cntkio-bmp']['cpu_ms_per_image']:.2f} ms CPU/image), cntk27 bmp "
              f"{pair['cntk27']['images_per_s']:6.0f} images/s ({pair['cntk27']['cpu_ms_per_image']:.2f} ms CPU/image), "
              f"ratio {pair['ratio']:.2f}", flush=True)
    ratios = [r["ratio"] for r in rounds]
    out = {"rounds": rounds, "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
           "max_ratio": max(ratios),
           "median_cpu_ms": {n: statistics.median(r[n]["cpu_ms_per_image"] for r in rounds)
                             for n in ("cntkio-bmp", "cntk27")}}
    print(f"  cntkio bmp / cntk27 bmp, {len(ratios)} interleaved rounds: median {out['median_ratio']:.2f}x "
          f"(min {out['min_ratio']:.2f}, max {out['max_ratio']:.2f}); median CPU ms/image "
          f"{out['median_cpu_ms']['cntkio-bmp']:.2f} / {out['median_cpu_ms']['cntk27']:.2f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(HERE, "data", "images"))
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--bmp", type=int, default=1000, help="BMP copies for the CNTK 2.7 column")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--peers", default=os.path.join(ROOT, ".cache", "bench-peers"),
                    help="folder with torchvision + pillow (pip install --no-deps --target)")
    ap.add_argument("--rss-gb", type=float, default=0.0)
    ap.add_argument("--json")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--bmp-ab", type=int, default=0, metavar="R",
                    help="only the BMP pair: cntkio and CNTK 2.7 alternately for R rounds, ratio per round")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--repeat-map", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    if args.small:
        args.n, args.bmp, args.repeat = 60, 20, 1
        args.data = os.path.join(args.data, "small")
    generate(args.data, args.n, args.bmp)
    print(f"{args.n} JPEGs in {args.data}, {os.cpu_count()} CPUs")
    if args.bmp_ab > 0:
        if not os.path.isdir(os.path.join(ROOT, ".cache", "cntk27", "shim")):
            raise SystemExit("--bmp-ab needs the CNTK 2.7 rig in .cache/cntk27")
        res = interleaved_bmp(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    results = {"cntkio": measure("cntkio", args)}
    if args.peers and os.path.isdir(os.path.join(args.peers, "torchvision")):
        results["torchvision"] = measure("torchvision", args)
    else:
        print("  torchvision: not installed in --peers, skipped")
    results["opencv+DataLoader"] = measure("opencv", args)
    results["cntkio bmp"] = measure("cntkio-bmp", args)
    if os.path.isdir(os.path.join(ROOT, ".cache", "cntk27", "shim")):
        results["cntk27 bmp"] = measure("cntk27", args)
    if args.rss_gb > 0:
        size = sum(os.path.getsize(line.split("\t")[0]) for line in open(os.path.join(args.data, "map.txt")))
        times = max(1, int(args.rss_gb * 1e9 / size + 0.999))
        print(f"  large: the map repeated {times}x = {times * size / 1e9:.2f} GB of JPEG listed")
        results["cntkio large"] = measure("cntkio-large", args, ["--repeat-map", str(times)])
    for peer in ("torchvision", "opencv+DataLoader"):
        if results.get(peer) and results.get("cntkio"):
            print(f"  cntkio / {peer}: {results['cntkio']['images_per_s'] / results[peer]['images_per_s']:.2f}x")
    if results.get("cntk27 bmp") and results.get("cntkio bmp"):
        print(f"  cntkio bmp / cntk27 bmp: "
              f"{results['cntkio bmp']['images_per_s'] / results['cntk27 bmp']['images_per_s']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
