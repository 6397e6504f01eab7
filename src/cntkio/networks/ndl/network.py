"""An NDL network as the train/test/write actions use it, and its model-file record."""
from __future__ import annotations

from typing import Any

from ...errors import ConfigError
from ...integrations.torch_backend import torch
from ..nodes import lookup
from .graph import Graph, GraphNetwork, SequenceCarry

__all__ = ["NDLNetwork", "NDLSpec"]


class NDLSpec:
    """What the actions ask of a network (the names the SimpleNetwork's spec gives)."""

    def __init__(self, graph: Graph) -> None:
        g = graph.groups
        self.feature_nodes = list(g["feature"])
        self.label_nodes = list(g["label"])
        self.criterion_nodes = list(g["criterion"])
        self.eval_nodes = list(g["eval"])
        self.feature_node = self.feature_nodes[0] if self.feature_nodes else None
        self.label_node = self.label_nodes[0] if self.label_nodes else None
        self.training_criterion = self.criterion_nodes[0] if self.criterion_nodes else None
        self.apply_mean_var_norm = False
        if self.label_node is None and self.training_criterion is not None:
            # no label node (an auto-encoder: SquareError(featOut, ...) of two feature inputs, CNTK's
            # TIMIT ae.ndl): CNTK feeds every input by its stream's name and needs none; the actions
            read = _inputs_read(graph, self.training_criterion)
            # take the other input the criterion reads as the one they give the "labels" role; a criterion
            # that reads the features only (07_Deconvolution_BS.cntk: rmse of the features and their
            # reconstruction) gets the features in that role too: the value fed is the same stream
            others = [n for n in read if n != self.feature_node]
            self.label_node = others[0] if others else (self.feature_node if self.feature_node in read else None)

    def to_dict(self) -> dict:
        return {"feature_nodes": self.feature_nodes, "label_nodes": self.label_nodes,
                "criterion_nodes": self.criterion_nodes, "eval_nodes": self.eval_nodes}


def _inputs_read(graph: Graph, node: str) -> list[str]:
    """The input nodes ``node`` reads, in the graph's order."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(graph.nodes[n].inputs)
    return [n for n, d in graph.nodes.items() if n in seen and lookup(d.op).kind == "input"]


class NDLNetwork(GraphNetwork):
    """A :class:`GraphNetwork` with the train/test/write interface of the actions: ``net(x)``
    computes the criterion's prediction input from the features, ``criterion``/``evaluation``
    the summed criteria with the labels, ``nodes(x)`` every per-sample node."""

    builder = "NDLNetworkBuilder"

    def __init__(self, graph: Graph, dtype: torch.dtype = torch.float32, **kw: Any) -> None:
        super().__init__(graph, dtype, **kw)
        self.spec = NDLSpec(graph)
        self.num_layers = 0
        self._x = None
        self.has_delays = any(lookup(n.op).kind == "delay" for n in graph.nodes.values())
        for n, node in graph.nodes.items():       # learningRateMultiplier: the gradient scaled
            if lookup(node.op).kind == "param" and node.grad and node.lr_mult != 1.0:
                self.tensor(n).register_hook(lambda g, m=float(node.lr_mult): g * m)
        self._seq = (None, None)
        # truncated BPTT: PastValue state carried between minibatches, one per mode (training
        # minibatches and the cvReader's evaluations between epochs do not mix)
        self._carries = {True: SequenceCarry(), False: SequenceCarry()}
        self._carry = None
        #: every Input node besides the first feature and label nodes (fed by stream name)
        self.extra_inputs = [n for n, node in graph.nodes.items() if lookup(node.op).kind == "input"
                             and n not in (self.spec.feature_node, self.spec.label_node)]
        self._extra: dict = {}
        crit = self.spec.training_criterion
        self._pred = None
        if crit is not None:
            ins = graph.nodes[crit].inputs
            if len(ins) == 2 and ins[0] == self.spec.label_node and self.sample[ins[1]]:
                self._pred = ins[1]

    # --- what the actions need -------------------------------------------------------------
    def check_trainable(self, where: str) -> None:
        """A trained network needs feature, label and criterion nodes."""
        s = self.spec
        for what, nodes, tag in (("feature", s.feature_nodes, "feature"),
                                 ("label", [s.label_node] if s.label_node else [], "label"),
                                 ("criterion", s.criterion_nodes, "criterion")):
            if not nodes:
                raise ConfigError(f"the network has no {what} node", path=where,
                                  hint=f"tag one with tag={tag} or list it in {tag.capitalize()}Nodes=(...)")

    def set_inputs(self, values: dict) -> None:
        """The values of the other Input nodes (``extra_inputs``: second feature or label nodes,
        untagged inputs) for the samples the next calls compute; the actions feed each from the
        reader stream of the same name (``feed_layout``), as CNTK mapped streams to inputs."""
        self._extra = dict(values)

    def set_layout(self, positions: torch.Tensor | None, lengths: torch.Tensor | None,
                   rows: torch.Tensor | None = None, continued: torch.Tensor | None = None,
                   num_rows: int = 0) -> None:
        """The sequence layout (each sample's position in its sequence, its sequence's length) of
        the samples the next calls compute (``feed_layout`` of the actions). With ``rows`` (each
        sample's row of the minibatch) and ``continued`` (its sequence started in the previous
        minibatch, truncated BPTT), ``PastValue`` carries its state over from the previous
        minibatch set this way in the same mode (training or evaluation)."""
        self._seq = (positions, lengths)
        if rows is None or continued is None:
            self._carry = None
            return
        self._carry = self._carries[bool(self.training)]
        self._carry.next_minibatch(rows, continued, num_rows)

    def _apply(self, fn, *args, **kwargs):      # .to(device) moves the carried state too
        out = super()._apply(fn, *args, **kwargs)
        for c in self.__dict__.get("_carries", {}).values():
            c.apply(fn)
        return out

    def reset_state(self) -> None:
        """Forget the carried PastValue state (the next minibatch's sequences start afresh)."""
        for c in self._carries.values():
            c.reset()

    def set_dropout_rate(self, rate: float) -> int:
        """Set the rate of every Dropout node (SGD's ``dropoutRate``, per epoch); returns how
        many there are."""
        count = 0
        for fn in self._fns.values():
            box = getattr(fn, "dropout_rate", None)
            if box is not None:
                box[0] = float(rate)
                count += 1
        return count

    def _eval(self, feeds, wanted):
        if self._extra:
            feeds = {**self._extra, **feeds}
        return self.evaluate(feeds, wanted, positions=self._seq[0], lengths=self._seq[1], carry=self._carry)

    @property
    def eval_node_name(self) -> str:
        return (self.spec.eval_nodes or self.spec.criterion_nodes)[0]

    @property
    def input_dim(self) -> int:
        return int(torch.tensor(self.shapes[self.spec.feature_node]).prod())

    @property
    def output_nodes(self) -> list[str]:
        return list(self.graph.groups["output"]) or ([self._pred] if self._pred else [])

    def node_names(self) -> list[str]:
        """Nodes with a value per sample, in evaluation order, and the criterion nodes."""
        return [n for n in self.order if self.sample[n]] + list(self.spec.criterion_nodes) + \
            [n for n in self.spec.eval_nodes if n not in self.spec.criterion_nodes]

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        self._x = features
        if self._pred is None:
            return features
        return self._eval({self.spec.feature_node: features}, (self._pred,))[self._pred]

    def _crit(self, node: str, out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        feeds = {self.spec.feature_node: self._x if self._pred else out, self.spec.label_node: labels}
        if self._pred is not None:
            feeds[self._pred] = out
        # a criterion of more than one value (a value per sample, e.g. rmse = Sqrt (sqerr / dim)) is summed:
        # CNTK sums it over the minibatch when it accumulates it (Source/SGDLib/Criterion.h, Accumulate:
        # "an implicit reduction") and back-propagates from a gradient of ones (ComputationNetworkEvaluation.cpp,
        # SetRootGradientToScalarOne), the gradient of that sum
        return self._eval(feeds, (node,))[node].sum()

    def criterion(self, out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._crit(self.spec.training_criterion, out, labels)

    @property
    def dtype(self) -> torch.dtype:
        """The type of the network's values (its parameters and inputs)."""
        return self._dtype

    def criterion_value(self, node: str, out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Criterion node ``node``'s value for the last forward's output ``out`` and ``labels``."""
        return self._crit(node, out, labels)

    def evaluation(self, out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self._crit(self.eval_node_name, out, labels)

    @property
    def eval_node_names(self) -> list[str]:
        """Every evaluation node (CNTK computes and reports them all), else the first criterion."""
        return list(self.spec.eval_nodes) or [self.eval_node_name]

    def evaluations(self, out: torch.Tensor, labels: torch.Tensor) -> list[torch.Tensor]:
        """The values of :attr:`eval_node_names`, in one evaluation of the graph."""
        names = tuple(self.eval_node_names)
        feeds = {self.spec.feature_node: self._x if self._pred else out, self.spec.label_node: labels}
        if self._pred is not None:
            feeds[self._pred] = out
        values = self._eval(feeds, names)
        return [values[n].reshape(()) for n in names]

    def nodes(self, features: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        feeds = {self.spec.feature_node: features}
        if labels is not None:
            feeds[self.spec.label_node] = labels
        fed = set(feeds) | set(self._extra)
        label_deps = {n for n in [self.spec.label_node, *self.extra_inputs] if n not in fed}
        wanted = [n for n in self.order if self.sample[n] and n not in feeds and n not in label_deps
                  and not (self._reads(n) & label_deps)]
        return self._eval(feeds, wanted)

    def _reads(self, name: str) -> set[str]:
        """The nodes computing ``name`` reads (pre-computed statistics are values: not their inputs)."""
        seen, stack = set(), list(self.graph.nodes[name].inputs)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                if lookup(self.graph.nodes[n].op).kind != "precompute":
                    stack.extend(self.graph.nodes[n].inputs)
        return seen

    # --- model files -----------------------------------------------------------------------
    def to_record(self) -> dict:
        return {"type": self.builder, "graph": self.graph.to_dict(),
                "dtype": str(self._dtype).replace("torch.", "")}

    @classmethod
    def from_record(cls, record: dict, dtype: torch.dtype | None = None) -> "NDLNetwork":
        saved = getattr(torch, record.get("dtype", "float32"))
        return cls(Graph.from_dict(record["graph"]), dtype or saved)
