"""The golden cases of tests/data/image (made by make_golden.py with CNTK 2.7's image reader),
read back with cntkio."""
from __future__ import annotations

import json

import numpy as np
from paths import DATA

from cntkio import MinibatchSource, StreamDef, StreamDefs
from cntkio import transforms as T
from cntkio.deserializers.image import Base64ImageDeserializer, ImageDeserializer

IMAGE_DATA = DATA / "image"
CASES = json.loads((IMAGE_DATA / "cases.json").read_text())
GOLDEN = np.load(IMAGE_DATA / "golden.npz")


def transforms(spec) -> list:
    out = []
    for t in spec:
        if t[0] == "crop":
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in t[1].items()}
            out.append(T.crop(**kw))
        elif t[0] == "scale":
            out.append(T.scale(*t[1], **t[2]))
        else:
            out.append(T.mean(str(IMAGE_DATA / t[1])))
    return out


def write_map(case, folder) -> str:
    path = folder / f"map_{case['name']}.txt"
    path.write_text("".join(f"{IMAGE_DATA / p}\t{lab}\n" for p, lab in zip(case["images"], case["labels"])))
    return str(path)


def read_case(case, folder, **kw):
    """cntkio's (features (N, C, H, W), labels (N,)) for a case, through the Python API."""
    streams = StreamDefs(features=StreamDef(field="image", transforms=transforms(case["transforms"])),
                         labels=StreamDef(field="label", shape=4))
    if "base64" in case:
        d = Base64ImageDeserializer(str(IMAGE_DATA / case["base64"]), streams, **kw)
    else:
        d = ImageDeserializer(write_map(case, folder), streams, **kw)
    if case["options"].get("grayscale"):
        d["grayscale"] = True
    return read_all(d)


def read_all(d, **source_kw):
    src = MinibatchSource(d, randomize=False, max_sweeps=1, **source_kw)
    mb = src.next_minibatch(1000)
    feats = mb[src.streams.features].asarray()[:, 0]
    labels = mb[src.streams.labels].as_csr().indices if hasattr(mb[src.streams.labels], "as_csr") else None
    return feats, np.asarray(labels)
