"""``autoAdjustMinibatch = true``: CNTK's adaptive minibatch sizing, as its SGD defined it.

CNTK's SGD (``AdaptiveMinibatchSizing`` and ``SearchForBestMinibatchSize``, after Seide et al.,
"On Parallelizability of Stochastic Gradient Descent for Speech DNNs", ICASSP 2014) chose, for
every epoch past the given ``minibatchSize`` schedule, the largest minibatch size whose short
trial is not worse than the smallest size's:

* the search range starts at the epoch's configured minibatch size (the schedule's last entry),
  raised to ``size / sqrt(lr change)`` when the learning rate per sample has dropped since epoch 1
  (``lr change = lr(epoch) / lr(epoch 1) * adjustment``, the adjustment being the last
  SearchBeforeEpoch rate over the rate before it, else 1), and to half the previous epoch's chosen
  size; it ends at ``minibatchSizeTuningMax`` (1048576) and at twice the previous chosen size;
* before epoch 3 the previous chosen size is ignored; after that the search runs only in epochs
  whose number is a multiple of ``minibatchSizeTuningFrequency`` (1), the others keep the previous
  size;
* trial sizes start at the low end and grow by ``sqrt(2)`` (in single precision, as CNTK's
  ``float``), each rounded to a multiple of 64 (``64 * floor((size + 32) / 64)``); each trial trains
  the epoch's first ``numSamples4Search`` samples (``numMiniBatch4LRSearch`` minibatches, 500 by
  default) from the epoch's starting model and SGD state and is then undone; the first trial's
  average training criterion is the base, and the search stops at the first trial worse than
  ``base * (1 + minibatchSearchCriterionErrorMargin / 100)`` (margin 1); the last trial before it
  is chosen.

The functions here are the rule; :mod:`.train` runs the trials.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["round_to_64", "trial_sizes", "search_minibatch_size", "SizingBounds", "sizing_bounds"]

_SQRT2 = np.float32(np.sqrt(np.float32(2.0)))       # CNTK's sqrtf(2.0f)


def round_to_64(value: float) -> int:
    """CNTK's ``RoundToMultipleOf64`` of a single-precision size."""
    return 64 * int((np.float32(value) + np.float32(32)) / np.float32(64))


def trial_sizes(low: int, high: int) -> list[int]:
    """Every trial size of a search from ``low`` to ``high`` (the search may stop earlier)."""
    out, f, top = [], np.float32(low), np.float32(high)
    while f <= top:
        out.append(round_to_64(f))
        f = np.float32(f * _SQRT2)
    return out


def search_minibatch_size(low: int, high: int, trial: Callable[[int], float], margin: float = 1.0,
                          log: Callable[[str], None] | None = None) -> int:
    """CNTK's ``SearchForBestMinibatchSize``: ``trial(size)`` gives the average training criterion
    of a short trial with that minibatch size (and undoes it)."""
    if low > high:
        return high
    base = last_good = None
    for size in trial_sizes(low, high):
        if size <= 0:
            raise ValueError(f"the minibatch-size search starts at {low}, which rounds to 0 (sizes are rounded to "
                             "multiples of 64)")
        crit = trial(size)
        if base is None:
            base, last_good = crit, size
            if log:
                log(f"base criterion {crit:.8g} for minibatchSize={size}")
        elif not math.isnan(crit) and crit > base * (1.0 + margin / 100.0):
            if log:
                log(f"minibatchSize={size}: criterion {crit:.8g} is worse than the base {base:.8g}; stop")
            break
        else:
            last_good = size
            if log:
                log(f"minibatchSize={size}: criterion {crit:.8g} vs base {base:.8g}; keep searching")
    return int(last_good)


@dataclass
class SizingBounds:
    """What ``AdaptiveMinibatchSizing`` decided before searching: keep ``keep`` (no search), else
    search ``low`` .. ``high``; ``prev`` is the previous chosen size after the epoch-1/2 reset."""

    low: int
    high: int
    keep: int | None
    prev: int
    reset: bool


def sizing_bounds(epoch: int, initial: int, prev: int, lr_epoch: float, lr_first: float, lr_adjustment: float,
                  tuning_frequency: int, tuning_max: int) -> SizingBounds:
    """CNTK's ``AdaptiveMinibatchSizing`` before the search (0-based ``epoch``; ``initial`` the
    epoch's configured minibatch size; ``prev`` the previous chosen size, 0 for none)."""
    low = initial
    change = math.sqrt(lr_epoch / lr_first * lr_adjustment)
    if change < 1.0:
        low = int(low / change)         # the rate was reduced: a larger minibatch is safe
    reset = False
    if epoch < 2 and prev != 0:
        prev, reset = 0, True           # newly started training: a stored size is not valid
    if prev != 0 and epoch + 1 > tuning_frequency and (epoch + 1) % tuning_frequency != 0:
        return SizingBounds(low, tuning_max, prev, prev, reset)
    if prev != 0:
        low = max(low, prev // 2)
    high = tuning_max
    if prev != 0:
        high = min(high, prev * 2)      # grow at most 2x per search
    return SizingBounds(low, high, None, prev, reset)
