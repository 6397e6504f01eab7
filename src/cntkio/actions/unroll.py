"""The ``testUnroll`` action: evaluate a model frame by frame, as CNTK's unrolled evaluation did.

Each sequence of the reader is computed one frame at a time: the output at frame ``t`` is the
network's output on the sequence's first ``t+1`` frames only, so a recurrent network carries its
state forward through ``PastValue`` and never sees a later frame (a ``FutureValue`` reads its
default value beyond the frames given, which is what unrolling means). The criteria are then
computed on these outputs against the labels. For a network without ``FutureValue`` the results
equal the ``test`` action's (same model, same data) by construction; the test suite checks it.

Parameters (as ``test``): ``modelPath``, ``reader``, ``minibatchSize``, ``epochSize`` (0 = one
sweep), ``deviceId``, ``precision``; ``path2EvalResults`` (optional) receives the final result line
(``Final Results: ...``), written to a temporary name and renamed.

Frame-by-frame evaluation recomputes each prefix, so a sequence of T frames costs T(T+1)/2
frame computations; it is meant for the sequence lengths of evaluation sets, not for training data.
"""
from __future__ import annotations

import os
import time

from ..integrations.torch_backend import torch

from .._log import get_logger
from .eval import EvalResult, criterion_nodes, percent_nodes
from .checks import check_batch, load_command_model, torch_errors
from ._common import (batch_tensors, dist_context, epoch_minibatches, open_reader, report, resolve_device,
                      resolve_dtype)
from ._params import get_int, get_str, key_path, minibatch_size
from .network import sequence_layout

__all__ = ["test_unroll", "unrolled_outputs"]

_log = get_logger("actions.unroll")


def _set_layout(net, positions, lengths) -> None:
    setter = getattr(net, "set_layout", None)
    if setter is not None:
        setter(positions, lengths)


@torch.no_grad()
def unrolled_outputs(net, x: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
    """The network's output for every row of ``x`` (sequences concatenated; ``positions`` each
    row's index in its sequence, None: every row a sequence of its own), each computed from its
    sequence's frames up to and including it."""
    if positions is None:
        _set_layout(net, None, None)
        return net(x)
    starts = (positions == 0).nonzero().flatten().tolist() + [x.shape[0]]
    rows = []
    for s, e in zip(starts[:-1], starts[1:]):
        for t in range(e - s):
            n = t + 1
            pos = torch.arange(n, device=x.device)
            _set_layout(net, pos, torch.full((n,), n, dtype=pos.dtype, device=x.device))
            rows.append(net(x[s:s + n])[-1:])
    return torch.cat(rows) if rows else net(x[:0])


def test_unroll(section, name: str = "testUnroll") -> EvalResult:
    """The ``testUnroll`` action (see the module docstring)."""
    dist = dist_context()
    device, dtype = resolve_device(section, dist), resolve_dtype(section)
    net = load_command_model(section, "modelPath", device=device, dtype=dtype).network
    nodes = criterion_nodes(net, None, key_path(section, "evalNodeNames"))
    feats, labels = net.spec.feature_node, net.spec.label_node
    source = open_reader(section, "reader", name)
    out_path = get_str(section, "path2EvalResults", None)
    acc = torch.zeros(len(nodes) + 1, dtype=torch.float64, device=device)
    n_mb = 0
    start = time.perf_counter()
    net.eval()
    for mb in epoch_minibatches(source, minibatch_size=minibatch_size(section), epoch_size=get_int(section, "epochSize", 0),
                                epoch=0, dist=dist):
        if not mb:
            continue
        t = batch_tensors(mb, [feats, labels], dtype, device, required=[feats, labels], where=key_path(section, "reader"))
        check_batch(net, t, key_path(section, "reader"), section("reader"))
        x, y = t[feats], t[labels]
        positions, lengths = sequence_layout(mb, feats, device)
        with torch.no_grad(), torch_errors(name, (feats, x), (labels, y), key_path(section, "reader")):
            out = unrolled_outputs(net, x, positions)
            _set_layout(net, positions, lengths)
            net(x)                  # an NDL network's criteria read the minibatch's features and layout
            vals = {net.spec.training_criterion: net.criterion(out, y), net.eval_node_name: net.evaluation(out, y)}
        acc += torch.stack([vals[n].to(torch.float64) for n in nodes]
                           + [torch.tensor(float(x.shape[0]), dtype=torch.float64, device=device)])
        n_mb += 1
    dist.all_reduce_(acc)
    a = acc.tolist()
    result = EvalResult(totals=dict(zip(nodes, a[:-1])), samples=int(round(a[-1])), minibatches=n_mb,
                        percent=percent_nodes(net))
    line = f"Final Results: Minibatch[1-{n_mb}]: {result}; time = {time.perf_counter() - start:.3f}s"
    report(line, dist=dist)
    if out_path and dist.is_main:
        directory = os.path.dirname(os.path.abspath(out_path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{out_path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(line.rsplit("; time =", 1)[0] + "\n")
        os.replace(tmp, out_path)
        _log.info("%s: results written to %s", name, out_path)
    return result
