"""CNTK's SimpleNetworkBuilder as a PyTorch module.

A ``SimpleNetworkBuilder`` section describes a feed-forward network by its layer sizes
(``layerSizes=784:256:10``: input, hidden..., output), the non-linearity of the hidden layers
(``layerTypes``), the training criterion and the evaluation criterion. CNTK built it as a graph of
named nodes (``features``, ``W0``, ``B0``, ``H1``, ..., ``HLast``, ``labels``, the criterion nodes);
:class:`SimpleNetwork` keeps those names so that ``dumpnode``/``write`` and ``outputNodeNames`` work
as in CNTK.

Conventions kept from CNTK:

* weights ``W<i>`` have shape ``[out, in]`` (``Times(W, x)``), biases ``B<i>`` ``[out]``, initialised
  to zero; with ``uniformInit=true`` (default) weights are uniform in ``±0.05*initValueScale``,
  otherwise Gaussian with standard deviation ``0.2*initValueScale/sqrt(in)``;
* criteria are *sums* over the samples of a minibatch (CNTK's criterion nodes sum, and its
  learning rates are per sample); ``SquareError`` is ``sum((o-y)^2)`` (not halved);
* ``applyMeanVarNorm=true`` normalises the features with their mean and ``1/stddev`` computed over
  the training data before training (``MeanOfFeatures``/``InvStdOfFeatures``); the variance is
  floored at 1e-10 as in CNTK's ``InvStdDevNode``;
* ``needPrior=true`` adds CNTK's prior nodes: ``Prior`` (the mean of the labels over the training
  data, computed before the first epoch and saved in the model), ``LogOfPrior = Log(Prior)`` and
  ``ScaledLogLikelihood = Minus(HLast, LogOfPrior)``, which then replaces ``HLast`` as the output
  node (what ``write`` writes by default; a hybrid HMM decoder reads these scaled likelihoods). A
  class that never occurs in the training labels has a prior of 0, so its ``LogOfPrior`` is
  ``-inf`` and its scaled likelihood ``+inf``, as in CNTK;
* ``addDropoutNodes=true`` puts a Dropout node after every hidden layer (``DropH1``, ...), as
  CNTK's builder did; its rate is SGD's ``dropoutRate`` of the epoch (:meth:`SimpleNetwork.set_dropout_rate`,
  0 until set), active in training and the identity in evaluation.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..integrations.torch_backend import nn, torch

from ..errors import ConfigError, NotImplementedInCntkio

__all__ = ["NetworkSpec", "SimpleNetwork", "LAYER_TYPES", "TRAINING_CRITERIA", "EVAL_CRITERIA"]

#: hidden-layer non-linearities CNTK's SimpleNetworkBuilder accepts (lower-cased key -> torch)
LAYER_TYPES = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "rectifiedlinear": torch.relu,
               "relu": torch.relu}
_CANONICAL_LAYER = {"sigmoid": "Sigmoid", "tanh": "Tanh", "rectifiedlinear": "RectifiedLinear",
                    "relu": "RectifiedLinear"}
TRAINING_CRITERIA = ("CrossEntropyWithSoftmax", "CrossEntropy", "SquareError", "Logistic")
#: criteria CNTK's SimpleNetworkBuilder names that cntkio does not build, with why
REFUSED_CRITERIA = {
    "noisecontrastiveestimation": "noise-contrastive estimation needs the NCE LSTM (rnnType=NCELSTM), which cntkio "
                                  "does not build",
    "sequencewithsoftmax": "sequence training needs lattices (the lattice reader), which cntkio does not have",
    "latticesequencewithsoftmax": "sequence training needs lattices (the lattice reader), which cntkio does not "
                                  "have",
}
EVAL_CRITERIA = ("ClassificationError", "ErrorPrediction", *TRAINING_CRITERIA)

def _canonical(name: str, choices: tuple[str, ...], key: str) -> str:
    for c in choices:
        if c.lower() == str(name).lower():
            return c
    raise ConfigError(f"unknown {key} {name!r}", path=key, hint="one of " + ", ".join(choices))


@dataclass
class NetworkSpec:
    """What a SimpleNetworkBuilder section says, resolved and typed (stored in model files)."""

    layer_sizes: list[int]
    layer_types: list[str]
    training_criterion: str = "CrossEntropyWithSoftmax"
    eval_criterion: str = "ClassificationError"
    init_value_scale: float = 1.0
    uniform_init: bool = True
    apply_mean_var_norm: bool = False
    random_seed_offset: int = 0
    need_prior: bool = False
    add_dropout_nodes: bool = False
    feature_node: str = "features"
    label_node: str = "labels"

    def __post_init__(self) -> None:
        if len(self.layer_sizes) < 2 or any(int(s) <= 0 for s in self.layer_sizes):
            raise ConfigError(f"layerSizes must list at least an input and an output size, all > 0; "
                              f"found {self.layer_sizes}", path="SimpleNetworkBuilder.layerSizes",
                              hint="e.g. layerSizes=784:256:10")
        self.layer_sizes = [int(s) for s in self.layer_sizes]
        hidden = len(self.layer_sizes) - 2
        types = [str(t) for t in self.layer_types] or ["Sigmoid"]
        for t in types:
            if t.lower() not in LAYER_TYPES:
                raise ConfigError(f"unknown layerTypes entry {t!r}", path="SimpleNetworkBuilder.layerTypes",
                                  hint="one of Sigmoid, Tanh, RectifiedLinear")
        if len(types) == 1:
            types = types * hidden
        elif len(types) != hidden:
            raise ConfigError(f"layerTypes has {len(types)} entries but layerSizes has {hidden} hidden "
                              "layers", path="SimpleNetworkBuilder.layerTypes",
                              hint="give one type for all hidden layers or one per hidden layer")
        self.layer_types = [_CANONICAL_LAYER[t.lower()] for t in types]
        for key in ("trainingCriterion", "evalCriterion"):
            v = str(self.training_criterion if key == "trainingCriterion" else self.eval_criterion)
            if v.lower() == "classcrossentropywithsoftmax":
                raise ConfigError(f"{key}=classCrossEntropyWithSoftmax needs word classes: rnnType CLASSLSTM, "
                                  "CLASSLM or CLSTM (this network is rnnType=SIMPLENET)",
                                  path=f"SimpleNetworkBuilder.{key}")
            if v.lower() in REFUSED_CRITERIA:
                raise NotImplementedInCntkio(f"SimpleNetworkBuilder.{key}={v}: {REFUSED_CRITERIA[v.lower()]}")
        self.training_criterion = _canonical(self.training_criterion, TRAINING_CRITERIA,
                                             "SimpleNetworkBuilder.trainingCriterion")
        ev = _canonical(self.eval_criterion, EVAL_CRITERIA, "SimpleNetworkBuilder.evalCriterion")
        self.eval_criterion = "ClassificationError" if ev == "ErrorPrediction" else ev

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "NetworkSpec":
        return cls(**d)


class SimpleNetwork(nn.Module):
    """The network of a SimpleNetworkBuilder section: ``HLast = W_L · f(... f(W0 · x + B0) ...) + B_L``.

    ``forward`` returns ``HLast`` (the pre-softmax output, CNTK's output node); :meth:`criterion`
    and :meth:`evaluation` give the summed training criterion and evaluation criterion of a
    minibatch; :meth:`nodes` returns every named node value (for ``write`` and ``dumpnode``).
    """

    def __init__(self, spec: NetworkSpec, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.spec = spec
        sizes = spec.layer_sizes
        self.num_layers = len(sizes) - 1
        gen = torch.Generator().manual_seed(1 + int(spec.random_seed_offset))
        for i in range(self.num_layers):
            fan_in, fan_out = sizes[i], sizes[i + 1]
            if spec.uniform_init:
                r = 0.05 * spec.init_value_scale
                w = (torch.rand(fan_out, fan_in, generator=gen, dtype=torch.float64) * 2 - 1) * r
            else:
                std = 0.2 * spec.init_value_scale / math.sqrt(fan_in)
                w = torch.randn(fan_out, fan_in, generator=gen, dtype=torch.float64) * std
            self.register_parameter(f"W{i}", nn.Parameter(w.to(dtype)))
            self.register_parameter(f"B{i}", nn.Parameter(torch.zeros(fan_out, dtype=dtype)))
        self.register_buffer("MeanOfFeatures", torch.zeros(sizes[0], dtype=dtype))
        self.register_buffer("InvStdOfFeatures", torch.ones(sizes[0], dtype=dtype))
        if spec.need_prior:
            self.register_buffer("Prior", torch.zeros(sizes[-1], dtype=dtype))
        self._acts = [LAYER_TYPES[t.lower()] for t in spec.layer_types]
        self.dropout_rate = 0.0

    def set_dropout_rate(self, rate: float) -> int:
        """The rate of the Dropout nodes (``addDropoutNodes``; SGD's ``dropoutRate``); returns how
        many there are."""
        self.dropout_rate = float(rate)
        return self.num_layers - 1 if self.spec.add_dropout_nodes else 0

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        if self.spec.add_dropout_nodes and self.dropout_rate and self.training:
            return torch.nn.functional.dropout(x, self.dropout_rate, True)
        return x

    # --- structure -----------------------------------------------------------------------------
    @property
    def input_dim(self) -> int:
        return self.spec.layer_sizes[0]

    @property
    def output_dim(self) -> int:
        return self.spec.layer_sizes[-1]

    def node_names(self) -> list[str]:
        """Every node name, in evaluation order (CNTK's names for the SimpleNetworkBuilder graph)."""
        names = [self.spec.feature_node]
        if self.spec.apply_mean_var_norm:
            names += ["MeanOfFeatures", "InvStdOfFeatures", "MVNormalizedFeatures"]
        for i in range(self.num_layers):
            names += [f"W{i}", f"B{i}"]
            names.append(f"H{i + 1}" if i < self.num_layers - 1 else "HLast")
            if i < self.num_layers - 1 and self.spec.add_dropout_nodes:
                names.append(f"DropH{i + 1}")
        names.append(self._posterior_name())
        names += [self.spec.label_node, self.spec.training_criterion, self.eval_node_name]
        if self.spec.need_prior:
            names += ["Prior", "LogOfPrior", "ScaledLogLikelihood"]
        return [n for n in names if n is not None]

    def _posterior_name(self) -> str | None:
        if self.spec.training_criterion in ("CrossEntropyWithSoftmax", "CrossEntropy"):
            return "PosteriorProb"
        if self.spec.training_criterion == "Logistic":
            return "Sigmoid"
        return None

    @property
    def eval_node_name(self) -> str:
        return "Eval" + self.spec.eval_criterion

    @property
    def output_nodes(self) -> list[str]:
        """CNTK's default output node group (what ``write`` writes without ``outputNodeNames``):
        ``ScaledLogLikelihood`` with ``needPrior``, else ``HLast``."""
        return ["ScaledLogLikelihood"] if self.spec.need_prior else ["HLast"]

    # --- computation ---------------------------------------------------------------------------
    def nodes(self, features: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Values of every node for a batch ``features[N, in]`` (``labels[N, out]`` adds the criteria);
        parameters appear as themselves."""
        out: dict[str, torch.Tensor] = {self.spec.feature_node: features}
        x = features
        if self.spec.apply_mean_var_norm:
            out["MeanOfFeatures"], out["InvStdOfFeatures"] = self.MeanOfFeatures, self.InvStdOfFeatures
            x = (x - self.MeanOfFeatures) * self.InvStdOfFeatures
            out["MVNormalizedFeatures"] = x
        for i in range(self.num_layers):
            w, b = getattr(self, f"W{i}"), getattr(self, f"B{i}")
            out[f"W{i}"], out[f"B{i}"] = w, b
            x = x @ w.T + b
            if i < self.num_layers - 1:
                x = self._acts[i](x)
                out[f"H{i + 1}"] = x
                if self.spec.add_dropout_nodes:
                    x = out[f"DropH{i + 1}"] = self._drop(x)
        out["HLast"] = x
        post = self._posterior_name()
        if post == "PosteriorProb":
            out[post] = torch.softmax(x, dim=-1)
        elif post == "Sigmoid":
            out[post] = torch.sigmoid(x)
        if self.spec.need_prior:
            out["Prior"] = self.Prior
            out["LogOfPrior"] = torch.log(self.Prior)
            out["ScaledLogLikelihood"] = x - out["LogOfPrior"]
        if labels is not None:
            out[self.spec.label_node] = labels
            out[self.spec.training_criterion] = self.criterion(x, labels)
            out[self.eval_node_name] = self.evaluation(x, labels)
        return out

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = features
        if self.spec.apply_mean_var_norm:
            x = (x - self.MeanOfFeatures) * self.InvStdOfFeatures
        for i in range(self.num_layers):
            x = torch.addmm(getattr(self, f"B{i}"), x, getattr(self, f"W{i}").T)
            if i < self.num_layers - 1:
                x = self._drop(self._acts[i](x))
        return x

    def criterion(self, hlast: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The training criterion, summed over the samples."""
        return _criterion(self.spec.training_criterion, hlast, labels)

    def evaluation(self, hlast: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The evaluation criterion, summed over the samples (errors counted for ClassificationError)."""
        return _criterion(self.spec.eval_criterion, hlast, labels)

    def set_mean_var_norm(self, mean: torch.Tensor, var: torch.Tensor) -> None:
        """Store the feature statistics of the training data (CNTK's precompute nodes)."""
        with torch.no_grad():
            self.MeanOfFeatures.copy_(mean)
            self.InvStdOfFeatures.copy_(1.0 / torch.sqrt(torch.clamp(var, min=1e-10)))

    def set_prior(self, prior: torch.Tensor) -> None:
        """Store the mean of the training labels (``needPrior``'s ``Prior`` node)."""
        if not self.spec.need_prior:
            raise ValueError("the network was built without needPrior")
        with torch.no_grad():
            self.Prior.copy_(prior)


def _criterion(name: str, hlast: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    if name in ("CrossEntropyWithSoftmax", "CrossEntropy"):
        return -(labels * torch.log_softmax(hlast, dim=-1)).sum()
    if name == "SquareError":
        return ((hlast - labels) ** 2).sum()
    if name == "Logistic":
        # CNTK's Logistic node on Sigmoid(HLast): -sum(y log p + (1-y) log(1-p)), computed stably
        return nn.functional.binary_cross_entropy_with_logits(hlast, labels, reduction="sum")
    if name == "ClassificationError":
        return (hlast.argmax(dim=-1) != labels.argmax(dim=-1)).sum().to(hlast.dtype)
    raise NotImplementedInCntkio(f"criterion {name!r} is not implemented in cntkio")
