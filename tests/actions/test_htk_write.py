"""The write action in the HTKMLFReader's dataset-processing mode: one HTK file per utterance of
the SCP file (USER kind, the source's frame period, big-endian), the node's values (minus the log
prior with type = scaledLogLikelihood) computed by hand from the model, and the SCP file listing
the files; an SCP utterance the reader does not deliver is an error naming it."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest
import torch

from cntkio.networks import load_model
from cntkio.actions.runner import run
from cntkio.deserializers.htk.htkfile import read_header
from cntkio.deserializers.htk.writer import scp_utterances, write_htk
from cntkio.errors import CntkioError, ConfigError

NDL = """
    x = Input(3, tag=feature)
    labels = Input(2, tag=label)
    W = Parameter(2, 3)
    b = Parameter(2, init=fixedValue, value=0)
    z = Plus(Times(W, x), b, tag=output)
    Prior = Mean(labels)
    ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
    err = ErrorPrediction(labels, z, tag=eval)
"""


def _read_htk(path):
    with open(path, "rb") as f:
        n, period, size, kind = struct.unpack(">iihh", f.read(12))
        return n, period, size, kind, np.frombuffer(f.read(), ">f4").reshape(n, size // 4)


def test_write_htk_round_trip(tmp_path):
    frames = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    write_htk(str(tmp_path / "a" / "x.mfc"), frames, period=50000)
    h = read_header(str(tmp_path / "a" / "x.mfc"))
    assert (h.num_frames, h.samp_period, h.samp_size, h.parm_kind, h.byteorder) == (4, 50000, 12, 9, ">")
    assert np.array_equal(_read_htk(tmp_path / "a" / "x.mfc")[4], frames)
    assert os.listdir(tmp_path / "a") == ["x.mfc"]                        # no temporary file left


@pytest.fixture
def model(tmp_path):
    rng = np.random.default_rng(4)
    lines = []
    for i in range(40):
        y = i % 4 == 0                          # a skewed prior: 1/4 of the samples are class 1
        x = rng.standard_normal(3) + (2 if y else 0)
        lines.append(f"|x {' '.join('%.4f' % v for v in x)} |labels {'0 1' if y else '1 0'}")
    (tmp_path / "train.ctf").write_text("\n".join(lines) + "\n")
    body = "\n".join("    " + ln.strip() for ln in NDL.strip().splitlines())
    cfg = tmp_path / "t.cntk"
    cfg.write_text(f"""command = train
deviceId = cpu
progressBar = false
modelPath = {tmp_path}/m.dnn
train = [ action = train ; NDLNetworkBuilder = [ run = net ]
    SGD = [ minibatchSize = 10 ; learningRatesPerSample = 0.05 ; maxEpochs = 1 ]
    reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/train.ctf
               input = [ x = [ dim = 3 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ] ]
net = [
{body}
]
""")
    run([f"configFile={cfg}"])
    return tmp_path / "m.dnn"


def _corpus(tmp_path):
    rng = np.random.default_rng(9)
    utts = {"u0": rng.standard_normal((4, 3)), "u1": rng.standard_normal((2, 3)), "u2": rng.standard_normal((5, 3))}
    write_htk(str(tmp_path / "feat" / "a.htk"), np.concatenate([utts["u0"], utts["u1"]]).astype(np.float32))
    write_htk(str(tmp_path / "feat" / "c.htk"), utts["u2"].astype(np.float32), period=200000)
    (tmp_path / "in.scp").write_text(f"u0.fea={tmp_path}/feat/a.htk[0,3]\nspk/u1.fea={tmp_path}/feat/a.htk[4,5]\n"
                                     f"{tmp_path}/feat/c.htk\n")
    utts["c"] = utts.pop("u2")
    return utts


WRITE = """command = write
deviceId = cpu
progressBar = false
write = [ action = write ; modelPath = {model}
    reader = [ readerType = HTKMLFReader ; randomize = auto ; frameMode = true
               x = [ dim = 3 ; scpFile = {scp} ]
               write = [ llk = [ nodeName = z ; dim = 2 ; path = {out}/llk ; ext = llk ; type = scaledLogLikelihood
                                 scpFile = {out}/llk.scp ]
                         z = [ path = {out}/raw ] ] ] ]
"""


def test_dataset_processing_writes_one_htk_file_per_utterance(tmp_path, model):
    utts = _corpus(tmp_path)
    cfg = tmp_path / "w.cntk"
    cfg.write_text(WRITE.format(model=model, scp=tmp_path / "in.scp", out=tmp_path / "out"))
    (_, _, counts), = run([f"configFile={cfg}"])
    assert counts == {"llk": 3, "z": 3}
    net = load_model(str(model), dtype=torch.float64).network
    log_prior = torch.log(net.tensor("Prior").reshape(-1)).numpy()
    assert abs(np.exp(log_prior)[1] - 0.25) < 1e-6
    listed = (tmp_path / "out" / "llk.scp").read_text().splitlines()
    assert listed == [str(tmp_path / "out" / "llk" / f"{u}.llk") for u in ("u0", "u1", "c")]
    for u, x in utts.items():
        with torch.no_grad():
            z = net.evaluate({"x": torch.tensor(x.astype(np.float32), dtype=torch.float64)}, ["z"])["z"].numpy()
        n, period, size, kind, llk = _read_htk(tmp_path / "out" / "llk" / f"{u}.llk")
        assert (n, size, kind) == (len(x), 8, 9) and period == (200000 if u == "c" else 100000)
        assert np.allclose(llk, z - log_prior, atol=1e-5)
        assert np.allclose(_read_htk(tmp_path / "out" / "raw" / f"{u}.mfc")[4], z, atol=1e-5)


def test_scp_utterance_names_and_lengths(tmp_path):
    _corpus(tmp_path)
    assert scp_utterances(str(tmp_path / "in.scp")) == [("u0", 4, 100000), ("u1", 2, 100000), ("c", 5, 200000)]


def test_dataset_processing_errors(tmp_path, model):
    _corpus(tmp_path)
    cfg = tmp_path / "w.cntk"
    text = WRITE.format(model=model, scp=tmp_path / "in.scp", out=tmp_path / "out")
    cfg.write_text(text.replace("dim = 2 ; path", "dim = 5 ; path"))
    with pytest.raises(ConfigError, match="dim"):
        run([f"configFile={cfg}"])
    cfg.write_text(text.replace("nodeName = z", "nodeName = nope"))
    with pytest.raises(ConfigError, match="nope"):
        run([f"configFile={cfg}"])
    cfg.write_text(text.replace("type = scaledLogLikelihood", "type = logit"))
    with pytest.raises(ConfigError, match="type"):
        run([f"configFile={cfg}"])
    cfg.write_text(text.replace(f"path = {tmp_path / 'out'}/raw", "path = s3://b/raw"))   # outputs: local only
    with pytest.raises(ConfigError, match="HTK output folder 's3://b/raw' is a URL"):
        run([f"configFile={cfg}"])


def test_simple_network_with_need_prior_writes_scaled_log_likelihood(tmp_path):
    # SimpleNetworkBuilder needPrior = true keeps its Prior in the model, so an HTKMLFReader write
    # section with type = scaledLogLikelihood subtracts log(Prior) from the node (HLast) as with an
    # NDL network's Prior node
    rng = np.random.default_rng(4)
    y = np.array([0, 0, 0, 1] * 10)
    x = np.eye(2, 3)[y] * 2 + 0.2 * rng.standard_normal((len(y), 3))
    with open(tmp_path / "train.ctf", "w") as f:
        for xi, yi in zip(x, y):
            f.write(f"|features {' '.join(format(v, '.4f') for v in xi)} |labels {1 - yi} {yi}\n")
    utts = _corpus(tmp_path)
    cfg = tmp_path / "c.cntk"
    cfg.write_text(f"""command = train:write
deviceId = cpu
precision = double
progressBar = false
modelPath = {tmp_path}/m.dnn
train = [ action = train
    SimpleNetworkBuilder = [ layerSizes = 3:4:2 ; layerTypes = Tanh ; needPrior = true ]
    SGD = [ minibatchSize = 10 ; learningRatesPerMB = 0.1 ; maxEpochs = 1 ]
    reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/train.ctf ; randomize = false
               input = [ features = [ dim = 3 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ] ]
write = [ action = write
    reader = [ readerType = HTKMLFReader ; randomize = auto ; frameMode = true
               features = [ dim = 3 ; scpFile = {tmp_path}/in.scp ]
               write = [ llk = [ nodeName = HLast ; dim = 2 ; path = {tmp_path}/out ; ext = llk
                                 type = scaledLogLikelihood ] ] ] ]
""")
    run([f"configFile={cfg}"])
    net = load_model(str(tmp_path / "m.dnn"), dtype=torch.float64).network
    assert torch.allclose(net.Prior, torch.tensor([0.75, 0.25], dtype=torch.float64))
    for u, feats in utts.items():
        with torch.no_grad():
            hlast = net.nodes(torch.tensor(feats, dtype=torch.float64))["HLast"].numpy()
        n, _, size, kind, llk = _read_htk(tmp_path / "out" / f"{u}.llk")
        assert (n, size, kind) == (len(feats), 8, 9)
        assert np.allclose(llk, hlast - np.log([0.75, 0.25]), atol=1e-5)


HTKMLF_WRITER = """command = write
deviceId = cpu
progressBar = false
write = [ action = write ; modelPath = {model} ; outputNodeNames = z
    reader = [ readerType = HTKMLFReader ; x = [ dim = 3 ; scpFile = {scp} ] ]
    writer = [ writerType = HTKMLFWriter
               z = [ dim = 2 ; scpFile = {out}/z.scp ; type = Real ] ] ]
"""


def test_the_htkmlf_writer_writes_each_utterance_to_its_listed_file(tmp_path, model):
    # CNTK's HTKMLFWriter (TIMIT_WriteScaledLogLike.cntk): the n-th utterance to the n-th listed path
    utts = _corpus(tmp_path)
    (tmp_path / "out").mkdir()
    targets = [tmp_path / "out" / "deep" / f"{i}.htk" for i in range(3)]
    (tmp_path / "out" / "z.scp").write_text("".join(f"{p}\n" for p in targets))
    cfg = tmp_path / "w.cntk"
    cfg.write_text(HTKMLF_WRITER.format(model=model, scp=tmp_path / "in.scp", out=tmp_path / "out"))
    (_, _, counts), = run([f"configFile={cfg}"])
    assert counts == {"z": 3}
    net = load_model(str(model), dtype=torch.float64).network
    for target, x in zip(targets, utts.values()):
        with torch.no_grad():
            z = net.evaluate({"x": torch.tensor(x.astype(np.float32), dtype=torch.float64)}, ["z"])["z"].numpy()
        n, period, size, kind, values = _read_htk(target)
        assert (n, period, size, kind) == (len(x), 100000, 8, 9)      # CNTK's writer: sampPeriod 100000
        assert np.allclose(values, z, atol=1e-5)
    # validation says nothing of the reader and writer sections the write reads when it runs
    # (TIMIT_WriteBottleneck.cntk: "`TIMIT_WriteBottleneck.reader`: not used" before)
    from cntkio.actions.validate import validate_commands
    from cntkio.config import load_config
    report = validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False)
    assert report.problems == [] and not [u for u in report.unused if "reader" in str(u) or "writer" in str(u)]
    (tmp_path / "out" / "z.scp").write_text(f"{targets[0]}\n")          # fewer paths than utterances
    with pytest.raises(CntkioError, match="out of range"):
        run([f"configFile={cfg}"])
    cfg.write_text(HTKMLF_WRITER.format(model=model, scp=tmp_path / "in.scp", out=tmp_path / "out")
                   .replace("dim = 2 ; ", ""))
    with pytest.raises(ConfigError, match="writer need to specify dim"):
        run([f"configFile={cfg}"])
