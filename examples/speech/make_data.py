"""Make the speech-like example data: HTK feature archives, SCP lists, MLF labels, a state list.

    python examples/speech/make_data.py          # writes into examples/speech/data (committed)

Eight "phones" of three states each (24 states, s0..s23). An utterance is a random phone
sequence, each phone 6-15 frames split over its three states; a frame is its state's 13-dim mean
plus noise, smoothed over time as real features are. Train: 60 utterances in one archive; test:
20 in another. The SCP lists use archive entries (logical=physical[first,last]); the MLF times are
in 100 ns.
"""
from __future__ import annotations

import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DIM, PHONES, STATES_PER_PHONE = 13, 8, 3


def utterance(rng, means):
    frames, segs, t = [], [], 0
    for _ in range(int(rng.integers(4, 9))):
        p = int(rng.integers(PHONES))
        n = int(rng.integers(6, 16))
        cuts = np.sort(rng.choice(np.arange(1, n), 2, replace=False))
        for k, (a, b) in enumerate(zip([0, *cuts], [*cuts, n])):
            s = p * STATES_PER_PHONE + k
            frames.append(means[s] + 0.6 * rng.standard_normal((b - a, DIM)))
            segs.append((t + a, t + b, f"s{s}"))
        t += n
    x = np.concatenate(frames).astype(np.float32)
    x[1:] = 0.7 * x[1:] + 0.3 * x[:-1]            # temporal smoothing
    return x, segs


def write_set(name, count, rng, means, folder):
    feats, scp, mlf, pos = [], [], ["#!MLF!#"], 0
    for u in range(count):
        x, segs = utterance(rng, means)
        feats.append(x)
        scp.append(f"{name}/utt{u:03d}.mfc={name}.htk[{pos},{pos + len(x) - 1}]")
        pos += len(x)
        mlf.append(f'"*/{name}/utt{u:03d}.lab"')
        mlf.extend(f"{a * 100000} {b * 100000} {s}" for a, b, s in segs)
        mlf.append(".")
    frames = np.concatenate(feats)
    with open(os.path.join(folder, f"{name}.htk"), "wb") as f:
        f.write(struct.pack(">iihh", len(frames), 100000, DIM * 4, 9) + frames.astype(">f4").tobytes())
    for ext, lines in (("scp", scp), ("mlf", mlf)):
        with open(os.path.join(folder, f"{name}.{ext}"), "w") as f:
            f.write("\n".join(lines) + "\n")


def main(folder: str = os.path.join(HERE, "data")) -> None:
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(2024)
    means = 1.5 * rng.standard_normal((PHONES * STATES_PER_PHONE, DIM))
    write_set("train", 60, rng, means, folder)
    write_set("test", 20, rng, means, folder)
    with open(os.path.join(folder, "states.list"), "w") as f:
        f.write("\n".join(f"s{i}" for i in range(PHONES * STATES_PER_PHONE)) + "\n")


if __name__ == "__main__":
    main()
