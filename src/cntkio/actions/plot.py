"""The ``plot`` action: a model's network as a graphviz DOT file, rendered when asked and possible.

What it must never do: run a render command the configuration does not give, or leave a
half-written DOT file under its name.

CNTK's ``DoTopologyPlot`` (Source/ActionsLib/OtherActions.cpp) with ``PlotNetworkTopology``
(Source/ComputationNetworkLib/ComputationNetwork.cpp): ``modelPath`` (required),
``outputDotFile`` (default ``<modelPath>.dot``), ``outputFile`` and ``renderCmd`` (a command with
``<IN>`` and ``<OUT>`` placeholders, e.g. ``dot -Tsvg <IN> -o<OUT>``; ``outputFile`` without
``renderCmd`` is an error, as in CNTK). cntkio's own addition: ``outputFile`` ending in ``.svg``,
``.png`` or ``.pdf`` without ``renderCmd`` is rendered with graphviz's ``dot`` when it is
installed (else only the DOT text is written, with a warning).

The DOT text follows CNTK's: learnable parameters as gray boxes, inputs as red ellipses, labels
as brown diamonds, criteria as red double circles, pre-computed nodes as green dashed boxes,
each node labelled ``name [dims]\\noperation``, the features at the bottom (rank source) and
the criterion, output and evaluation nodes at the top (rank sink), one edge per input. A network
from a SimpleNetworkBuilder is drawn as its equivalent graph (the same nodes CNTK's builder made:
``W0*features+B0``, ``H1``, ...).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from .._log import get_logger
from ..errors import CntkioError, ConfigError
from ._common import report
from ._params import get_str, key_path

__all__ = ["plot", "network_dot"]

_log = get_logger("actions.plot")
_RENDER = {".svg": "svg", ".png": "png", ".pdf": "pdf"}


def _graph_network(net):
    """The model's network as a graph network (a SimpleNetwork through its MEL graph)."""
    from ..networks import SimpleNetwork
    from ..networks.mel import MelModel
    if isinstance(net, SimpleNetwork):
        return MelModel.from_network("simple", net).network()
    if not hasattr(net, "graph"):
        raise CntkioError(f"plot: a network of type {type(net).__name__} has no node graph to draw")
    return net


def _dims(shape, per_sample: bool) -> str:
    text = " x ".join(str(d) for d in shape) if shape else "1"
    return f"{text} x *" if per_sample else text


def _q(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def network_dot(net) -> str:
    """The DOT text of a graph network (module docstring)."""
    from ..networks.nodes import lookup
    g = _graph_network(net)
    graph, order = g.graph, list(g.order)
    groups = graph.groups
    kinds = {n: lookup(graph.nodes[n].op).kind for n in order}
    params = sorted(n for n in order if kinds[n] == "param")
    features = [n for n in groups.get("feature", []) if n in kinds]
    labels = [n for n in groups.get("label", []) if n in kinds]
    criteria = [n for n in groups.get("criterion", []) if n in kinds]
    precomputed = sorted(n for n in order if kinds[n] == "precompute")
    top = list(dict.fromkeys(criteria + [n for n in groups.get("output", []) if n in kinds]
                             + [n for n in groups.get("eval", []) if n in kinds]))
    out = [" strict digraph {", " rankdir = BT ;  ", " // special nodes "]
    style = (('shape = box     , color = gray , style = "filled, rounded"  ', params),
             ("shape = ellipse , color = red  , fillcolor = white ", features),
             ("shape = diamond, color = brown, style = bold ", labels),
             ("shape = doublecircle , color =  red , fillcolor = white  ", criteria),
             ('shape = box    , color = black, style = "dashed, filled",  fillcolor= limegreen ', precomputed))
    for attrs, names in style:
        if names:
            out.append(f" node [ {attrs}]; " + " ".join(_q(n) for n in names) + " ; ")
    out.append("   node [ shape = ellipse, color = blue, fillcolor = white, style = solid ];  ")
    out.append(" ")
    out.append("// add labels and operation name")
    for n in sorted(order, key=str.lower):
        node = graph.nodes[n]
        op = {"param": "LearnableParameter", "input": "InputValue"}.get(kinds[n], node.op)
        label = f"{n} [{_dims(g.shapes[n], bool(g.sample[n]))}]".replace('"', '\\"')
        out.append(f'  {_q(n)} [ label = "{label}\\n{op}" ] ;')      # \n: graphviz's line break
    out.append(" subgraph {\n \t\t rank=source ;  " + " ".join(_q(n) for n in features) + "  \n}")
    out.append(" subgraph {\n \t\t rank=sink ;  " + " ".join(_q(n) for n in top) + "  \n}")
    for n in order:
        for i in graph.nodes[n].inputs:
            out.append(f" {_q(i)} -> {_q(n)} ; ")
    out.append(" \n}")
    return "\n".join(out) + "\n"


def _write(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def plot(section, name: str = "plot") -> dict:
    """Write the model's DOT file (and render it when asked); returns the files written."""
    from .checks import load_command_model
    model_path = get_str(section, "modelPath")
    dot_file = get_str(section, "outputDotFile", "") or f"{model_path}.dot"
    out_file = get_str(section, "outputFile", "") or ""
    render = get_str(section, "renderCmd", "") or ""
    if out_file and not render and os.path.splitext(out_file)[1].lower() not in _RENDER:
        raise ConfigError("plot: If you specify an outputFile, you also need a renderCmd.",
                          path=key_path(section, "renderCmd"),
                          hint="e.g. renderCmd = \"dot -Tpng <IN> -o<OUT>\" (or an outputFile ending in .svg/.png/.pdf)")
    net = load_command_model(section, "modelPath").network
    _write(dot_file, network_dot(net))
    report(f"{name}: created network description in dot format: {dot_file}")
    written = {"outputDotFile": dot_file}
    if render:
        cmd = render.replace("<IN>", dot_file).replace("<OUT>", out_file)
        report(f"{name}: executing third-party tool for rendering dot:\n{cmd}")
        done = subprocess.run(cmd, shell=True, check=False)       # CNTK: system(renderCmd)
        if done.returncode != 0:
            _log.warning("%s: the render command exited with status %d", name, done.returncode)
        elif out_file:
            written["outputFile"] = out_file
    elif out_file:
        dot = shutil.which("dot")
        if dot is None:
            _log.warning("%s: graphviz's dot is not installed: %s is not rendered (the DOT text is in %s)",
                         name, out_file, dot_file)
        else:
            fmt = _RENDER[os.path.splitext(out_file)[1].lower()]
            done = subprocess.run([dot, f"-T{fmt}", dot_file, "-o", out_file], check=False, capture_output=True,
                                  text=True)
            if done.returncode != 0:
                raise CntkioError(f"{name}: graphviz's dot failed to render {out_file}: {done.stderr.strip()}")
            written["outputFile"] = out_file
            report(f"{name}: rendered {out_file}")
    return written

