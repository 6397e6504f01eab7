"""The ``test``/``eval`` action: the criteria of a trained model on a reader's data.

Section parameters (looked up through the parent sections): ``modelPath`` (required), ``reader``
(required), ``minibatchSize`` (default 40960 samples, as CNTK), ``epochSize`` (0 = one sweep, the
default), ``evalNodeNames`` (default: the training criterion and the evaluation criterion),
``numMBsToShowResult`` (0 = only the final result, the default here), ``deviceId``, ``precision``.

Under torch.distributed every process evaluates its own part of the data and the sums are
all-reduced, so every process returns the same totals.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..networks.nodes import lookup
from .network import build_brainscript_network, has_brainscript, feed_layout
from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import ConfigError
from ..networks import SimpleNetwork
from .checks import check_batch, load_command_model, torch_errors
from ._common import (Dist, batch_tensors, dist_context, epoch_minibatches, fmt_criteria, open_reader,
                      progress_bar, progress_enabled, report, resolve_device, resolve_dtype, sweep_total)
from ._params import get_int, get_list, key_path, minibatch_size

__all__ = ["EvalResult", "evaluate", "test", "eval", "criterion_nodes", "percent_nodes"]

_log = get_logger("actions.eval")


@dataclass
class EvalResult:
    """Summed criteria over ``samples`` samples; :attr:`averages` divides by the count; ``percent``:
    the criteria printed as a percentage (:func:`percent_nodes`; None: by name)."""

    totals: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    minibatches: int = 0
    percent: frozenset[str] | None = None
    seconds: float = 0.0

    @property
    def averages(self) -> dict[str, float]:
        return {k: (v / self.samples if self.samples else float("nan")) for k, v in self.totals.items()}

    def __str__(self) -> str:
        return fmt_criteria(self.totals, self.samples, self.percent)


_PERCENT_OPS = ("ClassificationError", "ClassificationErrorTopN")


def percent_nodes(net) -> frozenset[str]:
    """The criterion nodes printed as a percentage, as CNTK printed them: classification errors
    (``ClassificationError``/``ErrorPrediction`` nodes, whatever their names: NDL's ``Err``,
    BrainScript's ``errs``; SimpleNetworkBuilder's ``evalCriterion = ClassificationError``)."""
    graph = getattr(net, "graph", None)
    if graph is not None:
        return frozenset(n for n, node in graph.nodes.items()
                         if getattr(lookup(node.op), "name", node.op) in _PERCENT_OPS)
    spec = getattr(net, "spec", None)
    if getattr(spec, "eval_criterion", None) in _PERCENT_OPS:
        return frozenset({net.eval_node_name})
    return frozenset()


def criterion_nodes(net: SimpleNetwork, names: list[str] | None, path: str = "evalNodeNames") -> list[str]:
    """The criterion nodes to report, validated (``ErrorPrediction`` names are accepted as aliases
    of the classification-error node, as CNTK renamed it)."""
    available = [n for n in dict.fromkeys((net.spec.training_criterion, net.eval_node_name)) if n]
    graph = getattr(net, "graph", None)
    if graph is not None:   # a graph network (NDL, BrainScript): any criterion node of the graph
        available += [n for n, node in graph.nodes.items() if n not in available and getattr(lookup(node.op), "criterion", False)]
    if not names:
        return [n for n in dict.fromkeys((net.eval_node_name, net.spec.training_criterion)) if n]
    aliases = {"evalerrorprediction": "EvalClassificationError", "errorprediction": "EvalClassificationError",
               "classificationerror": "EvalClassificationError"}
    out = []
    for n in names:
        canon = next((a for a in available if a.lower() == n.lower()), None) or aliases.get(n.lower())
        if canon not in available:
            raise ConfigError(f"{n!r} is not a criterion node of this network (criterion nodes: "
                              f"{', '.join(available)})", path=path)
        out.append(canon)
    return out


def evaluate(net: SimpleNetwork, minibatches, *, nodes: list[str], dtype: torch.dtype, device: torch.device,
             dist: Dist | None = None, show_every: int = 0, progress: bool | None = False, desc: str = "eval",
             total: int | None = None, where: str = "reader", reader=None) -> EvalResult:
    """Sum the criterion ``nodes`` over the minibatches (an iterable of minibatch dicts). A stream
    whose dim differs from the network's input is a ConfigError (``where``: the reader section's
    key path; ``reader``: the section, for the file and line of its ``dim`` keys); torch's own
    errors name the action (``desc``), the streams and the nodes."""
    dist = dist or Dist()
    feats, labels = net.spec.feature_node, net.spec.label_node
    acc = torch.zeros(len(nodes) + 1, dtype=torch.float64, device=device)   # criteria..., samples
    window = torch.zeros_like(acc)
    bar = progress_bar(progress, total=total, desc=desc)
    n_mb, first = 0, 1
    net.eval()
    try:
        with torch.no_grad():
            for mb in minibatches:
                if not mb:         # this process has no data in this minibatch (distributed)
                    continue
                t = batch_tensors(mb, [feats, labels], dtype, device, required=[feats, labels], where=where)
                feed_layout(net, mb, feats, device)
                check_batch(net, t, where, reader)
                x, y = t[feats], t[labels]
                vals = {}
                with torch_errors(desc, (feats, x), (labels, y), where):
                    hlast = net(x)
                    for n in nodes:
                        if n == net.spec.training_criterion:
                            vals[n] = net.criterion(hlast, y)
                        elif n == net.eval_node_name:
                            vals[n] = net.evaluation(hlast, y)
                        else:               # another criterion node of a graph network
                            vals[n] = net.criterion_value(n, hlast, y)
                step = torch.stack([vals[n].to(torch.float64) for n in nodes]
                                   + [torch.tensor(float(x.shape[0]), dtype=torch.float64, device=device)])
                acc += step
                window += step
                n_mb += 1
                if bar is not None:
                    bar.update(int(x.shape[0]))
                if show_every and n_mb % show_every == 0:
                    w = window.tolist()
                    report(f" Minibatch[{first:4d}-{n_mb:4d}]: " + fmt_criteria(dict(zip(nodes, w[:-1])), int(w[-1]),
                                                                                percent_nodes(net)), dist=dist)
                    window.zero_()
                    first = n_mb + 1
    finally:
        if bar is not None:
            bar.close()
    dist.all_reduce_(acc)
    a = acc.tolist()
    return EvalResult(totals=dict(zip(nodes, a[:-1])), samples=int(round(a[-1])), minibatches=n_mb,
                      percent=percent_nodes(net))


def _eval_command(command, name: str) -> EvalResult:
    dist = dist_context()
    device, dtype = resolve_device(command, dist), resolve_dtype(command)
    if has_brainscript(command):     # CNTK builds a test command's BrainScriptNetworkBuilder (e.g. BS.Network.Load)
        net = build_brainscript_network(command, device=device, dtype=dtype, precompute=False)
    else:
        net = load_command_model(command, "modelPath", device=device, dtype=dtype).network
    names = get_list(command, "evalNodeNames", None)
    nodes = criterion_nodes(net, [str(n) for n in names] if names else None, key_path(command, "evalNodeNames"))
    mb_size = minibatch_size(command)
    epoch_size = get_int(command, "epochSize", 0)
    source = open_reader(command, "reader", name)
    start = time.perf_counter()
    result = evaluate(net, epoch_minibatches(source, minibatch_size=mb_size, epoch_size=epoch_size, epoch=0, dist=dist),
                      nodes=nodes, dtype=dtype, device=device, dist=dist,
                      show_every=get_int(command, "numMBsToShowResult", 0),
                      progress=progress_enabled(command, dist), desc=name,
                      total=epoch_size or sweep_total(source), where=key_path(command, "reader"),
                      reader=command("reader"))
    report(f"Final Results: Minibatch[1-{result.minibatches}]: {result}; "
           f"time = {time.perf_counter() - start:.3f}s", dist=dist)
    return result


def test(section, name: str = "test") -> EvalResult:
    """The ``test`` action (the same as ``eval``)."""
    return _eval_command(section, name)


def eval(section, name: str = "eval") -> EvalResult:  # noqa: A001 - CNTK's action name
    """The ``eval`` action: evaluate ``modelPath`` on the section's reader and print the
    criteria (``Final Results: ...``)."""
    return _eval_command(section, name)
