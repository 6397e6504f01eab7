"""The ``bnstat`` action: a model's batch-normalization statistics recomputed over data, written as a new model.

What it must never do: change the model file it reads, or any parameter other than the
BatchNormalization nodes' running means and variances.

CNTK's ``DoBatchNormalizationStat`` and ``PostComputingActions::BatchNormalizationStatistics``
(Source/ActionsLib/TrainActions.cpp, Source/SGDLib/PostComputingActions.cpp): ``modelPath`` (the
model read), ``newModelPath`` (default ``<modelPath>.PBN``), ``reader``, ``minibatchSize``
(default 40960; its first value), ``itersPerNode`` (default 30), ``evalNodeNames`` (default: the
model's evaluation nodes, else its criterion nodes; the BatchNormalization nodes they read are
the ones recomputed), ``enableDistributedMBReading`` (accepted; one process reads everything).

The BatchNormalization nodes are taken in evaluation order. For each, its running mean and
variance are computed afresh over ``itersPerNode`` minibatches as corpus-level averages (the
statistics of each minibatch weighted by its samples: CNTK's ``normalizationTimeConstant < 0``,
``n / (n + samples seen)``), from the node's input computed with every earlier node's statistics
already recomputed (CNTK forward-propagates up to the node with the earlier ones frozen), and
then kept. The mean and variance of a minibatch are taken per feature (per channel with
``spatial = true``), the variance unbiased, as the running variance of cntkio's training is.
"""
from __future__ import annotations

from ..errors import CntkioError, ConfigError
from ..integrations.torch_backend import torch
from .._log import get_logger
from ._common import Dist, batch_tensors, epoch_minibatches, open_reader, report, resolve_device, resolve_dtype
from ._params import get_int, get_list, get_str, key_path

__all__ = ["bnstat", "batch_norm_nodes"]

_log = get_logger("actions.bnstat")


def batch_norm_nodes(net, roots: list[str]) -> list[str]:
    """The BatchNormalization nodes that ``roots`` read, in evaluation order."""
    graph = net.graph
    needed, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n in needed or n not in graph.nodes:
            continue
        needed.add(n)
        stack.extend(graph.nodes[n].inputs)
    return [n for n in net.order if n in needed and graph.nodes[n].op == "BatchNormalization"]


def _batch_stats(x: torch.Tensor, spatial: bool) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Per-feature (or per-channel) mean and unbiased variance of ``x[samples, ...]``."""
    n = x.shape[0]
    if spatial and x.dim() > 2:
        flat = x.transpose(0, 1).reshape(x.shape[1], -1).T      # [samples * H * W, channels]
    else:
        flat = x.reshape(n, -1)
    count = flat.shape[0]
    mean = flat.mean(0)
    var = flat.var(0, unbiased=count > 1) if count > 1 else torch.zeros_like(mean)
    return mean, var, count


def bnstat(section, name: str = "bnstat") -> dict:
    """Run the action on a command section; returns ``{node: samples seen}``."""
    from ..networks import save_model
    from .checks import load_command_model
    from .network import feed_layout
    dtype = resolve_dtype(section)
    device = resolve_device(section, Dist())
    model_path = get_str(section, "modelPath")
    new_path = get_str(section, "newModelPath", "") or f"{model_path}.PBN"
    iters = get_int(section, "itersPerNode", 30)
    if iters < 1:
        raise ConfigError(f"itersPerNode must be >= 1, found {iters}", path=key_path(section, "itersPerNode"))
    mb_size = int(float(get_list(section, "minibatchSize", ["40960"])[0]))
    net = load_command_model(section, "modelPath", device=device, dtype=dtype).network
    if not hasattr(net, "graph"):
        raise CntkioError(f"{name}: the model {model_path} has no BatchNormalization node (a SimpleNetworkBuilder "
                          "network)")
    roots = [str(n) for n in (get_list(section, "evalNodeNames", None) or [])] or \
        list(net.spec.eval_nodes or net.spec.criterion_nodes)
    nodes = batch_norm_nodes(net, roots)
    if not nodes:
        _log.warning("%s: the nodes %s read no BatchNormalization node; the model is written unchanged",
                     name, ", ".join(roots))
    feats = net.spec.feature_node
    source = open_reader(section, "reader", name)
    where = key_path(section, "reader")
    seen = {}
    net.eval()
    with torch.no_grad():
        for bn in nodes:
            node = net.graph.nodes[bn]
            inp, run_mean, run_var = node.inputs[0], node.inputs[3], node.inputs[4]
            spatial = str(node.attrs.get("spatial", False)).lower() in ("true", "1")
            mean = var = None
            count = 0
            batches = epoch_minibatches(source, minibatch_size=mb_size, epoch_size=0, epoch=0, dist=Dist())
            for k, mb in enumerate(_cycle(batches, source, mb_size)):
                if k == iters:
                    break
                x = batch_tensors(mb, [feats], dtype, device, required=[feats], where=where)[feats]
                feed_layout(net, mb, feats, device)
                value = net.evaluate({feats: x}, (inp,))[inp]
                m, v, n = _batch_stats(value, spatial)
                if mean is None:
                    mean, var = m, v
                else:
                    w = n / (n + count)
                    mean, var = mean + w * (m - mean), var + w * (v - var)
                count += n
            if mean is None:
                raise CntkioError(f"{name}: the reader delivered no data for {bn}")
            t_mean, t_var = net.tensor(run_mean), net.tensor(run_var)
            t_mean.copy_(mean.reshape(t_mean.shape).to(t_mean.dtype))
            t_var.copy_(var.reshape(t_var.shape).to(t_var.dtype))
            seen[bn] = count
            _log.info("%s: estimated the statistics of %s over %d samples", name, bn, count)
    save_model(new_path, net, epoch=0, info={"command": name})
    report(f"{name}: statistics of {len(nodes)} BatchNormalization node(s) recomputed; model written to {new_path}")
    return seen


def _cycle(batches, source, mb_size: int):
    """The minibatches of one sweep, then of the next sweeps (``itersPerNode`` may ask for more)."""
    epoch = 0
    while True:
        got = False
        for mb in batches:
            got = True
            yield mb
        if not got:
            return
        epoch += 1
        batches = epoch_minibatches(source, minibatch_size=mb_size, epoch_size=0, epoch=epoch, dist=Dist())

