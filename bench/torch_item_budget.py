#!/usr/bin/env python3
"""Where a PyTorch item's time goes, step by step, against raw reading (issue 18, part 3).

    python bench/torch_item_budget.py bench/data/seq.ctf --sizes 256,1024 --repeat 7

For one CTF file of ``bench/peers/gen_data.py`` (``seq``: two one-hot sparse streams, the default;
``--dataset`` names the stream layout of another one) and each minibatch size, the consumer
thread's CPU time per minibatch (``time.thread_time``: the reading threads' work and the
machine's other load are left out, so the figures hold still on a shared machine), best of
``--repeat``, for each step of the two loops of ``bench/torch_delivery.py``:

* the source's index, built once per sweep (both loops build a source), per minibatch;
* ``next_minibatch`` making the minibatch's ``MinibatchData`` objects (raw), and the tensor-ready
  hand-out the dataset uses (``MinibatchSource.next_tensor_ready``: a reference to the batch's
  tensor-ready arrays, no minibatch objects);
* making and freeing one item's tensors from its packed batch's plan, with the streams as CSR
  tensors and (for one-hot streams) as token ids;
* DataLoader's ``__next__`` per item over prepared items, with its default ``collate_fn``
  (``default_convert``) and with the pass-through the dataset installs;
* the bench loop's own work on an item (touch every tensor, keep the lengths).

The sums are what each path costs the consumer per minibatch; their difference is what the
torch path adds (docs/benchmarks.md, "PyTorch delivery"), less the dataset generator's own loop
(resuming it, the plan lookup), which is not measured apart: about 0.5-1 us.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, HERE)

from torch_delivery import IDS, STREAMS, Factory  # noqa: E402


def _best(fn, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def _refs(factory: Factory, size: int, ids: frozenset, prebuild):
    """Every minibatch of a sweep as (its batch's plan, index), read as tensor-ready minibatches."""
    from cntkio.integrations.torch import _plan
    from cntkio.tensor_ready import TensorLayout
    src = factory()
    layout = TensorLayout(ids, 0, False, prebuild)
    out = []
    while True:
        ready = src.next_tensor_ready(size, 1, 0, layout)
        if ready is None:
            break
        out.append((_plan(ready.batch, True, False), ready.index))
    src.close()  # the plans keep their arrays
    return out


def budget(factory: Factory, size: int, repeat: int) -> list[tuple[str, float, float]]:
    """``[(step, raw us, torch us)]`` per minibatch (nan: not a step of that path)."""
    from torch.utils.data import DataLoader, IterableDataset
    from cntkio.integrations import torch as ct
    nan = float("nan")
    tt = time.thread_time

    def index():
        t0 = tt()
        src = factory()
        t = tt() - t0
        src.close()
        return t

    def chain(light: bool):
        from cntkio.tensor_ready import TensorLayout

        def run():
            src = factory()
            layout = TensorLayout(prepare=ct._Prebuild(True, False))
            n = 0
            t0 = tt()
            if light:
                nxt = src.next_tensor_ready
                while nxt(size, 1, 0, layout) is not None:
                    n += 1
            else:
                nxt = src.next_minibatch
                while nxt(size, None, None, 1, 0):
                    n += 1
            t = tt() - t0
            src.close()
            return t / n
        return run

    def tensors(refs):
        def run():
            t0 = tt()
            for plan, j in refs:
                d = plan.get(j)
                del d
            return (tt() - t0) / len(refs)
        return run

    refs = _refs(factory, size, frozenset(), ct._Prebuild(True, False))
    n = len(refs)
    id_streams = frozenset(IDS.get(factory.name, ()))
    refs_ids = _refs(factory, size, id_streams, ct._Prebuild(True, False)) if id_streams else None
    items = [plan.get(j) for plan, j in refs[:2000]]
    first = next(iter(STREAMS[factory.name]))

    class Prepared(IterableDataset):
        def __iter__(self):
            yield from items

    def loader(collate):
        def run():
            kw = {} if collate is None else {"collate_fn": collate}
            t0 = tt()
            for _ in DataLoader(Prepared(), batch_size=None, **kw):
                pass
            return (tt() - t0) / len(items)
        return run

    def touch():
        kept = []
        t0 = tt()
        for item in items:
            for t in item.values():
                t.shape  # noqa: B018
            kept.append(item[first + "_lengths"])
        return (tt() - t0) / len(items)

    def touch_raw():
        src = factory()
        key = src.stream_infos()[0]
        mbs = []
        while len(mbs) < 2000:
            mb = src.next_minibatch(size)
            if not mb:
                break
            mbs.append(mb)
        src.close()
        t0 = tt()
        samples = 0
        for mb in mbs:
            samples += mb[key].num_samples
        return (tt() - t0) / len(mbs)

    ix = _best(index, repeat) / n
    rows = [("the source's index, built per sweep (both)", ix, ix),
            ("next_minibatch: MinibatchData objects (raw) / next_tensor_ready (torch)",
             _best(chain(False), repeat), _best(chain(True), repeat)),
            ("the item's tensors, made and freed (CSR for sparse streams, + lengths)", nan,
             _best(tensors(refs), repeat))]
    if refs_ids:
        rows.append((f"  (token ids for {', '.join(sorted(id_streams))} instead)", nan, _best(tensors(refs_ids), repeat)))
    rows += [("DataLoader __next__, pass-through collate (what the dataset installs)", nan,
              _best(loader(lambda x: x), repeat)),
             ("  (with default_convert, DataLoader's own default)", nan, _best(loader(None), repeat)),
             ("the bench loop's own work on an item", _best(touch_raw, repeat), _best(touch, repeat))]
    return [(name, raw * 1e6, torch * 1e6) for name, raw, torch in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="a CTF file of gen_data.py (default layout: seq)")
    ap.add_argument("--dataset", default=None, help="its stream layout: dense, sparse, seq, float "
                    "(default: the file's base name)")
    ap.add_argument("--sizes", default="256,1024", help="minibatch sizes in samples")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    name = args.dataset or os.path.basename(args.file).split(".")[0]
    factory = Factory(args.file, name, False)
    for size in (int(s) for s in args.sizes.split(",")):
        rows = budget(factory, size, args.repeat)
        print(f"\n{name}, {size}-sample minibatches: consumer thread CPU, us per minibatch (best of {args.repeat})\n")
        print("| step | raw | torch |")
        print("| --- | --- | --- |")
        for step, raw, torch in rows:
            cells = ["" if v != v else f"{v:.2f}" for v in (raw, torch)]
            print(f"| {step} | {cells[0]} | {cells[1]} |")
        counted = [r for r in rows if not r[0].startswith("  (")]
        raw_sum = sum(r[1] for r in counted if r[1] == r[1])
        torch_sum = sum(r[2] for r in counted if r[2] == r[2])
        print(f"| **sum** | **{raw_sum:.2f}** | **{torch_sum:.2f}** |")
        print(f"\ntorch adds {torch_sum - raw_sum:.2f} us per minibatch", flush=True)


if __name__ == "__main__":
    main()
