"""CNTK's Model Editing Language (MEL): scripts that change trained models.

A MEL script is read with the NDL parser (same lexing and statements). Each statement is

* ``m = LoadModel(path, format=cntk)`` / ``m = CreateModel()``: a model variable (the first model
  becomes the default model);
* a command call, e.g. ``SetInput(L4.*.T, 1, L3.RL)`` (see :data:`COMMANDS`);
* anything else is inline NDL, evaluated on the default model: names resolve to the NDL
  statements of the script first, then to the model's nodes (``L1.W``); new nodes join the model.

Node names in commands may hold wildcards (``L1.*``, ``*.W``) and may start with a model name
(``m1.L1.W``). A model is a :class:`~.ndl.graph.Graph` plus the values of its parameters; it is
rebuilt (and validated) as an :class:`~.ndl.NDLNetwork` when it is saved.
"""
from __future__ import annotations

import fnmatch
import os
from typing import Any

from .. import values
from ..config.parser import read_text
from ..errors import CntkioError, ConfigError
from ..integrations.torch_backend import torch
from .._log import get_logger
from .modelfile import load_model, save_model
from .ndl.evaluator import Evaluator, MacroLibrary, NodeVal, Scope
from .ndl.graph import GROUPS, TAG_GROUPS, Graph, NodeDef
from .ndl.network import NDLNetwork
from .ndl.parser import Assign, Call, ExprStmt, Loc, MacroDef, NDLError, Num, Ref, Str, parse_ndl
from .ndl.sources import load_macro_file, load_macros, read_ndl_file
from .ndl.variables import Variables, resolve_variables
from .nodes import lookup
from .simple import SimpleNetwork

__all__ = ["MelModel", "MelScript", "run_mel", "graph_of_simple", "COMMANDS"]

_log = get_logger("actions.mel")


class MelModel:
    """A model being edited: its graph, its tensors by node name, which pre-computed nodes hold
    their statistics, and its precision."""

    def __init__(self, name: str, graph: Graph | None = None, tensors: dict | None = None,
                 computed: set | None = None, dtype: torch.dtype = torch.float32) -> None:
        self.name, self.graph = name, graph if graph is not None else Graph()
        self.tensors: dict[str, torch.Tensor] = dict(tensors or {})
        self.computed: set[str] = set(computed or ())
        self.dtype = dtype
        self.scope: Scope | None = None

    @classmethod
    def from_network(cls, name: str, net) -> "MelModel":
        if isinstance(net, SimpleNetwork):
            graph, tensors = graph_of_simple(net)
            computed = {n for n, node in graph.nodes.items() if lookup(node.op).kind == "precompute"}
            return cls(name, graph, tensors, computed, next(net.parameters()).dtype)
        tensors, computed = {}, set()
        for n, node in net.graph.nodes.items():
            if lookup(node.op).kind in ("param", "constant", "precompute"):
                tensors[n] = net.tensor(n).detach().reshape(net.shapes[n]).clone()    # CNTK's dimensions
        computed = {n for i, n in enumerate(net._pre) if bool(net.precomputed_[i])}
        return cls(name, net.graph.copy(), tensors, computed, net._dtype)

    def network(self) -> NDLNetwork:
        """The edited model as a network (validated: dangling inputs, cycles, shapes)."""
        net = NDLNetwork(self.graph, self.dtype)
        with torch.no_grad():
            for n, t in self.tensors.items():
                if n in net.graph.nodes and lookup(net.graph.nodes[n].op).kind in ("param", "constant", "precompute"):
                    dst = net.tensor(n)
                    if tuple(net.shapes[n]) == tuple(t.shape):
                        dst.copy_(t.to(dst.dtype).reshape(dst.shape))
            for i, n in enumerate(net._pre):
                net.precomputed_[i] = n in self.computed
            for n, node in net.graph.nodes.items():
                if lookup(node.op).kind == "param":
                    net.tensor(n).requires_grad_(node.grad)
        return net


def graph_of_simple(net: SimpleNetwork) -> tuple[Graph, dict]:
    """A SimpleNetworkBuilder network as a graph with CNTK's node names (``features``, ``W0``,
    ``B0``, ``H1``, ..., ``HLast``, the criteria), so MEL edits it like an NDL network."""
    s = net.spec
    g, tensors = Graph(), {}
    g.add(NodeDef(s.feature_node, "Input", [], _attrs("Input", s.layer_sizes[0]), grad=False))
    g.add(NodeDef(s.label_node, "Input", [], _attrs("Input", s.layer_sizes[-1]), grad=False))
    g.tag("feature", s.feature_node)
    g.tag("label", s.label_node)
    x = s.feature_node
    if s.apply_mean_var_norm:
        g.add(NodeDef("MeanOfFeatures", "Mean", [x], grad=False))
        g.add(NodeDef("InvStdOfFeatures", "InvStdDev", [x], grad=False))
        g.add(NodeDef("MVNormalizedFeatures", "PerDimMeanVarNormalization", [x, "MeanOfFeatures", "InvStdOfFeatures"]))
        tensors["MeanOfFeatures"], tensors["InvStdOfFeatures"] = net.MeanOfFeatures.detach(), net.InvStdOfFeatures.detach()
        x = "MVNormalizedFeatures"
    for i in range(net.num_layers):
        w, b = getattr(net, f"W{i}"), getattr(net, f"B{i}")
        g.add(NodeDef(f"W{i}", "Parameter", [], _attrs("Parameter", w.shape[0], w.shape[1])))
        g.add(NodeDef(f"B{i}", "Parameter", [], _attrs("Parameter", b.shape[0], 1)))
        tensors[f"W{i}"], tensors[f"B{i}"] = w.detach(), b.detach().reshape(-1, 1)
        last = i == net.num_layers - 1
        z = "HLast" if last else f"W{i}*H{i}+B{i}"
        g.add(NodeDef(f"W{i}*H{i}", "Times", [f"W{i}", x]))
        g.add(NodeDef(z, "Plus", [f"W{i}*H{i}", f"B{i}"]))
        if not last:
            g.add(NodeDef(f"H{i + 1}", s.layer_types[i], [z]))
            x = f"H{i + 1}"
    if s.need_prior:
        g.add(NodeDef("Prior", "Mean", [s.label_node], grad=False))
        g.add(NodeDef("LogOfPrior", "Log", ["Prior"]))
        g.add(NodeDef("ScaledLogLikelihood", "Minus", ["HLast", "LogOfPrior"]))
        tensors["Prior"] = net.Prior.detach()
        g.tag("output", "ScaledLogLikelihood")
    else:
        g.tag("output", "HLast")
    g.add(NodeDef(s.training_criterion, s.training_criterion, [s.label_node, "HLast"]))
    g.add(NodeDef(net.eval_node_name, s.eval_criterion, [s.label_node, "HLast"]))
    g.tag("criterion", s.training_criterion)
    g.tag("eval", net.eval_node_name)
    return g, tensors


def _attrs(op: str, *pos) -> dict:
    return lookup(op).bind([int(p) for p in pos], {})[1]


#: MEL command -> method of MelScript (lower-cased names; CNTK's spellings and aliases)
COMMANDS = {
    "createmodel": "create_model", "loadmodel": "load_model", "loadmodelwithname": "load_model_with_name",
    "savemodel": "save_model", "savemodelwithname": "save_model_with_name", "savedefaultmodel": "save_default_model",
    "setdefaultmodel": "set_default_model", "unloadmodel": "unload_model",
    "dump": "dump", "dumpmodel": "dump", "dumpnetwork": "dump", "dumpnode": "dump_node",
    "copy": "copy_node", "copynode": "copy_node", "copysubtree": "copy_subtree",
    "setinput": "set_input", "setnodeinput": "set_input", "setinputs": "set_inputs", "setnodeinputs": "set_inputs",
    "delete": "delete_node", "deletenode": "delete_node", "rename": "rename",
    "setproperty": "set_property", "setnodeproperty": "set_property",
    "setpropertyforsubtree": "set_property_subtree", "loadndlsnippet": "load_ndl_snippet",
}
_PROPS = {**{k: v for k, v in TAG_GROUPS.items() if not k.endswith("nodes")},
          "finalcriterion": "criterion", "evaluation": "eval"}


class MelScript:
    """Runs MEL statements (see the module docstring)."""

    def __init__(self, macros: MacroLibrary | None = None) -> None:
        self.models: dict[str, MelModel] = {}
        self.default: MelModel | None = None
        self.macros = macros if macros is not None else MacroLibrary()
        self.saved: list[str] = []

    # --- running ---------------------------------------------------------------------------
    def run(self, statements: list) -> None:
        for st in statements:
            if isinstance(st, MacroDef):
                self.macros.add(st)
            elif isinstance(st, ExprStmt):
                self.command(st.expr, None)
            elif isinstance(st, Assign) and isinstance(st.expr, Call) and st.expr.fn.lower() in COMMANDS:
                self.command(st.expr, st.name)
            else:
                self.inline([st])

    def command(self, c: Call, target: str | None) -> Any:
        method = getattr(self, COMMANDS.get(c.fn.lower(), ""), None)
        if method is None:
            raise NDLError(f"unknown MEL command {c.fn!r}", c.loc,
                           hint="commands: " + ", ".join(sorted({k for k in COMMANDS})))
        return method(c, target) if c.fn.lower() in ("createmodel", "loadmodel") else method(c)

    # --- arguments -------------------------------------------------------------------------
    def _text(self, e, what: str) -> str:
        if isinstance(e, (Str, Ref)):
            return e.value if isinstance(e, Str) else e.name
        if isinstance(e, Num):
            return str(int(e.value)) if e.value.is_integer() else str(e.value)
        raise NDLError(f"{what}: expected a name or a \"string\"", e.loc)

    def _args(self, c: Call, n: int, names: str) -> list:
        if len(c.args) < n:
            raise NDLError(f"{c.fn} takes {names}, found {len(c.args)} arguments", c.loc)
        return c.args

    def _kw(self, c: Call, key: str, default: Any = None) -> Any:
        for k, e in c.kwargs.items():
            if k.lower() == key.lower():
                return self._text(e, k)
        return default

    @staticmethod
    def _bool(text: str, what: str, loc: Loc) -> bool:
        try:
            return values.to_bool(text, what)
        except ConfigError as e:
            raise NDLError(e.reason, loc) from e

    def _model(self, e, loc: Loc) -> MelModel:
        name = self._text(e, "model")
        m = self.models.get(name.lower())
        if m is None:
            raise NDLError(f"no model named {name!r} (models: {', '.join(self.models) or 'none'})", loc)
        return m

    def _need_default(self, loc: Loc) -> MelModel:
        if self.default is None:
            raise NDLError("no default model: load one first (m = LoadModel(\"path\"))", loc)
        return self.default

    def nodes(self, e, loc: Loc, *, single: bool = False, model: "MelModel | None" = None
              ) -> tuple[MelModel, list[str]]:
        """The model and node names a (wildcard, maybe model-prefixed) name argument denotes
        (unprefixed names are nodes of ``model``, by default the default model)."""
        text = self._text(e, "node name")
        model = model or self.default
        first, _, rest = text.partition(".")
        if rest and first.lower() in self.models:
            model, text = self.models[first.lower()], rest
        if model is None:
            raise NDLError("no default model: load one first (m = LoadModel(\"path\"))", loc)
        names = list(model.graph.nodes)
        if any(ch in text for ch in "*?["):
            hits = [n for n in names if fnmatch.fnmatchcase(n.lower(), text.lower())]
        else:
            hits = [n for n in names if n.lower() == text.lower()]
        if not hits:
            near = fnmatch.filter(names, f"*{text.split('.')[-1]}*")[:5]
            raise NDLError(f"no node of model {model.name} matches {text!r}", loc,
                           hint=("similar: " + ", ".join(near)) if near else None)
        if single and len(hits) > 1:
            raise NDLError(f"{text!r} matches {len(hits)} nodes ({', '.join(hits[:5])}...); one is expected", loc)
        return model, hits

    # --- models ----------------------------------------------------------------------------
    def _add_model(self, m: MelModel) -> MelModel:
        self.models[m.name.lower()] = m
        if self.default is None:
            self.default = m
        return m

    def create_model(self, c: Call, target: str | None) -> MelModel:
        return self._add_model(MelModel(target or f"model{len(self.models) + 1}"))

    def load_model(self, c: Call, target: str | None) -> MelModel:
        path = self._text(self._args(c, 1, "(path, format=cntk)")[0], "path")
        fmt = str(self._kw(c, "format", "cntk")).lower()
        if fmt != "cntk":
            raise NDLError(f"LoadModel: format={fmt} is not supported (cntk: cntkio's model files)", c.loc)
        if not os.path.exists(path):
            raise NDLError(f"LoadModel: model file {path} does not exist", c.loc)
        try:
            net = load_model(path).network
        except CntkioError as e:        # a corrupt or foreign file: located at the MEL line that named it
            raise NDLError(f"LoadModel: {e}", c.loc) from e
        return self._add_model(MelModel.from_network(target or os.path.basename(path), net))

    def load_model_with_name(self, c: Call) -> MelModel:
        name, path = (self._text(a, "argument") for a in self._args(c, 2, "(name, path)")[:2])
        return self.load_model(Call(c.fn, [Str(path, c.loc)], c.kwargs, c.loc), name)

    def _save(self, m: MelModel, path: str, loc: Loc) -> None:
        self._settle(m)
        net = m.network()
        save_model(path, net, epoch=0, info={"command": "edit"})
        self.saved.append(path)
        _log.info("MEL: saved model %s to %s", m.name, path)

    def save_model(self, c: Call) -> None:
        a = self._args(c, 1, "(model, path) or (path)")
        if len(a) == 1:
            return self._save(self._need_default(c.loc), self._text(a[0], "path"), c.loc)
        self._save(self._model(a[0], c.loc), self._text(a[1], "path"), c.loc)

    def save_model_with_name(self, c: Call) -> None:
        a = self._args(c, 2, "(model, path)")
        self._save(self._model(a[0], c.loc), self._text(a[1], "path"), c.loc)

    def save_default_model(self, c: Call) -> None:
        self._save(self._need_default(c.loc), self._text(self._args(c, 1, "(path)")[0], "path"), c.loc)

    def set_default_model(self, c: Call) -> None:
        self.default = self._model(self._args(c, 1, "(model)")[0], c.loc)

    def unload_model(self, c: Call) -> None:
        m = self._model(self._args(c, 1, "(model)")[0], c.loc)
        del self.models[m.name.lower()]
        if self.default is m:
            self.default = next(iter(self.models.values()), None)

    # --- dumps -----------------------------------------------------------------------------
    def _describe(self, m: MelModel, names: list[str], data: bool) -> str:
        lines = []
        for n in names:
            node = m.graph.nodes[n]
            tags = [g for g in GROUPS if n in m.graph.groups[g]]
            head = f"{n}={node.op}({', '.join(node.inputs)})"
            defaults = lookup(node.op).optional
            shown = {k: v for k, v in node.attrs.items() if k not in defaults or defaults[k] != v}
            if shown:
                head += " " + " ".join(f"{k}={v}" for k, v in shown.items())
            if tags:
                head += " tags=" + ",".join(tags)
            lines.append(head)
            if data and n in m.tensors:
                t = m.tensors[n].detach().cpu().double().reshape(m.tensors[n].shape[0], -1)
                lines.extend(" ".join(f"{v:.9g}" for v in row) for row in t.tolist())
        return "\n".join(lines) + "\n"

    def _write(self, path: str, text: str) -> None:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def dump(self, c: Call) -> None:
        a = self._args(c, 2, "(model, file, includeData=false)")
        m = self._model(a[0], c.loc)
        data = self._bool(self._kw(c, "includeData", "false"), "includeData", c.loc)
        self._write(self._text(a[1], "file"), self._describe(m, list(m.graph.nodes), data))

    def dump_node(self, c: Call) -> None:
        a = self._args(c, 2, "(node, file, includeData=false)")
        m, names = self.nodes(a[0], c.loc)
        data = self._bool(self._kw(c, "includeData", "false"), "includeData", c.loc)
        self._write(self._text(a[1], "file"), self._describe(m, names, data))

    # --- editing ---------------------------------------------------------------------------
    def _mapping(self, src: str, dst: str, names: list[str], loc: Loc) -> dict[str, str]:
        if "*" in src:
            if src.count("*") != 1 or dst.count("*") != 1:
                raise NDLError(f"{src} -> {dst}: both names need one '*'", loc)
            sp, ss = src.split("*")
            dp, ds = dst.split("*")
            return {n: dp + n[len(sp):len(n) - len(ss) if ss else None] + ds for n in names}
        if len(names) != 1:
            raise NDLError(f"{src} matches several nodes; the new name needs a '*'", loc)
        return {names[0]: dst}

    def _clone(self, m: MelModel, mapping: dict[str, str], loc: Loc, values_only: bool = False) -> None:
        for old, new in mapping.items():
            if values_only:
                if new not in m.graph.nodes:
                    raise NDLError(f"copy=value: node {new} does not exist", loc)
            else:
                if new in m.graph.nodes:
                    raise NDLError(f"cannot copy {old} to {new}: a node {new} exists", loc)
                node = m.graph.nodes[old]
                m.graph.add(NodeDef(new, node.op, [mapping.get(i, i) for i in node.inputs], dict(node.attrs),
                                    node.grad, node.lr_mult, node.where))
            if old in m.tensors:
                m.tensors[new] = m.tensors[old].clone()

    def copy_node(self, c: Call) -> None:
        a = self._args(c, 2, "(fromNode, toNode, copy=all|value)")
        m, names = self.nodes(a[0], c.loc)
        mapping = self._mapping(self._text(a[0], "from").split(".", 1)[-1] if self._is_model_prefixed(a[0]) else
                                self._text(a[0], "from"), self._text(a[1], "to"), names, c.loc)
        mode = str(self._kw(c, "copy", "all")).lower()
        if mode not in ("all", "value"):
            raise NDLError(f"copy={mode}: expected all or value", c.loc)
        self._clone(m, mapping, c.loc, values_only=mode == "value")

    def _is_model_prefixed(self, e) -> bool:
        first = self._text(e, "name").partition(".")[0]
        return first.lower() in self.models and "." in self._text(e, "name")

    def copy_subtree(self, c: Call) -> None:
        a = self._args(c, 2, "(fromNode, toNamePrefix, copy=all|value)")
        m, (root,) = self.nodes(a[0], c.loc, single=True)
        prefix = self._text(a[1], "prefix")
        seen, stack = [], [root]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.append(n)
                stack.extend(m.graph.nodes[n].inputs)
        mapping = {n: prefix + n for n in seen}
        mode = str(self._kw(c, "copy", "all")).lower()
        self._clone(m, mapping, c.loc, values_only=mode == "value")

    def set_input(self, c: Call) -> None:
        a = self._args(c, 3, "(node, inputIndex, inputNode)")
        m, names = self.nodes(a[0], c.loc)
        if not isinstance(a[1], Num) or not a[1].value.is_integer():
            raise NDLError("SetInput: the input index must be an integer (0 is the first input)", a[1].loc)
        k = int(a[1].value)
        src = self._input_node(m, a[2], c.loc)
        for n in names:
            node = m.graph.nodes[n]
            arity = _arity(node)
            if not 0 <= k < max(len(node.inputs), arity):
                raise NDLError(f"SetInput: {n} ({node.op}) has inputs 0..{max(len(node.inputs), arity) - 1}, "
                               f"found index {k}", c.loc)
            while len(node.inputs) <= k:
                node.inputs.append(src)
            node.inputs[k] = src

    def set_inputs(self, c: Call) -> None:
        a = self._args(c, 2, "(node, input1, input2, ...)")
        m, names = self.nodes(a[0], c.loc)
        ins = [self._input_node(m, e, c.loc) for e in a[1:]]
        for n in names:
            m.graph.nodes[n].inputs = list(ins)

    def _input_node(self, m: MelModel, e, loc: Loc) -> str:
        self._settle(m)
        model, names = self.nodes(e, loc, single=True, model=m)
        if model is not m:
            raise NDLError("an input must be a node of the same model", loc)
        return names[0]

    def delete_node(self, c: Call) -> None:
        for e in self._args(c, 1, "(node, ...)"):
            m, names = self.nodes(e, c.loc)
            for n in names:
                del m.graph.nodes[n]
                m.tensors.pop(n, None)
                for g in m.graph.groups.values():
                    if n in g:
                        g.remove(n)

    def rename(self, c: Call) -> None:
        a = self._args(c, 2, "(oldName, newName)")
        m, names = self.nodes(a[0], c.loc)
        mapping = self._mapping(self._text(a[0], "old"), self._text(a[1], "new"), names, c.loc)
        for new in mapping.values():
            if new in m.graph.nodes and new not in mapping:
                raise NDLError(f"Rename: a node {new} exists", c.loc)
        nodes = {}
        for n, node in m.graph.nodes.items():
            node.name = mapping.get(n, n)
            node.inputs = [mapping.get(i, i) for i in node.inputs]
            nodes[node.name] = node
        m.graph.nodes = nodes
        m.graph.groups = {g: [mapping.get(n, n) for n in v] for g, v in m.graph.groups.items()}
        m.tensors = {mapping.get(n, n): t for n, t in m.tensors.items()}
        m.computed = {mapping.get(n, n) for n in m.computed}

    def _set_props(self, m: MelModel, names: list[str], c: Call, prop_e, value_e) -> None:
        prop = self._text(prop_e, "property").lower()
        on = self._bool(self._text(value_e, "value"), f"{c.fn} value", c.loc)
        for n in names:
            if prop in ("computegradient", "needgradient"):
                m.graph.nodes[n].grad = on and lookup(m.graph.nodes[n].op).kind == "param"
            elif prop in _PROPS:
                group = m.graph.groups[_PROPS[prop]]
                if on and n not in group:
                    group.append(n)
                elif not on and n in group:
                    group.remove(n)
            else:
                raise NDLError(f"{c.fn}: unknown property {prop!r}", c.loc,
                               hint="feature, label, criterion, evaluation, output, computeGradient")

    def set_property(self, c: Call) -> None:
        a = self._args(c, 3, "(node, property, value)")
        m, names = self.nodes(a[0], c.loc)
        self._set_props(m, names, c, a[1], a[2])

    def set_property_subtree(self, c: Call) -> None:
        a = self._args(c, 3, "(node, property, value)")
        m, roots = self.nodes(a[0], c.loc)
        seen, stack = set(), list(roots)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(m.graph.nodes[n].inputs)
        prop = self._text(a[1], "property").lower()
        names = [n for n in seen if prop not in ("computegradient", "needgradient")
                 or lookup(m.graph.nodes[n].op).kind == "param"]
        self._set_props(m, names, c, a[1], a[2])

    def load_ndl_snippet(self, c: Call) -> None:
        a = self._args(c, 1, "(file, section)")
        path = self._text(a[0], "file")
        f = read_ndl_file(path, what="NDL snippet file")
        if len(a) > 1:
            statements = f.section(self._text(a[1], "section"), c.loc)
        else:
            for n in f.load:
                load_macros(self.macros, f.section(n), f"{path} section {n}")
            statements = [st for n in f.run for st in f.section(n)] if f.run else f.loose
        for m in f.macros:
            self.macros.add(m)
        self.inline(statements)

    # --- inline NDL ------------------------------------------------------------------------
    def inline(self, statements: list) -> None:
        m = self._need_default(statements[0].loc if statements else None)
        if m.scope is None:
            ev = Evaluator(m.graph, self.macros)

            def fallback(name: str, m=m):
                low = name.lower()
                hit = next((n for n in m.graph.nodes if n.lower() == low), None)
                return NodeVal(hit) if hit else None
            m.scope = Scope(ev, "", [], fallback=fallback)
        scope = m.scope
        scope.add(statements)
        for st in statements:                  # evaluated now: the nodes join the model
            if isinstance(st, Assign):
                scope.get(st.name.lower(), st.loc)

    def _settle(self, m: MelModel) -> None:
        """Connect the delay nodes of the inline NDL so far (CNTK's second pass)."""
        if m.scope is not None:
            m.scope.ev.connect()


def _arity(node: NodeDef) -> int:
    op = lookup(node.op)
    return len(op.node_args) if op is not None and not op.variadic else len(node.inputs)


def run_mel(text_or_path: str, *, macros: list[str] | None = None, file: str | None = None,
            variables: Variables | None = None) -> MelScript:
    """Run a MEL script (text, or the path of a file); ``macros`` are NDL macro files;
    ``variables`` replace ``$name$`` in the script (CNTK's edit action, Source/ActionsLib/TrainActions.cpp:265)
    and in the macro files (which CNTK's edit read as written, TrainActions.cpp:262: a difference
    that only makes more files work)."""
    if file is None and "\n" not in text_or_path and os.path.isfile(text_or_path):
        file = text_or_path
        text_or_path = read_text(file)
    if variables is not None:
        text_or_path = resolve_variables(text_or_path, variables, file or "<mel>")
    script = MelScript()
    for p in macros or []:
        load_macro_file(script.macros, p, variables=variables)
    script.run(parse_ndl(text_or_path, file=file or "<mel>"))
    for m in script.models.values():
        script._settle(m)
    return script

