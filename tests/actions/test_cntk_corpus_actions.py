"""The actions and settings CNTK's own Examples and EndToEnd configs use (issue 28): trainRNN,
writeWordAndClass, plot, SVD, bnstat, BrainScript edit, a builder in a parent section, modelPath.0,
the top-level parallelTrain switch, the actions refused by name."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from cntkio.actions import get_action
from cntkio.actions.bnstat import batch_norm_nodes
from cntkio.actions.parallel import ParallelParams
from cntkio.actions.plot import network_dot
from cntkio.actions.runner import run
from cntkio.actions.svd import decompose, svd_rank
from cntkio.actions.wordclass import word_classes
from cntkio.config import parse_config
from cntkio.errors import ConfigError, NotImplementedInCntkio
from cntkio.networks import load_model
from cntkio.networks.mel import MelModel
from cntkio.ndl import build as build_ndl


def test_cntks_action_names():
    assert get_action("trainRNN") is get_action("train")
    assert get_action("dumpNodes") is get_action("dumpnode") and get_action("DUMPNODE") is get_action("dumpnode")
    for name in ("exportdbn", "convertdbn", "devtest"):
        with pytest.raises(NotImplementedInCntkio, match=f"CNTK's action '{name}' is not implemented"):
            get_action(name, path="x.action")


def test_word_classes_by_frequency_binning():
    # counts of the corpus "a b" / "a c" / "a b d" with </s> around each line (the first not counted)
    counts = {"</s>": 3, "a": 3, "b": 2, "c": 1, "d": 1}
    words, freqs, classes = word_classes(counts, vocab_size=4, classes=2, unk="<unk>", cutoff=0)
    # 3 words kept (vocabSize - 1), the rest's counts to <unk>; sqrt(p) shares 0.29, 0.29, 0.24, 0.24
    assert words == ["</s>", "a", "<unk>", "b"] and freqs == [3.0, 3.0, 2.0, 2.0] and classes == [0, 1, 1, 1]
    words, freqs, classes = word_classes(counts, vocab_size=10, classes=0, unk="<unk>", cutoff=1)
    assert words == sorted(counts) and set(classes) == {0}     # no classes: by text; vocabSize cut to the words


def test_write_word_and_class_files(tmp_path):
    (tmp_path / "c.txt").write_text("a b\na c\na b d\n")
    cfg = tmp_path / "w.cntk"
    cfg.write_text(f"""command = w
w = [ action = writeWordAndClass ; inputFile = {tmp_path}/c.txt ; beginSequence = "</s>" ; endSequence = "</s>"
      outputVocabFile = {tmp_path}/v.txt ; outputWord2Cls = {tmp_path}/w2c.txt ; outputCls2Index = {tmp_path}/c2i.txt
      vocabSize = 4 ; nbrClass = 2 ; cutoff = 0 ]""")
    (_, _, written), = run([f"configFile={cfg}"])
    assert set(written) == {"outputVocabFile", "outputWord2Cls", "outputCls2Index"}
    assert (tmp_path / "v.txt").read_text().splitlines() == [
        "     0\t     3\t</s>\t0", "     1\t     3\ta\t1", "     2\t     2\t<unk>\t1", "     3\t     2\tb\t1"]
    assert (tmp_path / "w2c.txt").read_text().split() == ["0", "1", "1", "1"]
    assert (tmp_path / "c2i.txt").read_text().split() == ["0", "1"]
    (_, _, again), = run([f"configFile={cfg}"])                   # makeMode: the outputs are up to date
    assert again == {}
    cfg.write_text(cfg.read_text().replace('endSequence = "</s>"', ""))
    with pytest.raises(ConfigError, match="give both beginSequence and endSequence"):
        run([f"configFile={cfg}"])


NDL = """
    x = Input(3, tag=feature)
    labels = Input(2, tag=label)
    W = Parameter(4, 3)
    b = Parameter(4, 1, init=fixedValue, value=0.1)
    h = Sigmoid(Plus(Times(W, x), b))
    V = Parameter(2, 4)
    z = Times(V, h, tag=output)
    ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
"""


def test_the_dot_text_of_a_network():
    dot = network_dot(build_ndl(NDL))
    lines = dot.splitlines()
    assert lines[0] == " strict digraph {" and lines[-1] == "}"
    assert ' node [ shape = box     , color = gray , style = "filled, rounded"  ]; "V" "W" "b" ; ' in lines
    assert ' node [ shape = diamond, color = brown, style = bold ]; "labels" ; ' in lines
    assert '  "W" [ label = "W [4 x 3]\\nLearnableParameter" ] ;' in lines
    assert '  "x" [ label = "x [3 x *]\\nInputValue" ] ;' in lines
    assert ' "W" -> "' in dot and ' "h" -> "z" ; ' in lines and ' "z" -> "ce" ; ' in lines
    assert " subgraph {\n \t\t rank=source ;  \"x\"  \n}" in dot


def test_svd_rank_is_cntks():
    assert svd_rank([4, 3, 2, 1], 0.5, 1) == 2          # 4 + 3 passes half of 10 at the 2nd value
    assert svd_rank([4, 3, 2, 1], 0.5, 8) == 4          # rounded up to 8, at most their number
    assert svd_rank([4, 3, 2, 1], 0.95, 1) == 4


def test_svd_keeps_the_network_and_rewires_times():
    net = build_ndl(NDL)
    torch.manual_seed(0)
    x = torch.randn(5, 3)
    before = net.evaluate({"x": x}, ["z"])["z"]
    model = MelModel.from_network("m", net)
    done = decompose(model, [(__import__("re").compile("W|V"), 0.999, "W|V")], aligned=1)
    assert [(n, m, k) for n, m, k, _ in done] == [("W", 4, 3), ("V", 2, 4)]
    g = model.graph
    assert "W" not in g.nodes and g.nodes["W_U"].op == "Parameter" and g.nodes["W_SVD"].inputs[0] == "W_U"
    after_net = model.network()
    # the new Times takes the old one's place for its readers and its tags (CNTK's InsertNode)
    assert after_net.output_nodes == ["V_SVD"] and g.nodes["ce"].inputs == ["labels", "V_SVD"]
    after = after_net.evaluate({"x": x}, ["V_SVD"])["V_SVD"]
    assert torch.allclose(before, after, atol=1e-5)      # all singular values kept: the same function


def test_svd_action_and_training_from_model_0(tmp_path):
    rng = np.random.default_rng(1)
    rows = [f"|x {' '.join(f'{v:.3f}' for v in rng.standard_normal(3))} |labels {'1 0' if i % 2 else '0 1'}"
            for i in range(20)]
    (tmp_path / "d.ctf").write_text("\n".join(rows) + "\n")
    body = "\n".join("    " + ln.strip() for ln in NDL.strip().splitlines())
    reader = (f"reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/d.ctf ; "
              "input = [ x = [ dim = 3 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]")
    cfg = tmp_path / "s.cntk"
    cfg.write_text(f"""command = train:svd:again
deviceId = cpu
progressBar = false
SGD = [ minibatchSize = 5 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]
{reader}
train = [ action = train ; modelPath = {tmp_path}/m.dnn ; NDLNetworkBuilder = [ run = net ] ]
svd = [ action = SVD ; modelPath = {tmp_path}/m.dnn ; outputmodelPath = {tmp_path}/s.dnn.0 ; KeepRatio = 0.5
        NodeNameRegex = W ; AlignedSize = 1 ]
again = [ action = train ; modelPath = {tmp_path}/s.dnn ; NDLNetworkBuilder = [ networkDescription = {tmp_path}/none.ndl ] ]
net = [
{body}
]
""")
    results = run([f"configFile={cfg}"])
    assert [a for _, a, _ in results] == ["train", "SVD", "train"]
    w = load_model(str(tmp_path / "m.dnn")).network.tensor("W").detach().double().numpy()
    r = svd_rank(np.linalg.svd(w, compute_uv=False), 0.5, 1)
    assert results[1][2] == {"W": r}
    # the second train started from s.dnn.0 (the builder's file does not exist: it was not built)
    trained = load_model(str(tmp_path / "s.dnn")).network
    assert "W_U" in trained.graph.nodes and tuple(trained.shapes["W_U"]) == (4, r)


BN = """
    x = Input(2, tag=feature)
    labels = Input(2, tag=label)
    sc = Parameter(2, 1, init=fixedValue, value=1)
    bi = Parameter(2, 1, init=fixedValue, value=0)
    m = Parameter(2, 1, init=fixedValue, value=0, learningRateMultiplier=0)
    v = Parameter(2, 1, init=fixedValue, value=0, learningRateMultiplier=0)
    y = BatchNormalization(x, sc, bi, m, v, spatial=false)
    W = Parameter(2, 2)
    z = Times(W, y, tag=output)
    ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
"""


def test_bnstat_recomputes_the_running_statistics(tmp_path):
    data = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 60.0], [7.0, 30.0]])
    (tmp_path / "d.ctf").write_text("".join(f"|x {a} {b} |labels 1 0\n" for a, b in data))
    body = "\n".join("    " + ln.strip() for ln in BN.strip().splitlines())
    reader = (f"reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/d.ctf ; randomize = false ; "
              "input = [ x = [ dim = 2 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]")
    cfg = tmp_path / "b.cntk"
    cfg.write_text(f"""command = train:bn
deviceId = cpu
progressBar = false
precision = double
{reader}
train = [ action = train ; modelPath = {tmp_path}/m.dnn ; NDLNetworkBuilder = [ run = net ]
          SGD = [ minibatchSize = 4 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ] ]
bn = [ action = bnstat ; modelPath = {tmp_path}/m.dnn ; minibatchSize = 2 ; itersPerNode = 2 ]
net = [
{body}
]
""")
    results = run([f"configFile={cfg}"])
    assert results[1][2] == {"y": 4}                     # two minibatches of two samples
    net = load_model(str(tmp_path / "m.dnn.PBN"), dtype=torch.float64).network
    assert batch_norm_nodes(net, ["ce"]) == ["y"]
    assert np.allclose(net.tensor("m").reshape(-1).numpy(), data.mean(0))
    # the corpus-level average of the two minibatches' unbiased variances
    want = (data[:2].var(0, ddof=1) + data[2:].var(0, ddof=1)) / 2
    assert np.allclose(net.tensor("v").reshape(-1).numpy(), want)


BS_TEXT = """
    x = Input(3, tag='feature') ; labels = Input(2, tag='label')
    W = Parameter(2, 3) ; z = Times(W, x, tag='output')
    ce = CrossEntropyWithSoftmax(labels, z, tag='criterion')
"""


def test_a_brainscript_builder_in_a_parent_section_and_brainscript_edit(tmp_path):
    (tmp_path / "d.ctf").write_text("".join(f"|x 1 {i} 0 |labels 1 0\n" for i in range(6)))
    cfg = tmp_path / "b.cntk"
    cfg.write_text(f"""command = train:make
deviceId = cpu
progressBar = false
BrainScriptNetworkBuilder = {{
{BS_TEXT}
    // a BrainScript comment
    unused = if 1 > 2
             then 3
             else 4
}}
train = [ action = train ; modelPath = {tmp_path}/m.dnn
          SGD = [ minibatchSize = 3 ; learningRatesPerSample = 0.1 ; maxEpochs = 1 ]
          reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/d.ctf
                     input = [ x = [ dim = 3 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ] ]
make = [ action = edit ; outputModelPath = {tmp_path}/e.dnn ]
""")
    results = run([f"configFile={cfg}"])
    assert [a for _, a, _ in results] == ["train", "edit"]
    assert results[1][2] == {"outputModelPath": f"{tmp_path}/e.dnn"}
    assert "W" in load_model(str(tmp_path / "e.dnn")).network.graph.nodes
    (tmp_path / "e.dnn").write_bytes(b"not a model")      # makeMode: an existing output is left alone
    cfg.write_text(cfg.read_text().replace("command = train:make", "command = make"))
    run([f"configFile={cfg}"])
    assert (tmp_path / "e.dnn").read_bytes() == b"not a model"


def test_the_top_level_parallel_train_switch_is_no_section():
    cfg = parse_config("parallelTrain = true\ncmd = [ SGD = [ maxEpochs = 1 ] ]")
    cmd = cfg("cmd")
    assert ParallelParams.from_config(cmd, cmd("SGD"), 1).method == "none"
    cfg = parse_config("parallelTrain = maybe\ncmd = [ SGD = [ maxEpochs = 1 ] ]")
    with pytest.raises(ConfigError, match="parallelTrain"):
        ParallelParams.from_config(cfg("cmd"), cfg("cmd")("SGD"), 1)
    cfg = parse_config("parallelTrain = true\ncmd = [ SGD = [ ParallelTrain = [ parallelizationMethod = "
                       "DataParallelSGD ] ] ]")
    assert ParallelParams.from_config(cfg("cmd"), cfg("cmd")("SGD"), 1).method == "dataparallelsgd"


def test_asynchronous_sgd_is_refused_by_name():
    # Tests/EndToEndTests/ParallelTraining/AsynchronousSGD/03_ResNet-parallel.cntk:65
    # parallelizationMethod = $parallelizationMethod$, its run-test giving DataParallelASGD (CNTK's
    # parameter-server SGD, SGD.cpp ParallelizationMethod::dataParallelASGD)
    cfg = parse_config("Train = [ SGD = [ ParallelTrain = [ parallelizationMethod = DataParallelASGD ] ] ]")
    with pytest.raises(NotImplementedInCntkio, match=r"Train\.SGD\.ParallelTrain\.parallelizationMethod="
                       r"DataParallelASGD: asynchronous SGD with a parameter server is not implemented"):
        ParallelParams.from_config(cfg("Train"), cfg("Train")("SGD"), 1)


def test_validation_counts_the_names_a_mel_or_ndl_file_reads_as_used(tmp_path):
    # CNTK's cntk_dpt.cntk: an edit command's keys currLayer/newLayer/... are read only by the MEL
    # file ($newLayer$), when the command runs; validation reads them too, so no "not used" warning
    from cntkio.actions.validate import validate_commands
    from cntkio.config import load_config
    (tmp_path / "add_layer.mel").write_text("m1 = LoadModel($currModel$, format=cntk)  # $inComment$\n"
                                            "SetDefaultModel(m1)\nL$newLayer$ = 1\nSaveModel(m1, $newModel$)\n")
    (tmp_path / "net.ndl").write_text("run = n\nn = [\n  x = Input($featDim$)\n]\n")
    cfg = tmp_path / "c.cntk"
    cfg.write_text(f"command = addLayer:train\nfeatDim = 4\nunrelated = 1\n"
                   f"addLayer = [\n  action = edit\n  currModel = a\n  newModel = b\n  newLayer = 2\n"
                   f"  inComment = 3\n  editPath = {tmp_path}/add_layer.mel\n]\n"
                   f"train = [\n  action = train\n  NDLNetworkBuilder = [ networkDescription = {tmp_path}/net.ndl ]\n]\n")
    report = validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False)
    assert sorted(u.path for u in report.unused) == ["addLayer.inComment"]
