"""The state ``PastValue`` carries across truncated-BPTT minibatches (used by the graph's loops)."""
from __future__ import annotations

from ...integrations.torch_backend import torch

__all__ = ["SequenceCarry"]


class SequenceCarry:
    """The state ``PastValue`` carries from one minibatch to the next (truncated BPTT).

    With truncated BPTT the reader cuts sequences into pieces of ``truncationLength`` samples, in
    parallel rows (slots) that keep their order from one minibatch to the next; a row whose first
    cell is marked 1 (not 2) continues the sequence that ended the same row of the previous
    minibatch. As in CNTK, a ``PastValue`` reading before the start of such a piece reads the
    values its input had at the end of the previous minibatch (detached: the gradient stops at
    the minibatch boundary), not ``defaultHiddenActivity``.

    Per delay node it keeps, for every row, the input's last ``timeStep`` values of the row's last
    sequence (and whether each exists). :meth:`next_minibatch` gives the layout of the next
    minibatch (the row of each sample, whether it continues a sequence) and makes what the
    previous minibatch recorded readable; every evaluation of that minibatch reads the same state.
    """

    def __init__(self) -> None:
        self._prev: dict[str, tuple] = {}
        self._cur: dict[str, tuple] = {}
        self.rows = self.cont = None
        self.num_rows = -1

    def next_minibatch(self, rows: torch.Tensor, cont: torch.Tensor, num_rows: int) -> None:
        """``rows[i]``: the row of sample ``i``; ``cont[i]``: it belongs to a sequence continued from
        the previous minibatch; ``num_rows``: the minibatch's row count (state is kept only
        between minibatches with the same rows)."""
        self._prev = self._cur if int(num_rows) == self.num_rows else {}
        self._cur = {}
        self.rows, self.cont, self.num_rows = rows, cont.to(torch.bool), int(num_rows)

    def reset(self) -> None:
        self._prev, self._cur, self.num_rows = {}, {}, -1

    def apply(self, fn) -> None:
        """``fn`` (``nn.Module._apply``'s: a move or cast) on the kept tensors."""
        for d in (self._prev, self._cur):
            for node, (vals, valid) in d.items():
                d[node] = (fn(vals), fn(valid))
        if self.rows is not None:
            self.rows, self.cont = fn(self.rows), fn(self.cont)

    def carried(self, node: str, idx: torch.Tensor, pos: torch.Tensor):
        """For samples ``idx`` at positions ``pos`` (< timeStep) of their sequence: the carried
        values ``[len(idx), width]`` and which of them exist, or None."""
        c = self._prev.get(node)
        if c is None or idx.numel() == 0:
            return None
        vals, valid = c
        r = self.rows[idx]
        return vals[r, pos], self.cont[idx] & valid[r, pos]

    def record(self, node: str, x: torch.Tensor, positions: torch.Tensor, k: int) -> None:
        """Keep the last ``k`` values of ``x`` (a delay node's input) of each row's last sequence."""
        n = x.shape[0]
        S = self.num_rows
        if n == 0 or S <= 0:
            return
        x = x.detach().reshape(n, -1)
        dev = x.device
        counts = torch.bincount(self.rows, minlength=S)
        has = counts > 0
        ends = (torch.cumsum(counts, 0) - 1).clamp(min=0)
        back = torch.arange(k - 1, -1, -1, device=dev)                 # slot j holds position end-(k-1-j)
        q = positions[ends][:, None] - back[None, :]                   # [S, k] positions in the sequence
        valid = (q >= 0) & has[:, None]
        vals = x[(ends[:, None] - back[None, :]).clamp(min=0)]         # [S, k, width]
        prev = self._prev.get(node)
        if prev is not None and prev[0].shape == vals.shape:
            pv, pvalid = prev
            j = (k + q).clamp(min=0, max=k - 1)
            ar = torch.arange(S, device=dev)[:, None]
            ok = (~valid) & has[:, None] & self.cont[ends][:, None] & (k + q >= 0) & pvalid[ar, j]
            vals = torch.where(ok[..., None], pv[ar, j], vals)
            valid = valid | ok
        self._cur[node] = (vals, valid)
