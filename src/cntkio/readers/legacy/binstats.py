"""The statistics a cntkio binary file stores per data section (the spec's ``Stats``: sum, count,
mean, variance, stdDev, max, min, range, rootMeanSquare, per column), accumulated chunk by chunk
as the file is written. Must never hold a copy of a section: float64 running sums only."""
from __future__ import annotations

import numpy as np

__all__ = ["STAT_NAMES", "Stats", "section_stats"]

STAT_NAMES = ("sum", "count", "mean", "variance", "stdDev", "max", "min", "range", "rootMeanSquare")


def section_stats(values: np.ndarray) -> dict[str, list[float]]:
    """The spec's ``Stats`` of ``values[records, dim]``, per column."""
    stats = Stats(int(np.prod(np.shape(values)[1:])))
    stats.add(values)
    return stats.result()



class Stats:
    """The spec's statistics accumulated chunk by chunk (float64 sums, no copy of the section)."""

    def __init__(self, dim: int) -> None:
        self.n = 0
        self.s = np.zeros(dim)
        self.ss = np.zeros(dim)
        self.mx = np.full(dim, -np.inf)
        self.mn = np.full(dim, np.inf)

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, np.float64).reshape(len(values), -1)
        if not len(v):
            return
        self.n += len(v)
        self.s += v.sum(0)
        self.ss += (v * v).sum(0)
        np.maximum(self.mx, v.max(0), out=self.mx)
        np.minimum(self.mn, v.min(0), out=self.mn)

    def result(self) -> dict[str, list[float]]:
        if self.n == 0:
            zero = [0.0] * len(self.s)
            return {k: zero for k in STAT_NAMES}
        mean = self.s / self.n
        var = np.maximum(self.ss / self.n - mean * mean, 0.0)
        return {"sum": self.s.tolist(), "count": [float(self.n)] * len(self.s), "mean": mean.tolist(),
                "variance": var.tolist(), "stdDev": np.sqrt(var).tolist(), "max": self.mx.tolist(),
                "min": self.mn.tolist(), "range": (self.mx - self.mn).tolist(),
                "rootMeanSquare": np.sqrt(self.ss / self.n).tolist()}
