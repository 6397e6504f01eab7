"""Make the image golden fixtures with CNTK 2.7's own image reader (the cntk27 rig).

Run from the repository root with the rig built (``bash ../shared/cntk27/setup_cntk27.sh .cache/cntk27``):

    python tests/data/image/make_golden.py

It writes, in this folder: small BMP/PPM/PGM images (``img/``), mean files, map files, ``cases.json``
(each case: its map, label count, transforms in cntk.io's spelling, options) and ``golden.npz``
(per case CNTK's features ``<case>__features`` float32 (N, C, H, W) and labels ``<case>__labels``;
per random case ``random_<case>``, summaries of 600 draws of CNTK's random transforms, see
``RANDOM_CASES``).
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
RIG = os.path.join(REPO, ".cache", "cntk27", "shim")
cntk27 = datagen = None      # the rig's modules, imported by run(): the tests import this file without it

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


# --- random transforms: compared statistically (CNTK's own random draws cannot be reproduced) ---

RANDOM_COPIES = 600
RANDOM_CASES = {
    # name: (image, transforms as dicts, what is summarised)
    "randomside": ("grad64x48.bmp", [{"type": "Crop", "cropType": "RandomSide", "sideRatio": (0.5, 1.0),
                                      "jitterType": "UniRatio"}, "scale16"], "crop"),
    "randomside_aspect": ("grad64x48.bmp", [{"type": "Crop", "cropType": "RandomSide", "sideRatio": (0.5, 1.0),
                                             "aspectRatio": (0.75, 1.0), "jitterType": "UniRatio"}, "scale16"],
                          "crop"),
    "randomarea": ("grad64x48.bmp", [{"type": "Crop", "cropType": "RandomArea", "areaRatio": (0.2, 0.8),
                                      "aspectRatio": (0.75, 1.0), "jitterType": "UniRatio"}, "scale16"], "crop"),
    "color": ("col8x8.bmp", [{"type": "Color", "brightnessRadius": 0.3, "contrastRadius": 0.3,
                              "saturationRadius": 0.3}], "pixels"),
    "saturation": ("col8x8.bmp", [{"type": "Color", "saturationRadius": 0.5}], "pixels"),
    "intensity": ("col8x8.bmp", [{"type": "Intensity", "intensityStdDev": 30.0, "intensityFile": "eig.xml"}],
                  "pixels"),
}


def random_images() -> None:
    import cv2
    H, W = 48, 64
    grad = np.zeros((H, W, 3), np.uint8)
    yy, xx = np.mgrid[0:H, 0:W]
    grad[:, :, 0], grad[:, :, 1] = xx * 4, yy * 5       # B encodes x, G encodes y
    datagen.write_bmp(os.path.join(HERE, "img", "grad64x48.bmp"), grad)
    col = np.zeros((8, 8, 3), np.uint8)
    col[:, :] = (60, 120, 200)
    col[:4, :4] = (200, 90, 30)
    datagen.write_bmp(os.path.join(HERE, "img", "col8x8.bmp"), col)
    fs = cv2.FileStorage(os.path.join(HERE, "eig.xml"), cv2.FILE_STORAGE_WRITE)
    fs.write("EigVal", np.array([[0.2175, 0.0188, 0.0045]], np.float32))
    fs.write("EigVec", np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                                 [-0.5836, -0.6948, 0.4203]], np.float32))
    fs.release()


def summarise(kind: str, f: np.ndarray) -> np.ndarray:
    """Per image: a crop's (w, h, x0, y0, flipped) read off the gradient through a 16x16 nearest
    scale, or the pixel values at two corners (6 values)."""
    if kind == "crop":
        B, G = f[:, 0] / 4, f[:, 1] / 5
        xs, ys = B[:, 0, :], G[:, :, 0]
        return np.stack([(xs.max(1) - xs.min(1)) * 16 / 15, (ys.max(1) - ys.min(1)) * 16 / 15,
                         xs.min(1), ys.min(1), (B[:, 0, 0] > B[:, 0, -1]).astype(np.float64)], axis=1)
    return np.stack([f[:, c, y, y] for y in (0, 7) for c in range(3)], axis=1).astype(np.float64)


def random_stats() -> dict:
    out = {}
    for name, (image, chain, kind) in RANDOM_CASES.items():
        datagen.write_image_map("random_map.txt", [(f"img/{image}", 0)] * RANDOM_COPIES)
        ts = []
        for t in chain:
            if t == "scale16":
                ts.append(cntk27.scale(16, 16, 3, "nearest"))
            elif t["type"] == "Crop":
                ts.append(cntk27.crop(t["cropType"].lower(), side_ratio=t.get("sideRatio", 0.0),
                                      area_ratio=t.get("areaRatio", 0.0), aspect_ratio=t.get("aspectRatio", 1.0),
                                      jitter_type=t["jitterType"].lower()))
            else:
                ts.append(dict(t))
        mbs = cntk27.read_image("random_map.txt", 1, ts, mb_size=RANDOM_COPIES)
        os.unlink("random_map.txt")
        out["random_" + name] = summarise(kind, mbs[0]["features"])
    return out


def run() -> None:
    global cntk27, datagen
    sys.path.insert(0, RIG)
    import cntk27
    import datagen
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
        random_images()
        golden.update(random_stats())
    finally:
        os.chdir(cwd)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(all_cases, f, indent=1)
    np.savez_compressed(os.path.join(HERE, "golden.npz"), **golden)
    print(f"{len(all_cases)} cases written to {HERE}")


if __name__ == "__main__":
    run()
