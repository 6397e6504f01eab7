"""``BS.Network.Load ("model.dnn")``: a trained model as a record of its nodes, to build on.

Every node of the model becomes a node of the network being built, with its name, its inputs and,
for parameters, constants and pre-computed statistics, its trained values (the builder copies them
in after initialising). The record's members are the model's node names; a dotted name
(``out.z``) is also reachable as ``model.out.z`` unless a node holds the prefix itself.
"""
from __future__ import annotations

import os

from ..._log import get_logger
from ...errors import CntkioError
from ..mel import MelModel
from ..modelfile import load_model
from ..nodes import lookup
from .library import builtin
from .syntax import BrainScriptError
from .values import BNode, Record, Thunk

__all__: list[str] = []

_log = get_logger("actions.brainscript")


def _tree(names: dict[str, BNode], path: str) -> Record:
    members: dict[str, Thunk] = {}
    groups: dict[str, dict[str, BNode]] = {}
    for name, node in names.items():
        head, dot, rest = name.partition(".")
        if not dot:
            members[name] = Thunk.of(node, f"{path}.{name}")
        else:
            groups.setdefault(head, {})[rest] = node
    for head, sub in groups.items():
        if head not in members:
            members[head] = Thunk.of(_tree(sub, f"{path}.{head}"), f"{path}.{head}")
    return Record(members, path)


@builtin("BS.Network.Load (pathName)")
def _Load(ev, a, loc):
    path = str(a["pathName"])
    if not os.path.isabs(path) and loc is not None and not os.path.exists(path):
        beside = os.path.join(os.path.dirname(loc.file), path)
        path = beside if os.path.exists(beside) else path
    try:
        model = MelModel.from_network("loaded", load_model(path).network)
    except CntkioError as e:
        raise BrainScriptError(f"BS.Network.Load: {e}", loc) from e
    made: dict[str, BNode] = {}
    for name, node in model.graph.nodes.items():
        b = ev.node(node.op, [], dict(node.attrs), loc)
        b.where = node.where or b.where
        b.name, b.grad, b.lr_mult = name, node.grad, node.lr_mult
        made[name] = b
        kind = lookup(node.op).kind
        if kind in ("param", "constant", "precompute") and name in model.tensors:
            ev.loaded[id(b)] = (model.tensors[name], kind != "precompute" or name in model.computed)
    for name, node in model.graph.nodes.items():
        made[name].inputs = [made[i] for i in node.inputs]
    _log.info("BS.Network.Load: %d nodes of %s", len(made), path)
    rec = _tree(made, os.path.basename(path))
    # CNTK's Load gives a ComputationNetwork with its feature/label/criterion/evaluation/output groups
    rec.groups = {g: [made[n] for n in names] for g, names in model.graph.groups.items() if names}
    return rec
