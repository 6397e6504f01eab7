"""The pieces of the model actions that need no reader: the SimpleNetworkBuilder network, model
files, CNTK's SGD update rule and the SGD section's schedules."""
from __future__ import annotations

import math
import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cntkio.actions._params import get_list, get_schedule, schedule_value, to_list
from cntkio.actions.network import spec_from_config
from cntkio.actions.sgd import CntkSGD, SGDParams
from cntkio.config import parse_config
from cntkio.errors import CntkioError, ConfigError, NotImplementedInCntkio
from cntkio.networks import NetworkSpec, SimpleNetwork, epoch_model_path, load_model, save_model


# --- network ---------------------------------------------------------------------------------------
def test_network_from_config_names_and_shapes():
    cfg = parse_config("SimpleNetworkBuilder=[layerSizes=4:3:2; layerTypes=Tanh; "
                       "trainingCriterion=CrossEntropyWithSoftmax; evalCriterion=ErrorPrediction]")
    spec = spec_from_config(cfg("SimpleNetworkBuilder"))
    assert spec.layer_sizes == [4, 3, 2]
    assert spec.layer_types == ["Tanh"]
    assert spec.eval_criterion == "ClassificationError"       # ErrorPrediction is the old name
    net = SimpleNetwork(spec)
    assert net.W0.shape == (3, 4) and net.B0.shape == (3,) and net.W1.shape == (2, 3)
    assert net.node_names() == ["features", "W0", "B0", "H1", "W1", "B1", "HLast", "PosteriorProb",
                                "labels", "CrossEntropyWithSoftmax", "EvalClassificationError"]
    assert torch.count_nonzero(net.B0) == 0                   # biases start at zero
    assert net.W0.abs().max() <= 0.05                          # uniform in +-0.05*initValueScale


def test_network_forward_matches_hand_computation():
    spec = NetworkSpec(layer_sizes=[2, 2, 2], layer_types=["Sigmoid"], training_criterion="SquareError",
                       eval_criterion="ClassificationError")
    net = SimpleNetwork(spec, dtype=torch.float64)
    with torch.no_grad():
        net.W0.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        net.B0.copy_(torch.tensor([0.0, -1.0]))
        net.W1.copy_(torch.tensor([[1.0, 1.0], [-1.0, 0.0]]))
        net.B1.copy_(torch.tensor([0.5, 0.0]))
    x = torch.tensor([[0.0, 0.5]], dtype=torch.float64)
    h = torch.sigmoid(torch.tensor([0.0, 0.0], dtype=torch.float64))          # [0.5, 0.5]
    expected = torch.tensor([[h[0] + h[1] + 0.5, -h[0]]])                    # [1.5, -0.5]
    out = net(x)
    assert torch.allclose(out, expected.double())
    y = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    # SquareError is the plain sum of squares, not halved: 0.5^2 + 0.5^2
    assert net.criterion(out, y).item() == pytest.approx(0.5)
    assert net.evaluation(out, y).item() == 0.0
    assert net.evaluation(out, torch.tensor([[0.0, 1.0]], dtype=torch.float64)).item() == 1.0


def test_cross_entropy_is_summed_over_samples():
    spec = NetworkSpec(layer_sizes=[3, 3], layer_types=[])
    net = SimpleNetwork(spec, dtype=torch.float64)
    logits = torch.tensor([[0.0, 0.0, 0.0], [math.log(2.0), 0.0, 0.0]], dtype=torch.float64)
    labels = torch.tensor([[1.0, 0, 0], [1.0, 0, 0]], dtype=torch.float64)
    # -log(1/3) - log(2/4)
    assert net.criterion(logits, labels).item() == pytest.approx(math.log(3) + math.log(2))


def test_mean_var_norm_floors_variance():
    spec = NetworkSpec(layer_sizes=[2, 2], layer_types=[], apply_mean_var_norm=True)
    net = SimpleNetwork(spec, dtype=torch.float64)
    net.set_mean_var_norm(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([4.0, 0.0], dtype=torch.float64))
    assert net.InvStdOfFeatures.tolist() == [0.5, pytest.approx(1e5)]
    assert "MVNormalizedFeatures" in net.nodes(torch.zeros(1, 2, dtype=torch.float64))


@pytest.mark.parametrize("text, error", [
    ("layerSizes=4", ConfigError),
    ("layerSizes=4:0:2", ConfigError),
    ("layerSizes=4:3:2; layerTypes=Softplus", ConfigError),
    ("layerSizes=4:3:3:2; layerTypes=Tanh:Sigmoid:Tanh", ConfigError),
    ("layerSizes=4:3:2; trainingCriterion=Hinge", ConfigError),
    ("layerSizes=4:3:2; rnnType=NCELSTM", NotImplementedInCntkio),
    ("layerSizes=4:3:2; rnnType=LSTM; lookupTableOrder=1", ConfigError),
    ("layerTypes=Tanh", ConfigError),
])
def test_bad_network_sections_are_refused(text, error):
    cfg = parse_config(f"SimpleNetworkBuilder=[{text}]")
    with pytest.raises(error) as info:
        spec_from_config(cfg("SimpleNetworkBuilder"))
    assert "SimpleNetworkBuilder" in str(info.value)


def test_per_layer_types():
    spec = spec_from_config(parse_config("b=[layerSizes=4:3:3:2; layerTypes=Tanh:RectifiedLinear]")("b"))
    assert spec.layer_types == ["Tanh", "RectifiedLinear"]


# --- model files -----------------------------------------------------------------------------------
def test_epoch_model_path_follows_cntk():
    assert epoch_model_path("m/x.dnn", 1, 3) == "m/x.dnn.1"
    assert epoch_model_path("m/x.dnn", 2, 3) == "m/x.dnn.2"
    assert epoch_model_path("m/x.dnn", 3, 3) == "m/x.dnn"        # the last epoch is the final model


def test_model_file_round_trip(tmp_path):
    net = SimpleNetwork(NetworkSpec(layer_sizes=[5, 4, 3], layer_types=["RectifiedLinear"]), dtype=torch.float64)
    opt = CntkSGD(net.parameters())
    for s in opt.smoothed:
        s.fill_(0.25)
    path = str(tmp_path / "sub" / "model.dnn.2")
    save_model(path, net, epoch=2, optimizer=opt.state_dict(), reader_checkpoint={"minibatchSourcePosition": 70})
    assert sorted(os.listdir(tmp_path / "sub")) == ["model.dnn.2"]     # no temp file left behind
    mf = load_model(path)
    assert mf.epoch == 2 and mf.reader_checkpoint == {"minibatchSourcePosition": 70}
    assert mf.network.spec == net.spec
    assert next(mf.network.parameters()).dtype == torch.float64
    for a, b in zip(mf.network.parameters(), net.parameters()):
        assert torch.equal(a, b)
    opt2 = CntkSGD(mf.network.parameters())
    opt2.load_state_dict(mf.optimizer)
    assert all(torch.all(s == 0.25) for s in opt2.smoothed)
    assert load_model(path, dtype=torch.float32).network.W0.dtype == torch.float32


def test_load_model_errors(tmp_path):
    with pytest.raises(CntkioError, match="does not exist"):
        load_model(str(tmp_path / "nope"))
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a model")
    with pytest.raises(CntkioError, match="not a cntkio model file"):
        load_model(str(bad))
    torch.save({"format": "other"}, tmp_path / "other")
    with pytest.raises(CntkioError, match="expected format"):
        load_model(str(tmp_path / "other"))


# --- SGD update rule -------------------------------------------------------------------------------
def _one_param(value=1.0):
    p = torch.nn.Parameter(torch.tensor([value], dtype=torch.float64))
    return p


def test_unit_gain_momentum_update():
    p = _one_param()
    opt = CntkSGD([p])
    p.grad = torch.tensor([2.0], dtype=torch.float64)      # summed over n=2 samples
    opt.step(2, lr_per_sample=0.1, momentum_per_sample=0.5)  # minibatch momentum 0.5^2 = 0.25
    assert p.item() == pytest.approx(1.0 - 0.75 * 0.1 * 2.0)                 # 0.85
    opt.step(2, lr_per_sample=0.1, momentum_per_sample=0.5)
    assert p.item() == pytest.approx(0.85 - (0.25 * 0.15 + 0.15))           # 0.6625


def test_classic_momentum_and_l2():
    p = _one_param()
    opt = CntkSGD([p], unit_gain=False, l2_reg_weight=0.01)
    p.grad = torch.tensor([2.0], dtype=torch.float64)
    opt.step(2, lr_per_sample=0.1, momentum_per_sample=0.0)
    # gradient + L2RegWeight * n * w = 2 + 0.01*2*1
    assert p.item() == pytest.approx(1.0 - 0.1 * 2.02)


def test_gradient_clipping_per_sample():
    p = _one_param()
    opt = CntkSGD([p], clipping_threshold_per_sample=0.5)
    p.grad = torch.tensor([10.0], dtype=torch.float64)
    opt.step(4, lr_per_sample=1.0, momentum_per_sample=0.0)   # clipped to 0.5 * 4 = 2
    assert p.item() == pytest.approx(-1.0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=6), st.floats(1e-3, 0.5), st.integers(1, 64))
def test_zero_momentum_is_plain_sgd(grads, lr, n):
    p = _one_param(0.0)
    opt = CntkSGD([p])
    expected = 0.0
    for g in grads:
        p.grad = torch.tensor([g], dtype=torch.float64)
        opt.step(n, lr, 0.0)
        expected -= lr * g
    assert p.item() == pytest.approx(expected, abs=1e-9)


# --- SGD section -----------------------------------------------------------------------------------
def test_schedules_per_epoch():
    cfg = parse_config("t=[minibatchSize=32:64; SGD=[learningRatesPerMB=0.8*2:0.2; momentumPerMB=0.9; maxEpochs=4]]")
    p = SGDParams.from_config(cfg("t")("SGD"), cfg("t"))
    assert [p.mb_size(e) for e in range(4)] == [32, 64, 64, 64]          # minibatchSize found up the chain
    assert [p.lr_per_sample(e) for e in range(4)] == pytest.approx([0.8 / 32, 0.8 / 64, 0.2 / 64, 0.2 / 64])
    assert p.momentum_per_sample_of(0) ** 32 == pytest.approx(0.9)
    assert p.momentum_per_sample_of(1) ** 64 == pytest.approx(0.9)
    assert p.epoch_size == 0 and p.max_epochs == 4


def test_per_sample_rates_and_time_constant():
    cfg = parse_config("SGD=[learningRatesPerSample=0.01:0.005; momentumAsTimeConstant=100; maxEpochs=2]")
    p = SGDParams.from_config(cfg("SGD"), cfg)
    assert [p.lr_per_sample(e) for e in range(3)] == [0.01, 0.005, 0.005]
    assert p.momentum_per_sample_of(0) == pytest.approx(math.exp(-1 / 100))
    assert p.mb_size(0) == 256                                               # CNTK's default


def test_default_momentum_is_0_9_per_minibatch():
    p = SGDParams.from_config(parse_config("SGD=[learningRatesPerMB=1; minibatchSize=10; maxEpochs=1]")("SGD"), None)
    assert p.momentum_per_sample_of(0) ** 10 == pytest.approx(0.9)


@pytest.mark.parametrize("text, error, where", [
    ("maxEpochs=1", ConfigError, "learningRatesPerMB"),
    ("learningRatesPerMB=1; learningRatesPerSample=1; maxEpochs=1", ConfigError, "learningRatesPerMB"),
    ("learningRatesPerMB=1; momentumPerMB=0.9; momentumPerSample=0.9; maxEpochs=1", ConfigError, "momentumPerSample"),
    ("learningRatesPerMB=1", ConfigError, "maxEpochs"),
    ("learningRatesPerMB=1; maxEpochs=1; minibatchSize=0", ConfigError, "minibatchSize"),
    ("learningRatesPerMB=1; maxEpochs=1; gradUpdateType=AdaDelta", ConfigError, "gradUpdateType"),
    ("learningRatesPerMB=1; maxEpochs=1; gradUpdateType=AdaGrad; useNAG=true", ConfigError, "useNAG"),
    ("learningRatesPerMB=1; maxEpochs=1; AutoAdjust=[autoAdjustLR=Sometimes]", ConfigError, "autoAdjustLR"),
    ("learningRatesPerMB=1; maxEpochs=2; minibatchSize=16; AutoAdjust=[autoAdjustMinibatch=true]", ConfigError,
     "minibatchSize"),
    ("maxEpochs=2; AutoAdjust=[autoAdjustLR=SearchBeforeEpoch; autoAdjustMinibatch=true]", ConfigError,
     "autoAdjustMinibatch"),
    ("learningRatesPerMB=1; maxEpochs=1; truncated=true", NotImplementedInCntkio, "truncated"),
    ("learningRatesPerMB=1; maxEpochs=1; doGradientCheck=true", NotImplementedInCntkio, "doGradientCheck"),
    ("learningRatesPerMB=1; maxEpochs=1; dropoutRate=0.5:1.5", ConfigError, "dropoutRate"),
    ("learningRatesPerMB=1; maxEpochs=1; L1RegWeight=-1", ConfigError, "L1RegWeight"),
])
def test_bad_sgd_sections(text, error, where):
    cfg = parse_config(f"SGD=[{text}]")
    with pytest.raises(error) as info:
        SGDParams.from_config(cfg("SGD"), cfg)
    assert where in str(info.value)


def test_array_values():
    assert to_list("256:512*3:1024") == ["256", "512", "512", "512", "1024"]
    cfg = parse_config("a=0.8*2:0.2\nb={|1|2*2}")
    assert get_schedule(cfg, "a") == [0.8, 0.8, 0.2]
    assert get_list(cfg, "b") == ["1", "2", "2"]
    assert schedule_value([1, 2], 5) == 2


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["0.5", "1", "0.25", "2e-3"]), st.integers(1, 4)), min_size=1, max_size=4),
       st.integers(0, 20))
def test_schedule_text_expands_per_epoch(pairs, epoch):
    text = ":".join(f"{v}*{n}" for v, n in pairs)
    expanded = [float(v) for v, n in pairs for _ in range(n)]
    schedule = get_schedule(parse_config(f"lr={text}"), "lr")
    assert schedule == expanded
    assert schedule_value(schedule, epoch) == expanded[min(epoch, len(expanded) - 1)]


# --- device, precision, threads --------------------------------------------------------------------
def test_device_and_precision():
    from cntkio.actions._common import resolve_device, resolve_dtype
    assert resolve_device(parse_config("deviceId=cpu")) == torch.device("cpu")
    assert resolve_device(parse_config("deviceId=-1")) == torch.device("cpu")
    auto = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    assert resolve_device(parse_config("x=1")) == auto                 # auto is the default
    assert resolve_device(parse_config("deviceId=auto")) == auto
    with pytest.raises(NotImplementedInCntkio, match="torchrun"):
        resolve_device(parse_config("deviceId=all"))
    with pytest.raises(NotImplementedInCntkio, match="torchrun"):
        resolve_device(parse_config("deviceId=*2"))
    with pytest.raises(ConfigError, match="deviceId"):
        resolve_device(parse_config("deviceId=gpu"))
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="GPU 0 is not available"):
            resolve_device(parse_config("deviceId=0"))
    assert resolve_dtype(parse_config("x=1")) == torch.float32
    assert resolve_dtype(parse_config("precision=double")) == torch.float64
    with pytest.raises(ConfigError, match="precision"):
        resolve_dtype(parse_config("precision=quad"))


def test_num_cpu_threads():
    from cntkio.actions._common import apply_cpu_threads
    before = torch.get_num_threads()
    try:
        apply_cpu_threads(parse_config("numCPUThreads=1"))
        assert torch.get_num_threads() == 1
        apply_cpu_threads(parse_config("numCPUThreads=0"))           # 0 leaves it as it is
        assert torch.get_num_threads() == 1
        with pytest.raises(ConfigError, match="numCPUThreads"):
            apply_cpu_threads(parse_config("numCPUThreads=-2"))
    finally:
        torch.set_num_threads(before)


# --- text output of write/dumpnode -----------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.data())
def test_write_format_reads_back_exactly(rows, cols, data):
    from cntkio.actions.write import format_rows
    import numpy as np
    vals = data.draw(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=rows * cols,
                              max_size=rows * cols))
    a32 = np.array(vals, dtype=np.float32).reshape(rows, cols)
    text = format_rows(a32, "%.9g")
    assert text.count("\n") == rows
    back = np.array([[float(v) for v in ln.split(" ")] for ln in text.splitlines()], dtype=np.float32)
    assert np.array_equal(back, a32)
    a64 = a32.astype(np.float64) / 3
    back64 = np.array([[float(v) for v in ln.split(" ")] for ln in format_rows(a64, "%.17g").splitlines()])
    assert np.array_equal(back64, a64)
