"""SimpleNetworkBuilder's recurrent kinds (rnnType): an LSTM config trained through
``cntkio configFile=`` on a generated sequence task (output the previous symbol: only the
recurrence can remember it), lookupTableOrder's embedding, the class-based LSTM output
(CLASSLSTM) on the LMSequenceReader's word classes, SIMPLERNN, and the refusals."""
from __future__ import annotations

import math

import pytest
import torch

from cntkio.networks import load_model
from cntkio.networks.simple_rnn import RecurrentSpec, build_recurrent, recurrent_ndl
from cntkio.actions.network import spec_from_config
from cntkio.actions.runner import run
from cntkio.config import parse_config
from cntkio.errors import ConfigError, NotImplementedInCntkio


def _write_sequences(path, n, seed):
    gen = torch.Generator().manual_seed(seed)
    lines = []
    for s in range(n):
        length = int(torch.randint(3, 9, (1,), generator=gen))
        sym = torch.randint(0, 4, (length,), generator=gen).tolist()
        for t in range(length):
            prev = 4 if t == 0 else sym[t - 1]
            x = " ".join("1" if k == sym[t] else "0" for k in range(4))
            y = " ".join("1" if k == prev else "0" for k in range(5))
            lines.append(f"{s} |features {x} |labels {y}")
    path.write_text("\n".join(lines) + "\n")


READER = ("[ readerType = CNTKTextFormatReader ; file = {} ; randomize = {}\n"
          "  input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 5 ; format = dense ] ] ]")


def test_lstm_config_learns_the_previous_symbol(tmp_path):
    _write_sequences(tmp_path / "train.ctf", 300, 1)
    _write_sequences(tmp_path / "test.ctf", 100, 2)
    cfg = tmp_path / "lstm.cntk"
    cfg.write_text(f"""command = train:test:unrolled
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {tmp_path}/lstm.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ rnnType = LSTM ; layerSizes = 4:16:5 ; initValueScale = 10 ]
    SGD = [ minibatchSize = 64 ; learningRatesPerSample = 0.05 ; momentumPerMB = 0.9 ; maxEpochs = 6 ]
    reader = {READER.format(tmp_path / 'train.ctf', 'true')}
]
test = [ action = test ; reader = {READER.format(tmp_path / 'test.ctf', 'false')} ]
unrolled = [ action = testUnroll ; reader = {READER.format(tmp_path / 'test.ctf', 'false')} ]
""")
    (_, _, train), (_, _, test), (_, _, unrolled) = run([f"configFile={cfg}"])
    # frame by frame (CNTK's unrolled evaluation) gives the same criteria: the LSTM looks only back
    assert unrolled.samples == test.samples
    assert unrolled.averages["EvalClassificationError"] == test.averages["EvalClassificationError"]
    assert unrolled.averages["CrossEntropyWithSoftmax"] == pytest.approx(
        test.averages["CrossEntropyWithSoftmax"], rel=1e-5)
    assert test.samples == sum(1 for _ in open(tmp_path / "test.ctf"))
    assert test.averages["EvalClassificationError"] < 0.02            # stated error: under 2%
    net = load_model(str(tmp_path / "lstm.dnn")).network
    names = dict(net.named_parameters())
    for p, shape in (("WXI0", (16, 4)), ("WHI0", (16, 16)), ("WCI0", (16, 1)), ("bf0", (16, 1)), ("W1", (5, 16))):
        assert tuple(names[p].shape) == shape, p
    # without the sequence layout every sample is a sequence of its own: the memory is gone
    rows = [ln.split("|") for ln in open(tmp_path / "test.ctf")]
    x = torch.tensor([[float(v) for v in r[1].split()[1:]] for r in rows])
    y = torch.tensor([[float(v) for v in r[2].split()[1:]] for r in rows])
    with torch.no_grad():
        assert net.evaluate({"features": x, "labels": y}, ["EvalClassificationError"])[
            "EvalClassificationError"].item() / len(rows) > 0.5


def test_lstm_cell_is_cntks_peephole_lstm():
    """One LSTM layer against a straightforward PyTorch transcription of CNTK's BuildLSTMComponent."""
    spec = RecurrentSpec("LSTM", [3, 4, 2], layer_types=["Sigmoid"], default_hidden_activity=0.1,
                         forget_gate_init=0.5, input_gate_init=-0.25, output_gate_init=0.0)
    net = build_recurrent(spec, dtype=torch.float64)
    P = {k: v.detach() for k, v in net.named_parameters()}
    assert P["bf0"].flatten().tolist() == [0.5] * 4 and P["bi0"].flatten().tolist() == [-0.25] * 4
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    got = net.evaluate({"features": x}, ["LSTM0"], positions=torch.tensor([0, 1, 2, 0, 1]),
                       lengths=torch.tensor([3, 3, 3, 2, 2]))["LSTM0"]
    want = []
    for seq in (x[:3], x[3:]):
        h = torch.full((4,), 0.1, dtype=torch.float64)
        c = torch.full((4,), 0.1, dtype=torch.float64)
        for xt in seq:
            i = torch.sigmoid(P["WXI0"] @ xt + P["bi0"][:, 0] + P["WHI0"] @ h + P["WCI0"][:, 0] * c)
            f = torch.sigmoid(P["WXF0"] @ xt + P["bf0"][:, 0] + P["WHF0"] @ h + P["WCF0"][:, 0] * c)
            c = f * c + i * torch.tanh(P["WXC0"] @ xt + P["WHC0"] @ h + P["bc0"][:, 0])
            o = torch.sigmoid(P["WXO0"] @ xt + P["bo0"][:, 0] + P["WHO0"] @ h + P["WCO0"][:, 0] * c)
            h = o * torch.tanh(c)
            want.append(h)
    assert torch.allclose(got, torch.stack(want), atol=1e-12)


def test_lookup_table_order_builds_cntks_embedding():
    # layerSizes = 3 words x vocabulary 5 : embedding 2 : LSTM 6 : output 5, lookupTableOrder = 3
    cfg = parse_config("SimpleNetworkBuilder=[rnnType=LSTM; layerSizes=15:2:6:5; lookupTableOrder=3]")
    spec = spec_from_config(cfg("SimpleNetworkBuilder"))
    assert isinstance(spec, RecurrentSpec) and spec.lookup_table_order == 3
    net = build_recurrent(spec, dtype=torch.float64)
    E = dict(net.named_parameters())["E0"].detach()
    assert tuple(E.shape) == (2, 5)                                  # [layerSizes[1], layerSizes[0] / order]
    assert tuple(dict(net.named_parameters())["WXI0"].shape) == (6, 6)   # the LSTM reads 2 * 3 rows
    words = [4, 0, 2]
    x = torch.zeros(1, 15, dtype=torch.float64)
    for k, w in enumerate(words):
        x[0, 5 * k + w] = 1
    out = net.evaluate({"features": x}, ["LookupTable"], positions=torch.tensor([0]), lengths=torch.tensor([1]))
    assert torch.equal(out["LookupTable"][0], torch.cat([E[:, w] for w in words]))
    assert "LookupTable = LookupTable(E0, features)" in recurrent_ndl(spec)


@pytest.mark.parametrize("text, err, where", [
    ("rnnType=LSTM; layerSizes=10:2:6:5; lookupTableOrder=3", ConfigError, "lookupTableOrder"),
    ("rnnType=LSTM; layerSizes=10:6; lookupTableOrder=0", ConfigError, "layerSizes"),
    ("rnnType=CLASSLSTM; layerSizes=10:2:6:10", ConfigError, "lookupTableOrder"),
    ("rnnType=CLASSLSTM; layerSizes=10:2:6:10; lookupTableOrder=1", ConfigError, "nbrClass"),
    ("rnnType=NCELSTM; layerSizes=10:6:10", NotImplementedInCntkio, "NCELSTM"),
    ("rnnType=CLASSLM; layerSizes=10:6:10", ConfigError, "nbrClass"),
    ("rnnType=CLASSLM; layerSizes=10:6:10; nbrClass=2; vocabSize=12", ConfigError, "vocabSize"),
    ("rnnType=SIMPLERNN; layerSizes=10:2:6:10; lookupTableOrder=1", ConfigError, "lookupTableOrder"),
    ("rnnType=GRU; layerSizes=10:6:10", ConfigError, "rnnType"),
    ("layerSizes=10:6:10; lookupTableOrder=1", ConfigError, "lookupTableOrder"),
    ("rnnType=LSTM; layerSizes=10:6:10; constForgetGateValue=true", NotImplementedInCntkio, "constForgetGateValue"),
])
def test_bad_sections(text, err, where):
    with pytest.raises(err, match=where):
        spec_from_config(parse_config(f"SimpleNetworkBuilder=[{text}]")("SimpleNetworkBuilder"))


def test_simple_rnn_recurs_only_in_the_listed_layers():
    spec = RecurrentSpec("SIMPLERNN", [4, 6, 3, 5], recurrent_layers=[1], layer_types=["Tanh"])
    text = recurrent_ndl(spec)
    assert "HPrev1 = PastValue(6, H1" in text and "HPrev2" not in text and "B1 = Parameter(3, 1" in text
    net = build_recurrent(spec, dtype=torch.float64)
    P = {k: v.detach() for k, v in net.named_parameters()}
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    got = net.evaluate({"features": x}, ["H1"], positions=torch.tensor([0, 1, 2]), lengths=torch.tensor([3] * 3))["H1"]
    h, want = torch.full((6,), 0.1, dtype=torch.float64), []
    for xt in x:
        h = torch.tanh(P["U0"] @ xt + P["W0"] @ h)
        want.append(h)
    assert torch.allclose(got, torch.stack(want), atol=1e-12)


def test_class_lstm_criterion_is_the_class_based_cross_entropy():
    spec = RecurrentSpec("CLASSLSTM", [6, 3, 4, 6], lookup_table_order=1, nbr_class=2)
    net = build_recurrent(spec, dtype=torch.float64)
    P = {k: v.detach() for k, v in net.named_parameters()}
    # words 0..2 are class 0, 3..5 class 1: labels (word, class, first, end)
    lab = torch.tensor([[1, 0, 0, 3], [4, 1, 3, 6], [2, 0, 0, 3]], dtype=torch.float64)
    x = torch.eye(6, dtype=torch.float64)[[5, 1, 4]]
    pos, lens = torch.tensor([0, 1, 2]), torch.tensor([3, 3, 3])
    out = net.evaluate({"features": x, "labels": lab}, ["TrainNodeClassBasedCrossEntropy", "LSTM0"],
                       positions=pos, lengths=lens)
    h = out["LSTM0"].detach()
    want = 0.0
    for t, (w, c, s, e) in enumerate(lab.long().tolist()):
        cl = torch.log_softmax(P["WeightForClassPostProb"] @ h[t], 0)[c]
        wl = torch.log_softmax(h[t] @ P["W2"][:, s:e], 0)[w - s]
        want -= float(cl + wl)
    assert out["TrainNodeClassBasedCrossEntropy"].item() == pytest.approx(want, rel=1e-12)
    assert out["TrainNodeClassBasedCrossEntropy"].item() == pytest.approx(3 * math.log(2 * 3), rel=1e-2)


@pytest.mark.parametrize("network, lr", [
    ("rnnType = CLASSLSTM ; layerSizes = 7:8:16:7 ; lookupTableOrder = 1", 0.05),
    ("rnnType = CLASSLM ; layerSizes = 7:16:7 ; recurrentLayer = 1 ; layerTypes = Tanh", 0.01),
])
def test_class_based_lms_train_on_the_lm_sequence_readers_classes(tmp_path, network, lr):
    # a corpus where each word is followed by a fixed next word: the LM can learn it exactly
    words = ["a", "b", "c", "d", "e", "f"]
    nxt = {"a": "b", "b": "c", "c": "a", "d": "e", "e": "f", "f": "d"}
    gen = torch.Generator().manual_seed(5)
    lines = []
    for _ in range(120):
        w = words[int(torch.randint(0, 6, (1,), generator=gen))]
        sent = [w]
        for _ in range(5):
            sent.append(nxt[sent[-1]])
        lines.append(" ".join(sent) + " </s>")
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    vocab = ["</s>", *words]
    classes = {"</s>": 0, "a": 0, "b": 0, "c": 0, "d": 1, "e": 1, "f": 1}
    (tmp_path / "vocab.txt").write_text("".join(f"{i}\t10\t{w}\t{classes[w]}\n" for i, w in enumerate(vocab)))
    cfg = tmp_path / "lm.cntk"
    cfg.write_text(f"""command = train
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {tmp_path}/lm.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ {network} ; nbrClass = 2 ; initValueScale = 10 ]
    SGD = [ minibatchSize = 32 ; learningRatesPerSample = {lr} ; momentumPerMB = 0.9 ; maxEpochs = 8 ]
    reader = [
        readerType = LMSequenceReader
        randomize = none
        nbruttsineachrecurrentiter = 4
        wordclass = {tmp_path}/vocab.txt
        file = {tmp_path}/train.txt
        features = [ labelDim = 7 ; beginSequence = "</s>" ; endSequence = "</s>" ]
        labels = [ labelType = NextWord ; labelDim = 7 ]
    ]
]
""")
    (_, _, train), = run([f"configFile={cfg}"])
    crit = [e.averages["TrainNodeClassBasedCrossEntropy"] for e in train.epochs]
    assert crit[0] > 1.0 and crit[-1] < 0.7          # the floor is ln(6)/7 = 0.256 (first word random)


def test_lstm_with_prior_normalisation_and_dropout(tmp_path):
    """needPrior, applyMeanVarNorm and addDropoutNodes on an LSTM: the pre-computed nodes come from
    one sweep of the training data, dropout follows SGD's dropoutRate, and the output node is
    ScaledLogLikelihood = outputs - log(Prior)."""
    _write_sequences(tmp_path / "train.ctf", 40, 3)
    cfg = tmp_path / "p.cntk"
    cfg.write_text(f"""command = train
deviceId = cpu
precision = double
progressBar = false
modelPath = {tmp_path}/p.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ rnnType = LSTM ; layerSizes = 4:6:5 ; needPrior = true ; applyMeanVarNorm = true
                             addDropoutNodes = true ]
    SGD = [ minibatchSize = 16 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ; dropoutRate = 0.5 ]
    reader = {READER.format(tmp_path / 'train.ctf', 'false')}
]
""")
    run([f"configFile={cfg}"])
    net = load_model(str(tmp_path / "p.dnn")).network
    assert net.output_nodes == ["ScaledLogLikelihood"]
    rows = [ln.split("|") for ln in open(tmp_path / "train.ctf")]
    x = torch.tensor([[float(v) for v in r[1].split()[1:]] for r in rows], dtype=torch.float64)
    y = torch.tensor([[float(v) for v in r[2].split()[1:]] for r in rows], dtype=torch.float64)
    prior = net.tensor("Prior").detach().flatten()
    assert torch.allclose(prior, y.mean(0))
    assert torch.allclose(net.tensor("MeanOfFeatures").detach().flatten(), x.mean(0))
    assert "DropLSTM0" in net.graph.nodes
    net.eval()
    pos = torch.zeros(len(rows), dtype=torch.int64)
    out = net.evaluate({"features": x}, ["outputs", "ScaledLogLikelihood"], positions=pos,
                       lengths=torch.ones(len(rows), dtype=torch.int64))
    assert torch.allclose(out["ScaledLogLikelihood"], out["outputs"] - torch.log(prior))


def test_show_network_shows_the_recurrent_network(tmp_path):
    from cntkio.tools.show_network import main
    import io
    cfg = tmp_path / "s.cntk"
    cfg.write_text("command = t\nt = [ action = train\n"
                   "  SimpleNetworkBuilder = [ rnnType = LSTM ; layerSizes = 10:3:6:5 ; lookupTableOrder = 2 ] ]\n")
    out = io.StringIO()
    assert main([f"configFile={cfg}"], out=out) == 0
    text = out.getvalue()
    assert "== t: SimpleNetworkBuilder" in text and "LookupTable" in text and "LSTMCell0" in text
