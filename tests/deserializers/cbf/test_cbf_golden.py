"""CBF against CNTK 2.7: committed golden fixtures (tests/data/cbf, made by make_golden.py with
CNTK 2.7's own CBF reader through the cntk27 rig). CI compares without the rig:

* cntkio reads each committed CBF file exactly as CNTK 2.7 read it (not randomized, two sweeps,
  randomized, partitioned, frame mode, an alias rename);
* cntkio's converter still writes those files byte for byte from the committed CTF sources (and
  CNTK 2.7's CBF reads of them equal its CTF reads: checked when the fixtures were made);
* ``rig_written.cbf`` comes from the rig's own CBF writer.
"""
import json
import os

import numpy as np
import pytest

from cntkio import CBFDeserializer, MinibatchSource, StreamDef
from cntkio.deserializers.cbf import ctf2bin
import paths

DATA = str(paths.DATA / "cbf")
GOLDEN = json.load(open(os.path.join(DATA, "golden.json")))
CASES = sorted(GOLDEN)


def _source(path, kw, streams=None):
    kw = dict(kw)
    args = dict(randomize=kw.pop("randomize"), max_sweeps=kw.pop("max_sweeps"))
    if "seed" in kw:
        args["randomization_seed"] = kw.pop("seed")
    if "rand_window_chunks" in kw:
        args["randomization_window_in_chunks"] = kw.pop("rand_window_chunks")
    if "frame_mode" in kw:
        args["frame_mode"] = kw.pop("frame_mode")
    assert not kw, kw
    return MinibatchSource(CBFDeserializer(path, streams or {}), **args)


def _drain(src, mb_size, workers, rank):
    out = []
    while True:
        mb = src.next_minibatch(mb_size, num_data_partitions=workers, partition_index=rank)
        if not mb:
            return out
        rec = {}
        for info, d in mb.items():
            seqs = d.as_sequences()
            seqs = [s.toarray() if hasattr(s, "toarray") else np.asarray(s) for s in seqs]
            rec[info.name] = dict(lengths=np.array([len(s) for s in seqs], np.int64),
                                  values=np.concatenate(seqs).reshape(-1, info.shape[0]).astype(np.float32),
                                  nsamples=d.num_samples, sweep_end=d.sweep_end)
        out.append(rec)


def _expected(npz, meta, mode):
    out = []
    for i, m in enumerate(meta[mode]):
        rec = {}
        for s, d in m.items():
            if d is None:
                continue
            rec[s] = dict(lengths=npz[f"{mode}/{i}/{s}/lengths"], values=npz[f"{mode}/{i}/{s}/values"],
                          nsamples=d["nsamples"], sweep_end=d["sweep_end"])
        out.append(rec)
    return out


def _compare(got, want, where):
    assert len(got) == len(want), f"{where}: {len(got)} minibatches, CNTK 2.7 gave {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert sorted(g) == sorted(w), f"{where} minibatch {i}: streams {sorted(g)} vs {sorted(w)}"
        for s in w:
            np.testing.assert_array_equal(g[s]["lengths"], w[s]["lengths"], err_msg=f"{where} mb {i} {s}")
            np.testing.assert_array_equal(g[s]["values"], w[s]["values"], err_msg=f"{where} mb {i} {s}")
            assert g[s]["nsamples"] == w[s]["nsamples"], f"{where} mb {i} {s}"
            assert g[s]["sweep_end"] == w[s]["sweep_end"], f"{where} mb {i} {s}"


PAIRS = [(c, m) for c in CASES for m in GOLDEN[c]["modes"]]


@pytest.mark.parametrize("case,mode", PAIRS)
def test_reads_equal_cntk27(case, mode):
    meta = GOLDEN[case]
    m = meta["modes"][mode]
    got = _drain(_source(os.path.join(DATA, case + ".cbf"), m["kw"]), m["mb"], m["workers"], m["rank"])
    with np.load(os.path.join(DATA, case + ".npz")) as npz:
        _compare(got, _expected(npz, meta, mode), f"{case}/{mode}")


@pytest.mark.parametrize("case", [c for c in CASES if "alias" in GOLDEN[c]])
def test_alias_equals_cntk27(case):
    meta = GOLDEN[case]
    first = meta["streams"][0][0]
    path = os.path.join(DATA, case + ".cbf")
    got = _drain(_source(path, dict(randomize=False, max_sweeps=1), {"renamed": StreamDef(field=first)}),
                 7, 1, 0)
    with np.load(os.path.join(DATA, case + ".npz")) as npz:
        want = _expected(npz, meta, "alias")
    assert "renamed" in want[0] and first not in want[0]
    _compare(got, want, f"{case}/alias")


@pytest.mark.parametrize("case", [c for c in CASES if c != "rig_written"])
def test_converter_writes_the_golden_files(case, tmp_path):
    meta = GOLDEN[case]
    out = tmp_path / (case + ".cbf")
    ctf2bin(os.path.join(DATA, case + ".ctf"), str(out),
            [(n, n, sp, d) for n, d, sp in meta["streams"]], chunk_size=meta["chunk_size"])
    assert out.read_bytes() == open(os.path.join(DATA, case + ".cbf"), "rb").read()
