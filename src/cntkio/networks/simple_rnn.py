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
* ``LBLM``: CNTK's log-bilinear LM: an optional embedding (``Lookuptatble``, CNTK's spelling), the
  input plus ``maOrder`` delayed copies (``pastValue<k> = PastValue(x, timeStep=k)`` through
  ``DD<k>``), then linear hidden layers ``Times(U<i>, x)`` (plus ``Times(R<i+1>, PastValue(.))`` where
  ``recurrentLayer`` lists ``i + 1``) plus ``bi<i>``, no non-linearity; output ``W<n>``.
* ``NPLM``: CNTK's DNN LM (``BuildDNNLMNetworkFromDescription``): the first hidden layer sees the
  input and its 4 predecessors, ``H1 = Tanh(WXI·x + WXI1·x(t-1) + ... + WXI4·x(t-4)) + bi0``
  (the delayed inputs before a sequence's start are ``defaultHiddenActivity``); further layers are
  the ``SIMPLERNN`` recurrent layers. CNTK built only that (``recurrentLayer`` must list 1, 2, ...
  for every hidden layer: its other branch used nodes it never created).
* ``CLSTM``: the conditional LSTM LM: ``CLASSLSTM`` with every hidden layer an LSTM and a global
  bias from a second input, ``binaryFeature`` (``auxfeatdim`` rows, 20 by default):
  ``TimesToGetGlobalBias = Act(Times(AuxTrans0, binaryFeature))``,
  ``PlusGlobalBias = Plus(h, TimesToGetGlobalBias)`` feeds the class-based output.

Initial values are drawn by the NDL ``Parameter`` initialisation (CNTK's distributions,
``uniformInit``/``initValueScale``; not CNTK's random stream).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError, NotImplementedInCntkio
from ..integrations.torch_backend import torch
from .simple import REFUSED_CRITERIA

__all__ = ["RNN_TYPES", "RecurrentSpec", "recurrent_ndl", "build_recurrent"]

#: rnnType values cntkio builds (upper-case, CNTK's spelling)
RNN_TYPES = ("SIMPLENET", "SIMPLERNN", "LSTM", "CLASSLSTM", "CLASSLM", "LBLM", "NPLM", "CLSTM")
#: rnnType values CNTK's builder knew that cntkio refuses, with why
REFUSED_RNN_TYPES = {
    "NCELSTM": "the NCE-trained LSTM: CNTK 2.7 could not run it either (its builder passes the BiasVector "
               "parameter as input 3 of NCEBasedCrossEntropyWithSoftmax, whose validation requires that input to be "
               "a minibatch: 'requires inputs 0, 1, and 3 to be a minibatch'), and its labels of "
               "2*(noise_number+1) rows come from the LMSequenceReader's mode=nce noise sampling, which cntkio's "
               "SequenceReader does not have",
    "CRF": "the CRF LSTM: CNTK 2.7 did not build it (BuildCRFLSTMNetworkFromDescription is compiled out, "
           "'#ifdef COMING_SOON', so CNTK 2.7 stopped with 'invalid m_standardNetworkKind'), and no config "
           "could select its CRF criterion (trainingCriterion did not accept CRF)",
}
_ACTS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "rectifiedlinear": "RectifiedLinear", "relu": "RectifiedLinear"}
# CNTK's names, matched without regard to case (SimpleNetworkBuilder.cpp, ParseTrainingCriterionString and
# ParseEvalCriterionString: EqualCI)
_TRAIN = {"crossentropywithsoftmax": "CrossEntropyWithSoftmax", "crossentropy": "CrossEntropy",
          "squareerror": "SquareError", "logistic": "Logistic",
          "classcrossentropywithsoftmax": "ClassCrossEntropyWithSoftmax"}
_EVAL = {**_TRAIN, "classificationerror": "ClassificationError", "errorprediction": "ClassificationError"}
_CLASS_BASED = ("CLASSLSTM", "CLASSLM", "CLSTM")


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
    ma_order: int = 0
    aux_feat_dim: int = 20
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
        for key, v in (("trainingCriterion", self.training_criterion), ("evalCriterion", self.eval_criterion)):
            if str(v).lower() in REFUSED_CRITERIA:
                raise NotImplementedInCntkio(f"{self.path}.{key}={v}: {REFUSED_CRITERIA[str(v).lower()]}")
        if str(self.training_criterion).lower() not in _TRAIN:
            raise ConfigError(f"unknown trainingCriterion {self.training_criterion!r}",
                              path=f"{self.path}.trainingCriterion", hint="one of " + ", ".join(_TRAIN.values()))
        if str(self.eval_criterion).lower() not in _EVAL:
            raise ConfigError(f"unknown evalCriterion {self.eval_criterion!r}", path=f"{self.path}.evalCriterion",
                              hint="one of " + ", ".join(sorted(set(_EVAL.values()))))
        self.training_criterion = _TRAIN[str(self.training_criterion).lower()]
        self.eval_criterion = _EVAL[str(self.eval_criterion).lower()]
        for key, v in (("trainingCriterion", self.training_criterion), ("evalCriterion", self.eval_criterion)):
            if v == "ClassCrossEntropyWithSoftmax" and self.rnn_type not in _CLASS_BASED:
                raise ConfigError(f"{key}=classCrossEntropyWithSoftmax needs word classes: rnnType "
                                  f"{' or '.join(_CLASS_BASED)} (found {self.rnn_type})", path=f"{self.path}.{key}")
        order = self.lookup_table_order = int(self.lookup_table_order)
        if order < 0:
            raise ConfigError(f"lookupTableOrder must be >= 0, found {order}", path=f"{self.path}.lookupTableOrder")
        if order and self.rnn_type in ("LSTM", "CLASSLSTM", "CLSTM", "LBLM"):
            if len(sizes) < 4:
                raise ConfigError(f"with lookupTableOrder the second layer size is the embedding: layerSizes needs "
                                  f"input:embedding:hidden...:output, found {sizes}", path=f"{self.path}.layerSizes",
                                  hint="e.g. layerSizes=1000:50:100:1000 with lookupTableOrder=1")
            if sizes[0] % order:
                raise ConfigError(f"the input size {sizes[0]} is not a multiple of lookupTableOrder {order} "
                                  "(the input stacks lookupTableOrder words)", path=f"{self.path}.lookupTableOrder")
        if self.rnn_type in ("CLASSLSTM", "CLSTM") and not order:
            raise ConfigError(f"rnnType={self.rnn_type} needs lookupTableOrder > 0 (an LSTM reads the words through "
                              "an embedding, as in CNTK)", path=f"{self.path}.lookupTableOrder",
                              hint="e.g. layerSizes=$VOCAB:100:200:$VOCAB with lookupTableOrder=1")
        if self.rnn_type in ("CLASSLSTM", "CLASSLM", "CLSTM") and int(self.nbr_class) <= 0:
            raise ConfigError(f"rnnType={self.rnn_type} needs nbrClass, the number of word classes",
                              path=f"{self.path}.nbrClass", hint="the number of classes of the wordclass file")
        if self.rnn_type in ("SIMPLERNN", "CLASSLM", "NPLM") and order:
            raise ConfigError("lookupTableOrder applies to rnnType LSTM, CLASSLSTM, CLSTM and LBLM (CNTK's other "
                              "builders did not read it)", path=f"{self.path}.lookupTableOrder")
        ma = self.ma_order = int(self.ma_order)
        if ma < 0:
            raise ConfigError(f"maOrder must be >= 0, found {ma}", path=f"{self.path}.maOrder")
        if self.rnn_type == "LBLM":
            if ma and order and sizes[1] * order != sizes[0]:
                raise ConfigError(f"maOrder with lookupTableOrder: CNTK's log-bilinear builder sizes the delayed "
                                  f"inputs as the input layer ({sizes[0]} rows) but they read the embedding "
                                  f"({sizes[1]}*{order} rows)", path=f"{self.path}.maOrder",
                                  hint="maOrder=0 with an embedding, or no lookupTableOrder")
            if order > 1 and len(sizes) > 4:
                raise ConfigError(f"CNTK's log-bilinear builder sizes every hidden layer's input as layerSizes[i] * "
                                  f"lookupTableOrder, which holds only for the layer after the embedding; with "
                                  f"lookupTableOrder={order} give one hidden layer", path=f"{self.path}.layerSizes",
                                  hint="e.g. layerSizes=$VOCAB*3:50:100:$VOCAB with lookupTableOrder=3")
        if self.rnn_type == "NPLM":
            for i in range(len(sizes) - 2):
                if not self.listed(i, i + 1):
                    raise ConfigError(f"rnnType=NPLM: CNTK's builder made hidden layer {i + 1} only as the layer "
                                      "recurrentLayer lists (its other branch used nodes it never created)",
                                      path=f"{self.path}.recurrentLayer",
                                      hint="recurrentLayer=" + ":".join(str(k + 1) for k in range(len(sizes) - 2)))
        if int(self.aux_feat_dim) <= 0:
            raise ConfigError(f"auxfeatdim must be > 0, found {self.aux_feat_dim}", path=f"{self.path}.auxfeatdim")
        self.aux_feat_dim = int(self.aux_feat_dim)

    def listed(self, k: int, layer: int) -> bool:
        """CNTK's test ``m_recurrentLayers[k] == layer`` (``k`` counts the recurrent layers found so far;
        past the list's end its last entry repeats, as CNTK's argvector did)."""
        r = self.recurrent_layers
        return bool(r) and r[min(k, len(r) - 1)] == layer

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

    def nplm_first(self, x: str, n_in: int, n: int) -> str:
        """NPLM's first hidden layer: the input and its 4 predecessors through WXI, WXI1..WXI4, Tanh, + bi0."""
        d = float(self.s.default_hidden_activity)
        for k in range(1, 5):
            self(f"PastX{k} = PastValue({n_in}, {x}, timeStep={k}, defaultHiddenActivity={d!r})")
        for name in ("WXI2", "WXI3", "WXI4", "WXI1", "WXI"):        # CNTK's creation order
            self.param(name, n, n_in)
        self(f"bi0 = Parameter({n}, 1, init=zero)")
        total = f"Times(WXI, {x})"
        for k in range(1, 5):
            total = f"Plus(Times(WXI{k}, PastX{k}), {total})"
        self(f"H1 = Plus(Tanh({total}), bi0)")
        return self.drop("H1")

    def lblm(self, x: str) -> str:
        """The log-bilinear stack (module docstring): delayed inputs, then linear (optionally
        recurrent) layers with a bias."""
        s, L, d = self.s, self.s.layer_sizes, float(self.s.default_hidden_activity)
        order = s.lookup_table_order
        if order:
            self.param("E0", L[1], L[0] // order)
            self(f"Lookuptatble = LookupTable(E0, {x})")
            x = self.drop("Lookuptatble")
        out = x
        for k in range(1, s.ma_order + 1):
            self(f"pastValue{k} = PastValue({L[0]}, {x}, timeStep={k}, defaultHiddenActivity={d!r})")
            self.param(f"DD{k}", L[0], L[0])
            self(f"MA{k} = Plus({out}, Times(DD{k}, pastValue{k}))")
            out = f"MA{k}"
        x = self.drop(out)                  # CNTK drops here again (after the embedding's own Dropout)
        recur = 0
        for i in range(1 if order else 0, len(L) - 2):
            n = L[i + 1]
            self.param(f"U{i}", n, L[i] * (order or 1))
            self(f"UX{i + 1} = Times(U{i}, {x})")
            h = f"UX{i + 1}"
            if s.listed(recur, i + 1):
                self.param(f"R{i + 1}", n, n)
                self(f"HPrev{i + 1} = PastValue({n}, HR{i + 1}, timeStep=1, defaultHiddenActivity={d!r})")
                self(f"HR{i + 1} = Plus(Times(R{i + 1}, HPrev{i + 1}), {h})")
                h = f"HR{i + 1}"
                recur += 1
            self(f"bi{i} = Parameter({n}, 1, init=zero)")
            self(f"H{i + 1} = Plus({h}, bi{i})")
            x = self.drop(f"H{i + 1}")
        return x


def recurrent_ndl(spec: RecurrentSpec) -> str:
    """The NDL description of a recurrent SimpleNetworkBuilder network (module docstring)."""
    s, w = spec, _Writer(spec)
    L = s.layer_sizes
    hidden = len(L) - 2
    class_based = s.rnn_type in _CLASS_BASED
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
    elif s.rnn_type == "LBLM":
        x = w.lblm(x)
    elif s.rnn_type == "NPLM":
        x = w.nplm_first(x, L[0], L[1])
        for i in range(1, hidden):
            x = w.rnn(i, x, L[i], L[i + 1])
    else:
        order = s.lookup_table_order
        offset = 1 if order else 0
        if order:
            w.param("E0", L[1], L[0] // order)
            w(f"LookupTable = LookupTable(E0, {x})")
            x = w.drop("LookupTable")
        x = w.lstm(0, x, L[offset] * (order if offset else 1), L[offset + 1])
        for i in range(1 + offset, hidden):
            lstm = s.rnn_type == "CLSTM" or i in s.recurrent_layers     # CLSTM: every layer an LSTM
            x = (w.lstm if lstm else w.dense)(i, x, L[i], L[i + 1])
    top = L[hidden]
    if s.rnn_type == "CLSTM":
        w(f"binaryFeature = Input({s.aux_feat_dim}, tag=feature)")
        w.param("AuxTrans0", top, s.aux_feat_dim)
        w(f"TimesToGetGlobalBias = {s.act(hidden)}(Times(AuxTrans0, binaryFeature))")
        w(f"PlusGlobalBias = Plus({x}, TimesToGetGlobalBias)")
        x = "PlusGlobalBias"
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
    # CNTK's names (SimpleNetworkBuilder.cpp, AddTrainAndEvalCriterionNodes, 1670-1770): the criterion
    # is named by its type; an evaluation criterion of the same type is that node (in both groups),
    # another is named by its type too, ClassificationError as EvalClassificationError
    w(f"{crit} = {crit}(labels, {pred.get(crit, 'outputs')}, tag=criterion)")
    if ev == crit:
        w(f"evaluationNodes = ({crit})")
    else:
        w(f"{'EvalClassificationError' if ev == 'ClassificationError' else ev} = {ev}(labels, "
          f"{pred.get(ev, 'outputs')}, tag=eval)")
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
