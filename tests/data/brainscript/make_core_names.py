"""Writes cntk_core_names.txt: every name CNTK's BrainScript library CNTK.core.bs defines, with its
parameters and their defaults, read with cntkio's own BrainScript parser.

    git -C /work/.mirror/ROCmSoftwarePlatform+CNTK-1/repo show \\
        HEAD:Source/CNTK/BrainScript/CNTKCoreLib/CNTK.core.bs > /tmp/CNTK.core.bs
    python tests/data/brainscript/make_core_names.py /tmp/CNTK.core.bs <commit> > tests/data/brainscript/cntk_core_names.txt

One line per name, by its path from the top (``BS.RNNs.LSTMP``, ``CNTK2.Times``):

    NAME (p1, p2, opt=default, ...)     a function ({...} where CNTK writes a layer constructor)
    NAME = PATH                         an alias of another name
    NAME := EXPRESSION                  any other value
"""
from __future__ import annotations

import sys

from cntkio.networks.brainscript import syntax as S


def show(e) -> str:
    """BrainScript source of an expression (enough for defaults and aliases)."""
    if isinstance(e, S.Lit):
        if isinstance(e.value, bool):
            return "true" if e.value else "false"
        if isinstance(e.value, str):
            return repr(e.value)
        return repr(e.value)
    if isinstance(e, S.Name):
        return e.name
    if isinstance(e, S.Member):
        return f"{show(e.obj)}.{e.name}"
    if isinstance(e, S.Call):
        o, c = ("{", "}") if e.braces else ("(", ")")
        args = [show(a) for a in e.args] + [f"{k}={show(v)}" for k, v in e.named.items()]
        return f"{show(e.fn)} {o}{', '.join(args)}{c}"
    if isinstance(e, S.Index):
        return f"{show(e.obj)}[{show(e.index)}]"
    if isinstance(e, S.BinOp):
        return f"({show(e.a)} {e.op} {show(e.b)})"
    if isinstance(e, S.Unary):
        return f"{e.op}{show(e.a)}"
    if isinstance(e, S.ArrayLit):
        return "[| " + " ; ".join(show(x) for x in e.items) + " |]" if len(e.items) != 2 else \
            f"({show(e.items[0])} : {show(e.items[1])})"
    if isinstance(e, S.Lambda):
        return f"({', '.join(e.params)} => {show(e.body)})"
    if isinstance(e, S.If):
        return f"(if {show(e.cond)} then {show(e.then)} else {show(e.other)})"
    if isinstance(e, S.RecordLit):
        return "{...}"
    if isinstance(e, S.New):
        return f"new {e.cls} ..."
    if isinstance(e, S.ArrayGen):
        return "array[...] (...)"
    return type(e).__name__


def signature(m: S.Assign, braces: bool) -> str:
    o, c = ("{", "}") if braces else ("(", ")")
    ps = [p if p not in m.defaults else f"{p}={show(m.defaults[p])}" for p in m.params]
    return f"{o}{', '.join(ps)}{c}"


def walk(members, prefix: str, text: str, out: list[str]) -> None:
    lines = text.split("\n")
    for m in members:
        if isinstance(m, S.Include):
            continue
        name = prefix + m.name
        if m.params is not None:
            line = lines[m.loc.line - 1]
            after = line[m.loc.col - 1 + len(m.name):].lstrip()
            out.append(f"{name} {signature(m, after.startswith('{'))}")
        elif m.index is not None:
            out.append(f"{name} := array[...]")
        elif isinstance(m.expr, S.RecordLit):
            walk(m.expr.members, name + ".", text, out)
        elif isinstance(m.expr, (S.Name, S.Member)):
            out.append(f"{name} = {show(m.expr)}")
        else:
            out.append(f"{name} := {show(m.expr)}")


def main() -> None:
    path, commit = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8").read()
    body = S.parse_record_body(text, "CNTK.core.bs")
    out: list[str] = []
    walk(body.members, "", text, out)
    print("# The names CNTK's BrainScript library defines, with their parameters and defaults.")
    print("# From CNTK.core.bs (MIT licence): github.com/ROCmSoftwarePlatform/CNTK-1 (CNTK 2.7's source),")
    print(f"# commit {commit}, Source/CNTK/BrainScript/CNTKCoreLib/CNTK.core.bs;")
    print("# written by tests/data/brainscript/make_core_names.py (its docstring has the command).")
    for line in out:
        print(line)


if __name__ == "__main__":
    main()
