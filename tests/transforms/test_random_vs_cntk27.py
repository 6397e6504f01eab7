"""Random transforms against CNTK 2.7's, statistically: tests/data/image/make_golden.py stored
summaries of 600 draws of CNTK 2.7's RandomSide and RandomArea crops (size, position, flip, read
off a gradient image), Color and Intensity transforms (pixel values); cntkio's 600 draws (its
per-image generators, seed 0) must come from the same distributions: a two-sample
Kolmogorov-Smirnov test per summarised value, p > 0.01. CNTK's draws cannot be reproduced, so
this is the comparison that can be made (docs/images.md)."""
from __future__ import annotations

import sys

import pytest

pytest.importorskip("cv2")
stats = pytest.importorskip("scipy.stats")

import numpy as np  # noqa: E402
from paths import DATA  # noqa: E402

from cntkio import MinibatchSource, StreamDef, StreamDefs  # noqa: E402
from cntkio import transforms as T  # noqa: E402
from cntkio.deserializers.image import ImageDeserializer  # noqa: E402

IMAGE_DATA = DATA / "image"
GOLDEN = np.load(IMAGE_DATA / "golden.npz")
sys.path.insert(0, str(IMAGE_DATA))
from make_golden import RANDOM_CASES, RANDOM_COPIES, summarise  # noqa: E402


def _chain(chain):
    out = []
    for t in chain:
        if t == "scale16":
            out.append(T.scale(16, 16, 3, "nearest"))
        else:
            t = dict(t)
            if "intensityFile" in t:
                t["intensityFile"] = str(IMAGE_DATA / t["intensityFile"])
            out.append(t)
    return out


@pytest.mark.parametrize("name", list(RANDOM_CASES))
def test_same_distribution_as_cntk27(name, tmp_path):
    image, chain, kind = RANDOM_CASES[name]
    mp = tmp_path / "map.txt"
    mp.write_text(f"{IMAGE_DATA / 'img' / image}\t0\n" * RANDOM_COPIES)
    d = ImageDeserializer(str(mp), StreamDefs(features=StreamDef(field="image", transforms=_chain(chain)),
                                              labels=StreamDef(field="label", shape=1)))
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    ours = summarise(kind, src.next_minibatch(RANDOM_COPIES)[src.streams.features].asarray()[:, 0])
    theirs = GOLDEN["random_" + name]
    assert ours.shape == theirs.shape
    for j in range(ours.shape[1]):
        p = stats.ks_2samp(ours[:, j], theirs[:, j], method="asymp").pvalue
        assert p > 0.01, f"{name}: summary column {j}: KS p = {p:.4f}"
    if kind == "crop":
        assert 0.4 < ours[:, 4].mean() < 0.6           # flipped half the time, as CNTK
