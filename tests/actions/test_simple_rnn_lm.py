"""SimpleNetworkBuilder's language-model kinds built as CNTK's builder built them: rnnType LBLM
(log-bilinear), NPLM (CNTK's DNN LM over the last 5 words), CLSTM (the conditional class-based
LSTM with a binaryFeature global bias): parameters by CNTK's names and shapes, node values against
straightforward transcriptions, the criterion on hand-computed cases, a short training run of each
through ``cntkio configFile=``, the refused kinds (NCELSTM, CRF) with their reasons, and the
section's key table (every key used, or announced with one info line)."""
from __future__ import annotations

import logging
import math
import re
from pathlib import Path

import pytest
import torch

from cntkio.networks.simple_rnn import RecurrentSpec, build_recurrent, recurrent_ndl
from cntkio.actions.network import SIMPLE_NETWORK_KEYS, spec_from_config
from cntkio.actions.runner import run
from cntkio.config import parse_config
from cntkio.errors import ConfigError, NotImplementedInCntkio

import paths


def _params(net):
    return {k: v.detach() for k, v in net.named_parameters()}


def _shapes(net):
    return {k: tuple(v.shape) for k, v in net.named_parameters()}


def _one_seq(n):
    return dict(positions=torch.arange(n), lengths=torch.full((n,), n))


# --- LBLM ---------------------------------------------------------------------------------------------
def test_lblm_is_cntks_log_bilinear_network():
    spec = RecurrentSpec("LBLM", [4, 3, 4], ma_order=2, recurrent_layers=[1])
    net = build_recurrent(spec, dtype=torch.float64)
    assert _shapes(net) == {"DD1": (4, 4), "DD2": (4, 4), "U0": (3, 4), "R1": (3, 3), "bi0": (3, 1), "W1": (4, 3)}
    P = _params(net)
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    got = net.evaluate({"features": x}, ["H1"], **_one_seq(3))["H1"]
    want, prev_hr = [], torch.full((3,), 0.1, dtype=torch.float64)
    for t in range(3):
        past = [x[t - k] if t >= k else torch.full((4,), 0.1, dtype=torch.float64) for k in (1, 2)]
        ma = x[t] + P["DD1"] @ past[0] + P["DD2"] @ past[1]            # linear: no non-linearity anywhere
        hr = P["R1"] @ prev_hr + P["U0"] @ ma                           # the recurrence is taken before the bias
        prev_hr = hr
        want.append(hr + P["bi0"][:, 0])
    assert torch.allclose(got, torch.stack(want), atol=1e-12)


def test_lblm_criterion_on_a_hand_computed_case():
    net = build_recurrent(RecurrentSpec("LBLM", [4, 3, 4]), dtype=torch.float64)
    with torch.no_grad():
        net.tensor("W1").zero_()                    # every output 0: softmax uniform over 4 words
    x = torch.eye(4, dtype=torch.float64)[[0, 2, 1]]
    y = torch.eye(4, dtype=torch.float64)[[2, 1, 3]]
    out = net.evaluate({"features": x, "labels": y}, ["CrossEntropyWithSoftmax"], **_one_seq(3))
    assert out["CrossEntropyWithSoftmax"].item() == pytest.approx(3 * math.log(4), rel=1e-12)


def test_lblm_with_an_embedding_uses_cntks_names():
    spec = RecurrentSpec("LBLM", [12, 2, 5, 4], lookup_table_order=3)
    text = recurrent_ndl(spec)
    assert "Lookuptatble = LookupTable(E0, features)" in text            # CNTK's spelling
    assert _shapes(build_recurrent(spec)) == {"E0": (2, 4), "U1": (5, 6), "bi1": (5, 1), "W2": (4, 5)}


# --- NPLM ---------------------------------------------------------------------------------------------
def test_nplm_first_layer_sees_the_last_five_inputs():
    spec = RecurrentSpec("NPLM", [4, 3, 2, 4], recurrent_layers=[1, 2], layer_types=["Sigmoid"],
                         default_hidden_activity=0.25)
    net = build_recurrent(spec, dtype=torch.float64)
    assert _shapes(net) == {"WXI2": (3, 4), "WXI3": (3, 4), "WXI4": (3, 4), "WXI1": (3, 4), "WXI": (3, 4),
                            "bi0": (3, 1), "U1": (2, 3), "W1": (2, 2), "W2": (4, 2)}
    P = _params(net)
    x = torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    out = net.evaluate({"features": x}, ["H1", "H2"], **_one_seq(6))
    h2, want1, want2 = torch.full((2,), 0.25, dtype=torch.float64), [], []
    for t in range(6):
        past = [x[t - k] if t >= k else torch.full((4,), 0.25, dtype=torch.float64) for k in range(5)]
        s = P["WXI"] @ past[0] + sum(P[f"WXI{k}"] @ past[k] for k in range(1, 5))
        h1 = torch.tanh(s) + P["bi0"][:, 0]                            # the bias after the Tanh, as CNTK
        h2 = torch.sigmoid(P["U1"] @ h1 + P["W1"] @ h2)
        want1.append(h1)
        want2.append(h2)
    assert torch.allclose(out["H1"], torch.stack(want1), atol=1e-12)
    assert torch.allclose(out["H2"], torch.stack(want2), atol=1e-12)


def test_nplm_criterion_on_a_hand_computed_case():
    net = build_recurrent(RecurrentSpec("NPLM", [5, 3, 5], recurrent_layers=[1]), dtype=torch.float64)
    with torch.no_grad():
        net.tensor("W1").zero_()
    x = torch.eye(5, dtype=torch.float64)[[0, 1]]
    y = torch.eye(5, dtype=torch.float64)[[1, 2]]
    out = net.evaluate({"features": x, "labels": y}, ["CrossEntropyWithSoftmax"], **_one_seq(2))
    assert out["CrossEntropyWithSoftmax"].item() == pytest.approx(2 * math.log(5), rel=1e-12)


# --- CLSTM --------------------------------------------------------------------------------------------
def test_clstm_adds_the_binary_feature_global_bias():
    spec = RecurrentSpec("CLSTM", [5, 2, 3, 5], lookup_table_order=1, nbr_class=2, aux_feat_dim=2)
    net = build_recurrent(spec, dtype=torch.float64)
    shapes = _shapes(net)
    assert shapes["AuxTrans0"] == (3, 2) and shapes["W2"] == (3, 5) and shapes["WeightForClassPostProb"] == (2, 3)
    assert len(shapes) == 1 + 15 + 3                    # E0, the LSTM's 15, AuxTrans0, W2, WeightForClassPostProb
    P = _params(net)
    x = torch.eye(5, dtype=torch.float64)[[0, 3, 4]]
    b = torch.tensor([[1.0, 0.0]] * 3, dtype=torch.float64)
    # words 0..2 are class 0, 3..4 class 1: labels (word, class, first, end)
    lab = torch.tensor([[3, 1, 3, 5], [4, 1, 3, 5], [1, 0, 0, 3]], dtype=torch.float64)
    out = net.evaluate({"features": x, "binaryFeature": b, "labels": lab},
                       ["LSTM0", "PlusGlobalBias", "TrainNodeClassBasedCrossEntropy"], **_one_seq(3))
    bias = torch.sigmoid(P["AuxTrans0"] @ b[0])
    assert torch.allclose(out["PlusGlobalBias"], out["LSTM0"] + bias, atol=1e-12)
    with torch.no_grad():
        net.tensor("W2").zero_()
        net.tensor("WeightForClassPostProb").zero_()
    out = net.evaluate({"features": x, "binaryFeature": b, "labels": lab}, ["TrainNodeClassBasedCrossEntropy"],
                       **_one_seq(3))
    # uniform class (log 2) and uniform word within its class (log 2, log 2, log 3)
    want = 3 * math.log(2) + 2 * math.log(2) + math.log(3)
    assert out["TrainNodeClassBasedCrossEntropy"].item() == pytest.approx(want, rel=1e-12)


# --- training runs ------------------------------------------------------------------------------------
def _previous_symbol_ctf(path: Path, n: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    lines = []
    for s in range(n):
        length = int(torch.randint(3, 8, (1,), generator=gen))
        sym = torch.randint(0, 4, (length,), generator=gen).tolist()
        for t in range(length):
            prev = 4 if t == 0 else sym[t - 1]
            x = " ".join("1" if k == sym[t] else "0" for k in range(4))
            y = " ".join("1" if k == prev else "0" for k in range(5))
            lines.append(f"{s} |features {x} |labels {y}")
    path.write_text("\n".join(lines) + "\n")


READER = ("[ readerType = CNTKTextFormatReader ; file = {} ; randomize = {}\n"
          "  input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 5 ; format = dense ] ] ]")


@pytest.mark.parametrize("network, lr", [
    ("rnnType = LBLM ; layerSizes = 4:8:5 ; maOrder = 1", 0.02),
    ("rnnType = NPLM ; layerSizes = 4:12:5 ; recurrentLayer = 1", 0.05),
])
def test_language_models_learn_the_previous_symbol(tmp_path, network, lr):
    """The label is the previous input symbol (a start symbol at t = 0): LBLM reaches it through
    its delayed input (maOrder = 1), NPLM through its 4-word history."""
    _previous_symbol_ctf(tmp_path / "train.ctf", 200, 1)
    _previous_symbol_ctf(tmp_path / "test.ctf", 60, 2)
    cfg = tmp_path / "lm.cntk"
    cfg.write_text(f"""command = train:test
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {tmp_path}/lm.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ {network} ; initValueScale = 10 ]
    SGD = [ minibatchSize = 32 ; learningRatesPerSample = {lr} ; momentumPerMB = 0.9 ; maxEpochs = 5 ]
    reader = {READER.format(tmp_path / 'train.ctf', 'true')}
]
test = [ action = test ; reader = {READER.format(tmp_path / 'test.ctf', 'false')} ]
""")
    (_, _, train), (_, _, test) = run([f"configFile={cfg}"])
    crit = [e.averages["CrossEntropyWithSoftmax"] for e in train.epochs]
    assert crit[0] > crit[-1]
    assert test.averages["EvalClassificationError"] < 0.05       # chance is 0.75 or worse


def test_clstm_learns_from_the_binary_feature(tmp_path):
    """The next word is (word + 1) mod 3 in class 0 or 1 as the sequence's binaryFeature says: the
    words alone leave log 2 per word (the class); the global bias from binaryFeature removes it."""
    gen = torch.Generator().manual_seed(4)
    lines = []
    for s in range(160):
        bit = int(torch.randint(0, 2, (1,), generator=gen))
        w = int(torch.randint(0, 6, (1,), generator=gen))
        for _ in range(5):
            nxt = (w % 3 + 1) % 3 + 3 * bit
            lab = f"{nxt} {bit} {3 * bit} {3 * bit + 3}"
            x = " ".join("1" if k == w else "0" for k in range(6))
            b = "1 0" if bit == 0 else "0 1"
            lines.append(f"{s} |features {x} |binaryFeature {b} |labels {lab}")
            w = nxt
    (tmp_path / "train.ctf").write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "c.cntk"
    cfg.write_text(f"""command = train
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {tmp_path}/c.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ rnnType = CLSTM ; layerSizes = 6:6:12:6 ; lookupTableOrder = 1 ; nbrClass = 2
                             auxfeatdim = 2 ; initValueScale = 10 ]
    SGD = [ minibatchSize = 40 ; learningRatesPerSample = 0.05 ; momentumPerMB = 0.9 ; maxEpochs = 8 ]
    reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/train.ctf ; randomize = true
               input = [ features = [ dim = 6 ; format = dense ] ; binaryFeature = [ dim = 2 ; format = dense ]
                         labels = [ dim = 4 ; format = dense ] ] ]
]
""")
    (_, _, train), = run([f"configFile={cfg}"])
    crit = [e.averages["TrainNodeClassBasedCrossEntropy"] for e in train.epochs]
    assert crit[0] > 1.0 and crit[-1] < 0.35                   # below log 2 = 0.69: binaryFeature is used


# --- refusals and bad sections ------------------------------------------------------------------------
@pytest.mark.parametrize("text, err, where", [
    ("rnnType=NPLM; layerSizes=10:6:10", ConfigError, "recurrentLayer"),
    ("rnnType=NPLM; layerSizes=10:6:4:10; recurrentLayer=1", ConfigError, "recurrentLayer=1:2"),
    ("rnnType=LBLM; layerSizes=12:3:6:4; lookupTableOrder=3; maOrder=1", ConfigError, "maOrder"),
    ("rnnType=LBLM; layerSizes=12:3:6:5:4; lookupTableOrder=3", ConfigError, "layerSizes"),
    ("rnnType=CLSTM; layerSizes=10:2:6:10; nbrClass=2", ConfigError, "lookupTableOrder"),
    ("rnnType=CLSTM; layerSizes=10:2:6:10; lookupTableOrder=1; nbrClass=2; auxfeatdim=0", ConfigError, "auxfeatdim"),
    ("rnnType=NCELSTM; layerSizes=10:2:6:10; lookupTableOrder=1", NotImplementedInCntkio, "inputs 0, 1, and 3"),
    ("rnnType=CRF; layerSizes=10:6:10", NotImplementedInCntkio, "COMING_SOON"),
])
def test_bad_and_refused_sections(text, err, where):
    with pytest.raises(err, match=re.escape(where)):
        spec_from_config(parse_config(f"SimpleNetworkBuilder=[{text}]")("SimpleNetworkBuilder"))


# --- the key table ------------------------------------------------------------------------------------
def test_keys_without_effect_are_announced(caplog):
    text = ("rnnType=LSTM; layerSizes=10:6:10; sparseinput=true; labelEmbeddingSize=5; word2cls=w.txt; "
            "cls2index=c.txt; noise_number=10; outputLayerSize=10; auxfeatdim=5; maOrder=2; nbrClass=3; "
            "directConnect=1; streamSizes=3:4")
    with caplog.at_level(logging.INFO, logger="cntkio"):
        spec = spec_from_config(parse_config(f"SimpleNetworkBuilder=[{text}]")("SimpleNetworkBuilder"))
    assert spec.ma_order == 0 and spec.aux_feat_dim == 20
    for key in ("sparseinput", "labelEmbeddingSize", "word2cls", "cls2index", "noise_number", "outputLayerSize",
                "auxfeatdim", "maOrder", "nbrClass", "directConnect", "streamSizes"):
        lines = [r.getMessage() for r in caplog.records if f"SimpleNetworkBuilder.{key}=" in r.getMessage()]
        assert len(lines) == 1 and "no effect" in lines[0] and "rnnType=LSTM" in lines[0], key
    announced = {m.group(1) for r in caplog.records
                 if (m := re.match(r"SimpleNetworkBuilder\.(\w+)=.* is accepted", r.getMessage()))}
    assert "rnnType" not in announced and "layerSizes" not in announced and len(announced) == 11


def test_the_key_table_lists_every_key_the_builder_reads():
    src = paths.SRC / "cntkio" / "actions"
    code = (src / "network.py").read_text()
    read = set(re.findall(r"get_(?:str|int|float|bool|list)\(builder, \"(\w+)\"", code))
    read |= set(re.findall(r"builder\.exists\(\"(\w+)\"\)", code))
    assert read and read <= set(SIMPLE_NETWORK_KEYS), read - set(SIMPLE_NETWORK_KEYS)
    # CNTK 2.7's SimpleNetworkBuilder.h read these (Init, InitRecurrentConfig, InitAttentionNetworkConfig)
    cntk = {"initValueScale", "layerTypes", "uniformInit", "applyMeanVarNorm", "needPrior", "addDropoutNodes",
            "outputLayerSize", "layerSizes", "trainingCriterion", "evalCriterion", "directConnect", "word2cls",
            "cls2index", "vocabSize", "nbrClass", "noise_number", "recurrentLayer", "defaultHiddenActivity",
            "rnnType", "maOrder", "lookupTableOrder", "streamSizes", "lookupTableOrderSizes", "labelEmbeddingSize",
            "constForgetGateValue", "constInputGateValue", "constOutputGateValue", "forgetGateInitVal",
            "inputGateInitVal", "outputGateInitVal", "sparseinput", "auxfeatdim", "deviceId"}
    assert cntk <= set(SIMPLE_NETWORK_KEYS)
