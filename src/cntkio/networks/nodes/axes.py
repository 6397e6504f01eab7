"""Operations on a chosen static axis: ``AxisSlice``, ``AxisSplice``, ``AxisReduce``,
``ReshapeAxes`` (BrainScript's ``Slice``/``Splice``/``Reduce*`` with ``axis=``, ``Reshape`` with
``beginAxis``/``endAxis``).

Axes are numbered as CNTK does: 1 is the first (fastest-varying) axis of a sample's shape
``(d1:d2:...)``, e.g. the width of a ``(w:h:c)`` image. A sample is held with its axes in the
reverse order (``[c, h, w]``; row-major storage of the reversed shape is CNTK's column-major
storage), so axis ``k`` of a rank-``r`` shape is held at position ``r - k``. An axis beyond the
rank adds dimensions of 1 (``Splice (a : b, axis=2)`` of two vectors stacks them as columns).
"""
from __future__ import annotations

from ...integrations.torch_backend import torch
from .base import NodeError, Op, as_int, numel, register


def _axis(attrs, name) -> int:
    k = as_int(attrs["axis"], "axis")
    if k < 1:
        raise NodeError(f"{name}: axis must be >= 1 (1 is a sample's first axis), found {k}")
    return k


def _padded(shape, k) -> tuple:
    """``shape`` (held order) with leading 1s up to rank ``k``."""
    shape = tuple(shape)
    return (1,) * (k - len(shape)) + shape if k > len(shape) else shape


def _lead(sample: bool) -> int:
    return 1 if sample else 0


@register
class AxisSlice(Op):
    """``AxisSlice(x, axis, beginIndex, endIndex)``: indices ``[begin, end)`` of axis ``axis``;
    a negative index counts from the end and ``endIndex=0`` is the end (CNTK's)."""
    name = "AxisSlice"
    positional = ("input", "axis", "beginIndex", "endIndex")
    node_args = ("input",)

    def _geom(self, attrs, shape):
        k = _axis(attrs, self.name)
        s = _padded(shape, k)
        pos, d = len(s) - k, s[len(s) - k]
        b, e = as_int(attrs["beginIndex"], "beginIndex"), as_int(attrs["endIndex"], "endIndex")
        b, e = (b + d if b < 0 else b), (e + d if e <= 0 else e)
        if not 0 <= b < e <= d:
            raise NodeError(f"AxisSlice: [{attrs['beginIndex']}, {attrs['endIndex']}) is empty or outside axis {k} "
                            f"of dimension {d}")
        return s, pos, b, e

    def infer(self, attrs, shapes, sample):
        s, pos, b, e = self._geom(attrs, shapes[0])
        return s[:pos] + (e - b,) + s[pos + 1:], sample[0]

    def compile(self, attrs, shapes, sample):
        s, pos, b, e = self._geom(attrs, shapes[0])
        lead = _lead(sample[0])
        return lambda x: x.reshape(*x.shape[:lead], *s).narrow(lead + pos, b, e - b)


@register
class AxisSplice(Op):
    """``AxisSplice(a, b, ..., axis=k)``: the inputs joined along axis ``k``; their other axes match."""
    name = "AxisSplice"
    variadic = True
    optional = {"axis": 1}

    def _geom(self, attrs, shapes):
        k = _axis(attrs, self.name)
        rank = max(k, *(len(s) for s in shapes))
        padded = [_padded(s, rank) for s in shapes]
        pos = rank - k
        rest = {p[:pos] + p[pos + 1:] for p in padded}
        if len(rest) != 1:
            raise NodeError(f"AxisSplice: the inputs' dimensions {[list(s) for s in shapes]} differ on axes other "
                            f"than {k}")
        return padded, pos

    def infer(self, attrs, shapes, sample):
        padded, pos = self._geom(attrs, shapes)
        if len(set(sample)) != 1:
            raise NodeError("AxisSplice: the inputs must all have a value per sample, or none")
        p = padded[0]
        return p[:pos] + (sum(q[pos] for q in padded),) + p[pos + 1:], sample[0]

    def compile(self, attrs, shapes, sample):
        padded, pos = self._geom(attrs, shapes)
        lead = _lead(sample[0])

        def fn(*xs):
            return torch.cat([x.reshape(*x.shape[:lead], *p) for x, p in zip(xs, padded)], dim=lead + pos)
        return fn


_REDUCE = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin, "logsum": torch.logsumexp}


@register
class AxisReduce(Op):
    """``AxisReduce(x, axis, reduction=sum)``: sum, mean, max, min or logsum (log of the sum of
    exponentials) over axis ``axis``, which stays with dimension 1."""
    name = "AxisReduce"
    positional = ("input", "axis")
    node_args = ("input",)
    optional = {"reduction": "sum"}

    def _geom(self, attrs, shape):
        k = _axis(attrs, self.name)
        how = str(attrs["reduction"]).lower()
        if how not in _REDUCE:
            raise NodeError(f"AxisReduce: reduction must be one of {', '.join(_REDUCE)}, found {attrs['reduction']!r}")
        s = _padded(shape, k)
        return s, len(s) - k, _REDUCE[how]

    def infer(self, attrs, shapes, sample):
        s, pos, _ = self._geom(attrs, shapes[0])
        return s[:pos] + (1,) + s[pos + 1:], sample[0]

    def compile(self, attrs, shapes, sample):
        s, pos, f = self._geom(attrs, shapes[0])
        lead = _lead(sample[0])
        return lambda x: f(x.reshape(*x.shape[:lead], *s), dim=lead + pos, keepdim=True)


@register
class ReshapeAxes(Op):
    """``ReshapeAxes(x, shape, beginAxis=0, endAxis=0)``: axes ``[beginAxis, endAxis)`` of the
    sample's shape (CNTK order, 1-based; 0: from the first, to the last) replaced by ``shape`` (a
    list in CNTK order; one 0 is inferred). The values keep their order."""
    name = "ReshapeAxes"
    positional = ("input", "shape")
    node_args = ("input",)
    optional = {"beginAxis": 0, "endAxis": 0}

    def infer(self, attrs, shapes, sample):
        cntk = tuple(reversed(tuple(shapes[0])))
        r = len(cntk)
        b, e = as_int(attrs["beginAxis"], "beginAxis"), as_int(attrs["endAxis"], "endAxis")
        b, e = (b or 1), (e or r + 1)
        if not 1 <= b <= e <= r + 1:
            raise NodeError(f"ReshapeAxes: axes [{b}, {e}) are outside a shape of rank {r} ({list(cntk)})")
        new = [as_int(d, "shape") for d in (attrs["shape"] if isinstance(attrs["shape"], (list, tuple))
                                           else [attrs["shape"]])]
        old = numel(cntk[b - 1:e - 1])
        if new.count(0) > 1 or any(d < 0 for d in new):
            raise NodeError(f"ReshapeAxes: shape {new}: at most one 0 (inferred) and no negative dimension")
        known = numel([d for d in new if d])
        if 0 in new:
            if known == 0 or old % known:
                raise NodeError(f"ReshapeAxes: {old} values of axes [{b}, {e}) do not fill shape {new}")
            new[new.index(0)] = old // known
        if numel(new) != old:
            raise NodeError(f"ReshapeAxes: shape {new} holds {numel(new)} values, axes [{b}, {e}) of "
                            f"{list(cntk)} hold {old}")
        out = cntk[:b - 1] + tuple(new) + cntk[e - 1:]
        return tuple(reversed(out)), sample[0]

    def compile(self, attrs, shapes, sample):
        shape = self.infer(attrs, shapes, sample)[0]
        if sample[0]:
            return lambda x: x.reshape(x.shape[0], *shape)
        return lambda x: x.reshape(shape)
