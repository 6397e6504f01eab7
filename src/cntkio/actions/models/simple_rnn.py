"""SimpleNetworkBuilder's recurrent network kinds (``rnnType``), built as NDL networks.

CNTK's SimpleNetworkBuilder built, besides the feed-forward ``SIMPLENET``, recurrent networks
chosen by ``rnnType``. cntkio writes each as an NDL description with CNTK's node names and builds
it with the NDL node library (``PastValue`` loops, ``LookupTable``, ``DiagTimes``, ...), so it
trains, tests, writes and unrolls as any NDL network does (sequence layout, truncated BPTT, model
files). :func:`recurrent_ndl` gives the text (``show_network``-style inspection, tests).

* ``LSTM``: an optional embedding (``lookupTableOrder`` > 0: ``E0`` ``[layerSizes[1],
  layerSizes[0]/order]``, ``LookupTable = LookupTable(E0, features)``: the ``order`` words stacked in
  a feature vector, each mapped to its column of ``E0``, concatenated), then the first hidden layer
  an LSTM with peepholes (CNTK's ``BuildLSTMComponent``: parameters ``WXI<i>``, ``WHI<i>``,
  ``WCI<i>`` (diagonal), ``bi<i>`` for the input gate, likewise ``F``/``O``, ``WXC<i>``,
  ``WHC<i>``, ``bc<i>`` for the cell; gate biases start at ``inputGateInitVal``,
  ``forgetGateInitVal``, ``outputGateInitVal`` (-1), ``bc`` at 0; the gates' non-linearity is
  ``layerTypes``' first (Sigmoid by default); the previous ``h`` and ``c`` are ``PastValue`` with
  ``defaultHiddenActivity`` (0.1)); further hidden layers are LSTMs where ``recurrentLayer`` lists
  them (0-based layer index as CNTK compared it), feed-forward ``U<i>``/``B<i>`` otherwise; the
  output ``outputs = Times(W<n>, h)`` (no bias), ``PosteriorProb = Softmax(outputs)``;
  ``needPrior`` adds ``Prior``/``LogOfPrior``/``ScaledLogLikelihood``.
* ``CLASSLSTM``: the same LSTM stack (an embedding is required, as in CNTK), and the class-based
  output for word classes from the reader (LMSequenceReader with ``wordclass``: labels of 4 rows):
  ``W<n>`` is ``[hidden, vocabulary]``, ``ClassPostProb = Times(WeightForClassPostProb, h)`` with
  ``nbrClass`` rows, criterion and evaluation ``ClassBasedCrossEntropyWithSoftmax``
  (``TrainNodeClassBasedCrossEntropy``, ``EvalNodeClassBasedCrossEntrpy``, CNTK's spelling),
  ``outputs = TransposeTimes(W<n>, h)``.
* ``SIMPLERNN``: hidden layer ``i`` is recurrent where ``recurrentLayer`` lists ``i + 1``
  (``Act(Times(U<i>, x) + Times(W<i>, PastValue(h)))``, no bias, as CNTK), feed-forward
  ``Act(Times(U<i>, x) + B<i>)`` otherwise; output ``outputs = Times(W<n>, h)``.
* ``CLASSLM``: the ``SIMPLERNN`` stack with ``CLASSLSTM``'s class-based output (``nbrClass``).

Initial values are drawn by the NDL ``Parameter`` initialisation (CNTK's distributions,
``uniformInit``/``initValueScale``; not CNTK's random stream).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import ConfigError, NotImplementedInCntkio
from ...integrations.torch_backend import torch

__all__ = ["RNN_TYPES", "RecurrentSpec", "recurrent_ndl", "build_recurrent"]

#: rnnType values cntkio builds (upper-case, CNTK's spelling)
RNN_TYPES = ("SIMPLENET", "SIMPLERNN", "LSTM", "CLASSLSTM", "CLASSLM")
#: rnnType values CNTK's builder knew that cntkio refuses, with why
REFUSED_RNN_TYPES = {
    "LBLM": "the log-bilinear language model",
    "NPLM": "the DNN language model",
    "NCELSTM": "the NCE-trained LSTM (noise-contrastive estimation criterion)",
    "CLSTM": "the conditional LSTM (an extra binaryFeature input)",
    "CRF": "the CRF LSTM (CNTK 2.7 itself did not compile it)",
}
_ACTS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "rectifiedlinear": "RectifiedLinear", "relu": "RectifiedLinear"}
_TRAIN = {"crossentropywithsoftmax": "CrossEntropyWithSoftmax", "crossentropy": "CrossEntropy",
          "squareerror": "SquareError", "logistic": "Logistic"}
_EVAL = {**_TRAIN, "classificationerror": "ClassificationError", "errorprediction": "ClassificationError"}


@dataclass
class RecurrentSpec:
    """A recurrent SimpleNetworkBuilder section, resolved."""

    rnn_type: str
    layer_sizes: list[int]
    layer_types: list[str] = field(default_factory=lambda: ["Sigmoid"])
    training_criterion: str = "CrossEntropyWithSoftmax"
    eval_criterion: str = "ClassificationError"
    init_value_scale: float = 1.0
    uniform_init: bool = True
    apply_mean_var_norm: bool = False
    need_prior: bool = False
    add_dropout_nodes: bool = False
    lookup_table_order: int = 0
    recurrent_layers: list[int] = field(default_factory=list)
    default_hidden_activity: float = 0.1
    input_gate_init: float = -1.0
    forget_gate_init: float = -1.0
    output_gate_init: float = -1.0
    nbr_class: int = -1
    path: str = "SimpleNetworkBuilder"

    def __post_init__(self) -> None:
        t = str(self.rnn_type).upper()
        if t in REFUSED_RNN_TYPES:
            raise NotImplementedInCntkio(f"{self.path}.rnnType={self.rnn_type}: {REFUSED_RNN_TYPES[t]} is not "
                                         f"implemented in cntkio (rnnType {', '.join(RNN_TYPES)} are)")
        if t not in RNN_TYPES:
            raise ConfigError(f"unknown rnnType {self.rnn_type!r}", path=f"{self.path}.rnnType",
                              hint="one of " + ", ".join(RNN_TYPES + tuple(REFUSED_RNN_TYPES)))
        self.rnn_type = t
        sizes = self.layer_sizes = [int(s) for s in self.layer_sizes]
        if len(sizes) < 3 or any(s <= 0 for s in sizes):
            raise ConfigError(f"a recurrent network needs input, at least one hidden and output sizes, all > 0; "
                              f"found {sizes}", path=f"{self.path}.layerSizes", hint="e.g. layerSizes=10:50:10")
        for t in self.layer_types:
            if str(t).lower() not in _ACTS:
                raise ConfigError(f"unknown layerTypes entry {t!r}", path=f"{self.path}.layerTypes",
                                  hint="one of Sigmoid, Tanh, RectifiedLinear")
        self.layer_types = [_ACTS[str(t).lower()] for t in (self.layer_types or ["Sigmoid"])]
        if str(self.training_criterion).lower() not in _TRAIN:
            raise ConfigError(f"unknown trainingCriterion {self.training_criterion!r}",
                              path=f"{self.path}.trainingCriterion", hint="one of " + ", ".join(_TRAIN.values()))
        if str(self.eval_criterion).lower() not in _EVAL:
            raise ConfigError(f"unknown evalCriterion {self.eval_criterion!r}", path=f"{self.path}.evalCriterion",
                              hint="one of " + ", ".join(sorted(set(_EVAL.values()))))
        self.training_criterion = _TRAIN[str(self.training_criterion).lower()]
        self.eval_criterion = _EVAL[str(self.eval_criterion).lower()]
        order = self.lookup_table_order = int(self.lookup_table_order)
        if order < 0:
            raise ConfigError(f"lookupTableOrder must be >= 0, found {order}", path=f"{self.path}.lookupTableOrder")
        if order and self.rnn_type in ("LSTM", "CLASSLSTM"):
            if len(sizes) < 4:
                raise ConfigError(f"with lookupTableOrder the second layer size is the embedding: layerSizes needs "
                                  f"input:embedding:hidden...:output, found {sizes}", path=f"{self.path}.layerSizes",
                                  hint="e.g. layerSizes=1000:50:100:1000 with lookupTableOrder=1")
            if sizes[0] % order:
                raise ConfigError(f"the input size {sizes[0]} is not a multiple of lookupTableOrder {order} "
                                  "(the input stacks lookupTableOrder words)", path=f"{self.path}.lookupTableOrder")
        if self.rnn_type == "CLASSLSTM" and not order:
            raise ConfigError("rnnType=CLASSLSTM needs lookupTableOrder > 0 (an LSTM reads the words through "
                              "an embedding, as in CNTK)", path=f"{self.path}.lookupTableOrder",
                              hint="e.g. layerSizes=$VOCAB:100:200:$VOCAB with lookupTableOrder=1")
        if self.rnn_type in ("CLASSLSTM", "CLASSLM") and int(self.nbr_class) <= 0:
            raise ConfigError(f"rnnType={self.rnn_type} needs nbrClass, the number of word classes",
                              path=f"{self.path}.nbrClass", hint="the number of classes of the wordclass file")
        if self.rnn_type in ("SIMPLERNN", "CLASSLM") and order:
            raise ConfigError("lookupTableOrder applies to rnnType LSTM and CLASSLSTM (CNTK's other builders "
                              "did not read it)", path=f"{self.path}.lookupTableOrder")

    def act(self, layer: int) -> str:
        """The non-linearity of hidden layer ``layer`` (0-based; the last entry repeats)."""
        return self.layer_types[min(layer, len(self.layer_types) - 1)]

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


class _Writer:
    def __init__(self, spec: RecurrentSpec) -> None:
        self.s = spec
        self.lines: list[str] = []
        init = "uniform" if spec.uniform_init else "gaussian"
        self.init = f"init={init}, initValueScale={spec.init_value_scale!r}"

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def param(self, name: str, rows: int, cols: int) -> str:
        self(f"{name} = Parameter({rows}, {cols}, {self.init})")
        return name

    def fixed(self, name: str, rows: int, value: float) -> str:
        self(f"{name} = Parameter({rows}, 1, init=fixedValue, value={float(value)!r})")
        return name

    def drop(self, node: str) -> str:
        if not self.s.add_dropout_nodes:
            return node
        self(f"Drop{node} = Dropout({node})")
        return f"Drop{node}"

    def lstm(self, i: int, x: str, n_in: int, n: int) -> str:
        s, act, d = self.s, self.s.act(0), float(self.s.default_hidden_activity)
        for g in ("XO", "XI", "XF", "XC"):
            self.param(f"W{g}{i}", n, n_in)
        self.fixed(f"bo{i}", n, s.output_gate_init)
        self.fixed(f"bc{i}", n, 0.0)
        self.fixed(f"bi{i}", n, s.input_gate_init)
        self.fixed(f"bf{i}", n, s.forget_gate_init)
        for g in ("I", "F", "O"):
            self.param(f"WH{g}{i}", n, n)
            self.param(f"WC{g}{i}", n, 1)
        self.param(f"WHC{i}", n, n)
        h, c = f"LSTM{i}", f"LSTMCell{i}"
        self(f"LSTMPrevH{i} = PastValue({n}, {h}, timeStep=1, defaultHiddenActivity={d!r})")
        self(f"LSTMPrevC{i} = PastValue({n}, {c}, timeStep=1, defaultHiddenActivity={d!r})")
        for g, name in (("I", "LSTMInputGate"), ("F", "LSTMForgetGate")):
            self(f"{name}{i} = {act}(Plus(Plus(Plus(Times(WX{g}{i}, {x}), b{g.lower()}{i}), "
                 f"Times(WH{g}{i}, LSTMPrevH{i})), DiagTimes(WC{g}{i}, LSTMPrevC{i})))")
        self(f"{c} = Plus(ElementTimes(LSTMForgetGate{i}, LSTMPrevC{i}), ElementTimes(LSTMInputGate{i}, "
             f"Tanh(Plus(Times(WXC{i}, {x}), Plus(Times(WHC{i}, LSTMPrevH{i}), bc{i})))))")
        self(f"LSTMOutputGate{i} = {act}(Plus(Plus(Plus(Times(WXO{i}, {x}), bo{i}), Times(WHO{i}, LSTMPrevH{i})), "
             f"DiagTimes(WCO{i}, {c})))")
        self(f"{h} = ElementTimes(LSTMOutputGate{i}, Tanh({c}))")
        return self.drop(h)

    def dense(self, i: int, x: str, n_in: int, n: int) -> str:
        self.param(f"U{i}", n, n_in)
        self(f"B{i} = Parameter({n}, 1, init=zero)")
        self(f"H{i + 1} = {self.s.act(i)}(Plus(Times(U{i}, {x}), B{i}))")
        return self.drop(f"H{i + 1}")

    def rnn(self, i: int, x: str, n_in: int, n: int) -> str:
        d = float(self.s.default_hidden_activity)
        self.param(f"U{i}", n, n_in)
        self.param(f"W{i}", n, n)
        self(f"HPrev{i + 1} = PastValue({n}, H{i + 1}, timeStep=1, defaultHiddenActivity={d!r})")
        self(f"H{i + 1} = {self.s.act(i)}(Plus(Times(U{i}, {x}), Times(W{i}, HPrev{i + 1})))")
        return self.drop(f"H{i + 1}")


def recurrent_ndl(spec: RecurrentSpec) -> str:
    """The NDL description of a recurrent SimpleNetworkBuilder network (module docstring)."""
    s, w = spec, _Writer(spec)
    L = s.layer_sizes
    hidden = len(L) - 2
    class_based = s.rnn_type in ("CLASSLSTM", "CLASSLM")
    w(f"features = Input({L[0]}, tag=feature)")
    w(f"labels = Input({4 if class_based else L[-1]}, tag=label)")
    x = "features"
    if s.apply_mean_var_norm:
        w("MeanOfFeatures = Mean(features)")
        w("InvStdOfFeatures = InvStdDev(features)")
        w("MVNormalizedFeatures = PerDimMeanVarNormalization(features, MeanOfFeatures, InvStdOfFeatures)")
        x = "MVNormalizedFeatures"
    if s.rnn_type in ("SIMPLERNN", "CLASSLM"):
        for i in range(hidden):
            x = (w.rnn if (i + 1) in s.recurrent_layers else w.dense)(i, x, L[i], L[i + 1])
    else:
        order = s.lookup_table_order
        offset = 1 if order else 0
        if order:
            w.param("E0", L[1], L[0] // order)
            w(f"LookupTable = LookupTable(E0, {x})")
            x = w.drop("LookupTable")
        x = w.lstm(0, x, L[offset] * (order if offset else 1), L[offset + 1])
        for i in range(1 + offset, hidden):
            x = (w.lstm if i in s.recurrent_layers else w.dense)(i, x, L[i], L[i + 1])
    top = L[hidden]
    if class_based:
        w.param(f"W{hidden}", top, L[-1])
        w.param("WeightForClassPostProb", int(s.nbr_class), top)
        w(f"ClassPostProb = Times(WeightForClassPostProb, {x})")
        w(f"TrainNodeClassBasedCrossEntropy = ClassBasedCrossEntropyWithSoftmax(labels, {x}, W{hidden}, "
          "ClassPostProb, tag=criterion)")
        w(f"EvalNodeClassBasedCrossEntrpy = ClassBasedCrossEntropyWithSoftmax(labels, {x}, W{hidden}, "
          "ClassPostProb, tag=eval)")
        w(f"outputs = TransposeTimes(W{hidden}, {x}, tag=output)")
        w("PosteriorProb = Softmax(outputs)")
        return "\n".join(w.lines) + "\n"
    w.param(f"W{hidden}", L[-1], top)
    w(f"outputs = Times(W{hidden}, {x})")
    crit, ev = s.training_criterion, s.eval_criterion
    pred = {"CrossEntropy": "PosteriorProb", "Logistic": "SigmoidOfOutputs"}
    w("PosteriorProb = Softmax(outputs)")
    if crit == "Logistic" or ev == "Logistic":
        w("SigmoidOfOutputs = Sigmoid(outputs)")
    w(f"{crit}Criterion = {crit}(labels, {pred.get(crit, 'outputs')}, tag=criterion)")
    w(f"Eval{ev} = {ev}(labels, {pred.get(ev, 'outputs')}, tag=eval)")
    if s.need_prior:
        w("Prior = Mean(labels)")
        w("LogOfPrior = Log(Prior)")
        w("ScaledLogLikelihood = Minus(outputs, LogOfPrior, tag=output)")
    else:
        w.lines[w.lines.index(f"outputs = Times(W{hidden}, {x})")] = f"outputs = Times(W{hidden}, {x}, tag=output)"
    return "\n".join(w.lines) + "\n"


def build_recurrent(spec: RecurrentSpec, *, dtype: torch.dtype = torch.float32, seed_offset: int = 0):
    """The network (an ``NDLNetwork``) of a recurrent SimpleNetworkBuilder section."""
    from .ndl import build
    return build(recurrent_ndl(spec), dtype=dtype, seed_offset=seed_offset)
