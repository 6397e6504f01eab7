"""The ``cv`` action: evaluate a series of epoch models and report the best one per criterion.

Parameters: ``modelPath`` (the epoch files are ``modelPath.N``), ``crossValidationInterval``
(required, ``start:step:end`` epochs), ``reader``, ``minibatchSize`` (40960), ``epochSize`` (0 = one
sweep), ``evalNodeNames`` (default: both criteria), ``numMBsToShowResult`` (0),
``sleepTimeBetweenRuns`` (seconds, 0).

As CNTK does: an epoch file that does not exist is skipped, except that the final model
(``modelPath``, which is where the last epoch is written) is evaluated once in place of the first
missing file when it exists.
"""
from __future__ import annotations

import os
import time

from .._log import get_logger
from ..errors import ConfigError
from .checks import load_command_model
from ._common import dist_context, epoch_minibatches, open_reader, progress_enabled, report, resolve_device, resolve_dtype
from ._params import get_float, get_int, get_list, get_str, key_path, minibatch_size
from .eval import EvalResult, criterion_nodes, evaluate

__all__ = ["cv"]

_log = get_logger("actions.cv")


def cv(section, name: str = "cv") -> dict[str, EvalResult]:
    """Evaluate ``modelPath.N`` for N in ``crossValidationInterval``; return ``{model file: result}``
    and print, per criterion, the model with the lowest value (``Best models:``)."""
    dist = dist_context()
    device, dtype = resolve_device(section, dist), resolve_dtype(section)
    model_path = get_str(section, "modelPath")
    interval = get_list(section, "crossValidationInterval")
    try:
        start, step, end = (int(float(v)) for v in interval)
    except ValueError as e:
        raise ConfigError(f"expected three integers start:step:end, found {':'.join(map(str, interval))!r}",
                          path=key_path(section, "crossValidationInterval")) from e
    if step <= 0 or start < 0 or end < start:
        raise ConfigError(f"expected start >= 0, step > 0, end >= start; found {start}:{step}:{end}",
                          path=key_path(section, "crossValidationInterval"))
    mb_size = minibatch_size(section)
    epoch_size = get_int(section, "epochSize", 0)
    sleep = get_float(section, "sleepTimeBetweenRuns", 0.0)
    show = get_int(section, "numMBsToShowResult", 0)
    names = get_list(section, "evalNodeNames", None)
    results: dict[str, EvalResult] = {}
    final_done = False
    for i in range(start, end + 1, step):
        path = f"{model_path}.{i}"
        if not os.path.exists(path):
            report(f"Model {path} does not exist.", dist=dist)
            if final_done or not os.path.exists(model_path):
                continue
            path, final_done = model_path, True
        net = load_command_model(section, "modelPath", path, device=device, dtype=dtype).network
        nodes = criterion_nodes(net, [str(n) for n in names] if names else None, key_path(section, "evalNodeNames"))
        source = open_reader(section, "reader", name)
        res = evaluate(net, epoch_minibatches(source, minibatch_size=mb_size, epoch_size=epoch_size, epoch=0, dist=dist),
                       nodes=nodes, dtype=dtype, device=device, dist=dist, show_every=show,
                       progress=progress_enabled(section, dist), desc=os.path.basename(path),
                       where=key_path(section, "reader"), reader=section("reader"))
        results[path] = res
        report(f"Final Results for model {path}: Minibatch[1-{res.minibatches}]: {res}", dist=dist)
        if sleep > 0:
            time.sleep(sleep)
    if not results:
        raise ConfigError(f"no model file found for crossValidationInterval {start}:{step}:{end} "
                          f"(looked for {model_path}.N and {model_path})",
                          path=key_path(section, "crossValidationInterval"))
    report("Best models:", dist=dist)
    first = next(iter(results.values()))
    for node in first.totals:
        best = min(results, key=lambda p: results[p].averages[node])
        report(f"  {node}: {best} ({results[best].averages[node]:.8g})", dist=dist)
    return results
