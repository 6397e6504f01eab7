"""Convert scikit-learn's 8x8 handwritten digits to CNTK text format (CTF), once.

The committed files ``digits_train.ctf`` and ``digits_test.ctf`` were made by this script; cntkio
does not depend on scikit-learn, run ``pip install scikit-learn`` to remake them.

Each line is one sample: ``|labels`` a one-hot vector of 10, ``|features`` the 64 pixels scaled
from 0..16 to 0..1 (multiples of 1/16, exact in binary floating point). 1797 digits, split
stratified 80/20 with a fixed seed: 1437 for training, 360 for testing.
"""
from __future__ import annotations

import argparse
import os

import numpy as np


def to_ctf(x: np.ndarray, y: np.ndarray) -> str:
    lines = []
    for pixels, label in zip(x, y):
        onehot = ["0"] * 10
        onehot[int(label)] = "1"
        feats = " ".join(format(v / 16.0, "g") for v in pixels)
        lines.append(f"|labels {' '.join(onehot)} |features {feats}\n")
    return "".join(lines)


def main() -> None:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    digits = load_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(digits.data, digits.target, test_size=0.2,
                                              random_state=0, stratify=digits.target)
    for name, x, y in (("digits_train.ctf", x_tr, y_tr), ("digits_test.ctf", x_te, y_te)):
        with open(os.path.join(args.out, name), "w", newline="\n") as f:
            f.write(to_ctf(x, y))
        print(f"{name}: {len(y)} samples")


if __name__ == "__main__":
    main()
