"""An evaluation plan made into one Python function (once per plan), so that a minibatch runs
straight-line code: each node's value a local variable, its function and the modules holding
its parameters bound in the function's globals, no dict look-up by node name and no dispatch on
the kind of step. Plans with delay nodes or loops keep the interpreted steps of
``GraphNetwork.evaluate`` (their cost is in the sequence work)."""
from __future__ import annotations

from typing import Callable

__all__ = ["Plan", "compile_plan"]

_COMPUTE, _TRAIN, _TENSOR = range(3)


class Plan(list):
    """The steps of a plan and ``run(feeds, training) -> values``, or None (interpret the steps)."""

    run: Callable | None = None


def compile_plan(plan: list, fed: frozenset, adapt: dict) -> Callable | None:
    """``run(feeds, training)`` returning the values of the fed and computed nodes by name, for
    plans of compute and tensor steps only (else None). ``adapt``: the input nodes' functions."""
    if any(step[0] not in (_COMPUTE, _TRAIN, _TENSOR) for step in plan):
        return None
    env: dict = {}
    var: dict[str, str] = {}
    lines = ["def run(feeds, training):"]
    for k, n in enumerate(sorted(fed)):
        v = var[n] = f"v{len(var)}"
        if n in adapt:
            env[f"a{k}"] = adapt[n]
            lines.append(f"    {v} = a{k}(feeds[{n!r}])")
        else:
            lines.append(f"    {v} = feeds[{n!r}]")
    for k, (code, n, fn, ins, extra) in enumerate(plan):
        v = var[n] = f"v{len(var)}"
        if code == _TENSOR:
            mod, leaf = extra
            env[f"m{k}"] = mod
            lines.append(f"    {v} = m{k}._parameters.get({leaf!r})")
            lines.append(f"    if {v} is None:\n        {v} = m{k}._buffers[{leaf!r}]")
            continue
        env[f"f{k}"] = fn
        args = ", ".join(var[i] for i in ins)
        lines.append(f"    {v} = f{k}({args}{', training=training' if code == _TRAIN else ''})")
    lines.append("    return {" + ", ".join(f"{n!r}: {v}" for n, v in var.items()) + "}")
    exec(compile("\n".join(lines), "<cntkio plan>", "exec"), env)      # noqa: S102 (our own code)
    return env["run"]
