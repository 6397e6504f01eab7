"""BrainScript networks from text, files and config sections.

* ``build(text_or_path)``: the network as a ``torch.nn.Module`` for a plain PyTorch loop;
* ``build_from_config(command)``: the ``BrainScriptNetworkBuilder`` (or
  ``ExperimentalNetworkBuilder``) of a command section: written inline ``= { ... }`` /
  ``= [ ... ]`` (its text is read back from the config file, located by the config layer, with
  the config's bracket matching), or as a value ``= (new ComputationNetwork { include "net.bs" })``.
  ``$var$`` in the text is replaced with the variable of the surrounding config, as the config
  language does.
"""
from __future__ import annotations

import os
import re

from ...config.text import Text, normalize
from ...config.lexer import brainscript_spans, match_brainscript
from ...config.variables import VAR_RE
from ...errors import ConfigError
from ...integrations.torch_backend import torch
from ..ndl.graph import Graph
from ..ndl.network import NDLNetwork
from .builder import evaluate_network, graph_of, network_of, read_source
from .syntax import BrainScriptError, Loc

__all__ = ["build", "build_graph", "build_from_config", "builder_source", "BUILDER_KEYS"]

BUILDER_KEYS = ("BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder")


def _is_expression(text: str) -> bool:
    s = text.lstrip()
    return s.startswith("(") or s.startswith("new ") or s.startswith("{") or s.startswith("[")


def build_graph(source: str, *, dropout_rate: float = 0.0, file: str | None = None, line: int = 1,
                col: int = 1, base_dir: str | None = None) -> Graph:
    """The :class:`Graph` of BrainScript ``source``: a ``.bs`` file path, the members of a network
    record, or an expression giving one (``new ComputationNetwork {...}``, ``{...}``)."""
    if "\n" not in source and os.path.isfile(source):
        path = os.path.abspath(source)
        text, file, base_dir = read_source(path), path, base_dir or os.path.dirname(path)
    elif "\n" not in source and not re.search(r"[={(\[]", source):
        # one line with no member and no expression: a file name, not BrainScript text
        from ..._paths import missing_file_error
        raise missing_file_error("BrainScript file", source)
    else:
        text = source
    ev, rec = evaluate_network(text, file=file or "<brainscript>", line=line, col=col,
                               expression=_is_expression(text), base_dir=base_dir)
    return graph_of(ev, rec, dropout_rate=dropout_rate)


def build(source: str, *, dropout_rate: float = 0.0, dtype: torch.dtype = torch.float32, seed_offset: int = 0,
          device: torch.device | str | None = None, base_dir: str | None = None) -> NDLNetwork:
    """A BrainScript network as a ``torch.nn.Module`` (``NDLNetwork``: ``evaluate(feeds, wanted)``,
    ``forward(features)``, ``criterion(out, labels)``, the graph's groups in ``graph.groups``).
    ``dropout_rate`` is the rate of ``Dropout`` nodes (CNTK takes it from SGD's ``dropoutRate``)."""
    graph = build_graph(source, dropout_rate=dropout_rate, base_dir=base_dir)
    net = network_of(graph, dtype=dtype, seed_offset=seed_offset)
    return net.to(device) if device is not None else net


def _lookup_var(scope, name: str, where: str) -> str:
    s = scope
    while s is not None:
        if s.exists_current(name):
            return str(s(name))
        s = s.parent
    raise ConfigError(f"${name}$ in the BrainScript network is not defined in the config", path=where)


def _substitute(text: str, scope, where: str) -> str:
    """``$var$`` of ``text`` replaced with the config's variables, in the code and the strings of
    the BrainScript text, not in its comments (a comment may mention ``$x$`` without defining it)."""
    if "$" not in text:
        return text
    sub = VAR_RE.sub
    def one(m) -> str:
        return _lookup_var(scope, m.group(1), where)
    out, last = [], 0
    for kind, start, end in brainscript_spans(text):
        if kind == "comment":
            out.append(sub(one, text[last:start]))
            out.append(text[start:end])
            last = end
    out.append(sub(one, text[last:]))
    return "".join(out)


def builder_source(command) -> tuple[str, str, int, int, bool, str | None]:
    """``(text, file, line, column, is_expression, base_dir)`` of the command's network builder."""
    key = next((k for k in BUILDER_KEYS if command.exists_current(k)), None)
    if key is None:
        raise ConfigError("no BrainScriptNetworkBuilder in the command", path=command.path)
    where = f"{command.path}.{key}" if command.path else key
    entry = command(key)
    # a value: (new ComputationNetwork { ... }); a [ ... ] or { ... } section that is not
    # configuration text comes as a value too (config/parser.py keeps it unparsed) and is read
    # back from the file like a section
    if not hasattr(entry, "keys") and not str(entry).lstrip().startswith(("[", "{")):
        file = getattr(entry, "file", None) or "<config>"
        line = getattr(entry, "line", None) or 1
        base = os.path.dirname(os.path.abspath(file)) if os.path.isfile(file) else None
        found = _value_from_file(file, line, key, command, where) if base is not None else None
        if found is not None:               # the text as written ('...' strings holding '"' too)
            text, bline, bcol = found
            return text, file, bline, bcol, True, base
        return str(entry), file, line, 1, True, base
    file, line = entry.file, entry.line
    if not file or not os.path.isfile(file) or not line:
        raise ConfigError(f"{key}: the network text cannot be read back (it was not written in a config file)",
                          path=where, hint="write it in the config file, or use cntkio.brainscript.build")
    with open(file, encoding="utf-8") as f:
        raw = f.read()
    # the config layer (config comments removed, which keeps every other character at its line
    # and column) finds the key and its opening bracket; the body is then read from the file's own
    # text by BrainScript's lexical rules (shared lexer): its strings ('...' too) and comments
    # (#, //, /* */) are skipped when matching the bracket and kept for BrainScript's parser
    src = Text(raw, file=file)
    text = src.text
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    first = starts[max(0, min(line - 2, len(starts) - 1))]
    m = re.compile(rf"\b{key}\s*=?\s*([\[{{])", re.IGNORECASE).search(text, first)
    if m is None:
        raise ConfigError(f"{key}: cannot find the network's text in {file} near line {line}", path=where)
    bline = text.count("\n", 0, m.start(1)) + 1
    bcol = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
    plain = normalize(raw)
    open_at = [0, *(k.end() for k in re.finditer("\n", plain))][bline - 1] + bcol - 1
    close_at = match_brainscript(plain, open_at, file,
                                 error=lambda message, ln, c: BrainScriptError(message, Loc(file, ln, c)))
    body = _substitute(plain[open_at + 1:close_at], command, where)
    return body, file, bline, bcol + 1, False, os.path.dirname(os.path.abspath(file))


def _value_from_file(file: str, line: int, key: str, command, where: str):
    """``(text, line, column)`` of the value ``key = ( ... )`` written on line ``line`` of ``file``
    (or the line after it), its bracket matched by BrainScript's lexical rules and ``$var$``
    substituted; None when the value is not written there (e.g. it came from a variable)."""
    with open(file, encoding="utf-8") as f:
        plain = normalize(f.read())
    starts = [0] + [m.end() for m in re.finditer("\n", plain)]
    if line > len(starts):
        return None
    m = re.compile(rf"\b{key}\s*=\s*(\()", re.IGNORECASE).search(plain, starts[line - 1])
    if m is None or plain.count("\n", starts[line - 1], m.start(1)) > 1:
        return None
    open_at = m.start(1)
    bline = plain.count("\n", 0, open_at) + 1
    bcol = open_at - starts[bline - 1] + 1
    close_at = match_brainscript(plain, open_at, file,
                                 error=lambda message, ln, c: BrainScriptError(message, Loc(file, ln, c)))
    return _substitute(plain[open_at:close_at + 1], command, where), bline, bcol


def _dropout_rate(command) -> float:
    sgd = next((command(k) for k in ("SGD", "sgd") if command.exists_current(k)), None)
    if sgd is None or not hasattr(sgd, "exists") or not sgd.exists("dropoutRate"):
        return 0.0
    text = str(sgd("dropoutRate"))
    first = text.split(":")[0].split("*")[0].strip()
    try:
        return float(first)
    except ValueError as e:
        raise ConfigError(f"expected a rate (a number, or a schedule such as 0.5*10:0.2), found {text!r}",
                          path=f"{sgd.path}.dropoutRate") from e


def build_from_config(command, *, dtype: torch.dtype = torch.float32) -> NDLNetwork:
    """The network of a command's ``BrainScriptNetworkBuilder``; Dropout takes SGD's
    ``dropoutRate`` (its first value)."""
    text, file, line, col, expr, base = builder_source(command)
    key = next(k for k in BUILDER_KEYS if command.exists_current(k))
    seed = 0
    entry = command(key)
    if hasattr(entry, "exists_current") and entry.exists_current("randomSeedOffset"):
        seed = int(entry("randomSeedOffset").as_int())
    ev, rec = evaluate_network(text, file=file, line=line, col=col, expression=expr, base_dir=base)
    graph = graph_of(ev, rec, dropout_rate=_dropout_rate(command))
    return network_of(graph, dtype=dtype, seed_offset=seed, base_dir=base)

