"""cntkio inspect, bench and show-config on the shipped examples (what CI runs), and
MinibatchSource.stats()."""
import json

import numpy as np
import pytest

import paths
from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from cntkio.cli import main
from cntkio.tools.inspect import length_histogram
from cntkio.tools.show_config import to_tree, to_yaml

DIGITS = paths.REPO / "examples" / "digits"
DIGITS_CFG = f"configFile={DIGITS / 'digits.cntk'}"


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_length_histogram():
    assert length_histogram(np.array([1, 1, 2, 5])) == [
        {"from": 1, "to": 1, "count": 2}, {"from": 2, "to": 2, "count": 1}, {"from": 3, "to": 3, "count": 0},
        {"from": 4, "to": 4, "count": 0}, {"from": 5, "to": 5, "count": 1}]
    assert length_histogram(np.arange(1, 21), bins=4)[0] == {"from": 1, "to": 5, "count": 5}
    assert length_histogram(np.zeros(0, np.int64)) == []


def test_inspect_a_sequence_file(tmp_path, capsys):
    f = tmp_path / "s.ctf"
    f.write_text("0 |w 3:1 |f 0.5 0\n0 |w 1:1\n1 |w 2:1 |f -1 2\n")
    assert main(["inspect", str(f), "--json", "--head", "1"]) == 0
    r = _json(capsys)[str(f)]
    assert (r["sequences"], r["samples"], r["min_length"], r["max_length"]) == (2, 3, 1, 2)
    w, feats = r["streams"]
    assert (w["name"], w["storage"], w["dim"], w["samples"], w["nonzeros"]) == ("w", "sparse", 4, 3, 3)
    assert (feats["storage"], feats["dim"], feats["samples"], feats["nonzeros"]) == ("dense", 2, 2, 3)
    assert feats["density"] == pytest.approx(0.75)
    assert r["length_histogram"] == [{"from": 1, "to": 1, "count": 1}, {"from": 2, "to": 2, "count": 1}]
    assert r["head"] == [{"key": 0, "w": [{"indices": [3], "values": [1.0]}, {"indices": [1], "values": [1.0]}],
                          "f": [[0.5, 0.0]]}]


def test_inspect_the_digits_example(capsys):
    assert main(["inspect", DIGITS_CFG, "--json", "--head", "0"]) == 0
    r = _json(capsys)
    assert sorted(r) == ["digitsTest.reader", "digitsTrain.reader"]
    test = r["digitsTest.reader"]
    assert (test["sequences"], test["samples"]) == (360, 360)
    labels = next(s for s in test["streams"] if s["name"] == "labels")
    assert labels["nonzeros"] == 360 and labels["density"] == pytest.approx(0.1)
    assert main(["inspect", str(DIGITS / "digits_test.ctf")]) == 0
    text = capsys.readouterr().out
    assert "360 sequences, 360 samples" in text and "labels: dense float32 shape (10,)" in text
    assert main(["inspect", str(DIGITS / "nothing.ctf")]) == 1
    assert "input file does not exist: '" in capsys.readouterr().err


def test_bench_a_file_and_the_digits_config(capsys):
    assert main(["bench", str(DIGITS / "digits_test.ctf"), "--minibatch-size", "100", "--json"]) == 0
    r = _json(capsys)[str(DIGITS / "digits_test.ctf")]
    assert r["stats"]["minibatches"] == 4 and r["stats"]["samples"] == 360 and r["stats"]["errors"] == 0
    assert r["read_seconds"] > 0 and r["parse_seconds"] > 0 and r["input_bytes"] > 0
    assert main(["bench", DIGITS_CFG, "--section", "digitsTest"]) == 0
    out = capsys.readouterr().out
    assert "digitsTest.reader:" in out and "1 minibatches, 360 sequences, 360 samples" in out  # minibatchSize 360


def test_shuffle_quality_of_known_orders():
    from cntkio.tools.bench import shuffle_quality
    same = shuffle_quality(np.arange(1000))
    assert same["rank_correlation"] == pytest.approx(1.0) and same["mean_distance"] == 0.0
    back = shuffle_quality(np.arange(1000)[::-1])
    assert back["rank_correlation"] == pytest.approx(-1.0) and back["mean_distance"] == pytest.approx(0.5)
    uniform = shuffle_quality(np.random.default_rng(0).permutation(100_000))
    assert abs(uniform["rank_correlation"]) < 0.01 and uniform["mean_distance"] == pytest.approx(1 / 3, abs=0.005)


def _ordinal_file(tmp_path, n=400):
    f = tmp_path / "o.ctf"
    f.write_text("".join(f"{i} |x {i}\n" * (1 + i % 3) for i in range(n)))
    return f


@pytest.mark.parametrize("window", [0, 1, 4, 1000])
def test_sweep_order_is_the_delivery_order(tmp_path, window):
    f = _ordinal_file(tmp_path)
    kw = dict(randomization_window_in_chunks=window, randomization_seed=7) if window else dict(randomize=False)
    src = MinibatchSource(CTFDeserializer(str(f), StreamDefs(x=StreamDef(field="x", shape=1)), ) | {"chunkSizeInBytes": 300},
                          max_sweeps=1, **kw)
    order = src.sweep_order(0)
    delivered = []
    while True:
        mb = src.next_minibatch(7)
        if not mb:
            break
        delivered += [int(s[0, 0]) for s in mb["x"].as_sequences()]  # a sequence's value is its ordinal
    assert order.tolist() == delivered and sorted(delivered) == list(range(400))
    if not window:
        assert order.tolist() == list(range(400))
    src.close()


def test_bench_prints_the_shuffle_quality_of_a_randomized_read(tmp_path, capsys):
    f = _ordinal_file(tmp_path)
    assert main(["bench", str(f), "--randomize", "--json"]) == 0
    q = _json(capsys)[str(f)]["shuffle"]
    assert q["sequences"] == 400 and -1 <= q["rank_correlation"] <= 1 and 0 <= q["mean_distance"] <= 0.5
    assert main(["bench", str(f), "--randomize"]) == 0
    assert "shuffle rank correlation" in capsys.readouterr().out
    assert main(["bench", str(f), "--json"]) == 0
    assert "shuffle" not in _json(capsys)[str(f)]


def test_source_stats_counts_what_was_handed_out(tmp_path):
    f = tmp_path / "s.ctf"
    f.write_text("".join(f"{i} |x {i}\n" * (1 + i % 3) for i in range(10)))
    src = MinibatchSource(CTFDeserializer(str(f), StreamDefs(x=StreamDef(field="x", shape=1))),
                          randomize=False, max_sweeps=1)
    assert src.stats()["minibatches"] == 0
    n = 0
    while src.next_minibatch(4):
        n += 1
    st = src.stats()
    assert (st["minibatches"], st["sequences"], st["samples"], st["errors"]) == (n, 10, 19, 0)
    assert st["seconds_in_calls"] > 0 and st["prefetch_depth"] == 0
    # the stages: one chunk of 19 float32 samples loaded (76 bytes of values), parsed and packed
    assert st["bytes_loaded"] == 19 * 4
    assert st["seconds_parse"] > 0 and st["seconds_pack"] > 0 and st["seconds_randomize"] > 0
    src.close()


def test_show_config_yaml(tmp_path, capsys):
    cfg = tmp_path / "c.cntk"
    cfg.write_text('command = a:b\nx = 16:32\nname = "a b"\np = ${HOME}\n'
                   "a = [\n  action = train\n  SGD = [ minibatchSize = 8 ]\n]\n")
    assert main(["show-config", f"configFile={cfg}", "--format", "yaml"]) == 0
    text = capsys.readouterr().out
    assert text == ('command: "a:b"\nx: "16:32"\nname: "a b"\np: "\\\\${HOME}"\n'
                    'a:\n  action: "train"\n  SGD:\n    minibatchSize: "8"\n')
    try:
        import yaml
    except ImportError:
        return
    assert yaml.safe_load(text) == {"command": "a:b", "x": "16:32", "name": "a b", "p": "\\${HOME}",
                                    "a": {"action": "train", "SGD": {"minibatchSize": "8"}}}


def test_show_config_yaml_of_the_digits_example(capsys):
    from cntkio.config import load_config
    assert main(["show-config", DIGITS_CFG, "--format", "yaml"]) == 0
    text = capsys.readouterr().out
    assert text == to_yaml(to_tree(load_config([DIGITS_CFG])))
    assert 'digitsTrain:\n  action: "train"\n' in text and '    minibatchSize: "16:32"\n' in text
    assert main(["show-config", DIGITS_CFG, "--json"]) == 0
    assert _json(capsys)["digitsTest"]["minibatchSize"] == "360"


@pytest.mark.parametrize("config, readers", [
    ("legacy/mnist.cntk", {"mnistTrain.reader": 1437}),
    ("images/shapes.cntk", {"shapesTrain.reader": 240}),
    ("speech/speech.cntk", {"speechTrain.reader": 3817, "speechTest.reader": 1231}),
    ("brainscript/digits_inline.cntk", {"trainNetwork.reader": 1437}),
])
def test_inspect_the_shipped_examples(config, readers, capsys):
    assert main(["inspect", f"configFile={paths.REPO / 'examples' / config}", "--json", "--head", "1"]) == 0
    r = _json(capsys)
    for path, sequences in readers.items():
        assert r[path]["sequences"] == sequences and len(r[path]["head"]) == 1


def test_bench_prints_the_shuffle_quality_of_global_randomization(tmp_path, capsys):
    from cntkio.deserializers.cbf import ctf2bin
    text = tmp_path / "o.ctf"
    text.write_text("".join(f"{i} |x {i}\n" for i in range(4000)))
    f = tmp_path / "o.cbf"
    ctf2bin(str(text), str(f), {"x": StreamDef(field="x", shape=1)})
    assert main(["bench", str(f), "--randomize", "block", "--json"]) == 0
    block = _json(capsys)[str(f)]["shuffle"]
    assert main(["bench", str(f), "--randomize", "global", "--json"]) == 0
    glob = _json(capsys)[str(f)]["shuffle"]
    # one chunk (4000 short lines): the block randomizer's window holds it all, and so both shuffle
    # it whole; the global order is a uniform-looking permutation: correlation ~0, distance ~1/3
    assert glob["sequences"] == block["sequences"] == 4000
    assert abs(glob["rank_correlation"]) < 0.06 and 0.30 < glob["mean_distance"] < 0.37
    assert main(["bench", str(f), "--randomize", "sideways"]) != 0


@pytest.mark.parametrize("window", [0, 1000])
def test_sweep_order_is_the_delivery_order_with_global_randomization(tmp_path, window):
    from cntkio import CBFDeserializer
    from cntkio.deserializers.cbf import ctf2bin
    f = _ordinal_file(tmp_path)
    cbf = tmp_path / "o.cbf"
    ctf2bin(str(f), str(cbf), {"x": StreamDef(field="x", shape=1)}, chunk_size=None, ctf_chunk_size=300)
    src = MinibatchSource(CBFDeserializer(str(cbf)), max_sweeps=1, randomization_window_in_chunks=window,
                          randomization_seed=7, global_randomization=True)
    order = src.sweep_order(0)
    delivered = []
    while True:
        mb = src.next_minibatch(7)
        if not mb:
            break
        delivered += [int(s[0, 0]) for s in mb["x"].as_sequences()]
    assert order.tolist() == delivered and sorted(delivered) == list(range(400))
    assert (order.tolist() == list(range(400))) == (window == 0)   # window 0: not randomized
    src.close()
