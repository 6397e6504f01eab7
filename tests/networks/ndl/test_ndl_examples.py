"""examples/ndl: the spec's first example (NDL file + ndlMacros + UCIFastReader) and the digits
pipeline (NDL train, test, MEL adds a layer, adapt, test) run through configFile= as shipped."""
from __future__ import annotations

import shutil

from cntkio.networks import load_model
from cntkio.actions.runner import run
import paths

EX = paths.REPO / "examples"


def _tree(tmp_path, *dirs):
    for d in dirs:
        shutil.copytree(EX / d, tmp_path / "examples" / d, ignore=shutil.ignore_patterns("output"))


def test_the_spec_example_as_written(tmp_path, monkeypatch):
    _tree(tmp_path, "ndl", "legacy")
    monkeypatch.chdir(tmp_path)
    (_, _, train), (_, _, test) = run(["configFile=examples/ndl/spec_mnist.cntk", "progressBar=false"])
    assert len(train.epochs) == 8 and test.samples == 360
    assert test.averages["ErrPredict"] < 0.05
    net = load_model("examples/ndl/output/sample.dnn").network
    assert "featNorm.xNorm" in net.graph.nodes and net.shapes["L1.W"] == (256, 64)


def test_the_digits_pipeline_with_mel(tmp_path, monkeypatch):
    _tree(tmp_path, "ndl", "digits")
    monkeypatch.chdir(tmp_path)
    results = run(["configFile=examples/ndl/digits_ndl.cntk", "progressBar=false"])
    assert [r[0] for r in results] == ["digitsTrain", "digitsTest", "addLayer", "deeperTrain", "deeperTest"]
    assert results[1][2].averages["Err"] < 0.05
    assert results[2][2].saved == ["examples/ndl/output/digits_ndl_deeper.dnn"]
    assert results[4][2].averages["Err"] < 0.05
    deeper = load_model("examples/ndl/output/digits_ndl_deeper_trained.dnn").network
    assert deeper.graph.nodes["out.z.Times"].inputs == ["out.W", "L2.y"]
    assert deeper.shapes["L2.W"] == (128, 128)
