"""From a BrainScript network record to a :class:`~..ndl.graph.Graph` and its network.

1. The record is evaluated (``Evaluator``); every member holding a node (and every node the
   special-node members list) is computed; the input of each delay node is read last, so a loop
   may close through it.
2. Nodes are named by the member that holds them (``out.z``), the others by the member they were
   made under and their type (``model.W``, ``z.Times``), each name once.
3. Inferred dimensions (``Inferred``, 0: a layer's input dimension) are filled from the first
   use of the parameter (``Times``, ``Convolution``, ``BatchNormalization``, element-wise).
   A parameter's CNTK dimensions (``cntkDims``) are completed then, for its fan-in and fan-out.
4. The graph becomes an ``NDLNetwork`` (the node library's network; model files, MEL and the
   actions are the same as NDL's), which initialises the parameters (``nodes/init.py``).
"""
from __future__ import annotations

import os

from ...integrations.torch_backend import torch
from ..ndl.graph import Graph, NodeDef
from ..ndl.network import NDLNetwork
from ..nodes import NodeError, lookup
from ..nodes.base import dims_from_use, numel
from . import functions, images, layers, load, recurrent, refused, scalars  # noqa: F401  (they register the library)
from .evaluator import Evaluator, deep_recursion
from .library import install
from .syntax import BrainScriptError, Loc, parse_expression, parse_record_body
from .values import Array, BNode, Record, Thunk, type_name

__all__ = ["evaluate_network", "graph_of", "network_of", "SPECIAL"]

#: special-node members -> graph groups
SPECIAL = {"featurenodes": "feature", "labelnodes": "label", "inputnodes": "label", "criterionnodes": "criterion",
           "criterianodes": "criterion", "evaluationnodes": "eval", "evalnodes": "eval", "outputnodes": "output"}
_TAGS = {"feature": "feature", "label": "label", "criterion": "criterion", "criteria": "criterion",
         "evaluation": "eval", "eval": "eval", "output": "output"}


def evaluate_network(text: str, *, file: str = "<brainscript>", line: int = 1, col: int = 1,
                     expression: bool = False, base_dir: str | None = None) -> tuple[Evaluator, Record]:
    """Evaluate a network: the members of a record (``expression=False``, a ``.bs`` file or the
    inside of ``BrainScriptNetworkBuilder = {...}``), or an expression giving a record
    (``new ComputationNetwork {...}``)."""
    ev = Evaluator(base_dir=base_dir)
    install(ev)
    ev.dim_of = dim_of
    with deep_recursion():
        if expression:
            tree = parse_expression(text, file, line, col)
            rec = ev.eval(tree, ev.globals, "")
        else:
            tree = parse_record_body(text, file, line, col)
            rec = ev.record(tree, ev.globals, "")
    if not isinstance(rec, Record):
        raise BrainScriptError(f"the network must be a record {{ ... }}, found {type_name(rec)}", Loc(file, line, col))
    return ev, rec


def graph_of(ev: Evaluator, rec: Record, *, dropout_rate: float = 0.0) -> Graph:
    groups: dict[str, list[BNode]] = {g: [] for g in ("feature", "label", "criterion", "eval", "output")}
    roots: list[BNode] = []
    with deep_recursion():
        return _graph_of(ev, rec, groups, roots, dropout_rate)


def _graph_of(ev: Evaluator, rec: Record, groups: dict, roots: list, dropout_rate: float) -> Graph:
    for group, members in (rec.groups or {}).items():      # the network is a loaded one: its groups
        if group in groups:
            groups[group].extend(members)
            roots.extend(members)
    for name, t in rec.members.items():
        v = t.force(ev)
        group = SPECIAL.get(name.lower())
        if group is not None:
            items = v.values(ev) if isinstance(v, Array) else [v]
            for x in items:
                if not isinstance(x, BNode):
                    raise BrainScriptError(f"{name}: expected nodes, found {type_name(x)}", t.loc)
                groups[group].append(x)
                roots.append(x)
        elif isinstance(v, BNode):
            roots.append(v)
    nodes = _collect(ev, roots)
    for n in nodes:
        for tag in n.tags:
            g = _TAGS.get(tag.lower())
            if g is None:
                raise BrainScriptError(f"tag={tag!r}: expected one of {', '.join(sorted(_TAGS))}", _loc(n))
            groups[g].append(n)
    _default_groups(nodes, groups)
    names = _name(nodes)
    _infer(nodes, names)
    g = Graph()
    for n in nodes:
        attrs = dict(n.attrs)
        if attrs.pop("bsDropout", False):
            attrs["dropoutRate"] = float(dropout_rate)
        if "cntkDims" in attrs:
            attrs["cntkDims"] = _complete(attrs, names[id(n)], n)
        g.add(NodeDef(names[id(n)], n.op, [names[id(i)] for i in n.inputs], attrs, n.grad, n.lr_mult, n.where))
    for group, members in groups.items():
        for m in members:
            g.tag(group, names[id(m)])
    g.loaded = {names[id(n)]: ev.loaded[id(n)] for n in nodes if id(n) in ev.loaded}   # BS.Network.Load
    return g


def _loc(n: BNode) -> Loc | None:
    parts = n.where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return Loc(parts[0], int(parts[1]), int(parts[2]))
    return None


def _collect(ev: Evaluator, roots: list[BNode]) -> list[BNode]:
    """Every node the roots read, the delay nodes' inputs read last (in creation order)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for k, i in enumerate(n.inputs):
            if isinstance(i, Thunk):
                v = i.force(ev)
                if not isinstance(v, BNode):
                    v = ev.as_node(v, _loc(n), n.op)
                n.inputs[k] = v
                i = v
            stack.append(i)
    return [n for n in ev.nodes if id(n) in seen]


def _default_groups(nodes: list[BNode], groups: dict) -> None:
    """Without featureNodes/labelNodes: the inputs read as the first input of a criterion are
    labels, the other inputs features (CNTK finds the input nodes the same way)."""
    inputs = [n for n in nodes if lookup(n.op).kind == "input"]
    if not groups["label"]:
        for c in groups["criterion"] + groups["eval"]:
            if c.inputs and c.inputs[0] in inputs and c.inputs[0] not in groups["label"]:
                groups["label"].append(c.inputs[0])
    if not groups["feature"]:
        groups["feature"].extend(n for n in inputs if n not in groups["label"])
    for g in groups:
        uniq = []
        for n in groups[g]:
            if n not in uniq:
                uniq.append(n)
        groups[g] = uniq


def _name(nodes: list[BNode]) -> dict[int, str]:
    taken: set[str] = set()
    out: dict[int, str] = {}
    counters: dict[str, int] = {}

    def unique(base: str) -> str:
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name
    for n in nodes:             # members first: they keep their names
        if n.name is not None and n.name not in taken:
            out[id(n)] = n.name
            taken.add(n.name)
    for n in nodes:             # a loaded node whose name a member took
        if n.name is not None and id(n) not in out:
            out[id(n)] = unique(n.name)
    for n in nodes:
        if id(n) in out:
            continue
        short = {"Parameter": "W", "Constant": "c"}.get(n.op, n.op)
        if n.op == "Parameter" and n.attrs.get("cols") == 1:
            short = "b"
        base = f"{n.hint}.{short}" if n.hint else short
        counters[base] = counters.get(base, 0) + 1
        out[id(n)] = unique(base)
    return out


def _set_param(n: BNode, rows: int, cols: int, names, why: str) -> None:
    r, c = n.attrs["rows"], n.attrs["cols"]
    if r == 0:
        n.attrs["rows"] = r = rows
    if c == 0:
        n.attrs["cols"] = c = cols
    if r <= 0 or c <= 0:
        raise BrainScriptError(f"the dimensions of {names[id(n)]} cannot be inferred ({why})", _loc(n))


def dim_of(node: BNode) -> int:
    """``x.dim``: the number of values per sample of ``node``, inferred from what it reads."""
    seen: dict[int, BNode] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        if lookup(n.op).kind != "delay":
            stack.extend(i for i in n.inputs if isinstance(i, BNode))
    nodes = list(seen.values())
    shapes = _infer(nodes, {id(n): n.name or n.hint or n.op for n in nodes})
    return numel(shapes[id(node)])


def _infer(nodes: list[BNode], names: dict[int, str]) -> dict[int, tuple]:
    """Fill the parameters' inferred dimensions (0) from their first use, in dependency order;
    the shapes by node id."""
    shapes: dict[int, tuple] = {}
    sample: dict[int, bool] = {}
    done: set[int] = set()
    order: list[BNode] = []
    state: dict[int, int] = {}
    for root in nodes:
        if id(root) in state:
            continue
        work = [(root, iter([] if lookup(root.op).kind == "delay" else root.inputs))]
        state[id(root)] = 1
        while work:
            v, it = work[-1]
            for w in it:
                if id(w) not in state:
                    state[id(w)] = 1
                    work.append((w, iter([] if lookup(w.op).kind == "delay" else w.inputs)))
                    break
            else:
                work.pop()
                order.append(v)
    pending = [n for n in order if lookup(n.op).kind == "delay"]
    users: dict[int, list[tuple[BNode, int]]] = {}
    for n in order:
        if lookup(n.op).kind != "delay":
            for k, i in enumerate(n.inputs):
                users.setdefault(id(i), []).append((n, k))
    for n in order:
        op = lookup(n.op)
        if op.kind == "param" and (n.attrs["rows"] == 0 or n.attrs["cols"] == 0):
            continue                # filled by its first use
        if op.kind == "delay":
            if n.attrs["rows"] == 0:
                src = n.inputs[0]
                if id(src) not in shapes:
                    rows = _upstream_rows(src, names)
                    if rows is None:
                        continue    # in a loop: from its first use (_fill), as CNTK's validation infers it
                    n.attrs["rows"] = rows
                else:
                    n.attrs["rows"] = numel(shapes[id(src)])
            shapes[id(n)], sample[id(n)] = (n.attrs["rows"],), True
            done.add(id(n))
            continue
        for k, i in enumerate(n.inputs):
            if id(i) not in shapes:
                _fill(n, k, i, shapes, names, users)
                if lookup(i.op).kind == "delay":
                    shapes[id(i)], sample[id(i)] = (i.attrs["rows"],), True
                else:
                    shapes[id(i)], sample[id(i)] = _call_infer(i, [], [], names)
        shapes[id(n)], sample[id(n)] = _call_infer(n, [shapes[id(i)] for i in n.inputs],
                                                   [sample[id(i)] for i in n.inputs], names)
    for n in pending:
        src = n.inputs[0]
        if id(src) in shapes and numel(shapes[id(src)]) != n.attrs["rows"]:
            raise BrainScriptError(f"{n.op} {names[id(n)]}: declared dimension {n.attrs['rows']} but its input "
                                   f"{names[id(src)]} has dimensions {list(shapes[id(src)])}", _loc(n))
    return shapes


def _upstream_rows(src: BNode, names: dict[int, str]) -> int | None:
    """The values per sample of ``src`` from what it reads (not through delay nodes), or None when
    they depend on a delay whose dimension is not known yet (a loop)."""
    seen: dict[int, BNode] = {}
    stack = [src]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        if lookup(n.op).kind == "delay":
            if n.attrs["rows"] == 0:
                return None
            continue
        stack.extend(i for i in n.inputs if isinstance(i, BNode))
    nodes = list(seen.values())
    shapes = _infer(nodes, {id(n): names.get(id(n), n.name or n.hint or n.op) for n in nodes})
    return numel(shapes[id(src)]) if id(src) in shapes else None


def _call_infer(n: BNode, shapes, sample, names):
    try:
        return lookup(n.op).infer(n.attrs, shapes, sample)
    except NodeError as e:
        raise BrainScriptError(f"{names[id(n)]} ({n.op}): {e}", _loc(n)) from e


#: nodes whose value has the dimensions of their (first) input
_SAME_DIMS = {"Sigmoid", "Tanh", "RectifiedLinear", "Exp", "Log", "Negate", "Abs", "Sqrt", "Square", "Pass",
              "Dropout", "StopGradient", "Reciprocal", "Softmax", "LogSoftmax", "Hardmax", "ElementTimes", "Plus",
              "Minus", "ElementDivide"}


def _delay_rows(user: BNode, k: int, shapes: dict, users: dict, depth: int = 0) -> int:
    """The values per sample of input ``k`` of ``user`` as its use tells them (0: it does not):
    ``Times(W, d)`` gives W's columns, an element-wise node its other input's values; an
    element-wise node with a scalar (``beta .* dh``, CNTK's Stabilize) or a unary one passes the
    question to the nodes that read it, as CNTK's validation infers the dimensions of a loop."""
    ins = user.inputs
    if user.op == "Times" and k == 1:
        w = ins[0]
        s = shapes.get(id(w))
        if s is not None and len(s) == 2:
            return int(s[1])
        if lookup(w.op).kind == "param" and int(w.attrs.get("cols") or 0) > 0:
            return int(w.attrs["cols"])
        return 0
    if user.op not in _SAME_DIMS or depth > 32:
        return 0
    if len(ins) == 2 and user.op in ("Plus", "Minus", "ElementTimes", "ElementDivide"):
        o = shapes.get(id(ins[1 - k]))
        if o is not None and numel(o) != 1:
            return numel(o)
    for u, j in users.get(id(user), []):
        r = _delay_rows(u, j, shapes, users, depth + 1)
        if r > 0:
            return r
    if len(ins) == 2 and shapes.get(id(ins[1 - k])) is not None:
        return numel(shapes[id(ins[1 - k])])
    return 0


def _fill(user: BNode, k: int, p: BNode, shapes: dict, names, users: dict | None = None) -> None:
    """Parameter ``p`` (input ``k`` of ``user``) has inferred dimensions: take them from ``user``'s
    other inputs; so does a delay node in a loop (``PastValue (0, h)`` read by ``H * dh``)."""
    if lookup(p.op).kind == "delay":
        rows = _delay_rows(user, k, shapes, users or {})
        if rows <= 0:
            raise BrainScriptError(f"{p.op} {names[id(p)]}: its dimension cannot be inferred (its input is computed "
                                   f"from it, and its first use {names[id(user)]} ({user.op}) does not tell it); "
                                   "give it, e.g. PastValue(dim, x)", _loc(p))
        p.attrs["rows"] = rows
        return
    if lookup(p.op).kind != "param":
        raise BrainScriptError(f"{names[id(user)]}: input {names[id(p)]} has no value yet", _loc(user))
    others = [shapes.get(id(i)) for i in user.inputs]
    why = f"its first use, {names[id(user)]} ({user.op}), does not tell them"
    if user.op == "Convolution" and k == 0 and others[1] is not None and len(others[1]) != 3:
        raise BrainScriptError(f"{names[id(user)]}: a convolution needs an image input (w:h:c), found dimensions "
                               f"{list(others[1])}", _loc(user))
    rows, cols = dims_from_use(user.op, user.attrs, k, others, p.attrs["rows"], p.attrs["cols"])
    _set_param(p, rows, cols, names, why)


def _complete(attrs: dict, name: str, n: BNode) -> list[int]:
    """CNTK's dimensions of a parameter with its inferred one (a 0) filled from its [rows, cols]."""
    dims = list(attrs["cntkDims"])
    total = int(attrs["rows"]) * int(attrs["cols"])
    zeros = [i for i, d in enumerate(dims) if d == 0]
    known = numel([d for d in dims if d])
    if len(zeros) == 1 and known and total % known == 0:
        dims[zeros[0]] = total // known
    elif zeros or numel(dims) != total:
        dims = [int(attrs["rows"]), int(attrs["cols"])]      # fans of the matrix as held
    return dims


def network_of(graph: Graph, *, dtype=torch.float32, seed_offset: int = 0, base_dir: str | None = None) -> NDLNetwork:
    net = NDLNetwork(graph, dtype, seed_offset=seed_offset, base_dir=base_dir, kernel_layout=True)
    with torch.no_grad():           # the trained values of BS.Network.Load's nodes
        for name, (t, computed) in getattr(graph, "loaded", {}).items():
            dst = net.tensor(name)
            if tuple(net.shapes[name]) != tuple(t.shape):
                raise BrainScriptError(f"{name}: the loaded value has dimensions {list(t.shape)}, the network "
                                       f"{list(net.shapes[name])}")
            dst.copy_(t.to(dst.dtype).reshape(dst.shape))
            if name in net._pre and computed:
                net.precomputed_[net._pre.index(name)] = True
    return net


def read_source(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise BrainScriptError(f"cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise BrainScriptError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start})",
                               Loc(path, 1, 1)) from e


def base_dir_of(path: str | None) -> str | None:
    return os.path.dirname(os.path.abspath(path)) if path else None
