"""``cntkio show-config``: the resolved configuration (after includes, overrides and ``$var$``),
as CNTK config text (the default), YAML that OmegaConf loads, or JSON.

::

    cntkio show-config configFile=x.cntk [name=value ...] [--format cntk|yaml|json]

Every value is kept as the text CNTK reads (``16:32`` stays the string ``"16:32"``): YAML
strings are double-quoted, so no YAML or OmegaConf rule turns them into numbers, lists or
booleans, and ``${`` is escaped as OmegaConf's ``\\${`` so that it is not taken for an
interpolation. Sections become nested mappings, in the configuration's order.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Sequence

__all__ = ["main", "to_tree", "to_yaml"]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def to_tree(cfg) -> dict:
    """A ConfigParameters as nested dicts of strings."""
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        out[str(key)] = to_tree(value) if hasattr(value, "items") else str(value)
    return out


def _quote(text: str, omegaconf: bool) -> str:
    body = "".join(_ESCAPES.get(c, c if c >= " " else f"\\x{ord(c):02x}") for c in text)
    if omegaconf:
        body = body.replace("${", "\\\\${")  # OmegaConf's escape of an interpolation: \${
    return f'"{body}"'


def _key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) and key.lower() not in ("true", "false", "null", "yes", "no",
                                                                 "on", "off", "y", "n", "~") \
        else _quote(key, False)


def to_yaml(tree: dict, indent: int = 0) -> str:
    """YAML block mappings, every value a double-quoted string (OmegaConf-loadable)."""
    lines = []
    pad = "  " * indent
    for key, value in tree.items():
        if isinstance(value, dict):
            if value:
                lines.append(f"{pad}{_key(key)}:")
                lines.append(to_yaml(value, indent + 1).rstrip("\n"))
            else:
                lines.append(f"{pad}{_key(key)}: {{}}")
        else:
            lines.append(f"{pad}{_key(key)}: {_quote(value, True)}")
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cntkio show-config", description="Print the resolved configuration "
                                "(after includes, command-line overrides and $var$ substitution).")
    p.add_argument("args", nargs="*", metavar="name=value", help="configFile=FILE[+FILE] and overrides")
    p.add_argument("--format", choices=["cntk", "yaml", "json"], default="cntk",
                   help="cntk: CNTK config text (default); yaml: OmegaConf-loadable YAML; json")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    return p


def main(argv: Sequence[str]) -> int:
    from ..config import load_config
    from ._common import fail

    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    if not args.args:
        return fail("show-config", "give configFile=FILE", 2)
    bad = [a for a in args.args if "=" not in a]
    if bad:
        return fail("show-config", f"argument {bad[0]!r} is not name=value (configFile={bad[0]}?)", 2)
    cfg = load_config(args.args)
    fmt = "json" if args.json else args.format
    if fmt == "cntk":
        text = cfg.dump()
    elif fmt == "yaml":
        text = to_yaml(to_tree(cfg))
    else:
        text = json.dumps(to_tree(cfg), indent=1)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
