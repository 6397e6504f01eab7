"""A loop that is CNTK's standard LSTM, run as one fused ``torch.lstm`` over packed sequences.

:class:`~.graph.GraphNetwork` evaluates a loop closed through delay nodes one sequence step at a
time. When the loop's nodes are exactly the LSTM that BrainScript's ``RecurrentLSTMLayer`` (and
``BS.RNNs.RecurrentLSTMP``) builds, without peepholes or stabilisers::

    dh = PastValue(h)   dc = PastValue(c)          (both timeStep 1; or both FutureValue)
    z  = Plus(a, Times(H, dh))                      a = W·x + b, computed outside the loop
    it = Sigmoid(RowSlice(0·C, C, z))   g = Tanh(RowSlice(1·C, C, z))
    ft = Sigmoid(RowSlice(2·C, C, z))   ot = Sigmoid(RowSlice(3·C, C, z))
    c  = Plus(ElementTimes(ft, dc), ElementTimes(it, g))
    h  = ElementTimes(ot, Tanh(c))      (or Times(P, that): a projection to fewer dimensions)

the network computes it with ``torch.lstm`` (the ATen kernel of ``nn.LSTM``; cuDNN on a GPU) on
the minibatch's sequences packed by decreasing length, the gate rows reordered to torch's
(input, forget, cell, output), the state before each sequence the delays' defaultHiddenActivity. The values are the same as the step loop's (to rounding); only the
loop's output ``h`` is produced, so the fused path is taken only when nothing else reads a node of
the loop, and not with truncated BPTT's carried state (the step loop handles both).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

from ...integrations.torch_backend import torch
from ..nodes import lookup
from ..nodes.base import as_float, as_int

__all__ = ["FusedLSTM", "fused_loops", "match_lstm", "run_fused", "run_lstm"]

# cuDNN copies the weights (permuted per call from the graph's parameters) into its own buffer
# and warns that they are "not part of single contiguous chunk of memory": expected here, and
# only for the calls made from this module
warnings.filterwarnings("ignore", message="RNN module weights are not part of single contiguous chunk",
                        module=__name__)


@dataclass(frozen=True)
class FusedLSTM:
    """The names of a matched LSTM loop's parts."""

    a: str                  # the input projection W·x + b (outside the loop)
    H: str                  # the recurrent weights (4C x out)
    P: str | None           # the projection (out x C), or None
    h: str                  # the loop's output
    cell: int
    out: int
    backwards: bool
    h0: float = 0.0         # the state before each sequence (the delays' defaultHiddenActivity)
    c0: float = 0.0


def match_lstm(graph, members: list[str], shapes: dict, sample: dict) -> FusedLSTM | None:
    """The LSTM a loop computes, or None if its nodes are anything else."""
    nodes = graph.nodes
    inside = set(members)

    def op(n):
        return lookup(nodes[n].op).name if n in nodes else None

    delays = [m for m in members if lookup(nodes[m].op).kind == "delay"]
    if len(delays) != 2 or op(delays[0]) != op(delays[1]):
        return None
    start = {}
    for d in delays:
        a = nodes[d].attrs
        try:
            step = as_int(a.get("delayTime") if a.get("delayTime", 1) != 1 else a.get("timeStep", 1), "timeStep")
            start[d] = as_float(a.get("defaultHiddenActivity", 0.1), "default")
            if step != 1:
                return None
        except Exception:
            return None
    users: dict[str, list[str]] = {m: [] for m in members}
    for m in members:
        for i in nodes[m].inputs:
            if i in users:
                users[i].append(m)
    zs = [m for m in members if op(m) == "Plus" and len(nodes[m].inputs) == 2 and nodes[m].inputs[0] not in inside
          and nodes[m].inputs[1] in inside]
    if len(zs) != 1:
        return None
    z = zs[0]
    a, t = nodes[z].inputs
    if op(t) != "Times" or len(nodes[t].inputs) != 2:
        return None
    H, dh = nodes[t].inputs
    if H in inside or dh not in delays or lookup(nodes[H].op).kind != "param" or len(shapes[H]) != 2:
        return None
    if not sample[a] or len(shapes[a]) != 1 or shapes[a][0] % 4:
        return None
    cell = shapes[a][0] // 4
    parts = {}
    for s in users[z]:
        at = nodes[s].attrs
        if op(s) != "RowSlice":
            return None
        k, r = as_int(at["startIndex"], "startIndex"), as_int(at["numRows"], "numRows")
        if r != cell or k % cell or k // cell in parts or len(users[s]) != 1:
            return None
        parts[k // cell] = users[s][0]
    if sorted(parts) != [0, 1, 2, 3] or [op(parts[k]) for k in range(4)] != ["Sigmoid", "Tanh", "Sigmoid", "Sigmoid"]:
        return None
    it, g, ft, ot = (parts[k] for k in range(4))
    dc = delays[1] if dh == delays[0] else delays[0]
    c = nodes[dc].inputs[0]
    if op(c) != "Plus" or len(nodes[c].inputs) != 2:
        return None

    def prod(n, x, y):
        ins = nodes[n].inputs
        return op(n) == "ElementTimes" and len(ins) == 2 and {ins[0], ins[1]} == {x, y} and x != y
    p, q = nodes[c].inputs
    if not ((prod(p, ft, dc) and prod(q, it, g)) or (prod(q, ft, dc) and prod(p, it, g))):
        return None
    hs = [m for m in users[c] if op(m) == "Tanh"]
    if len(hs) != 1:
        return None
    tc = hs[0]
    hh = [m for m in users[tc] if prod(m, ot, tc)]
    if len(hh) != 1:
        return None
    h, P = hh[0], None
    if nodes[dh].inputs[0] != h:
        ph = nodes[dh].inputs[0]
        if op(ph) != "Times" or nodes[ph].inputs[1] != h or nodes[ph].inputs[0] in inside:
            return None
        P, h = nodes[ph].inputs[0], ph
        if lookup(nodes[P].op).kind != "param" or tuple(shapes[P]) != (shapes[H][1], cell) or shapes[H][1] >= cell:
            return None
    out = shapes[H][1]
    if tuple(shapes[H]) != (4 * cell, out):
        return None
    matched = {z, t, it, g, ft, ot, c, p, q, tc, dh, dc, *users[z], hh[0], h}
    if matched != inside:
        return None
    return FusedLSTM(a, H, P, h, cell, out, op(dh) == "FutureValue", start[dh], start[dc])


_ORDER_CACHE: dict = {}


def _gate_rows(cell: int, device) -> torch.Tensor:
    """CNTK's gate rows (input, cell, forget, output) in torch's order (input, forget, cell, output)."""
    key = (cell, str(device))
    idx = _ORDER_CACHE.get(key)
    if idx is None:
        r = torch.arange(cell, device=device)
        idx = _ORDER_CACHE[key] = torch.cat([r, r + 2 * cell, r + cell, r + 3 * cell])
    return idx


def run_lstm(f: FusedLSTM, x: torch.Tensor, W: torch.Tensor | None, b: torch.Tensor | None, H: torch.Tensor,
             P: torch.Tensor | None, positions: torch.Tensor, lengths: torch.Tensor, training: bool) -> torch.Tensor:
    """The loop's output for every sample (in the minibatch's order). With ``W`` and ``b`` the input
    projection is computed here from ``x`` (one matrix product inside ``torch.lstm``); without them
    ``x`` is the projection ``a`` itself."""
    n = positions.numel()
    dev = x.device
    if n == 0:
        return x.new_zeros(0, f.out)
    x = x if x.dim() == 2 else x.reshape(n, -1)
    steps = (lengths - 1 - positions) if f.backwards else positions
    ar = torch.arange(n, device=dev)
    start = ar - positions                                      # each sample's sequence's first sample
    count = torch.bincount(start, minlength=n)[start]           # its sequence's samples in the minibatch
    # packed order: by step, then by decreasing sequence length, then by sequence
    order = torch.argsort(steps * (n * (n + 1)) + (n - count) * n + start)
    batch_sizes = torch.bincount(steps).cpu()                   # the one wait for the device
    rows = _gate_rows(f.cell, dev)
    data = x[order]
    if W is None:
        w_ih = torch.eye(4 * f.cell, dtype=x.dtype, device=dev)[rows]
        b_ih = x.new_zeros(4 * f.cell)
    else:
        w_ih = (W if W.dim() == 2 else W.reshape(4 * f.cell, -1))[rows]
        b_ih = (b if b.dim() == 1 else b.reshape(-1))[rows]          # a vector in BrainScript's layout.py
    params = [w_ih, H[rows], b_ih, b_ih.new_zeros(4 * f.cell)]
    if P is not None:
        params.append(P)
    seqs = int(batch_sizes[0])
    h0 = x.new_full((1, seqs, f.out), f.h0)
    c0 = x.new_full((1, seqs, f.cell), f.c0)
    out = torch.lstm(data, batch_sizes, (h0, c0), params, True, 1, 0.0, training, False)[0]
    back = torch.empty_like(order)
    back[order] = ar
    return out[back]


def fused_loops(net, need: set, fed: frozenset, wanted: set, fused: dict) -> dict:
    """``{loop index: (FusedLSTM, x, W, b)}`` for the loops of ``net`` (a GraphNetwork) that an
    evaluation plan runs as ``torch.lstm``: needed, nothing but the LSTM's output read outside
    the loop or asked for. ``x, W, b`` name the input projection's parts when it is an addmm
    (``fused``: the plan's ``{Plus: Times}`` pairs) read by the loop only: the plan then leaves it
    out and ``torch.lstm`` computes it; else they are None."""
    g = net.graph
    matches = net.__dict__.setdefault("_lstm_match", {})
    out = {}
    for i, comp in enumerate(net.loops):
        members = set(comp)
        if not need & members or members & set(fed):
            continue
        f = matches.get(i, False)
        if f is False:
            f = matches[i] = match_lstm(g, comp, net.shapes, net.sample)
        if f is None or (members - {f.h}) & wanted:
            continue
        if any(k in members - {f.h} for n in need - members for k in g.nodes[n].inputs):
            continue
        parts = (None, None, None)
        if f.a in fused and g.nodes[fused[f.a]].op == "Times" and f.a not in wanted and f.a not in fed and \
                sum(f.a in node.inputs for node in g.nodes.values()) == 1:
            times = g.nodes[fused[f.a]]
            parts = (times.inputs[1], times.inputs[0], g.nodes[f.a].inputs[1])
        out[i] = (f, *parts)
    return out


def run_fused(extra: tuple, values: dict, positions, lengths, training: bool, fuse: bool) -> bool:
    """Run a loop of :func:`fused_loops` into ``values``: True when done, False when the step loop
    must run it instead (``fuse`` false: carried state), its input projection then computed."""
    f, x, w, b = extra
    if not fuse:
        if x is not None:
            xv = values[x]
            values[f.a] = torch.addmm(values[b].reshape(-1), xv.reshape(xv.shape[0], -1), values[w].T)
        return False
    P = values[f.P] if f.P is not None else None
    if x is None:
        values[f.h] = run_lstm(f, values[f.a], None, None, values[f.H], P, positions, lengths, training)
    else:
        values[f.h] = run_lstm(f, values[x], values[w], values[b], values[f.H], P, positions, lengths, training)
    return True
