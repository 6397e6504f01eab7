"""The SGD section's options, each checked for its effect against a straightforward reference
(torch.optim where the rules coincide, NumPy transcriptions of CNTK's rules elsewhere), and
through the train action on a small generated task (AutoAdjust's printed learning rates, the
rollback to the best model, minLearningRatePerSample, dropoutRate, L1 sparsity, KL adaptation)."""
from __future__ import annotations

import logging
import math
import re

import numpy as np
import pytest
import torch

from cntkio.networks import load_model
from cntkio.networks.ndl import build
from cntkio.actions.runner import run
from cntkio.actions.sgd import INFO_KEYS, SGD_KEYS, CntkSGD, SGDParams, set_dropout_rate
from cntkio.config import parse_config
from cntkio.errors import ConfigError


def _params(*values):
    return [torch.nn.Parameter(torch.tensor(v, dtype=torch.float64)) for v in values]


def _grads(rng, shapes, steps):
    return [[torch.tensor(rng.standard_normal(s)) for s in shapes] for _ in range(steps)]


# --- update rules -----------------------------------------------------------------------------------
def test_classic_momentum_equals_torch_sgd():
    rng = np.random.default_rng(0)
    mine, ref = _params([[1.0, -2.0], [0.5, 3.0]]), _params([[1.0, -2.0], [0.5, 3.0]])
    opt = CntkSGD(mine, unit_gain=False)
    topt = torch.optim.SGD(ref, lr=0.01, momentum=0.8)
    for (g,) in _grads(rng, [(2, 2)], 6):
        mine[0].grad, ref[0].grad = g.clone(), g.clone()
        opt.step(4, 0.01, 0.8 ** 0.25)            # minibatch momentum 0.8
        topt.step()
    assert torch.allclose(mine[0], ref[0], atol=1e-12)


def test_nesterov_equals_torch_sgd_nesterov():
    rng = np.random.default_rng(1)
    mine, ref = _params([0.3, -0.7, 2.0]), _params([0.3, -0.7, 2.0])
    opt = CntkSGD(mine, unit_gain=False, use_nag=True)
    topt = torch.optim.SGD(ref, lr=0.05, momentum=0.9, nesterov=True)
    for (g,) in _grads(rng, [(3,)], 8):
        mine[0].grad, ref[0].grad = g.clone(), g.clone()
        opt.step(1, 0.05, 0.9)
        topt.step()
    assert torch.allclose(mine[0], ref[0], atol=1e-12)
    plain = _params([0.3, -0.7, 2.0])
    popt = CntkSGD(plain, unit_gain=False)
    for (g,) in _grads(np.random.default_rng(1), [(3,)], 8):
        plain[0].grad = g.clone()
        popt.step(1, 0.05, 0.9)
    assert not torch.allclose(plain[0], mine[0])                 # NAG differs from plain momentum


def test_adagrad_without_multiplier_equals_torch_adagrad():
    rng = np.random.default_rng(2)
    mine, ref = _params([[1.0, 2.0, 3.0]]), _params([[1.0, 2.0, 3.0]])
    opt = CntkSGD(mine, grad_update_type="AdaGrad".lower(), norm_with_ave_multiplier=False)
    topt = torch.optim.Adagrad(ref, lr=0.1, eps=0.0)
    for (g,) in _grads(rng, [(1, 3)], 5):
        mine[0].grad, ref[0].grad = g.clone(), g.clone()
        opt.step(8, 0.1, 0.9)                     # momentum does not apply to AdaGrad
        topt.step()
    assert torch.allclose(mine[0], ref[0], rtol=1e-9, atol=1e-9)


def test_adagrad_scales_per_element_with_the_mean_multiplier():
    (p,) = _params([0.0, 0.0])
    opt = CntkSGD([p], grad_update_type="adagrad")
    p.grad = torch.tensor([4.0, 1.0], dtype=torch.float64)
    opt.step(1, 0.1, 0.0)
    # each element moves by lr * g / sqrt(g^2) = lr * sign(g), divided by the mean of 1/sqrt(acc)
    ave = (1 / 4 + 1 / 1) / 2
    assert p.tolist() == pytest.approx([-0.1 / ave, -0.1 / ave])
    p.grad = torch.tensor([0.0, 1.0], dtype=torch.float64)
    opt.step(1, 0.1, 0.0)
    acc = np.array([16.0, 2.0])
    inv = 1 / np.sqrt(acc)
    expected = np.array([-0.1 / ave, -0.1 / ave]) - 0.1 / inv.mean() * np.array([0.0, 1.0]) * inv
    assert p.detach().numpy() == pytest.approx(expected)


def _rmsprop_reference(w, grads, lr, inc=1.2, dec=0.75, wmax=10.0, wmin=0.1, gamma=0.99, ave=True):
    w = np.array(w, dtype=np.float64)
    avar = signs = steps = None
    for g in grads:
        g = np.asarray(g, dtype=np.float64)
        if avar is None:
            avar, signs, steps = g * g, np.zeros_like(g), np.full_like(g, 0.02)
        avar = gamma * avar + (1 - gamma) * g * g
        s = np.sign(g)
        steps = np.where(signs * s > 0, np.minimum(steps * inc, wmax), np.maximum(steps * dec, wmin))
        a = steps / np.sqrt(avar + 1e-6)
        signs = s
        w = w - lr / (a.mean() if ave else 1.0) * g * a
    return w


def test_rmsprop_follows_cntks_sign_adaptive_rule():
    grads = [[1.0, -2.0, 0.5], [0.8, 1.0, 0.4], [0.9, -1.0, -0.1], [1.1, -0.5, 0.3], [1.0, 2.0, 0.2]]
    for ave in (True, False):
        (p,) = _params([0.5, 0.5, 0.5])
        opt = CntkSGD([p], grad_update_type="rmsprop", norm_with_ave_multiplier=ave, rms=(1.5, 0.5, 4.0, 0.05, 0.9))
        for g in grads:
            p.grad = torch.tensor(g, dtype=torch.float64)
            opt.step(3, 0.01, 0.0)
        ref = _rmsprop_reference([0.5] * 3, grads, 0.01, 1.5, 0.5, 4.0, 0.05, 0.9, ave)
        assert p.detach().numpy() == pytest.approx(ref, rel=1e-12)


def test_fsadagrad_follows_its_rule():
    grads = [[0.5, -1.0], [0.25, 2.0], [-0.5, 1.0]]
    (p,) = _params([1.0, 1.0])
    opt = CntkSGD([p], grad_update_type="fsadagrad")
    w, ada, mom, count = np.array([1.0, 1.0]), np.zeros(2), np.zeros(2), 0.0
    n, lr, m = 10, 0.01, 0.5
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step(n, lr, m ** (1 / n))
        g = np.array(g)
        vm = math.exp(-n / 720000)
        count = vm * count + (1 - vm) * n
        ada = vm * ada + (1 - vm) * g * g
        g = g * np.minimum(math.sqrt(count) / np.sqrt(ada), 10.0)
        mom = m * mom + (1 - m) * g
        w = w - lr * mom
    assert p.detach().numpy() == pytest.approx(w, rel=1e-10)


def test_l1_is_a_proximal_soft_threshold_after_the_update():
    (p,) = _params([0.05, -0.3, 1.0, -0.01])
    opt = CntkSGD([p], l1_reg_weight=0.01, unit_gain=False)
    p.grad = torch.zeros(4, dtype=torch.float64)
    opt.step(10, 1.0, 0.0)                        # threshold lr * L1 * n = 0.1
    assert p.tolist() == pytest.approx([0.0, -0.2, 0.9, 0.0])
    assert p[0].item() == 0.0 and p[3].item() == 0.0           # exactly zero: sparse


def test_clipping_comes_before_l2():
    (p,) = _params([10.0])
    opt = CntkSGD([p], clipping_threshold_per_sample=0.1, l2_reg_weight=0.5, unit_gain=False)
    p.grad = torch.tensor([100.0], dtype=torch.float64)
    opt.step(1, 1.0, 0.0)       # clip 100 -> 0.1, then + 0.5*1*10 = 5.1
    assert p.item() == pytest.approx(10.0 - 5.1)


def test_state_round_trip_of_every_update_type():
    for kind in ("none", "adagrad", "rmsprop", "fsadagrad"):
        (a,), (b,) = _params([1.0, -1.0]), _params([1.0, -1.0])
        oa, ob = CntkSGD([a], grad_update_type=kind), CntkSGD([b], grad_update_type=kind)
        a.grad = torch.tensor([0.3, 0.2], dtype=torch.float64)
        oa.step(2, 0.1, 0.5)
        b.data.copy_(a.data)
        ob.load_state_dict(oa.state_dict())
        for o, p in ((oa, a), (ob, b)):
            p.grad = torch.tensor([0.1, -0.4], dtype=torch.float64)
            o.step(2, 0.1, 0.5)
        assert torch.equal(a, b), kind
    with pytest.raises(ValueError, match="gradUpdateType"):
        CntkSGD(_params([1.0]), grad_update_type="adagrad").load_state_dict(CntkSGD(_params([1.0])).state_dict())


def test_state_saved_in_cntk_shapes_loads_into_kernel_shapes():
    """A checkpoint written while BrainScript biases were [n, 1] resumes with biases [n]."""
    old = torch.nn.Parameter(torch.tensor([[1.0], [-1.0]], dtype=torch.float64))
    new = torch.nn.Parameter(torch.tensor([1.0, -1.0], dtype=torch.float64))
    oa, ob = CntkSGD([old], grad_update_type="adagrad"), CntkSGD([new], grad_update_type="adagrad")
    old.grad = torch.tensor([[0.3], [0.2]], dtype=torch.float64)
    oa.step(2, 0.1, 0.5)
    new.data.copy_(old.data.reshape(2))
    ob.load_state_dict(oa.state_dict())
    assert ob.smoothed[0].tolist() == oa.smoothed[0].reshape(2).tolist()
    old.grad, new.grad = torch.tensor([[0.1], [-0.4]], dtype=torch.float64), torch.tensor([0.1, -0.4], dtype=torch.float64)
    oa.step(2, 0.1, 0.5)
    ob.step(2, 0.1, 0.5)
    assert new.tolist() == old.reshape(2).tolist()
    with pytest.raises(ValueError, match=r"shape \(3,\) for a parameter of shape \(2,\)"):
        ob.load_state_dict({"smoothed": [torch.zeros(3)], "kind": "adagrad"})


# --- the section ------------------------------------------------------------------------------------
def test_section_reads_every_option():
    cfg = parse_config("SGD=[learningRatesPerSample=0.1; maxEpochs=3; gradUpdateType=RmsProp; rms_wgt_inc=1.5; "
                       "rms_gamma=0.9; normWithAveMultiplier=false; L1RegWeight=0.001; dropoutRate=0.5*2:0.1; "
                       "minLearningRatePerSample=1e-5; AutoAdjust=[autoAdjustLR=AdjustAfterEpoch; "
                       "learnRateDecreaseFactor=0.5; learnRateAdjustInterval=2; loadBestModel=false]]")
    p = SGDParams.from_config(cfg("SGD"), cfg)
    assert p.grad_update_type == "rmsprop" and p.rms == (1.5, 0.75, 10.0, 0.1, 0.9)
    assert not p.norm_with_ave_multiplier and p.l1_reg_weight == 0.001
    assert [p.dropout_of(e) for e in range(4)] == [0.5, 0.5, 0.1, 0.1]
    assert p.min_learning_rate_per_sample == 1e-5
    a = p.auto_adjust
    assert a.active and a.decrease_factor == 0.5 and a.adjust_interval == 2 and not a.load_best_model
    assert a.increase_if_improve_more_than == math.inf and a.increase_factor == 1.382      # CNTK defaults


def test_memory_options_are_accepted_with_an_info_line(caplog):
    cfg = parse_config("SGD=[learningRatesPerMB=1; maxEpochs=1; maxTempMemSizeInSamplesForCNN=1024; "
                       "numSubminibatches=4; keepCheckPointFiles=true]")
    with caplog.at_level(logging.INFO, logger="cntkio"):
        SGDParams.from_config(cfg("SGD"), cfg)
    text = caplog.text
    for key in ("maxTempMemSizeInSamplesForCNN", "numSubminibatches", "keepCheckPointFiles"):
        assert f"SGD.{key}" in text and "no effect" in text
    assert set(INFO_KEYS).isdisjoint({"learningRatesPerMB", "gradUpdateType"})
    assert {"gradUpdateType", "useNAG", "L1RegWeight", "dropoutRate", "autoAdjustLR", "parallelTrain"} <= set(SGD_KEYS)


def test_errors_name_the_file_line_and_key(tmp_path):
    path = tmp_path / "c.cntk"
    path.write_text("SGD = [\n  learningRatesPerMB = 1\n  maxEpochs = 1\n  gradUpdateType = AdaMax\n]\n")
    from cntkio.config.loader import load_config_file
    cfg = load_config_file(str(path))
    with pytest.raises(ConfigError) as info:
        SGDParams.from_config(cfg("SGD"), cfg)
    msg = str(info.value)
    assert "gradUpdateType" in msg and "AdaMax" in msg and f"{path}:4" in msg


def test_dropout_rate_drives_ndl_dropout_nodes():
    net = build("x = Input(200)\nd = Dropout(x)\nOutputNodes = (d)", dtype=torch.float64)
    x = torch.ones(50, 200, dtype=torch.float64)
    net.train()
    assert torch.equal(net.evaluate({"x": x}, ["d"])["d"], x)                    # rate 0: the identity
    assert set_dropout_rate(net, 0.5) == 1
    out = net.evaluate({"x": x}, ["d"])["d"]
    frac = (out == 0).double().mean().item()
    assert 0.4 < frac < 0.6 and set(out.unique().tolist()) == {0.0, 2.0}     # kept values scaled by 1/(1-0.5)
    net.eval()
    assert torch.equal(net.evaluate({"x": x}, ["d"])["d"], x)                    # off in evaluation


# --- through the train action -----------------------------------------------------------------------
TASK = """
command = train
precision = double
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {out}/model.dnn
reader = [
    readerType = CNTKTextFormatReader
    file = {data}
    randomize = false
    input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
]
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 4:8:3 ; layerTypes = Tanh ]
    SGD = [ minibatchSize = 10 ; maxEpochs = {epochs} ; numMBsToShowResult = 0 ; {sgd} ]
]
"""


@pytest.fixture
def task(tmp_path):
    rng = np.random.default_rng(5)
    y = np.arange(60) % 3
    x = np.eye(3, 4)[y] * 2 + 0.5 * rng.standard_normal((60, 4))
    data = tmp_path / "d.ctf"
    data.write_text("".join(f"|features {' '.join('%.4f' % v for v in xi)} |labels "
                            f"{' '.join('1' if k == yi else '0' for k in range(3))}\n" for xi, yi in zip(x, y)))

    def go(sgd, epochs=4, name="run", extra=(), builder=""):
        out = tmp_path / name
        cfg = tmp_path / f"{name}.cntk"
        text = TASK.format(out=out, data=data, epochs=epochs, sgd=sgd)
        cfg.write_text(text.replace("layerTypes = Tanh ]", f"layerTypes = Tanh ; {builder} ]"))
        return run([f"configFile={cfg}", *extra]), out
    return go


def _lrs(text):
    return [float(v) for v in re.findall(r"; learningRatePerSample = ([0-9.e+-]+)", text)]


def test_auto_adjust_reduces_and_increases_the_printed_rate(task, capsys):
    task("learningRatesPerSample = 0.02 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; "
         "reduceLearnRateIfImproveLessThan = 1000 ; learnRateDecreaseFactor = 0.5 ; loadBestModel = false ]",
         name="down")
    assert _lrs(capsys.readouterr().out) == pytest.approx([0.02, 0.02, 0.01, 0.005])
    task("learningRatesPerSample = 0.01 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; "
         "reduceLearnRateIfImproveLessThan = -1000 ; increaseLearnRateIfImproveMoreThan = -1000 ; "
         "learnRateIncreaseFactor = 2 ]", name="up")
    assert _lrs(capsys.readouterr().out) == pytest.approx([0.01, 0.01, 0.02, 0.04])
    # learnRateAdjustInterval = 2: judged after every second epoch on the interval's average; the
    # first judgement (after epoch 2) has nothing to compare with, the second (after epoch 4) reduces
    task("learningRatesPerSample = 0.02 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; "
         "reduceLearnRateIfImproveLessThan = 1000 ; learnRateDecreaseFactor = 0.5 ; learnRateAdjustInterval = 2 ; "
         "loadBestModel = false ]", epochs=5, name="interval")
    assert _lrs(capsys.readouterr().out) == pytest.approx([0.02, 0.02, 0.02, 0.02, 0.01])


def test_auto_adjust_rolls_back_to_the_best_model(task, capsys):
    # epoch 3 runs with 0.05 * 1000: its criterion is worse, so the epoch-2 model is reloaded
    _, out = task("learningRatesPerSample = 0.05 ; momentumPerMB = 0 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; "
                  "increaseLearnRateIfImproveMoreThan = -1000 ; learnRateIncreaseFactor = 1000 ]", epochs=3)
    text = capsys.readouterr().out
    assert "rolling back" in text
    assert _lrs(text) == pytest.approx([0.05, 0.05, 50.0])
    two, three = load_model(str(out / "model.dnn.2")).network, load_model(str(out / "model.dnn")).network
    for a, b in zip(two.parameters(), three.parameters()):
        assert torch.equal(a, b)


def test_min_learning_rate_stops_training(task, capsys):
    _, out = task("learningRatesPerSample = 0.05:1e-12", epochs=3)
    text = capsys.readouterr().out
    assert "training complete" in text and _lrs(text) == [0.05]
    final = load_model(str(out / "model.dnn"))
    first = load_model(str(out / "model.dnn.1"))
    assert final.epoch == 1
    for a, b in zip(final.network.parameters(), first.network.parameters()):
        assert torch.equal(a, b)


def test_l1_gives_exact_zeros_through_training(task):
    _, plain = task("learningRatesPerSample = 0.02", epochs=2, name="plain")
    _, sparse = task("learningRatesPerSample = 0.02 ; L1RegWeight = 0.05", epochs=2, name="sparse")
    w_plain = load_model(str(plain / "model.dnn")).network.W0
    w_sparse = load_model(str(sparse / "model.dnn")).network.W0
    assert (w_plain == 0).sum().item() == 0
    assert (w_sparse == 0).float().mean().item() > 0.3


def test_adagrad_trains_and_differs_from_sgd(task, capsys):
    _, a = task("learningRatesPerSample = 0.01 ; gradUpdateType = AdaGrad", epochs=2, name="ada")
    first = [float(v) for v in re.findall(r"CrossEntropyWithSoftmax = ([0-9.]+) \* 60", capsys.readouterr().out)]
    assert first[1] < first[0]
    _, s = task("learningRatesPerSample = 0.01", epochs=2, name="sgd")
    assert not torch.equal(load_model(str(a / "model.dnn")).network.W0, load_model(str(s / "model.dnn")).network.W0)


def test_criterion_node_names_are_checked(task):
    task("learningRatesPerSample = 0.01 ; trainCriterionNodeName = CrossEntropyWithSoftmax", epochs=1, name="ok")
    with pytest.raises(ConfigError, match="trainCriterionNodeName"):
        task("learningRatesPerSample = 0.01 ; trainCriterionNodeName = CE", epochs=1, name="bad")


def test_search_before_epoch_chooses_the_rate_and_leaves_no_trace(task, capsys):
    """SearchBeforeEpoch (no schedule needed): each epoch's rate is searched on its first
    minibatches; the trials leave model, SGD state and data untouched, so epoch 1 equals a run
    given the chosen rate as its schedule, bit for bit."""
    _, out = task("momentumPerMB = 0.5 ; AutoAdjust = [ autoAdjustLR = SearchBeforeEpoch ; numMiniBatch4LRSearch = 3 ]",
                  epochs=2, name="search")
    text = capsys.readouterr().out
    found = [float(v) for v in re.findall(r"best learningRatePerSample = ([0-9.e+-]+)", text)]
    assert len(found) == 2 and _lrs(text) == pytest.approx(found, rel=1e-7)
    assert all(0 < v < 1 for v in found)
    first = load_model(str(out / "model.dnn.1"))
    chosen = first.optimizer["lr_state"]["lr"]
    _, plain = task(f"momentumPerMB = 0.5 ; learningRatesPerSample = {chosen!r}", epochs=2, name="plain")
    again = load_model(str(plain / "model.dnn.1")).network
    for a, b in zip(first.network.parameters(), again.parameters()):
        assert torch.equal(a, b)


def test_search_before_epoch_keys_are_checked(task):
    with pytest.raises(ConfigError, match="numMiniBatch4LRSearch"):
        task("AutoAdjust = [ autoAdjustLR = SearchBeforeEpoch ; numMiniBatch4LRSearch = 0 ]", name="s")
    with pytest.raises(ConfigError, match="learningRatesPerMB"):       # a rate is needed without the search
        task("AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ]", name="s")


def test_kl_adaptation_interpolates_the_targets(task, tmp_path):
    _, base = task("learningRatesPerSample = 0.02", epochs=2, name="base")
    original = str(base / "model.dnn")
    adapt = ("command=ad", f"ad=[action=adapt; originalModelFileName={original}; reader=$reader$; "
             f"modelPath={tmp_path}/ad/model.dnn; adaptationRegType=KL; adaptationRegWeight={{w}}; refNodeName=PosteriorProb; "
             "SGD=[learningRatesPerSample=0.05; minibatchSize=60; momentumPerMB=0; maxEpochs=1; numMBsToShowResult=0]; "
             "makeMode=false]")
    # weight 1: the targets are the original model's own posteriors, whose cross-entropy gradient at
    # the original model is zero: one epoch of one minibatch leaves the model as it was
    task("", extra=(adapt[0], adapt[1].replace("{w}", "1")), name="base")
    orig = load_model(original).network
    adapted = load_model(str(tmp_path / "ad" / "model.dnn")).network
    for a, b in zip(orig.parameters(), adapted.parameters()):
        assert torch.allclose(a, b, atol=1e-12)
    # weight 0.5: the update follows the gradient for the interpolated targets, computed by hand
    task("", extra=(adapt[0], adapt[1].replace("{w}", "0.5")), name="base")
    adapted = load_model(str(tmp_path / "ad" / "model.dnn")).network
    data = np.loadtxt(str(tmp_path / "d.ctf"), converters=None, dtype=str, delimiter="|")
    x = torch.tensor([[float(v) for v in row[1].split()[1:]] for row in data], dtype=torch.float64)
    y = torch.tensor([[float(v) for v in row[2].split()[1:]] for row in data], dtype=torch.float64)
    ref = load_model(original).network
    with torch.no_grad():
        post = torch.softmax(ref(x), -1)
    target = 0.5 * y + 0.5 * post
    loss = -(target * torch.log_softmax(ref(x), -1)).sum()
    loss.backward()
    for p, q in zip(ref.parameters(), adapted.parameters()):
        assert torch.allclose(p.detach() - 0.05 * p.grad, q, atol=1e-10)


def test_kl_adaptation_errors(task, tmp_path):
    _, base = task("learningRatesPerSample = 0.02", epochs=1, name="base")
    ad = (f"ad=[action=adapt; originalModelFileName={base}/model.dnn; reader=$reader$; modelPath={tmp_path}/ad/m; "
          "adaptationRegType=KL; adaptationRegWeight=0.5; {ref} SGD=[learningRatesPerSample=0.05; maxEpochs=1]]")
    with pytest.raises(ConfigError, match="refNodeName"):
        task("", extra=("command=ad", ad.replace("{ref}", "")), name="base")
    with pytest.raises(ConfigError, match="refNodeName 'Nope'"):
        task("", extra=("command=ad", ad.replace("{ref}", "refNodeName=Nope;")), name="base")
    with pytest.raises(ConfigError, match="adaptationRegType"):
        task("", extra=("command=ad", ad.replace("{ref}", "refNodeName=HLast;").replace("=KL", "=L2")), name="base")


def test_add_dropout_nodes_follow_the_dropout_schedule(task):
    """SimpleNetworkBuilder addDropoutNodes: DropH1 after the hidden layer, its rate SGD's
    dropoutRate per epoch: a rate of 0 trains exactly as without the nodes; 0.5 changes training
    but not evaluation (the identity there)."""
    from cntkio.networks import SimpleNetwork
    from cntkio.actions.network import spec_from_config
    spec = spec_from_config(parse_config("b=[layerSizes=4:8:3; addDropoutNodes=true]")("b"))
    net = SimpleNetwork(spec, dtype=torch.float64)
    assert "DropH1" in net.node_names() and net.set_dropout_rate(0.5) == 1
    x = torch.ones(200, 4, dtype=torch.float64)
    net.train()
    h, d = (net.nodes(x)[k] for k in ("H1", "DropH1"))
    assert set(torch.unique(d / h).tolist()) <= {0.0, 2.0} and 0.3 < (d == 0).double().mean() < 0.7
    net.eval()
    assert torch.equal(net.nodes(x)["DropH1"], net.nodes(x)["H1"])
    assert torch.allclose(net(x), net.nodes(x)["HLast"])

    plain = task("learningRatesPerSample = 0.02", epochs=2, name="plain")[1]
    zero = task("learningRatesPerSample = 0.02 ; dropoutRate = 0", epochs=2, name="zero", builder="addDropoutNodes = true")[1]
    half = task("learningRatesPerSample = 0.02 ; dropoutRate = 0.5", epochs=2, name="half", builder="addDropoutNodes = true")[1]
    w = {k: load_model(str(p / "model.dnn")).network.W0 for k, p in (("plain", plain), ("zero", zero), ("half", half))}
    assert torch.equal(w["plain"], w["zero"]) and not torch.equal(w["plain"], w["half"])
