"""The ``SVD`` action: a model's weight matrices replaced by low-rank products, written as a new model.

What it must never do: change the model file it reads, or write a model whose other parameters
differ from the original's.

CNTK's ``DoParameterSVD`` and ``ComputationNetwork::PerformSVDecomposition``
(Source/ActionsLib/OtherActions.cpp, Source/ComputationNetworkLib/ComputationNetwork.cpp):

* ``modelPath`` (the model read), ``outputmodelPath`` (the model written; nothing is written when
  it is empty), ``AlignedSize`` (default 8), and either ``NodeNameRegex`` with ``KeepRatio``
  (default 0.4) or ``SVDConfig``: a file of ``regex keepRatio`` lines (a line of another form:
  CNTK printed its usage and did nothing; here it is an error naming the line);
* every learnable parameter whose name matches a regex whole (``std::regex_match``) and that is a
  matrix (not a row or a column) is decomposed: ``A = U S V^T``; ``r`` is the number of singular
  values whose running sum first exceeds ``keepRatio`` of their total, rounded up to a multiple of
  ``AlignedSize`` (at most their number); ``A_U = U_r sqrt(S_r)`` (m x r) and ``A_V = sqrt(S_r)
  V_r^T`` (r x n) become learnable parameters;
* a ``Times`` that read ``A`` then reads ``A_V`` and a new ``Times`` ``A_SVD = A_U * (A_V * x)``
  takes its place for its readers; any other reader of ``A`` reads ``A_SVD = A_U * A_V``.

A network from a SimpleNetworkBuilder is decomposed as its equivalent graph (``W0``, ``W0*H0``,
...), so the model written is a graph model. A train command then starts from it when it is its
``modelPath.0`` (makeMode; ``Tests/EndToEndTests/Speech/SVD``).
"""
from __future__ import annotations

import re

from ..errors import ConfigError
from ..integrations.torch_backend import torch
from .._log import get_logger
from ._common import report
from ._params import get_float, get_int, get_str, has, key_path

__all__ = ["svd", "decompose", "svd_rank"]

_log = get_logger("actions.svd")


def svd_rank(singular_values, keep_ratio: float, aligned: int) -> int:
    """How many singular values CNTK keeps (module docstring)."""
    s = [float(v) for v in singular_values]
    total = sum(s)
    keep = total * keep_ratio
    r, run = 0, 0.0
    for i, v in enumerate(s):
        run += v
        if run > keep:
            r = i + 1
            break
    r = min(r, len(s))
    if aligned > 0 and r % aligned:
        r -= r % aligned
        r = len(s) if r + aligned > len(s) else r + aligned
    return r


def _groups(section, name: str) -> list[tuple[re.Pattern, float, str]]:
    keep = get_float(section, "KeepRatio", 0.4)
    regex = get_str(section, "NodeNameRegex", "") or ""
    if regex:
        return [(_compile(regex, key_path(section, "NodeNameRegex")), keep, regex)]
    path = get_str(section, "SVDConfig", "") or ""
    if not path:
        raise ConfigError(f"{name}: give NodeNameRegex (with KeepRatio) or SVDConfig (lines of 'regex keepRatio')",
                          path=key_path(section, "NodeNameRegex"))
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != 2:
                    raise ConfigError(f"{path}:{lineno}: expected 'regex keepRatio' (e.g. 'W[1-5] 0.4'), "
                                      f"found {line.strip()!r}", path=key_path(section, "SVDConfig"))
                try:
                    ratio = float(parts[1])
                except ValueError as e:
                    raise ConfigError(f"{path}:{lineno}: the keep ratio {parts[1]!r} is not a number",
                                      path=key_path(section, "SVDConfig")) from e
                out.append((_compile(parts[0], f"{path}:{lineno}"), ratio, parts[0]))
    except OSError as e:
        raise ConfigError(f"cannot read the SVD config file {path}: {e.strerror}",
                          path=key_path(section, "SVDConfig")) from e
    return out


def _compile(regex: str, where: str) -> re.Pattern:
    try:
        return re.compile(regex)
    except re.error as e:
        raise ConfigError(f"{regex!r} is not a regular expression: {e}", path=where) from e


def decompose(model, groups: list[tuple[re.Pattern, float, str]], aligned: int) -> list[tuple[str, int, int, int]]:
    """Decompose the matching parameters of ``model`` (a :class:`~cntkio.networks.mel.MelModel`)
    in place; returns ``(name, m, n, r)`` per parameter decomposed."""
    from ..networks.ndl.graph import NodeDef
    from ..networks.nodes import lookup
    graph, done = model.graph, []
    for pattern, keep, _ in groups:
        names = [n for n, node in graph.nodes.items() if pattern.fullmatch(n) and lookup(node.op).kind == "param"]
        for name in names:
            if name not in graph.nodes:
                continue
            a = model.tensors[name].detach().to(torch.float64)
            if a.dim() != 2 or 1 in a.shape:
                continue
            m, n = a.shape
            u, s, vh = torch.linalg.svd(a, full_matrices=False)
            r = svd_rank(s.tolist(), keep, aligned)
            root = torch.sqrt(s[:r])
            left, right = (u[:, :r] * root).to(model.dtype), (root[:, None] * vh[:r]).to(model.dtype)
            node = graph.nodes[name]
            lname, rname, tname = f"{name}_U", f"{name}_V", f"{name}_SVD"
            graph.add(NodeDef(lname, "Parameter", [], dict(node.attrs, rows=m, cols=r), node.grad, node.lr_mult))
            graph.add(NodeDef(rname, "Parameter", [], dict(node.attrs, rows=r, cols=n), node.grad, node.lr_mult))
            model.tensors[lname], model.tensors[rname] = left, right
            for consumer in list(graph.consumers(name)):
                cnode = graph.nodes[consumer]
                if cnode.op == "Times" and cnode.inputs and cnode.inputs[0] == name:
                    # U * (V * x): the Times reads V, a new Times takes its place for its readers
                    readers = graph.consumers(consumer)
                    cnode.inputs[0] = rname
                    new = f"{consumer}_{tname}" if tname in graph.nodes else tname
                    graph.add(NodeDef(new, "Times", [lname, consumer]))
                    for rd in readers:
                        graph.nodes[rd].inputs = [new if i == consumer else i for i in graph.nodes[rd].inputs]
                    for g, members in graph.groups.items():
                        graph.groups[g] = [new if x == consumer else x for x in members]
                else:
                    if tname not in graph.nodes:
                        graph.add(NodeDef(tname, "Times", [lname, rname]))
                    cnode.inputs = [tname if i == name else i for i in cnode.inputs]
            del graph.nodes[name]
            model.tensors.pop(name, None)
            _log.info("SVD: %s (%d x %d): %.1f%% of the energy kept with %d singular values (%.1f%% of the "
                      "parameters)", name, m, n, keep * 100, r, 100.0 * (m + n) * r / (m * n))
            done.append((name, m, n, r))
    return done


def svd(section, name: str = "SVD") -> dict:
    """Run the action on a command section; returns ``{parameter: rank}``."""
    from ..networks import save_model
    from ..networks.mel import MelModel
    from .checks import load_command_model
    aligned = get_int(section, "AlignedSize", 8)
    if aligned < 1:
        raise ConfigError(f"AlignedSize must be >= 1, found {aligned}", path=key_path(section, "AlignedSize"))
    groups = _groups(section, name)
    out_path = get_str(section, "outputmodelPath", "") if has(section, "outputmodelPath") else ""
    loaded = load_command_model(section, "modelPath", device=torch.device("cpu"))
    model = MelModel.from_network("svd", loaded.network)
    done = decompose(model, groups, aligned)
    if not done:
        _log.warning("%s: no learnable matrix matches %s", name, ", ".join(g[2] for g in groups))
    if out_path:
        net = model.network()
        save_model(out_path, net, epoch=0, info={"command": name})
        report(f"{name}: {len(done)} parameter(s) decomposed; model written to {out_path}")
    else:
        report(f"{name}: {len(done)} parameter(s) decomposed; no outputmodelPath, nothing written")
    return {n: r for n, _, _, r in done}

