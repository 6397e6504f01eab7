#!/usr/bin/env python3
"""Where cntkio's time goes between the CBF pages and the tensors, stage by stage, beside the DIY
np.memmap loader: CPU seconds of one shuffled sweep, the data of bench/ceiling.py.

    python bench/ceiling.py --quick --only dense,tokens --tools "cntkio CBF;DIY np.memmap" --workers 0
    python bench/ceiling_profile.py bench/data/ceiling [--repeat 3]

Each line is a pipeline run alone on the main thread (``prefetch`` off: the chunk loads and the
packing run on the caller's thread, so that process CPU time is the stage's; on a shared machine
CPU seconds hold still where wall seconds do not); the stages are the differences of
consecutive lines:

* ``chunk loads``: ``get_chunk`` of every chunk (CBF: the chunk walked, a view of the map);
* ``+ randomize, pack``: a sweep of ``next_minibatch`` (CNTK's block randomizer, the walk, the
  packer's gathers) making the minibatch objects, NumPy outputs;
* ``tensor-ready``: the same sweep through ``next_tensor_ready`` (no minibatch objects; token ids
  gathered straight into padded rows);
* ``+ tensors``: the dataset's items (the per-batch plan, ``torch.from_numpy`` views per item);
* ``+ DataLoader``: the same in ``DataLoader(batch_size=None)``;
* DIY: the gathers alone, then in its DataLoader.

Best of ``--repeat``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import torch  # noqa: E402

from cntkio import CBFDeserializer  # noqa: E402
from cntkio.deserializers.composite import CompositeDeserializer  # noqa: E402
from cntkio.engine.global_timeline import GlobalTimeline  # noqa: E402
from cntkio.engine.reader import Reader  # noqa: E402
from cntkio.integrations.torch import MinibatchIterableDataset  # noqa: E402
from cntkio.registry import build_deserializer  # noqa: E402
from cntkio.tensor_ready import TensorLayout  # noqa: E402
from ceiling_loaders import Memmap, _MemmapDataset  # noqa: E402


class _Source:
    """A MinibatchSource-like reader over a CBF file with the packing on the caller's thread."""

    def __init__(self, path: str, seed: int = 0) -> None:
        d = CompositeDeserializer([build_deserializer(CBFDeserializer(path))])
        infos = d.stream_infos()
        policy = GlobalTimeline(d, infos, randomize=True, window=128, sample_based=False, seed=seed,
                                epoch_end=None, frame_mode=False, truncated=False, max_errors=0,
                                loader_threads=1, prefetch=False)
        self.reader = Reader(policy, infos)
        self.reader.set_epoch_end(self.reader.sweep_size)

    def close(self):
        self.reader.close()


def _cpu(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def profile(root: str, workload: str, repeat: int) -> list[tuple[str, float]]:
    folder = os.path.join(root, next(d for d in os.listdir(root) if d.startswith(workload + "-")))
    cbf = os.path.join(folder, "cntkiocbf", "data.cbf")
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    size = int(round(256 * meta["mean_length"]))
    ids = frozenset({"tokens"}) if workload == "tokens" else frozenset()

    def loads():
        d = build_deserializer(CBFDeserializer(cbf))
        for c in d.chunk_infos():
            d.get_chunk(c.id)
        d.close()

    def sweep(tensor_ready: bool):
        def run():
            src = _Source(cbf)
            layout = TensorLayout(ids)
            while (src.reader.next_tensor_ready(size, 1, 0, layout) if tensor_ready
                   else src.reader.next(size, 1, 0)) is not None:
                pass
            src.close()
        return run

    class _Factory:
        def __call__(self):
            from cntkio import MinibatchSource
            return MinibatchSource(CBFDeserializer(cbf), randomization_seed=0)

    def items(loader: bool):
        def run():
            ds = MinibatchIterableDataset(_Factory(), size, ids=tuple(ids))
            for _ in (torch.utils.data.DataLoader(ds, batch_size=None) if loader else ds):
                pass
            ds._make_source().close()
        return run

    memmap = os.path.join(folder, "memmap")

    def diy(loader: bool):
        def run():
            if loader:
                for _ in Memmap().loader(memmap, workload, True, 0, 0, 256):
                    pass
                return
            ds = _MemmapDataset(memmap, workload)
            perm = torch.randperm(len(ds), generator=torch.Generator().manual_seed(0)).numpy()
            for a in range(0, len(perm), 256):
                ds[perm[a:a + 256]]
        return run

    steps = [("chunk loads", loads), ("+ randomize, pack (minibatch objects)", sweep(False)),
             ("tensor-ready (no objects)", sweep(True)), ("+ tensors (dataset items, in-process)", items(False)),
             ("+ DataLoader", items(True)), ("DIY gathers", diy(False)), ("DIY + DataLoader", diy(True))]
    return [(name, min(_cpu(fn) for _ in range(repeat))) for name, fn in steps]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?", default=os.path.join(HERE, "data", "ceiling"))
    ap.add_argument("--only", default="dense,tokens")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}")
    for workload in args.only.split(","):
        print(f"\n| {workload}: stage | CPU s (best of {args.repeat}) |\n| --- | --- |")
        for name, s in profile(args.data, workload, args.repeat):
            print(f"| {name} | {s:.3f} |", flush=True)


if __name__ == "__main__":
    main()
