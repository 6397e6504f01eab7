"""Make the image golden fixtures with CNTK 2.7's own image reader (the cntk27 rig).

Run from the repository root with the rig built (``bash ../shared/cntk27/setup_cntk27.sh .cache/cntk27``):

    python tests/data/image/make_golden.py

It writes, in this folder: small BMP/PPM/PGM images (``img/``), mean files, map files, ``cases.json``
(each case: its map, label count, transforms in cntk.io's spelling, options) and ``golden.npz``
(per case CNTK's features ``<case>__features`` float32 (N, C, H, W) and labels ``<case>__labels``).
The images are made by a fixed NumPy generator, so a rerun gives the same files.
"""
from __future__ import annotations

import base64
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, ".cache", "cntk27", "shim"))

import cntk27  # noqa: E402
import datagen  # noqa: E402

SIZES = [(3, 2), (6, 4), (7, 5), (10, 10), (5, 9), (16, 12)]   # (W, H)


def images() -> None:
    os.makedirs(os.path.join(HERE, "img"), exist_ok=True)
    rng = np.random.default_rng(2027)
    for W, H in SIZES:
        for k in range(2):
            img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
            if (W, H) == (3, 2) and k == 0:    # the spec's pattern: (B, G, R) = 100y + 10x + (0, 1, 2)
                yy, xx = np.mgrid[0:H, 0:W]
                img = (100 * yy + 10 * xx)[:, :, None] + np.arange(3)[None, None, :]
                img = img.astype(np.uint8)
            datagen.write_bmp(os.path.join(HERE, "img", f"c{W}x{H}_{k}.bmp"), img)
    datagen.write_ppm(os.path.join(HERE, "img", "p6x4.ppm"), rng.integers(0, 256, (4, 6, 3), dtype=np.uint8))
    with open(os.path.join(HERE, "img", "g4x4.pgm"), "wb") as f:
        f.write(b"P5\n4 4\n255\n" + rng.integers(0, 256, 16, dtype=np.uint8).tobytes())
    datagen.write_mean_xml(os.path.join(HERE, "mean4x4.xml"), rng.uniform(0, 200, (4, 4, 3)))
    datagen.write_mean_xml(os.path.join(HERE, "mean8x8.xml"), rng.uniform(0, 200, (8, 8, 3)))


def crop(**kw):
    return ["crop", kw]


def scale(*a, **kw):
    return ["scale", list(a), kw]


def mean(name):
    return ["mean", name]


def cases() -> list[dict]:
    c = []

    def add(name, imgs, transforms=(), options=None, labels=None):
        c.append({"name": name, "images": [f"img/{i}" for i in imgs], "transforms": list(transforms),
                  "options": options or {}, "labels": labels or [(i * 3 + 1) % 4 for i in range(len(imgs))]})

    two = lambda W, H: [f"c{W}x{H}_0.bmp", f"c{W}x{H}_1.bmp"]  # noqa: E731
    add("none_3x2", two(3, 2))
    add("none_ppm", ["p6x4.ppm"])
    add("none_pgm", ["g4x4.pgm"])
    add("grayscale_option", two(6, 4), options={"grayscale": True})
    add("center_size2_even", two(6, 4), [crop(crop_type="center", crop_size=2)])
    add("center_size3_odd", two(6, 4), [crop(crop_type="center", crop_size=3)])
    add("center_wh_4x2", two(6, 4), [crop(crop_type="center", crop_size=[4, 2])])
    add("center_size6_clipped", two(7, 5), [crop(crop_type="center", crop_size=6)])
    for s in (0.25, 0.45, 0.55, 0.75):
        add(f"center_side{s}", two(10, 10), [crop(crop_type="center", side_ratio=s)])
    add("center_side_range_low_end", two(16, 12), [crop(crop_type="center", side_ratio=[0.5, 0.8])])
    add("center_area0.3", two(10, 10), [crop(crop_type="center", area_ratio=0.3)])
    add("center_side_jitter_uniratio_1", two(7, 5), [crop(crop_type="center", side_ratio=1.0, jitter_type="uniratio")])
    for interp in ("nearest", "linear", "cubic", "lanczos"):
        add(f"fill_down_{interp}", two(16, 12), [scale(7, 5, 3, interp, "fill")])
        add(f"fill_up_{interp}", two(6, 4), [scale(11, 9, 3, interp, "fill")])
    add("pad_6x4_to_8x8_zero", two(6, 4), [scale(8, 8, 3, "linear", "pad", 0)])
    add("pad_16x12_to_10x10_replicate", two(16, 12), [scale(10, 10, 3, "linear", "pad", -1)])
    add("pad_5x9_to_8x8_saturated", two(5, 9), [scale(8, 8, 3, "nearest", "pad", 300)])
    add("crop_16x12_to_8x8", two(16, 12), [scale(8, 8, 3, "linear", "crop")])
    add("crop_5x9_to_4x4", two(5, 9), [scale(4, 4, 3, "nearest", "crop")])
    add("scale_channels1_on_color", two(6, 4), [scale(6, 4, 1, "linear", "fill")])
    add("mean_after_crop", two(6, 4), [crop(crop_type="center", crop_size=4), mean("mean4x4.xml")])
    add("mean_size_mismatch_ignored", two(6, 4), [mean("mean4x4.xml")])
    add("alexnet_chain", two(16, 12), [crop(crop_type="center", side_ratio=0.875),
                                       scale(8, 8, 3, "linear", "fill"), mean("mean8x8.xml")])
    add("gray_crop_scale", two(10, 10), [crop(crop_type="center", side_ratio=0.5), scale(4, 4, 1, "cubic")],
        options={"grayscale": True})
    # CNTK 2.7's composite ImageDeserializer gives Multiview10 one view per image: view 0, the
    # top-left corner, unflipped (measured)
    add("multiview10_size4", two(6, 4), [crop(crop_type="multiview10", crop_size=4)])
    add("multiview10_side0.5", two(16, 12), [crop(crop_type="multiview10", side_ratio=0.5)])
    return c


def _transforms(spec):
    out = []
    for t in spec:
        if t[0] == "crop":
            kw = dict(t[1])
            for k in ("crop_size", "side_ratio", "area_ratio", "aspect_ratio"):
                if isinstance(kw.get(k), list):
                    kw[k] = tuple(kw[k])
            out.append(cntk27.crop(**kw))
        elif t[0] == "scale":
            out.append(cntk27.scale(*t[1], **t[2]))
        else:
            out.append(cntk27.mean(os.path.join(HERE, t[1])))
    return out


def run() -> None:
    images()
    all_cases = cases()
    golden = {}
    cwd = os.getcwd()
    os.chdir(HERE)                       # map paths are relative to this folder
    try:
        for case in all_cases:
            mp = f"map_{case['name']}.txt"
            datagen.write_image_map(mp, list(zip(case["images"], case["labels"])))
            mbs = cntk27.read_image(mp, 4, _transforms(case["transforms"]), mb_size=100,
                                    options=case["options"] or None)
            os.unlink(mp)
            golden[case["name"] + "__features"] = mbs[0]["features"]
            golden[case["name"] + "__labels"] = mbs[0]["labels"]
        # Base64: the same two 6x4 images as text, without and with keys
        b64 = [open(f"img/c6x4_{k}.bmp", "rb").read() for k in range(2)]
        datagen.write_base64_map("b64_nokey.txt", [(2, b64[0]), (3, b64[1])])
        with open("b64_key.txt", "w") as f:
            f.write("".join(f"{key}\t{lab}\t{base64.b64encode(b).decode()}\n"
                            for key, lab, b in [(7, 1, b64[0]), (9, 0, b64[1])]))
        for name, t in (("b64_nokey", []), ("b64_key", [cntk27.crop("center", crop_size=3)])):
            mbs = cntk27.read_image(f"{name}.txt", 4, t, mb_size=100, base64=True)
            golden[name + "__features"] = mbs[0]["features"]
            golden[name + "__labels"] = mbs[0]["labels"]
            all_cases.append({"name": name, "base64": f"{name}.txt",
                              "transforms": [crop(crop_type="center", crop_size=3)] if t else [],
                              "options": {}})
    finally:
        os.chdir(cwd)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(all_cases, f, indent=1)
    np.savez_compressed(os.path.join(HERE, "golden.npz"), **golden)
    print(f"{len(all_cases)} cases written to {HERE}")


if __name__ == "__main__":
    run()
