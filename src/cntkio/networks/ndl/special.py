"""NDL functions that are not one node of the node library: ``ImageParameter`` (a parameter with
image dimensions), the run count CNTK adds to ``BatchNormalization``, ``ErrorPrediction`` with a
third (topN) input, and the functions cntkio refuses by name. It never parses text."""
from __future__ import annotations

from ..nodes.refused import refusal
from .graph import NodeDef
from .parser import Call, Loc, NDLRefusal, Num

__all__ = ["refuse_if_refused", "image_parameter", "add_run_count", "top_n_error", "is_top_n_error"]


def refuse_if_refused(fn: str, loc: Loc) -> None:
    """Raise the refusal of a CNTK function cntkio does not build (``nodes/refused.py``)."""
    r = refusal(fn)
    if r is not None:
        raise NDLRefusal(f"{r[0]} is not supported by cntkio: {r[1]}", loc)


def image_parameter(ev, scope, c: Call, name: str):
    """``ImageParameter(w, h, c)`` or ``ImageParameter(out, w, h, c)`` with ``imageLayout``: a
    Parameter of CNTK's dimensions ``[w, h, c]`` (``[c, w, h]`` for HWC) after ``out``
    (NDLNetworkBuilder.cpp, ProcessTensorShapeParameters with isImage), held as ``[c, w·h]``
    (a bias per channel of cntkio's ``[c, h, w]`` images) or ``[out, w·h·c]``."""
    from .parser import NDLError
    if len(c.args) not in (3, 4):
        raise NDLError(f"ImageParameter takes 3 (width, height, channels) or 4 (rows, width, height, channels) "
                       f"arguments, found {len(c.args)}", c.loc)
    dims = []
    for e in c.args:
        v = ev.value(scope, e, name, e.loc)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or int(v) != v or v <= 0:
            raise NDLError(f"ImageParameter: dimensions must be numbers > 0, found {v!r}", e.loc)
        dims.append(int(v))
    kw = dict(c.kwargs)
    layout = kw.pop("imageLayout", None)
    layout_name = str(ev.value(scope, layout, name, layout.loc, soft=True)) if layout is not None else "HWC"
    w, h, ch = dims[-3:]
    image = [w, h, ch] if layout_name.lower() in ("cudnn", "chw") else [ch, w, h]
    cntk = dims[:-3] + image
    rows, cols = (ch, w * h) if len(dims) == 3 else (dims[0], w * h * ch)
    call = Call("Parameter", [Num(float(rows), c.loc), Num(float(cols), c.loc)], kw, c.loc, dict(c.kwlocs))
    out = ev.call(scope, call, name)
    ev.graph.nodes[out.name].attrs["cntkDims"] = cntk
    return out


def add_run_count(ev, node: NodeDef) -> None:
    """CNTK's NDL gives a BatchNormalization of five inputs a sixth, ``<name>.run_sample_count``
    (NDLNetworkBuilder.cpp): the samples seen, 0 at first, so that the first minibatch's
    statistics replace the running ones."""
    name = f"{node.name}.run_sample_count"
    ev.graph.add(NodeDef(name, "Parameter", [], {"rows": 1, "cols": 1, "init": "fixedValue", "value": 0.0},
                         grad=False, lr_mult=0.0, where=node.where))
    node.inputs.append(name)




def is_top_n_error(c: Call) -> bool:
    return c.fn.lower() in ("errorprediction", "classificationerror") and len(c.args) == 3


def top_n_error(ev, scope, c: Call, name: str, v):
    """``ErrorPrediction(labels, z, topN)``: CNTK's ClassificationErrorNode with a third input reads
    its top-N count from that input's value (Source/ComputationNetworkLib/EvaluationNodes.h:75-81,
    ``m_topK = Input(2)->Get00Element()``), e.g. ``top5Errs = ErrorPrediction(labels, ol, Const(5))``
    (Tests/EndToEndTests/BatchNormalization/NonSpatial/01_OneHidden.ndl:32). ``v`` is the third
    argument's value (a number, or the NodeDef it names); cntkio reads a constant's value when the
    network is built."""
    from .parser import NDLError
    e = c.args[2]
    if isinstance(v, NodeDef):
        if v.op != "Constant":
            raise NDLError(f"{c.fn}: argument 3 (topN) must be a constant (e.g. Const(5)), found node {v.name} "
                           f"({v.op})", e.loc)
        v = v.attrs.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 1:
        raise NDLError(f"{c.fn}: argument 3 (topN) must be a whole number >= 1, found {v!r}", e.loc)
    call = Call("ClassificationErrorTopN", list(c.args[:2]), {**c.kwargs, "topN": Num(float(int(v)), e.loc)},
                c.loc, dict(c.kwlocs))
    return ev.call(scope, call, name)
