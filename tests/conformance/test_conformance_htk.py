"""CNTK's HTK reader conformance cases (``shared/conformance/cntk/README.md``, section 6), run from
the command line with the dumpReader action, as the CTF cases are.

Working directory ``Data/AN4`` (3 utterances, 1174 frames of 33 floats in one HTK archive, their
MLF entries, 132 states). ``dim = 363`` means a context of 5 frames each side; frame mode (the
HTKMLFReader default). Loop2 (``HTKMLFReader`` with ``randomize = none``, and ``HTKDeserializers``
with ``readMethod = none``): epochSize 500, minibatch 250, 2 epochs; the control holds frames
0..999 in file order, per minibatch 250 feature lines (363 values) then 250 one-hot label lines,
compared with relative tolerance 1e-5 as CNTK's HTK tests are. Loop1 (blockRandomize) has no
control here: the README's shape rules are checked.
"""
from __future__ import annotations

import numpy as np
import pytest

from cntkio.cli import main
import paths

ROOT = paths.CONFORMANCE
DATA = ROOT / "Data" / "AN4"
CONTROL = ROOT / "Control" / "HTKMLFReaderSimpleDataLoop2_12_Control.txt"
MB, EPOCH, EPOCHS = 250, 500, 2

pytestmark = pytest.mark.skipif(not CONTROL.exists(), reason="CNTK's conformance data is not here")


def _dump(monkeypatch, tmp_path, config: str, *extra: str) -> list[str]:
    out = tmp_path / "Simple_Test_Output.txt"
    monkeypatch.chdir(DATA)
    args = [f"configFile={ROOT / 'Config' / config}", "command=Simple_Test",
            f"Simple_Test=[action=dumpReader; outputFile={out}; epochSize={EPOCH}; minibatchSize={MB}; "
            f"maxEpochs={EPOCHS}]", *extra]
    assert main(args) == 0
    return out.read_text().splitlines()


def _numbers(lines: list[str]) -> list[np.ndarray]:
    return [np.array(ln.split(), np.float64) for ln in lines]


def _assert_close(got: list[str], want: list[str]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(_numbers(got), _numbers(want))):
        assert g.shape == w.shape, f"line {i + 1}: {g.size} values, control has {w.size}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-30, err_msg=f"line {i + 1}")


@pytest.mark.parametrize("config", ["HTKMLFReaderSimpleDataLoop2_Config.cntk",
                                    "HTKDeserializersSimpleDataLoop2_Config.cntk"])
def test_loop2_matches_the_control(monkeypatch, tmp_path, config):
    got = _dump(monkeypatch, tmp_path, config)
    _assert_close(got, CONTROL.read_text().splitlines())


def test_loop2_in_double_precision_shares_the_control(monkeypatch, tmp_path):
    got = _dump(monkeypatch, tmp_path, "HTKMLFReaderSimpleDataLoop2_Config.cntk", "precision=double")
    _assert_close(got, CONTROL.read_text().splitlines())


def test_loop1_block_randomized_frames_are_frames_of_the_archive(monkeypatch, tmp_path):
    lines = _dump(monkeypatch, tmp_path, "HTKMLFReaderSimpleDataLoop1_Config.cntk")
    assert len(lines) == EPOCHS * (EPOCH // MB) * 2 * MB
    control = _numbers(CONTROL.read_text().splitlines())
    # every frame of the control (with its label) by its centre slot
    known = {}
    for m in range(4):
        feats, labs = control[m * 2 * MB:m * 2 * MB + MB], control[m * 2 * MB + MB:(m + 1) * 2 * MB]
        for f, lb in zip(feats, labs):
            known[tuple(np.round(f[165:198], 4))] = (f, lb)
    seen = 0
    nums = _numbers(lines)
    for m in range(4):
        feats, labs = nums[m * 2 * MB:m * 2 * MB + MB], nums[m * 2 * MB + MB:(m + 1) * 2 * MB]
        for f, lb in zip(feats, labs):
            assert f.size == 363 and lb.size == 132 and lb.sum() == 1 and set(np.unique(lb)) == {0, 1}
            hit = known.get(tuple(np.round(f[165:198], 4)))
            if hit is not None:
                np.testing.assert_allclose(f, hit[0], rtol=1e-5)
                np.testing.assert_array_equal(lb, hit[1])
                seen += 1
    # randomized over the 1174 frames: a good part of them are among the control's 1000
    assert seen > 500
    first_epoch = [tuple(np.round(f[165:198], 4)) for f in nums[:MB]]
    in_order = [tuple(np.round(f[165:198], 4)) for f in control[:MB]]
    assert first_epoch != in_order
