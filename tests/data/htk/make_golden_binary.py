"""Make golden_binary.npz: CNTK 2.7's own HTKFeatureDeserializer + HTKMLFBinaryDeserializer (the
shared/cntk27 rig) on corpus "binary" of tests/deserializers/htk/htk_corpus.py.

    python tests/data/htk/make_golden_binary.py        # from the repository root, .cache/cntk27 built

Stored per case: the frame label indices CNTK delivered (frame mode: one per frame in delivery
order; sequence mode: per utterance, concatenated, with the utterance lengths), and the feature
frames' utterance ids (column 0 of corpus frames) in the same order.
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
sys.path.insert(0, os.path.join(REPO, "src"))

import cntk27  # noqa: E402
import htk_corpus  # noqa: E402

CASES = {  # name: (mlf files, frame mode, randomize)
    "v1_frame": (["v1"], True, False),
    "v2_frame": (["v2"], True, False),
    "v1_seq": (["v1"], False, False),
    "v2_seq": (["v2", "v2b"], False, False),
    "v2_frame_rand": (["v2"], True, True),
}


def run(c, files, frame_mode, randomize):
    os.chdir(c["dir"])
    f = cntk27.htk_feature_deserializer({"features": dict(scp=c["scp"], dim=c["dim"])})
    if len(files) == 1:
        where = {"mlfFile": c[files[0]]}
    else:   # mlfFileList: a text file listing the MLF files, one a line (CNTK's form)
        with open("mlfs.list", "w") as out:
            out.write("".join(c[k] + "\n" for k in files))
        where = {"mlfFileList": "mlfs.list"}
    lab = cntk27.dict_deserializer({"type": "HTKMLFBinaryDeserializer", "input": {"labels": {
        "dim": c["labels"], **where}}})
    src = cntk27.MinibatchSource([f, lab], randomize=randomize, max_sweeps=1, frame_mode=frame_mode, seed=1)
    labels, utts, lengths = [], [], []
    while True:
        mb = src.next_minibatch(8)
        if not mb:
            break
        vals, rows, starts = mb["labels"]["csc"]
        nseq, T = mb["labels"]["shape"][:2]
        cols = np.full(nseq * T, -1, np.int64)
        for j in range(nseq * T):
            if starts[j + 1] > starts[j]:
                cols[j] = rows[starts[j]]
        mask = mb["features"]["mask"]
        valid = np.ones(nseq * T, bool) if mask is None else (mask.reshape(-1) > 0)
        labels.extend(cols[valid].tolist())
        utts.extend(mb["features"]["data"].reshape(-1, c["dim"])[valid][:, 0].astype(np.int64).tolist())
        lengths.extend((np.ones(nseq, np.int64) * T if mask is None else (mask > 0).sum(1)).tolist())
    return np.asarray(labels), np.asarray(utts), np.asarray(lengths)


def main() -> None:
    out = {}
    with tempfile.TemporaryDirectory() as d:
        c = htk_corpus.write_binary(d)
        for name, (files, fm, rnd) in CASES.items():
            lab, utt, ln = run(c, files, fm, rnd)
            out[f"{name}_labels"], out[f"{name}_utts"], out[f"{name}_lengths"] = lab, utt, ln
            print(name, lab.tolist(), utt.tolist(), ln.tolist())
    tmp = os.path.join(HERE, "golden_binary.tmp.npz")
    np.savez(tmp, **out)
    os.replace(tmp, os.path.join(HERE, "golden_binary.npz"))


if __name__ == "__main__":
    main()
