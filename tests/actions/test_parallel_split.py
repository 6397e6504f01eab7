"""parallelTrain with a number of processes that cannot split the reader: a ConfigError before
training naming the key, the file and the line (a minibatch smaller than the process count; a
randomized reader with fewer chunks than processes), checked for W processes directly and once
under two real processes."""
from __future__ import annotations


import numpy as np
import pytest

import torchrun

from cntkio.actions.parallel import ParallelParams, check_reader_split, randomized_chunks
from cntkio.actions.sgd import SGDParams
from cntkio.actions._common import open_reader
from cntkio.config.loader import load_config_file
from cntkio.errors import ConfigError


CONFIG = """\
command = train
precision = double
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {out}/model.dnn
reader = [
    readerType = CNTKTextFormatReader
    file = {data}
    randomize = {randomize}
    input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
]
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 4:8:3 ]
    SGD = [ epochSize = 48 ; learningRatesPerSample = 0.02 ; maxEpochs = 2
            minibatchSize = {mb}
            parallelTrain = [ {parallel} ] ]
]
"""


def _write(tmp_path, *, randomize="false", mb="16:8", parallel="parallelizationMethod = DataParallelSGD"):
    data = tmp_path / "d.ctf"
    rng = np.random.default_rng(1)
    with open(data, "w") as f:
        for i in range(48):
            x = rng.standard_normal(4)
            f.write(f"|features {' '.join('%.3f' % v for v in x)} |labels {' '.join('1' if k == i % 3 else '0' for k in range(3))}\n")
    cfg = tmp_path / "t.cntk"
    cfg.write_text(CONFIG.format(out=tmp_path / "out", data=data, randomize=randomize, mb=mb, parallel=parallel))
    return cfg


def _check(cfg_path, world):
    root = load_config_file(str(cfg_path))
    command = root("train")
    sgd = command("SGD")
    params = SGDParams.from_config(sgd, command)
    par = ParallelParams.from_config(command, sgd, world)
    source = open_reader(command, "reader", "train")
    check_reader_split(par, source, world, [params.mb_size(e) for e in range(params.max_epochs)], command, sgd)
    return source


def test_minibatch_smaller_than_the_process_count(tmp_path):
    cfg = _write(tmp_path, mb="16:8")
    _check(cfg, 8)                                            # 16 and 8 samples split over 8 processes
    with pytest.raises(ConfigError) as e:
        _check(cfg, 9)
    err = e.value
    assert err.path.endswith("minibatchSize") and err.file == str(cfg) and err.line == 17
    assert "9 processes cannot split a minibatch of 8 samples" in str(err)
    assert "parallelTrain" in str(err) and "minibatchSize >= 9" in str(err)


def test_more_processes_than_randomized_chunks(tmp_path):
    cfg = _write(tmp_path, randomize="true", mb="16")
    with pytest.raises(ConfigError) as e:
        _check(cfg, 2)                                        # a small CTF file is one chunk
    err = e.value
    assert err.path.endswith("reader.randomize") and err.file == str(cfg) and err.line == 10
    assert "1 randomized chunk(s)" in str(err) and "process(es) 1..1 would read nothing" in str(err)
    assert "run at most 1 processes" in str(err)


def test_what_can_be_split_is_accepted(tmp_path):
    one = _check(_write(tmp_path, randomize="true", mb="16"), 1)       # one process: nothing to split
    assert randomized_chunks(one) == 1
    plain = _check(_write(tmp_path, randomize="false", mb="16"), 4)    # not randomized: dealt by sequence
    assert randomized_chunks(plain) is None
    # without a parallelTrain method (plain torchrun) nothing is refused (cntk-io-semantics 2.6)
    _check(_write(tmp_path, randomize="true", mb="1", parallel="parallelizationMethod = None"), 4)


def test_two_processes_stop_before_training(tmp_path):
    cfg = _write(tmp_path, randomize="true", mb="16")
    for rc, out, err in torchrun.launch(["-m", "cntkio", f"configFile={cfg}"], check=False):
        text = out + err
        assert rc != 0
        assert f"{cfg}:10:" in text and "cannot split this reader" in text
        assert "Finished Epoch" not in text
    assert not (tmp_path / "out" / "model.dnn.1").exists()
