"""autoAdjustMinibatch=true: CNTK's adaptive minibatch sizing (SGD.cpp's AdaptiveMinibatchSizing /
SearchForBestMinibatchSize). The rule on concrete numbers (the single-precision sqrt(2) walk
rounded to multiples of 64, the stop at the first trial worse than the base by more than the
margin, the bounds from the previous size, the learning-rate drop and the tuning frequency), then a
config run: the chosen size is printed, saved in the model file, and the epoch trained with it
equals, bit for bit, a run given that size in its minibatchSize schedule (the trials leave no
trace); bad sections are ConfigErrors naming file, line and key."""
from __future__ import annotations

import re

import pytest
import torch

from cntkio.actions.mbsearch import round_to_64, search_minibatch_size, sizing_bounds, trial_sizes
from cntkio.networks import load_model
from cntkio.actions.runner import run
from cntkio.errors import ConfigError


def test_trial_sizes_walk_by_sqrt2_in_single_precision_rounded_to_64():
    assert trial_sizes(64, 256) == [64, 64, 128, 192, 256]          # 64, 90.5, 128, 181.0, 256
    assert trial_sizes(100, 400) == [128, 128, 192, 256, 384]        # 100, 141.4, 200, 282.8, 400
    assert trial_sizes(300, 200) == []
    assert round_to_64(31.9) == 0 and round_to_64(32) == 64 and round_to_64(95.9) == 64 and round_to_64(96) == 128


def test_search_keeps_the_largest_size_before_the_first_worse_trial():
    crit = {64: 1.0, 128: 1.005, 192: 1.02, 256: 0.9}
    seen: list[int] = []

    def trial(size):
        seen.append(size)
        return crit[size]

    assert search_minibatch_size(64, 256, trial) == 128              # 1.02 > 1.0 * 1.01: stop
    assert seen == [64, 64, 128, 192]                                # 256 is never tried
    seen.clear()
    assert search_minibatch_size(64, 256, trial, margin=5) == 256    # 1.02 <= 1.05: keep searching
    assert search_minibatch_size(300, 200, trial) == 200             # an empty range gives its upper end
    assert search_minibatch_size(64, 128, lambda s: float("nan") if s == 128 else 1.0) == 128   # NaN is no stop
    with pytest.raises(ValueError, match="rounds to 0"):
        search_minibatch_size(16, 64, trial)


def test_sizing_bounds_follow_cntks_rule():
    # epochs 1 and 2 ignore a previous size (reset), search from the configured size to the maximum
    b = sizing_bounds(1, 64, 64, 0.01, 0.01, 1.0, 1, 4096)
    assert (b.low, b.high, b.keep, b.reset) == (64, 4096, None, True)
    # later: at least half, at most twice the previous chosen size
    b = sizing_bounds(2, 64, 512, 0.01, 0.01, 1.0, 1, 4096)
    assert (b.low, b.high, b.keep) == (256, 1024, None)
    # the rate per sample fell to a quarter: the low end grows by sqrt(4)
    b = sizing_bounds(2, 64, 64, 0.0025, 0.01, 1.0, 1, 4096)
    assert (b.low, b.high) == (128, 128)
    # and SearchBeforeEpoch's adjustment counts too
    assert sizing_bounds(3, 64, 0, 0.01, 0.01, 1 / 9, 1, 4096).low == 192
    # minibatchSizeTuningFrequency = 2: epoch 3 (0-based 2) keeps the previous size, epoch 4 searches
    assert sizing_bounds(2, 64, 192, 0.01, 0.01, 1.0, 2, 4096).keep == 192
    assert sizing_bounds(3, 64, 192, 0.01, 0.01, 1.0, 2, 4096).keep is None


CONFIG = """\
command = train
deviceId = cpu
precision = double
numCPUThreads = 1
progressBar = false
modelPath = {out}/model.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 4:8:2 ; layerTypes = Tanh ]
    SGD = [ maxEpochs = 2 ; learningRatesPerSample = 0.02 ; momentumPerSample = 0.99 ; minibatchSize = {mb}
            numMBsToShowResult = 0
            AutoAdjust = [
                autoAdjustMinibatch = {value}
                minibatchSizeTuningMax = 512
                minibatchSearchCriterionErrorMargin = 10
                numSamples4Search = 384
            ]
    ]
    reader = [ readerType = CNTKTextFormatReader ; file = {data} ; randomize = false
               input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
]
"""


def _data(tmp_path):
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(1024, 4, generator=gen, dtype=torch.float64)
    y = (x[:, 0] + 0.5 * x[:, 1] - x[:, 2] > 0).long()
    data = tmp_path / "d.ctf"
    data.write_text("".join(f"|features {' '.join(f'{v:.6f}' for v in row)} |labels {int(c == 0)} {int(c == 1)}\n"
                            for row, c in zip(x.tolist(), y.tolist())))
    return data


def _config(tmp_path, name, value, mb):
    cfg = tmp_path / f"{name}.cntk"
    cfg.write_text(CONFIG.format(out=tmp_path / name, data=_data(tmp_path), value=value, mb=mb))
    return cfg


def test_chosen_size_trains_the_epoch_as_if_it_were_scheduled(tmp_path, capsys):
    (_, _, searched), = run([f"configFile={_config(tmp_path, 'search', 'true', 64)}"])
    out = capsys.readouterr().out
    assert "AdaptiveMinibatchSearch Epoch[2]: evaluating minibatchSizes 64..512" in out
    chosen = int(re.search(r"Minibatch size adapted to (\d+)\.", out).group(1))
    # the trials 64 (base), 64, 128, 192, 256, 384 stay within 10% of the base criterion, 512 does not
    trials = re.findall(r"Epoch\[2\]: (?:base criterion \S+ for )?minibatchSize=(\d+)", out)
    assert [int(t) for t in trials] == [64, 64, 128, 192, 256, 384, 512]
    assert "minibatchSize=512: criterion" in out and "is worse than the base" in out and chosen == 384
    assert searched.epochs[1].minibatches == -(-1024 // chosen)
    mf = load_model(str(tmp_path / "search" / "model.dnn"))
    assert mf.optimizer["lr_state"]["prev_mb"] == chosen                 # kept for a resumed run
    (_, _, given), = run([f"configFile={_config(tmp_path, 'given', 'false', f'64:{chosen}')}"])
    ref = load_model(str(tmp_path / "given" / "model.dnn"))
    for (k, a), (_, b) in zip(mf.network.state_dict().items(), ref.network.state_dict().items()):
        assert torch.equal(a, b), k
    assert searched.epochs[1].averages == given.epochs[1].averages


def test_false_trains_with_the_schedule(tmp_path):
    (_, _, result), = run([f"configFile={_config(tmp_path, 'off', 'false', 64)}"])
    assert [e.minibatches for e in result.epochs] == [16, 16]


@pytest.mark.parametrize("mb, extra, key", [
    (16, "", "minibatchSize"),
    (64, "minibatchSizeTuningMax = 0", "minibatchSizeTuningMax"),
])
def test_bad_sections_name_file_line_and_key(tmp_path, mb, extra, key):
    cfg = _config(tmp_path, "bad", "true", mb)
    if extra:
        cfg.write_text(cfg.read_text().replace("numSamples4Search = 384", f"numSamples4Search = 384\n{extra}"))
    with pytest.raises(ConfigError) as e:
        run([f"configFile={cfg}"])
    assert key in str(e.value) and str(cfg) in str(e.value)
    assert not (tmp_path / "bad").exists()                       # refused before anything is written


def test_later_epochs_search_around_the_previous_size_also_after_resuming(tmp_path, capsys):
    cfg = _config(tmp_path, "r", "true", 64)
    cfg.write_text(cfg.read_text().replace("maxEpochs = 2", "maxEpochs = 3"))
    run([f"configFile={cfg}"])
    out = capsys.readouterr().out
    assert "Minibatch size adapted to 384." in out
    # epoch 3: from half to twice the previous chosen size, within minibatchSizeTuningMax = 512
    assert "AdaptiveMinibatchSearch Epoch[3]: evaluating minibatchSizes 192..512" in out
    chosen = re.findall(r"Minibatch size adapted to (\d+)\.", out)[-1]
    final = load_model(str(tmp_path / "r" / "model.dnn")).network.state_dict()
    (tmp_path / "r" / "model.dnn").unlink()
    run([f"configFile={cfg}"])                                    # resumes at epoch 3 from model.dnn.2
    out = capsys.readouterr().out
    assert "resuming from" in out and "evaluating minibatchSizes 192..512" in out
    assert re.findall(r"Minibatch size adapted to (\d+)\.", out) == [chosen]
    resumed = load_model(str(tmp_path / "r" / "model.dnn")).network.state_dict()
    assert all(torch.equal(final[k], resumed[k]) for k in final)
