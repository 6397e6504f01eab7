"""``train`` writes TensorBoard scalars when ``tensorBoardLogDir`` is set (issue 31, beyond CNTK):
every criterion per epoch (training and validation), the learning rate and the throughput, and the
criteria of every ``numMBsToShowResult`` window, through torch's own SummaryWriter."""
from __future__ import annotations

import sys

import pytest

from cntkio.actions.runner import run
from cntkio.cli import main


def _scalars(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_train_writes_the_scalars_it_prints(setup, capsys):
    tmp, write = setup
    cfg = write(epochs=2, **{"learningRatesPerMB = 0.1": "learningRatesPerMB = 0.1\n        numMBsToShowResult = 2",
                             "action = train\n": f"action = train\n    tensorBoardLogDir = {tmp / 'tb'}\n"
                                                 f"    cvReader = $test.reader$\n"})
    [(_, _, res), _] = run([f"configFile={cfg}"])
    s = _scalars(tmp / "tb")
    assert sorted(s) == sorted([
        "CrossEntropyWithSoftmax/train", "EvalClassificationError/train", "CrossEntropyWithSoftmax/validate",
        "EvalClassificationError/validate", "CrossEntropyWithSoftmax/minibatch", "EvalClassificationError/minibatch",
        "learningRatePerSample", "samplesPerSecond"])
    assert [step for step, _ in s["CrossEntropyWithSoftmax/train"]] == [1, 2]
    # the values printed: criteria per sample, classification error as a percentage
    for (_, value), epoch in zip(s["EvalClassificationError/train"], res.epochs):
        assert value == pytest.approx(100.0 * epoch.averages["EvalClassificationError"], rel=1e-6)
    assert [v for _, v in s["learningRatePerSample"]] == pytest.approx([0.1 / 8] * 2)
    # 40 samples in minibatches of 8: 5 per epoch, a window every 2 -> 2 windows per epoch, steps 2, 4, 7, 9
    assert [step for step, _ in s["CrossEntropyWithSoftmax/minibatch"]] == [2, 4, 7, 9]


def test_missing_tensorboard_is_said_before_any_work(setup, capsys, monkeypatch):
    tmp, write = setup
    cfg = write(**{"action = train\n": f"action = train\n    tensorBoardLogDir = {tmp / 'tb'}\n"})
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    assert main([f"configFile={cfg}"]) == 1
    err = capsys.readouterr().err
    assert "pip install 'cntkio[tensorboard]'" in err and "tensorBoardLogDir" in err
    assert not (tmp / "out").exists()
