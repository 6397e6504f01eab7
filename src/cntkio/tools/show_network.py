"""``cntkio show-network configFile=... [name=value ...] [--section NAME] [--json]``: the networks
of a config's commands (nodes, functions and inputs, dimensions, parameter counts), untrained.

What it must never do: read data or train (:mod:`cntkio.actions.show_network` builds the networks).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ._common import emit, fail

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cntkio show-network",
        description="Print the networks of the configuration's commands without training them: one line "
                    "per node (name, function and inputs, dimensions, learnable values), the node groups "
                    "and the parameter count. A command with a network builder (Simple, NDL, BrainScript) "
                    "shows the network it would build, another with an existing modelPath that model.")
    p.add_argument("args", nargs="*", metavar="name=value", help="configFile=FILE[+FILE] and overrides")
    p.add_argument("--section", help="only this command section")
    p.add_argument("--json", action="store_true",
                   help="print {command: {builder, nodes: [{name, operation, inputs, shape, per_sample, values, "
                        "learnable}], groups, parameters, learnable}}")
    return p


def main(argv: Sequence[str], out=None) -> int:
    from ..actions.show_network import command_networks, describe, describe_dict
    from ..config import load_config
    out = out or sys.stdout
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    if not args.args:
        return fail("show-network", "give configFile=FILE", 2)
    bad = [a for a in args.args if "=" not in a]
    if bad:
        return fail("show-network", f"argument {bad[0]!r} is not name=value (configFile={bad[0]}?)", 2)
    nets = list(command_networks(load_config(list(args.args)), args.section))
    if args.json:
        emit({name: {"builder": what, **describe_dict(net)} for name, what, net in nets}, True, "")
    else:
        for name, what, net in nets:
            out.write(f"== {name}: {what}\n{describe(net)}\n")
    return 0
