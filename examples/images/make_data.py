"""Make the shapes image set of this example: 16x16 colour PNGs of 4 classes (horizontal bars,
vertical bars, a centred square, a diagonal) in random colours, stored in one zip
archive (``shapes.zip``) and listed by two map files in CNTK's zip syntax
(``shapes.zip@/train/00000.png<TAB>label``). Run from the repository root:

    python examples/images/make_data.py

The committed files were made by this script (fixed seed); rerunning it gives the same images.
"""
from __future__ import annotations

import io
import os
import zipfile

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N_TRAIN, N_TEST, SIDE = 240, 80, 16


def shape(label: int, rng) -> np.ndarray:
    fg, bg = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
    while np.abs(fg.astype(int) - bg).sum() < 150:
        fg = rng.integers(0, 256, 3)
    mask = np.zeros((SIDE, SIDE), bool)
    o = int(rng.integers(0, 4))
    if label == 0:
        mask[o::4] = True
        mask[o + 1::4] = True
    elif label == 1:
        mask[:, o::4] = True
        mask[:, o + 1::4] = True
    elif label == 2:
        a = int(rng.integers(3, 6))
        mask[a:SIDE - a, a:SIDE - a] = True
    else:
        yy, xx = np.mgrid[0:SIDE, 0:SIDE]
        mask = np.abs(yy - xx + o - 2) <= 1
    return np.where(mask[:, :, None], fg, bg).astype(np.uint8)   # flat colours: small PNGs


def main() -> None:
    rng = np.random.default_rng(13)
    maps = {"train": [], "test": []}
    tmp = os.path.join(HERE, "shapes.zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        for part, n in (("train", N_TRAIN), ("test", N_TEST)):
            for i in range(n):
                label = i % 4
                ok, png = cv2.imencode(".png", shape(label, rng))
                name = f"{part}/{i:05d}.png"
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                z.writestr(info, io.BytesIO(png.tobytes()).getvalue())
                maps[part].append(f"shapes.zip@/{name}\t{label}\n")
    os.replace(tmp, os.path.join(HERE, "shapes.zip"))
    for part, lines in maps.items():
        with open(os.path.join(HERE, f"{part}_map.txt"), "w") as f:
            f.writelines(lines)
    print(f"{N_TRAIN} + {N_TEST} images in {os.path.join(HERE, 'shapes.zip')}")


if __name__ == "__main__":
    main()
