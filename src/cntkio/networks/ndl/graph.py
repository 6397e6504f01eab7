"""A network as a graph of named nodes, and the ``torch.nn.Module`` that computes it.

:class:`Graph` is the description (what NDL and MEL build and edit, and what a model file
stores): nodes in creation order, each with its node type, the names of its inputs, its
attributes, and the special-node groups (features, labels, criteria, evaluation, outputs).

:class:`GraphNetwork` checks and builds it once (CNTK's "validate" and "final" passes):

* every input exists; a cycle passes through a delay node (else a located error);
* shapes are inferred in dependency order and checked by each node type;
* learnable parameters and constants become tensors at their dot paths (``L1.W`` is the
  state-dict key ``L1.W``), initialised as NDL says; pre-computed statistics are buffers;
* each node's function is made once; a minibatch runs a cached plan (a list of steps), and a
  loop closed through ``PastValue``/``FutureValue`` runs step by step over the sequence axis.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ...integrations.torch_backend import nn, torch
from ..nodes import NodeError, lookup
from ..nodes.base import as_float, as_int, dims_from_use, numel
from ..nodes.basic import operand_view
from ..nodes.init import initial_value
from .carry import SequenceCarry
from .compiled import Plan, compile_plan
from .fused import fused_loops, run_fused
from .layout import addmm, keep_cntk_dims, kernel_shapes
from .parser import Loc, NDLError

__all__ = ["NodeDef", "Graph", "GraphNetwork", "SequenceCarry", "GROUPS", "TAG_GROUPS"]

# the kinds of steps of an evaluation plan
_COMPUTE, _TRAIN, _TENSOR, _DELAY, _LOOP = range(5)

#: the special-node groups, in NDL's array names
GROUPS = ("feature", "label", "criterion", "eval", "output")
#: tag values and array names -> group
TAG_GROUPS = {"feature": "feature", "features": "feature", "label": "label", "labels": "label",
              "criterion": "criterion", "criteria": "criterion", "eval": "eval", "evaluation": "eval",
              "output": "output", "outputs": "output",
              "featurenodes": "feature", "labelnodes": "label", "criterionnodes": "criterion",
              "criterianodes": "criterion", "evalnodes": "eval", "evaluationnodes": "eval",
              "outputnodes": "output"}


@dataclass
class NodeDef:
    """One node: ``op`` (a node type of ``cntkio.networks.nodes``), the names of its
    ``inputs``, its ``attrs`` (numbers and strings), whether a parameter is trained (``grad``,
    ``lr_mult``), and ``where`` it was written (``file:line:column``)."""

    name: str
    op: str
    inputs: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    grad: bool = True
    lr_mult: float = 1.0
    where: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "inputs": list(self.inputs), "attrs": dict(self.attrs),
                "grad": self.grad, "lr_mult": self.lr_mult, "where": self.where}

    @classmethod
    def from_dict(cls, d: dict) -> "NodeDef":
        return cls(**d)


@dataclass
class Graph:
    """Nodes by name (creation order) and the special-node groups."""

    nodes: dict[str, NodeDef] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=lambda: {g: [] for g in GROUPS})

    def add(self, node: NodeDef) -> NodeDef:
        self.nodes[node.name] = node
        return node

    def tag(self, group: str, name: str) -> None:
        if name not in self.groups[group]:
            self.groups[group].append(name)

    def consumers(self, name: str) -> list[str]:
        return [n.name for n in self.nodes.values() if name in n.inputs]

    def to_dict(self) -> dict:
        return {"nodes": [n.to_dict() for n in self.nodes.values()],
                "groups": {g: list(v) for g, v in self.groups.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "Graph":
        g = cls()
        for n in d["nodes"]:
            g.add(NodeDef.from_dict(n))
        for k, v in d.get("groups", {}).items():
            g.groups[k] = list(v)
        return g

    def copy(self) -> "Graph":
        return Graph.from_dict(self.to_dict())


def _where(node: NodeDef) -> Loc | None:
    parts = node.where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return Loc(parts[0], int(parts[1]), int(parts[2]))
    return None


def node_error(node: NodeDef, message: str, hint: str | None = None) -> NDLError:
    """An error about ``node``, located where it was written."""
    return NDLError(f"node {node.name} ({node.op}): {message}", _where(node), hint)


def _sccs(names: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), in reverse topological order."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in names:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out


class GraphNetwork(nn.Module):
    """The module of a :class:`Graph` (see the module docstring).

    :meth:`evaluate` computes the named nodes from input values; ``positions`` (each sample's
    index in its sequence) and ``lengths`` (its sequence's length) give the sequence layout that
    delay nodes need (without them every sample is a sequence of its own).

    ``fuse_lstm``: a loop that is CNTK's standard LSTM runs as one ``torch.lstm`` (see ``fused.py``).
    ``kernel_layout``: parameters held in the shapes their kernels take (see ``layout.py``).
    """

    fuse_lstm = True

    def __init__(self, graph: Graph, dtype: torch.dtype = torch.float32, *, seed_offset: int = 0,
                 base_dir: str | None = None, kernel_layout: bool = False) -> None:
        super().__init__()
        self.graph = graph
        self._dtype = dtype
        self._base_dir = base_dir
        self._validate_structure()
        self._infer()
        self._make_tensors(seed_offset, kernel_layout)
        self._fns = {}
        for n in self.order:
            node = self.graph.nodes[n]
            op = lookup(node.op)
            if op.kind in ("compute", "input", "delay"):
                try:
                    self._fns[n] = op.compile(node.attrs, [self.shapes[i] for i in node.inputs],
                                              [self.sample[i] for i in node.inputs])
                except NodeError as e:
                    raise node_error(node, str(e)) from e
        self._plans: dict = {}

    # --- validation ------------------------------------------------------------------------
    def _validate_structure(self) -> None:
        g = self.graph
        for node in g.nodes.values():
            op = lookup(node.op)
            if op is None:
                raise node_error(node, f"unknown node type {node.op!r}")
            for i in node.inputs:
                if i not in g.nodes:
                    raise node_error(node, f"input {i!r} is not a node of the network")
        for group, members in g.groups.items():
            for m in members:
                if m not in g.nodes:
                    raise NDLError(f"{group} node {m!r} is not a node of the network")
        edges = {n: list(node.inputs) for n, node in g.nodes.items()}
        comps = _sccs(list(g.nodes), edges)
        self.loops: list[list[str]] = []
        for comp in comps:
            if len(comp) == 1 and comp[0] not in edges[comp[0]]:
                continue
            delays = [n for n in comp if lookup(g.nodes[n].op).kind == "delay"]
            if not delays:
                cyc = " -> ".join(sorted(comp) + [sorted(comp)[0]])
                raise node_error(g.nodes[sorted(comp)[0]], f"a cycle without a delay node ({cyc})",
                                 hint="a loop must pass through PastValue, FutureValue or Delay")
            dirs = {lookup(g.nodes[n].op).direction for n in delays}
            if len(dirs) > 1:
                raise node_error(g.nodes[delays[0]], "a loop mixes PastValue and FutureValue nodes")
            self.loops.append(comp)
        # dependency order with the inputs of the delay nodes of loops cut (they are read one step
        # late); a delay outside a loop reads its input once it is computed
        looped = {m for comp in self.loops for m in comp}
        cut = {n: ([] if lookup(node.op).kind == "delay" and n in looped else list(node.inputs))
               for n, node in g.nodes.items()}
        order, state = [], {}
        for root in g.nodes:
            if root in state:
                continue
            work = [(root, iter(cut[root]))]
            state[root] = 1
            while work:
                v, it = work[-1]
                for w in it:
                    if w not in state:
                        state[w] = 1
                        work.append((w, iter(cut[w])))
                        break
                else:
                    work.pop()
                    state[v] = 2
                    order.append(v)
        self.order = order

    def _infer(self) -> None:
        g = self.graph
        self.shapes: dict[str, tuple] = {}
        self.sample: dict[str, bool] = {}
        later: set[str] = set()             # parameters with a 0 dimension: from their first use
        for n in self.order:
            node = g.nodes[n]
            op = lookup(node.op)
            if op.kind == "param" and 0 in (node.attrs.get("rows"), node.attrs.get("cols", 1)):
                later.add(n)
                continue
            for k, i in enumerate(node.inputs if op.kind != "delay" else []):
                if i in later:
                    self._infer_from_use(node, k, g.nodes[i])
                    later.discard(i)
            if op.kind == "delay":
                ins, flags = [None], [True]
            else:
                ins, flags = [self.shapes[i] for i in node.inputs], [self.sample[i] for i in node.inputs]
            try:
                self.shapes[n], self.sample[n] = op.infer(node.attrs, ins, flags)
            except NodeError as e:
                detail = ", ".join(f"{i}: {list(self.shapes[i])}" for i in node.inputs if i in self.shapes)
                raise node_error(node, str(e), hint=f"inputs {detail}" if detail else None) from e
        for n in self.order:
            node = g.nodes[n]
            if lookup(node.op).kind == "delay":
                src = node.inputs[0]
                if numel(self.shapes[src]) != numel(self.shapes[n]) or not self.sample[src]:
                    raise node_error(node, f"declared {list(self.shapes[n])} but its input {src} has "
                                     f"dimensions {list(self.shapes[src])}"
                                     + ("" if self.sample[src] else " and is not a per-sample value"))

    def _infer_from_use(self, user: NodeDef, k: int, p: NodeDef) -> None:
        """Fill the 0 dimensions of parameter ``p`` from ``user``, which reads it as input ``k``."""
        a = p.attrs
        others = [self.shapes.get(i) for i in user.inputs]
        rows, cols = dims_from_use(user.op, user.attrs, k, others, as_int(a["rows"], "rows"),
                                   as_int(a.get("cols", 1), "cols"))
        if rows <= 0 or cols <= 0:
            raise node_error(p, f"its dimensions [{a['rows']}, {a.get('cols', 1)}] cannot be inferred: its first "
                                f"use, {user.name} ({user.op}), does not tell them")
        a["rows"], a["cols"] = rows, cols
        self.shapes[p.name], self.sample[p.name] = lookup(p.op).infer(a, [], [])

    # --- tensors ---------------------------------------------------------------------------
    def _owner(self, path: str) -> tuple[nn.Module, str]:
        mod: nn.Module = self
        parts = path.split(".")
        for p in parts[:-1]:
            child = mod._modules.get(p)
            if child is None:
                if p in mod._parameters or p in mod._buffers:
                    raise NDLError(f"node {path!r}: {p!r} is both a node holding a value and a prefix of "
                                   "node names")
                child = nn.Module()
                mod.add_module(p, child)
            mod = child
        return mod, parts[-1]

    def _make_tensors(self, seed_offset: int, kernel_layout: bool) -> None:
        self._pre: list[str] = []
        k, held = 0, (kernel_shapes(self.graph, self.shapes, self.sample) if kernel_layout else {})
        for name, node in self.graph.nodes.items():
            op = lookup(node.op)
            if op.kind not in ("param", "constant", "precompute"):
                continue
            shape = self.shapes[name]
            mod, leaf = self._owner(name)
            if op.kind == "param":
                k += 1
                t = self._init_param(node, shape, k + int(seed_offset))
                t = t.to(self._dtype).reshape(held.get(name, shape))
                mod.register_parameter(leaf, nn.Parameter(t, requires_grad=node.grad))
            elif op.kind == "constant":
                value = as_float(node.attrs["value"], "value")
                mod.register_buffer(leaf, torch.full(shape, value, dtype=self._dtype))
            else:
                mod.register_buffer(leaf, torch.zeros(shape, dtype=self._dtype))
                self._pre.append(name)
        self.register_buffer("precomputed_", torch.zeros(len(self._pre), dtype=torch.bool))
        keep_cntk_dims(self, held)
        # the running statistics of batch normalisation are not trained
        for node in self.graph.nodes.values():
            if lookup(node.op).name == "BatchNormalization":
                for i in node.inputs[3:5]:
                    if lookup(self.graph.nodes[i].op).kind == "param":
                        self.tensor(i).requires_grad_(False)

    def _init_param(self, node: NodeDef, shape: tuple, seed: int) -> torch.Tensor:
        try:
            return initial_value(node.attrs, shape, seed, self._base_dir)
        except NodeError as e:
            raise node_error(node, str(e)) from e

    def tensor(self, name: str) -> torch.Tensor:
        """The tensor of a parameter, constant or pre-computed node (as held: see layout.py)."""
        mod, leaf = self._owner_get(name)
        return mod._parameters[leaf] if leaf in mod._parameters else mod._buffers[leaf]

    def _owner_get(self, path: str) -> tuple[nn.Module, str]:
        mod: nn.Module = self
        parts = path.split(".")
        for p in parts[:-1]:
            mod = mod._modules[p]
        return mod, parts[-1]

    def summary(self) -> str:
        """The graph as text: one line per node in evaluation order (name, function and inputs,
        dimensions, per-sample or not, learnable values), the groups, the parameter count."""
        rows = []
        for n in self.order:
            node = self.graph.nodes[n]
            kind = lookup(node.op).kind
            count = numel(self.shapes[n]) if kind == "param" else 0
            what = f"{node.op}({', '.join(node.inputs)})"
            dims = "x".join(str(d) for d in self.shapes[n])
            dims = f"[{dims}]" + (" per sample" if self.sample[n] else "")
            extra = f"{count} learnable" if count and node.grad else (f"{count} fixed" if count else "")
            rows.append((n, what, dims, extra))
        w = [max((len(r[i]) for r in rows), default=0) for i in range(3)]
        lines = [f"{a.ljust(w[0])}  {b.ljust(w[1])}  {c.ljust(w[2])}  {d}".rstrip() for a, b, c, d in rows]
        for g, members in self.graph.groups.items():
            if members:
                lines.append(f"{g} nodes: {', '.join(members)}")
        total = sum(p.numel() for p in self.parameters())
        trained = sum(p.numel() for p in self.parameters() if p.requires_grad)
        lines.append(f"{len(self.order)} nodes, {total} parameters ({trained} learnable)")
        return "\n".join(lines) + "\n"

    # --- evaluation ------------------------------------------------------------------------
    def _plan(self, fed: frozenset, wanted: tuple) -> list:
        """The steps computing ``wanted`` from ``fed`` (made once per pair, then cached): tuples
        ``(code, name, fn, input names, extra)``; ``Plus(Times(W, x), b)`` whose product nobody
        else reads runs as one ``addmm``."""
        key = (fed, wanted, self.fuse_lstm)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        g = self.graph
        need, stack = set(), list(wanted)
        while stack:
            n = stack.pop()
            if n in need or n in fed:
                continue
            if n not in g.nodes:
                raise NDLError(f"{n!r} is not a node of the network")
            need.add(n)
            kind = lookup(g.nodes[n].op).kind
            if kind == "input":
                raise NDLError(f"input node {n!r} has no value (inputs given: {', '.join(sorted(fed)) or 'none'})")
            if kind != "precompute":        # a statistic is a value: its input is read only to compute it
                stack.extend(g.nodes[n].inputs)
        loop_of = {m: i for i, comp in enumerate(self.loops) for m in comp}
        # a loop runs where its last member stands in the order: after every input of every member
        last = {loop_of[m]: m for m in self.order if m in loop_of}
        fused = self._fusions(need, fed, set(wanted), loop_of)
        lstms = fused_loops(self, need, fed, set(wanted), fused) if self.fuse_lstm else {}
        skip = {f.a for f, *_ in lstms.values() if _[0] is not None}
        plan = Plan()
        for n in self.order:
            if n in skip:
                continue
            if n not in need and not (n in loop_of and need & set(self.loops[loop_of[n]])):
                continue
            if n in loop_of:
                i = loop_of[n]
                if last[i] == n:
                    plan.append((_LOOP, n, None, [m for m in self.order if loop_of.get(m) == i], lstms.get(i)))
                continue
            if n in fused.values():
                continue
            node = g.nodes[n]
            kind = lookup(node.op).kind
            if n in fused:
                times = g.nodes[fused[n]]
                fn = addmm if times.op == "Times" else self._fns[fused[n]].biased     # or a convolution
                plan.append((_COMPUTE, n, fn, [times.inputs[0], times.inputs[1], node.inputs[1]], None))
            elif kind == "compute":
                fn = self._fns[n]
                plan.append((_TRAIN if getattr(fn, "wants_training", False) else _COMPUTE, n, fn,
                             list(node.inputs), None))
            elif kind in ("param", "constant", "precompute"):
                plan.append((_TENSOR, n, None, [], self._owner_get(n)))
            elif kind == "delay":
                op = lookup(node.op)
                plan.append((_DELAY, n, self._fns[n], list(node.inputs), (op.step(node.attrs), op.direction)))
        plan.run = compile_plan(plan, fed, self._input_fns)
        self._plans[key] = plan
        return plan

    def _fusions(self, need: set, fed: frozenset, wanted: set, loop_of: dict) -> dict[str, str]:
        """``{Plus node: Times or Convolution node}`` pairs run as one linear (conv2d with bias)."""
        g = self.graph
        users: dict[str, int] = {}
        for node in g.nodes.values():
            for i in node.inputs:
                users[i] = users.get(i, 0) + 1
        out = {}
        for n in need:
            node = g.nodes[n]
            if node.op != "Plus" or n in loop_of or len(node.inputs) != 2:
                continue
            t, b = node.inputs
            tn = g.nodes.get(t)
            if (tn is None or tn.op not in ("Times", "Convolution") or t in fed or t in wanted or users.get(t) != 1
                    or t in loop_of or not self.sample[t] or self.sample[tn.inputs[0]] or not self.sample[tn.inputs[1]]
                    or self.sample[b]):
                continue
            if tn.op == "Convolution" or len(self.shapes[t]) != 1:
                # a convolution whose function has a biased form (not a transposed, local or rank-4 one)
                if tn.op == "Convolution" and getattr(self._fns.get(t), "biased", None) is not None \
                        and operand_view(self.shapes[b], self.shapes[t]) == (self.shapes[t][0], 1, 1):
                    out[n] = t
                continue
            bs = tuple(self.shapes[b])
            if bs not in ((self.shapes[t][0],), (self.shapes[t][0], 1)):
                continue
            out[n] = t
        return out

    def evaluate(self, feeds: dict[str, torch.Tensor], wanted: Iterable[str], *,
                 positions: torch.Tensor | None = None, lengths: torch.Tensor | None = None,
                 carry: SequenceCarry | None = None) -> dict[str, torch.Tensor]:
        """Values of the ``wanted`` nodes (and of every node computed on the way) from ``feeds``
        (input nodes, or any node whose value is given instead of computed). With ``carry``
        (truncated BPTT), ``PastValue`` reads before the start of a continued sequence from it,
        and records its input's last values for the next minibatch."""
        wanted = tuple(wanted)
        plan = self._plan(frozenset(feeds), wanted)
        if plan.run is not None:
            return plan.run(feeds, self.training)
        values: dict[str, torch.Tensor] = {}
        adapt = self._input_fns
        for n, v in feeds.items():
            f = adapt.get(n)
            values[n] = f(v) if f is not None else v
        training = self.training
        for code, n, fn, ins, extra in plan:
            if code == _COMPUTE:
                values[n] = fn(*[values[i] for i in ins])
            elif code == _TENSOR:
                mod, leaf = extra
                t = mod._parameters.get(leaf)
                values[n] = t if t is not None else mod._buffers[leaf]
            elif code == _TRAIN:
                values[n] = fn(*[values[i] for i in ins], training=training)
            elif code == _DELAY:
                x = values[ins[0]]
                p, ln = self._layout(x, positions, lengths)
                v = fn(x, p, ln)
                k, direction = extra
                if carry is not None and direction > 0:
                    idx = torch.nonzero(p < k).reshape(-1)
                    got = carry.carried(n, idx, p[idx])
                    if got is not None:
                        vals, ok = got
                        v = v.index_put((idx[ok],), vals[ok].to(v.dtype))
                    carry.record(n, x, p, k)
                values[n] = v
            else:
                p, ln = self._layout(self._any_sample(values), positions, lengths)
                if extra is None or not run_fused(extra, values, p, ln, training, carry is None):
                    self._run_loop(ins, values, p, ln, carry)
        return values

    @property
    def _input_fns(self) -> dict:
        fns = self.__dict__.get("_input_fn_cache")
        if fns is None:
            fns = {n: self._fns[n] for n, node in self.graph.nodes.items() if lookup(node.op).kind == "input"}
            self.__dict__["_input_fn_cache"] = fns
        return fns

    @staticmethod
    def _any_sample(values):
        for v in values.values():
            if v.dim() >= 1:
                return v
        raise NDLError("a recurrent loop needs per-sample input values")

    @staticmethod
    def _layout(x, positions, lengths):
        n = x.shape[0]
        if positions is None:
            return torch.zeros(n, dtype=torch.long, device=x.device), torch.ones(n, dtype=torch.long, device=x.device)
        return positions, lengths if lengths is not None else torch.full_like(positions, 1 << 40)

    def _loop_steps(self, members: list[str]) -> tuple[int, list]:
        """The static description of a loop's members (made once per loop)."""
        key = tuple(members)
        hit = self._loop_cache.get(key) if hasattr(self, "_loop_cache") else None
        if hit is not None:
            return hit
        g = self.graph
        inside = set(members)
        steps, sign = [], 1
        for m in members:
            node = g.nodes[m]
            op = lookup(node.op)
            if op.kind == "delay":
                sign = op.direction
                steps.append((m, True, (op.step(node.attrs), as_float(node.attrs["defaultHiddenActivity"],
                              "defaultHiddenActivity"), node.inputs[0], node.inputs[0] in inside,
                              numel(self.shapes[m]))))
            else:
                fn = self._fns[m]
                ins = [(i, i in inside, self.sample[i]) for i in node.inputs]
                steps.append((m, False, (fn, ins, getattr(fn, "wants_training", False))))
        self.__dict__.setdefault("_loop_cache", {})[key] = (sign, steps)
        return sign, steps

    def _run_loop(self, members: list[str], values: dict, positions, lengths,
                  carry: SequenceCarry | None = None) -> None:
        """Evaluate a loop closed through delay nodes one sequence step at a time."""
        sign, steps = self._loop_steps(members)
        key = positions if sign > 0 else lengths - 1 - positions
        count = int(key.max().item()) + 1 if key.numel() else 0
        order = torch.argsort(key, stable=True)
        sizes = torch.bincount(key, minlength=count).tolist() if count else []
        rows = list(torch.split(order, sizes)) if count else []
        hist: dict[str, list] = {m: [] for m in members}
        training = self.training
        for t in range(count):
            r = rows[t]
            cur: dict[str, torch.Tensor] = {}
            for m, is_delay, info in steps:
                if is_delay:
                    k, d, src, src_inside, width = info
                    if t < k:
                        v = torch.full((r.numel(), width), d, dtype=self._dtype, device=key.device)
                        got = carry.carried(m, r, torch.full_like(r, t)) if carry is not None and sign > 0 else None
                        if got is not None:
                            vals, ok = got
                            v = v.index_put((torch.nonzero(ok).reshape(-1),), vals[ok].to(v.dtype))
                    else:
                        pos = torch.searchsorted(rows[t - k], r - sign * k)
                        prev = hist[src][t - k] if src_inside else values[src][rows[t - k]]
                        v = prev.reshape(prev.shape[0], -1)[pos]
                else:
                    fn, ins, wants = info
                    args = [cur[i] if inner else (values[i][r] if per_sample else values[i])
                            for i, inner, per_sample in ins]
                    v = fn(*args, training=training) if wants else fn(*args)
                cur[m] = v
                hist[m].append(v)
        perm = torch.argsort(order) if count else None
        for m in members:
            values[m] = (torch.cat(hist[m])[perm] if count else
                         torch.zeros(0, *self.shapes[m], dtype=self._dtype, device=key.device))
        if carry is not None and sign > 0:
            for m, is_delay, info in steps:
                if is_delay:
                    carry.record(m, values[info[2]], positions, info[0])

    # --- pre-computed statistics -----------------------------------------------------------
    def pending_precompute(self) -> list[str]:
        """The pre-computed nodes (Mean, InvStdDev) whose values are not computed yet."""
        return [n for i, n in enumerate(self._pre) if not bool(self.precomputed_[i])]

    def precompute(self, batches: Callable[[], Iterable[tuple[dict, Any, Any]]]) -> int:
        """Compute the pending statistics over the training data: ``batches()`` yields
        ``(feeds, positions, lengths)`` for one sweep (called once per dependency level).
        Returns the number of samples of the last sweep."""
        count = 0
        with torch.no_grad():
            while True:
                pending = self.pending_precompute()
                if not pending:
                    return count
                ready = [n for n in pending if not (self._ancestors(n) & set(pending))]
                srcs = {n: self.graph.nodes[n].inputs[0] for n in ready}
                acc = {n: [0.0, 0.0] for n in ready}
                count = 0
                for feeds, pos, lens in batches():
                    vals = self.evaluate(feeds, sorted(set(srcs.values())), positions=pos, lengths=lens)
                    for n, s in srcs.items():
                        x = vals[s].to(torch.float64)
                        acc[n][0] = acc[n][0] + x.sum(0)
                        acc[n][1] = acc[n][1] + (x * x).sum(0)
                    count += vals[next(iter(srcs.values()))].shape[0]
                if count == 0:
                    raise NDLError("pre-computing " + ", ".join(ready) + ": the training data has no samples")
                for n in ready:
                    mean = acc[n][0] / count
                    if lookup(self.graph.nodes[n].op).name == "Mean":
                        value = mean
                    else:
                        value = 1.0 / torch.sqrt(torch.clamp(acc[n][1] / count - mean * mean, min=1e-10))
                    self.tensor(n).copy_(value.reshape(self.shapes[n]).to(self._dtype))
                    self.precomputed_[self._pre.index(n)] = True

    def _ancestors(self, name: str) -> set[str]:
        seen, stack = set(), list(self.graph.nodes[name].inputs)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(self.graph.nodes[n].inputs)
        return seen
