"""expandToUtterance (broadcast) streams against CNTK 2.7 (tests/data/htk/golden_broadcast.npz,
made by tests/data/htk/make_golden_broadcast.py with the shared/cntk27 rig): in sequence mode the
utterance's one frame is repeated over the primary utterance (same mask), in frame mode every
frame gets its utterance's vector."""
from __future__ import annotations

import os

import numpy as np
import pytest

import paths
from htk_corpus import write_htk

LENGTHS = [4, 2, 3]


def write_corpus(d) -> None:
    d = os.fspath(d)
    frames = [np.stack([np.full(n, u, np.float32), np.arange(n, dtype=np.float32)], 1) for u, n in enumerate(LENGTHS)]
    write_htk(os.path.join(d, "a.htk"), np.concatenate(frames))
    write_htk(os.path.join(d, "iv.htk"), np.asarray([[10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32))
    pos, l1, l2 = 0, [], []
    for u, n in enumerate(LENGTHS):
        l1.append(f"u{u}.mfc=a.htk[{pos},{pos + n - 1}]")
        l2.append(f"u{u}.iv=iv.htk[{u},{u}]")
        pos += n
    for name, lines in (("f.scp", l1), ("iv.scp", l2)):
        with open(os.path.join(d, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, "states.list"), "w") as f:
        f.write("s0\ns1\n")
    with open(os.path.join(d, "l.mlf"), "w") as f:
        f.write("#!MLF!#\n" + "".join(f'"*/u{u}.lab"\n0 {n * 100000} s0\n.\n' for u, n in enumerate(LENGTHS)))


@pytest.mark.parametrize("mode,randomize", [("seq", False), ("seq", True), ("frame", False)])
def test_broadcast_stream_equals_cntk(tmp_path, monkeypatch, mode, randomize):
    from cntkio import HTKFeatureDeserializer, HTKMLFDeserializer, MinibatchSource, StreamDef
    golden = np.load(paths.DATA / "htk" / "golden_broadcast.npz")
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path)
    f = HTKFeatureDeserializer({"features": StreamDef(shape=2, scp="f.scp")})
    iv = HTKFeatureDeserializer({"ivec": StreamDef(shape=3, scp="iv.scp", broadcast=True)})
    lab = HTKMLFDeserializer("states.list", {"labels": StreamDef(shape=2, mlf="l.mlf")})
    src = MinibatchSource([f, iv, lab], frame_mode=mode == "frame", randomize=randomize, max_sweeps=1)
    mb = src.next_minibatch(100)
    got = {s.name: v for s, v in mb.items()}
    order = None
    if randomize:      # compare per utterance: the randomized order is the rig-independent part
        order = np.argsort([int(s[0, 0]) for s in got["features"].as_sequences()])
    for k in ("features", "ivec"):
        seqs = got[k].as_sequences()
        if order is not None:
            seqs = [seqs[i] for i in order]
        want, mask = golden[f"{mode}_{k}"], golden[f"{mode}_{k}_mask"]
        want_seqs = [want[i][mask[i] > 0].reshape(-1, want.shape[-1]) for i in range(len(want))]
        assert len(seqs) == len(want_seqs)
        for s, w in zip(seqs, want_seqs):
            np.testing.assert_array_equal(np.asarray(s).reshape(w.shape), w)
