"""Make golden_broadcast.npz: CNTK 2.7 (the shared/cntk27 rig) reading features + an
expandToUtterance (broadcast) i-vector stream + labels, in sequence mode and frame mode.

    python tests/data/htk/make_golden_broadcast.py     # from the repository root, .cache/cntk27 built

The corpus is made by tests/deserializers/htk/test_htk_broadcast.py's ``write_corpus`` (3 utterances
of 4, 2, 3 frames; i-vectors [10 11 12], [20 21 22], [30 31 32]). Stored: per mode, each stream's
padded data and mask of the one minibatch CNTK delivers.
"""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, ".cache", "cntk27", "shim"))
sys.path.insert(0, os.path.join(REPO, "tests", "deserializers", "htk"))
sys.path.insert(0, os.path.join(REPO, "tests"))

import cntk27  # noqa: E402
from test_htk_broadcast import write_corpus  # noqa: E402


def main() -> None:
    out = {}
    with tempfile.TemporaryDirectory() as d:
        write_corpus(d)
        os.chdir(d)
        for mode in ("seq", "frame"):
            f = cntk27.htk_feature_deserializer({"features": dict(scp="f.scp", dim=2)})
            iv = cntk27.htk_feature_deserializer({"ivec": dict(scp="iv.scp", dim=3, broadcast=True)})
            lab = cntk27.htk_mlf_deserializer("states.list", "labels", 2, ["l.mlf"])
            src = cntk27.MinibatchSource([f, iv, lab], randomize=False, max_sweeps=1, frame_mode=mode == "frame")
            mb = src.next_minibatch(100)
            for k in ("features", "ivec"):
                out[f"{mode}_{k}"] = mb[k]["data"]
                mask = mb[k]["mask"]
                out[f"{mode}_{k}_mask"] = np.ones(mb[k]["data"].shape[:2], np.int8) if mask is None else mask
            print(mode, {k: v.shape for k, v in out.items()})
    tmp = os.path.join(HERE, "golden_broadcast.tmp.npz")
    np.savez(tmp, **out)
    os.replace(tmp, os.path.join(HERE, "golden_broadcast.npz"))


if __name__ == "__main__":
    main()
