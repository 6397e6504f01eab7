"""The digits of ``digits.cntk``, read through cntkio's Python API and trained by a plain PyTorch loop.

The same data and the same reader semantics as the config (CTF files, block randomization, one
sweep per epoch), but the model and the optimizer are ordinary PyTorch: this is how a CNTK 2.x
script's data pipeline moves to PyTorch by changing its ``cntk.io`` import to ``cntkio``.

    python examples/digits/train_torch.py [--epochs 6] [--data-dir examples/digits]

Prints the training loss per epoch and the test error at the end (about 3-4%).
"""
from __future__ import annotations

import argparse
import os

import torch
from torch import nn

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs


def digits_source(path: str, randomize: bool, max_sweeps):
    """A cntk.io-style MinibatchSource over a digits CTF file."""
    streams = StreamDefs(features=StreamDef(field="features", shape=64, is_sparse=False),
                         labels=StreamDef(field="labels", shape=10, is_sparse=False))
    return MinibatchSource(CTFDeserializer(path, streams), randomize=randomize, max_sweeps=max_sweeps)


def batch(source, mb):
    """A minibatch's features and class indices as tensors (one sample per sequence here)."""
    x = mb[source.streams.features].to_torch().reshape(-1, 64)
    y = mb[source.streams.labels].to_torch().reshape(-1, 10).argmax(dim=1)
    return x, y


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=here)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--minibatch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)          # a small network: threads would only cost time

    train = digits_source(os.path.join(args.data_dir, "digits_train.ctf"), randomize=True, max_sweeps=args.epochs)
    test = digits_source(os.path.join(args.data_dir, "digits_test.ctf"), randomize=False, max_sweeps=1)

    # feature statistics of one sweep (what applyMeanVarNorm computes in the config)
    stats = digits_source(os.path.join(args.data_dir, "digits_train.ctf"), randomize=False, max_sweeps=1)
    xs = torch.cat([batch(stats, mb)[0] for mb in iter(lambda: stats.next_minibatch(4096), {})])
    mean, std = xs.mean(0), xs.std(0, unbiased=False).clamp_min(1e-5)

    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(1, args.epochs + 1):
        total, count = 0.0, 0
        while True:
            mb = train.next_minibatch(args.minibatch_size)
            if not mb:
                break
            x, y = batch(train, mb)
            loss = loss_fn(model((x - mean) / std), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
            count += len(y)
            if mb[train.streams.features].end_of_sweep:
                break                                  # one sweep = one epoch
        print(f"epoch {epoch}: training loss {total / max(count, 1):.4f} over {count} samples")

    errors, count = 0, 0
    with torch.no_grad():
        for mb in iter(lambda: test.next_minibatch(360), {}):
            x, y = batch(test, mb)
            errors += int((model((x - mean) / std).argmax(dim=1) != y).sum())
            count += len(y)
    print(f"test error: {100.0 * errors / count:.2f}% of {count} samples")


if __name__ == "__main__":
    main()
