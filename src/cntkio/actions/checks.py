"""Checks the train action and validation share: writable outputs, a network's inputs, the
tensors of a minibatch against the network (clear errors instead of torch's shape errors)."""
from __future__ import annotations

import os

from ..errors import ConfigError

__all__ = ["check_writable", "network_inputs", "check_batch"]


def check_writable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (None when it can): its directory, or the nearest
    existing ancestor that would be created from, must be a writable directory; an existing
    ``path`` must be a writable file."""
    full = os.path.abspath(path)
    if os.path.isdir(full):
        return f"{path} is a directory"
    if os.path.exists(full):
        return None if os.access(full, os.W_OK) else f"{path} exists and is not writable"
    parent = os.path.dirname(full)
    while parent and not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    if not os.path.isdir(parent):
        return f"{parent} is not a directory, so {path} cannot be created"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the directory {parent} is not writable"
    return None


def network_inputs(net) -> dict[str, int]:
    """The input nodes of a network (SimpleNetwork, NDL or BrainScript) and their dimensions."""
    spec = getattr(net, "spec", None)
    if spec is not None and hasattr(spec, "layer_sizes"):
        if not hasattr(spec, "feature_node"):
            return {}       # a recurrent SimpleNetworkBuilder network: its inputs depend on rnnType
        return {spec.feature_node: int(spec.layer_sizes[0]), spec.label_node: int(spec.layer_sizes[-1])}
    out: dict[str, int] = {}
    shapes = getattr(net, "shapes", {})
    names = [getattr(spec, "feature_node", None), getattr(spec, "label_node", None),
             *getattr(net, "extra_inputs", [])]
    for n in names:
        if n and n in shapes:
            size = 1
            for d in shapes[n]:
                size *= int(d)
            out[n] = size
    return out



def check_batch(net, tensors: dict, where: str) -> None:
    """The features and labels of one minibatch against the network: their dimensions, and as
    many label samples as feature samples. A ConfigError names the streams, the nodes and both
    dimensions (``where``: the reader section's key path)."""
    inputs = network_inputs(net)
    for node, dim in inputs.items():
        t = tensors.get(node)
        if t is None or t.ndim < 2:
            continue
        got = 1
        for d in t.shape[1:]:
            got *= int(d)
        if got != dim:
            raise ConfigError(f"stream {node!r} delivers samples of dim {got} but the network's input node "
                              f"{node!r} has dim {dim}", path=f"{where}.input.{node}.dim",
                              hint="make the reader's dim and the network's size agree "
                                   "(cntkio validate configFile=... checks this before any work)")
    if not hasattr(getattr(net, "spec", None), "layer_sizes") or not inputs:
        return      # an NDL/BrainScript network may read one label per sequence
    sizes = {n: int(t.shape[0]) for n, t in tensors.items() if n in inputs and t is not None}
    if len(set(sizes.values())) > 1:
        detail = ", ".join(f"{n!r}: {k} samples" for n, k in sizes.items())
        raise ConfigError(f"the streams of one minibatch have different numbers of samples ({detail}): "
                          "features and labels are not aligned", path=where,
                          hint="each sequence must carry as many label samples as feature samples "
                               "(a label per sequence needs a sequence-level criterion)")
