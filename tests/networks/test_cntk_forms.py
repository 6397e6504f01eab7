"""Network forms CNTK's Examples and EndToEnd configs use: a criterion of a value per sample summed
(CNTK's implicit reduction), batch normalisation's run count, Scale with the scalar second,
parameter dimensions inferred in NDL, an auto-encoder without a label node, refusals by name,
``new ComputationNode``, a fixed embedding read from a file, SimpleNetworkBuilder's criteria by
CNTK's names in any case."""
from __future__ import annotations

import math

import pytest
import torch

from cntkio.errors import ConfigError, NotImplementedInCntkio
from cntkio.networks import NetworkSpec
from cntkio.networks.brainscript import build as bs_build
from cntkio.networks.ndl import NDLError, build as ndl_build
from cntkio.networks.ndl.parser import NDLRefusal
from cntkio.networks.simple_rnn import RecurrentSpec, build_recurrent


def test_a_criterion_with_a_value_per_sample_is_summed_like_cntk():
    # Examples/Image/GettingStarted/05_OneConvRegr.cntk's criterion: rmse = Sqrt (sqerr / labelDim)
    net = bs_build("""features = Input {4} ; regrLabels = Input {3}
ol = LinearLayer {3} (features)
diff = regrLabels - ol
sqerr = ReduceSum (diff .* diff, axis=1)
rmse = Sqrt (sqerr / 3)
featureNodes = (features) ; labelNodes = (regrLabels) ; criterionNodes = (rmse) ; evaluationNodes = (rmse)
""")
    x, y = torch.randn(5, 4), torch.randn(5, 3)
    loss = net.criterion(net(x), y)
    assert loss.shape == ()
    want = (((y - (x @ net.tensor("ol.W").T + net.tensor("ol.b").reshape(-1))) ** 2).sum(1) / 3).sqrt().sum()
    torch.testing.assert_close(loss, want)
    loss.backward()                                      # the gradient of the sum: CNTK's root gradient of ones
    assert net.tensor("ol.W").grad is not None


def test_batch_normalization_takes_the_first_minibatch_whole_then_averages():
    net = ndl_build("""x = Input(2)
sc = Parameter(2, 1, init=fixedValue, value=1) ; b = Parameter(2, 1, init=fixedValue, value=0)
m = Parameter(2, 1, init=fixedValue, value=0) ; v = Parameter(2, 1, init=fixedValue, value=0)
y = BatchNormalization(x, sc, b, m, v, normalizationTimeConstant=100, tag=output)
""")
    assert net.graph.nodes["y"].inputs[-1] == "y.run_sample_count"      # as CNTK's NDL adds it
    net.train()
    a = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    net.evaluate({"x": a}, ["y"])
    torch.testing.assert_close(net.tensor("m").reshape(-1), a.mean(0))             # factor 1 at first
    assert float(net.tensor("y.run_sample_count")) == 2
    b = torch.tensor([[5.0, 2.0], [7.0, 2.0]])
    net.evaluate({"x": b}, ["y"])
    f = -math.expm1(-2 / 100)
    torch.testing.assert_close(net.tensor("m").reshape(-1), a.mean(0) * (1 - f) + b.mean(0) * f)


def test_scale_takes_its_scalar_first_or_second():
    # Examples/Image/Regression/RegrSimple_CIFAR10.cntk: Scale (features, featScale); CNTK 2 builds
    # Scale as ElementTimes
    net = bs_build("featScale = Constant(1/256)\nfeatures = Input {4}\na = Scale (features, featScale)\n"
                   "b = Scale (featScale, features)\nz = a + b\n")
    x = torch.arange(8.0).reshape(2, 4)
    v = net.evaluate({"features": x}, ["a", "b"])
    torch.testing.assert_close(v["a"], x / 256)
    torch.testing.assert_close(v["b"], x / 256)


def test_ndl_infers_a_zero_dimension_from_the_parameters_use():
    # Examples/Speech/AN4/Config/lstmp-3layer-opt.ndl: wx = Parameter(cellDimX4, 0, ...); Times(wx, inputx)
    net = ndl_build("x = Input(7)\nwx = Parameter(12, 0, init=uniform)\nb = Parameter(0, 1, init=fixedValue, value=1)\n"
                    "y = Plus(Times(wx, x), b, tag=output)\n")
    assert net.shapes["wx"] == (12, 7) and net.shapes["b"] == (12, 1)
    with pytest.raises(NDLError, match="cannot be inferred: its first use, y \\(Sigmoid\\)"):
        ndl_build("w = Parameter(0, 3)\ny = Sigmoid(w)\n")


def test_ndl_and_brainscript_refuse_cntk_functions_they_do_not_build_by_name():
    with pytest.raises(NDLRefusal) as e:
        ndl_build("q = Input(4)\nd = Input(4)\nc = CosDistanceWithNegativeSamples(q, d, 1, 4)\n")
    assert isinstance(e.value, NotImplementedInCntkio)
    assert str(e.value).startswith("<string>:3:5: CosDistanceWithNegativeSamples is not supported by cntkio: ")
    with pytest.raises(NotImplementedInCntkio, match="Crop is not supported by cntkio"):
        bs_build("x = Input{3}\ny = new ComputationNode [ operation = 'Crop' ; inputs = (x : x) ]\nz = y\n")
    with pytest.raises(NotImplementedInCntkio, match=r"Slice: axis=-1 \(the sequence axis\) is not supported"):
        bs_build("x = Input{3}\nz = Slice (0, 1, x, axis=-1)\n")


def test_new_computation_node_makes_a_node_of_the_library():
    net = bs_build("x = Input{3}\ny = new ComputationNode [ operation = 'Plus' ; inputs = (x : x) ]\n"
                   "n = new ComputationNode [ operation = 'Negate' ; inputs = y ; tag = 'output' ]\nz = n\n")
    assert net.graph.nodes["y"].op == "Plus" and net.graph.groups["output"] == ["n"]
    with pytest.raises(NDLError, match="unknown operation 'Plusss'"):
        bs_build("x = Input{3}\nz = new ComputationNode [ operation = 'Plusss' ; inputs = x ]\n")


def test_an_auto_encoder_without_a_label_node_gives_the_criterions_other_input_the_label_role():
    # Examples/Speech/Miscellaneous/TIMIT/config/ae.ndl: two feature inputs, SquareError of them
    net = ndl_build("featIn = Input(4, tag=feature)\nfeatOut = Input(4, tag=feature)\n"
                    "W = Parameter(4, 4)\nh = Sigmoid(Times(W, featIn))\nmse = SquareError(featOut, h, tag=criterion)\n")
    assert net.spec.label_nodes == [] and net.spec.label_node == "featOut"
    net.check_trainable("train")
    x, y = torch.rand(3, 4), torch.rand(3, 4)
    h = torch.sigmoid(x @ net.tensor("W").T)
    torch.testing.assert_close(net.criterion(net(x), y), ((y - h) ** 2).sum())


def test_a_fixed_embedding_from_a_file(tmp_path):
    # EmbeddingLayer {outDim, embeddingPath=...}: CNTK reads the matrix, learningRateMultiplier 0
    (tmp_path / "emb.txt").write_text("1 2 3 4\n5 6 7 8\n")
    net = bs_build(f"x = Input{{4}}\nz = EmbeddingLayer {{2, embeddingPath='{tmp_path}/emb.txt'}} (x)\n")
    E = net.tensor("z.W")
    assert not E.requires_grad and E.reshape(2, 4).tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    v = net.evaluate({"x": torch.eye(4)}, ["z"])["z"]
    assert v.tolist() == [[1, 5], [2, 6], [3, 7], [4, 8]]
    with pytest.raises(NDLError, match="holds a 2x4 matrix, the parameter needs 3 rows of 4 values"):
        bs_build(f"x = Input{{4}}\nz = EmbeddingLayer {{3, embeddingPath='{tmp_path}/emb.txt'}} (x)\n")


def test_simple_network_builder_criteria_by_cntks_names_in_any_case():
    spec = RecurrentSpec(rnn_type="CLASSLM", layer_sizes=[20, 8, 20], training_criterion="classcrossentropywithsoftmax",
                         eval_criterion="ClassCrossEntropyWithSoftmax", nbr_class=4)
    assert spec.training_criterion == "ClassCrossEntropyWithSoftmax"
    net = build_recurrent(spec)
    assert net.spec.training_criterion == "TrainNodeClassBasedCrossEntropy"
    with pytest.raises(ConfigError, match="classCrossEntropyWithSoftmax needs word classes"):
        RecurrentSpec(rnn_type="LSTM", layer_sizes=[20, 8, 20], training_criterion="classCrossEntropyWithSoftmax")
    with pytest.raises(NotImplementedInCntkio, match="noiseContrastiveEstimation: noise-contrastive"):
        NetworkSpec(layer_sizes=[4, 3, 2], layer_types=["Sigmoid"], training_criterion="noiseContrastiveEstimation")
    assert NetworkSpec(layer_sizes=[4, 3, 2], layer_types=["sigmoid"],
                       training_criterion="crossentropywithsoftmax").training_criterion == "CrossEntropyWithSoftmax"


def test_simple_network_builder_lstm_criterion_named_as_cntk_names_it():
    # Tests/EndToEndTests/Examples/Text/Miscellaneous/SLU/baseline.cpu.txt:302:
    # "Training criterion:   CrossEntropyWithSoftmax = CrossEntropyWithSoftmax", no other evaluation node
    same = build_recurrent(RecurrentSpec(rnn_type="LSTM", layer_sizes=[5, 4, 3], training_criterion="crossentropywithsoftmax",
                                         eval_criterion="crossentropywithsoftmax"))
    assert same.spec.criterion_nodes == ["CrossEntropyWithSoftmax"] and same.spec.eval_nodes == ["CrossEntropyWithSoftmax"]
    other = build_recurrent(RecurrentSpec(rnn_type="LSTM", layer_sizes=[5, 4, 3], training_criterion="SquareError",
                                          eval_criterion="ErrorPrediction"))
    assert other.spec.criterion_nodes == ["SquareError"] and other.spec.eval_nodes == ["EvalClassificationError"]


def test_ndl_load_sections_hold_the_networks_variables_and_nodes(tmp_path):
    # Tests/EndToEndTests/Examples/Image/Deprecated/MNIST/02_Convolution_ndl/02_Convolution.ndl: load = ndlMnistMacros,
    # a section of variables and nodes (imageW, features, labels) that the run section reads
    p = tmp_path / "net.ndl"
    p.write_text("load = macros\nrun = DNN\nmacros = [\n  dim = 3\n  features = Input(dim, tag=feature)\n"
                 "  Double(x) = Plus(x, x)\n]\nDNN = [\n  z = Double(features, tag=output)\n]\n")
    net = ndl_build(str(p))
    assert net.shapes["z"] == (3,) and net.spec.feature_nodes == ["features"]
    assert net.evaluate({"features": torch.tensor([[1.0, 2.0, 3.0]])}, ["z"])["z"].tolist() == [[2.0, 4.0, 6.0]]


def test_ndl_error_prediction_with_a_top_n_input():
    # Tests/EndToEndTests/BatchNormalization/NonSpatial/01_OneHidden.ndl:32: ErrorPrediction(labels, ol, Const(5))
    net = ndl_build("labels = Input(4, tag=label)\nz = Input(4)\ne1 = ErrorPrediction(labels, z)\n"
                    "e2 = ErrorPrediction(labels, z, Const(2), tag=eval)\n")
    y = torch.tensor([[0, 0, 1.0, 0], [1.0, 0, 0, 0]])
    z = torch.tensor([[0.1, 0.5, 0.3, 0.0], [0.1, 0.2, 0.3, 0.4]])
    v = net.evaluate({"labels": y, "z": z}, ["e1", "e2"])
    assert v["e1"].item() == 2 and v["e2"].item() == 1         # the first sample's label is second best
    with pytest.raises(NDLError, match=r"argument 3 \(topN\) must be a constant"):
        ndl_build("labels = Input(4)\nz = Input(4)\ne = ErrorPrediction(labels, z, z)\n")


def test_an_auto_encoder_whose_criterion_reads_the_features_only():
    # Examples/Image/GettingStarted/07_Deconvolution_BS.cntk: rmse of the features and their reconstruction,
    # featureNodes only; the features also take the "labels" role (the same stream is fed)
    net = bs_build("features = Input {4}\nz = DenseLayer {4} (features)\nerr = z - features\n"
                   "rmse = Sqrt (ReduceMean (err .* err))\n"
                   "featureNodes = (features) ; criterionNodes = (rmse) ; evaluationNodes = (rmse) ; outputNodes = (z)\n")
    assert net.spec.label_nodes == [] and net.spec.label_node == "features"
    net.check_trainable("train")
    x = torch.rand(3, 4)
    z = x @ net.tensor("z.W").reshape(4, 4).T + net.tensor("z.b").reshape(-1)
    torch.testing.assert_close(net.criterion(net(x), x), ((z - x) ** 2).mean(1).sqrt().sum())


def test_a_bias_tensor_of_one_value_per_channel_adds_to_each_channel():
    # Tests/EndToEndTests/Image/QuickE2E/cntk.cntk:24-26: convB = ParameterTensor((1 : 1 : outMap)); conv + convB
    net = bs_build("x = ImageInput(6, 6, 2, imageLayout=\"cudnn\")\nconvW = Parameter(3, 2*3*3)\n"
                   "c = Convolution(convW, x, (3 : 3 : 2), mapDims=3, stride=(1 : 1 : 2), autoPadding=false, "
                   "imageLayout=\"cudnn\")\nconvB = ParameterTensor((1 : 1 : 3), init=\"fixedValue\", value=0)\n"
                   "z = c + convB\n")
    with torch.no_grad():
        net.tensor("convB").copy_(torch.tensor([1.0, 2.0, 3.0]).reshape(net.tensor("convB").shape))
    v = net.evaluate({"x": torch.rand(2, 2, 6, 6)}, ["c", "z"])
    assert v["z"].shape == (2, 3, 4, 4)
    torch.testing.assert_close(v["z"] - v["c"], torch.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1, 1).expand(2, 3, 4, 4))


def test_a_criterion_written_with_transpose_times_of_two_sequences():
    # Tests/EndToEndTests/Speech/LSTM/cntk.cntk:149,169-170: Times (W, x, inferInputRankToMap=0);
    # ce = SumElements (ReduceLogSum (z) - TransposeTimes (labels, z)); err with Hardmax
    net = bs_build("labels = Input{4}\nx = Input{3}\nW = ParameterTensor{(4:0)}\n"
                   "z = Times (W, x, inferInputRankToMap=0)\n"
                   "ce = SumElements (ReduceLogSum (z) - TransposeTimes (labels, z), tag='criterion')\n"
                   "err = SumElements (BS.Constants.One - TransposeTimes (labels, Hardmax (z)), tag='evaluation')\n"
                   "featureNodes = (x) ; labelNodes = (labels)\n")
    y, x = torch.tensor([[0, 1.0, 0, 0], [0, 0, 0, 1.0]]), torch.rand(2, 3)
    v = net.evaluate({"x": x, "labels": y}, ["z", "ce", "err"])
    z = v["z"]
    torch.testing.assert_close(v["ce"].reshape(()), (torch.logsumexp(z, -1) - (y * z).sum(-1)).sum())
    assert v["err"].item() == (z.argmax(-1) != y.argmax(-1)).sum().item()
    with pytest.raises(NotImplementedInCntkio, match="inferInputRankToMap above 0"):
        bs_build("x = Input{3}\nW = ParameterTensor{(4:0)}\nz = Times (W, x, inferInputRankToMap=1)\n")


def test_a_delay_dimension_is_inferred_through_a_scalar_stabilizer():
    # Tests/EndToEndTests/Speech/LSTM/cntk.cntk:100-103: H(h) = WeightParam (cellDim, outputDim) * Stabilize (h),
    # Stabilize = beta .* h with a scalar beta; dh = PastValue of the layer's output (dimension inferred)
    net = bs_build("x = Input{3}\nbeta = Exp (BS.Parameters.BiasParam ((1)))\nH = BS.Parameters.WeightParam (5, 4)\n"
                   "dh = PastValue (0, h)\n"
                   "h = Sigmoid (Times (ParameterTensor{(4:3)}, x) + Times (ParameterTensor{(4:5)}, H * (beta .* dh)))\n")
    assert net.shapes["dh"] == (4,) and net.shapes["h"] == (4,)
