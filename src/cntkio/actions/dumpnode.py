"""The ``dumpnode`` action: the nodes of a model file as text.

Parameters: ``modelPath`` (required), ``nodeName`` (default: all nodes), ``outputFile`` (default
``<modelPath>.<nodeName>.txt``, or ``<modelPath>.__AllNodes__.txt`` for all nodes, as CNTK),
``printValues`` (true), ``printMetadata`` (true).

The text follows CNTK's ``DumpNodeInfo``: per node a header ``name=Operation [rows,cols]`` (for
learnable parameters with ``learningRateMultiplier`` and ``NeedsGradient``, for computed nodes
with their inputs), then with ``printValues`` the values, one matrix row per line (``%.10g``), then
a line of ``#``. Values exist for parameters and the mean/variance normalisation statistics;
computed nodes have no value outside a minibatch and print their header only.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import ConfigError
from .checks import load_command_model
from ..networks.ndl import NDLNetwork
from .network import describe_ndl_nodes
from ._common import dist_context, report
from ._params import get_bool, get_str, key_path
from .write import format_rows

__all__ = ["dumpnode", "describe_nodes"]

_RULE = "#" * 68


def describe_nodes(net) -> dict[str, tuple[str, str, np.ndarray | None]]:
    """``{node: (operation, inputs text or shape, values or None)}`` in evaluation order."""
    if isinstance(net, NDLNetwork):
        return describe_ndl_nodes(net)
    out: dict[str, tuple[str, str, np.ndarray | None]] = {}
    spec = net.spec
    prev = spec.feature_node
    out[spec.feature_node] = ("InputValue", f"[{spec.layer_sizes[0]}]", None)
    if spec.apply_mean_var_norm:
        out["MeanOfFeatures"] = ("Mean", f"[{spec.layer_sizes[0]},1]", net.MeanOfFeatures.detach().cpu().numpy()[:, None])
        out["InvStdOfFeatures"] = ("InvStdDev", f"[{spec.layer_sizes[0]},1]",
                                   net.InvStdOfFeatures.detach().cpu().numpy()[:, None])
        out["MVNormalizedFeatures"] = ("PerDimMeanVarNormalization",
                                       f"( {prev} , MeanOfFeatures , InvStdOfFeatures )", None)
        prev = "MVNormalizedFeatures"
    for i in range(net.num_layers):
        w, b = getattr(net, f"W{i}"), getattr(net, f"B{i}")
        out[f"W{i}"] = ("LearnableParameter", f"[{w.shape[0]},{w.shape[1]}]", w.detach().cpu().numpy())
        out[f"B{i}"] = ("LearnableParameter", f"[{b.shape[0]},1]", b.detach().cpu().numpy()[:, None])
        last = i == net.num_layers - 1
        node = "HLast" if last else f"H{i + 1}"
        op = "Plus" if last else spec.layer_types[i]
        out[node] = (op, f"( W{i}*{prev} + B{i} )", None)
        prev = node
    if "PosteriorProb" in net.node_names():
        out["PosteriorProb"] = ("Softmax", "( HLast )", None)
    if "Sigmoid" in net.node_names():
        out["Sigmoid"] = ("Sigmoid", "( HLast )", None)
    out[spec.label_node] = ("InputValue", f"[{spec.layer_sizes[-1]}]", None)
    out[spec.training_criterion] = (spec.training_criterion, f"( {spec.label_node} , HLast )", None)
    out[net.eval_node_name] = (spec.eval_criterion, f"( {spec.label_node} , HLast )", None)
    if getattr(spec, "need_prior", False):
        out["Prior"] = ("Mean", f"[{spec.layer_sizes[-1]},1]", net.Prior.detach().cpu().numpy()[:, None])
        out["LogOfPrior"] = ("Log", "( Prior )", None)
        out["ScaledLogLikelihood"] = ("Minus", "( HLast , LogOfPrior )", None)
    return out


def dumpnode(section, name: str = "dumpnode") -> str:
    """Dump ``nodeName`` (or every node) of ``modelPath`` to ``outputFile``; returns the file path."""
    dist = dist_context()
    model_path = get_str(section, "modelPath")
    node = get_str(section, "nodeName", "") or ""
    out_file = get_str(section, "outputFile", f"{model_path}.{node or '__AllNodes__'}.txt")
    print_values = get_bool(section, "printValues", True)
    print_meta = get_bool(section, "printMetadata", True)
    net = load_command_model(section, "modelPath").network
    nodes = describe_nodes(net)
    if node and node not in nodes:
        raise ConfigError(f"node {node!r} is not in {model_path} (nodes: {', '.join(nodes)})",
                          path=key_path(section, "nodeName"))
    if not dist.is_main:
        return out_file
    parts = []
    for n, (op, shape, values) in nodes.items():
        if node and n != node:
            continue
        if print_meta:
            if op == "LearnableParameter":
                parts.append(f"{n}={op} {shape}  learningRateMultiplier=1.000000  NeedsGradient=true\n")
            else:
                parts.append(f"{n}={op} {shape}\n")
        if print_values and values is not None:
            parts.append(format_rows(values, "%.10g"))
        if print_meta or (print_values and values is not None):
            parts.append(_RULE + "\n")
    d = os.path.dirname(out_file)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(out_file, "w", encoding="ascii", newline="\n") as f:
        f.write("".join(parts))
    report(f"{name}: wrote {'node ' + node if node else 'all nodes'} of {model_path} to {out_file}", dist=dist)
    return out_file
