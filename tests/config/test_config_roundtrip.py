"""Property tests of the configuration language.

Random trees (parameter sets, arrays, strings) are written as configuration text in the many
equivalent syntaxes of spec/configuration-files.txt (newline or ';' or custom separators, [..] /
{..} / (..) sets, quoted or bare strings, comments, flags, repeated assignments) and must parse
back to the same tree; printing a parsed configuration and parsing it again gives the same tree.
"""
from __future__ import annotations

import re

from hypothesis import example, HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio.config import dump, format_value, parse_config

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True).filter(lambda n: n.lower() != "include")
# characters of string values: anything printable except '"' (no escapes in the language), '$'
# (always a variable reference) and '\r' (line ends are normalised)
TEXT = st.text(alphabet=st.characters(blacklist_characters='"$\r', blacklist_categories=("Cs", "Cc")) | st.just("\n"),
               max_size=12)
SAFE_RAW = re.compile(r"[A-Za-z0-9_.\\/:+\-*#=@]+\Z")
SAFE_ITEM = re.compile(r"[A-Za-z0-9_.\\/+\-]+\Z")


def trees(max_leaves=12):
    leaf = TEXT
    return st.recursive(
        leaf,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(NAMES, children, max_size=4).map(_dedupe),
        ),
        max_leaves=max_leaves,
    )


def _dedupe(d: dict) -> dict:
    out, seen = {}, set()
    for k, v in d.items():
        if k.lower() not in seen:
            seen.add(k.lower())
            out[k] = v
    return out


root_trees = st.dictionaries(NAMES, trees(), max_size=5).map(_dedupe)


# --- an independent writer with random syntax choices ----------------------------------------

def write_string(s: str, draw, in_array: bool = False, sep: str = ":") -> str:
    if in_array:
        if SAFE_ITEM.match(s) and sep not in s and draw(st.booleans()):
            return s
        return f'"{s}"'
    if SAFE_RAW.match(s) and not s.startswith("#") and draw(st.booleans()):
        return s
    return f'"{s}"'


def write_value(v, draw, indent: str) -> str:
    if isinstance(v, dict):
        return write_dict(v, draw, indent)
    if isinstance(v, list):
        return write_list(v, draw, indent)
    return write_string(v, draw)


def write_list(items: list, draw, indent: str) -> str:
    if not items:
        return "()"
    style = draw(st.sampled_from(["lines", "paren_custom", "brace_custom", "colon_paren"]))
    inner = indent + "  "
    if style == "lines":
        parts = [_item(x, draw, inner, "\n") for x in items]
        return "(\n" + "".join(f"{inner}{p}\n" for p in parts) + indent + ")"
    if style == "colon_paren":
        parts = [_item(x, draw, inner, ":") for x in items]
        return "(" + ":".join(parts) + ")"
    sep = draw(st.sampled_from(list("|;,!")))
    opener, closer = ("(", ")") if style == "paren_custom" else ("{", "}")
    parts = [_item(x, draw, inner, sep) for x in items]
    return opener + sep + sep.join(parts) + closer


def _item(x, draw, indent: str, sep: str) -> str:
    if isinstance(x, dict):
        return write_dict(x, draw, indent, allow_paren=False)
    if isinstance(x, list):
        return write_list(x, draw, indent)
    return write_string(x, draw, in_array=True, sep=sep)


def write_dict(d: dict, draw, indent: str, allow_paren: bool = True) -> str:
    style = draw(st.sampled_from(["lines", "semicolons", "custom", "brace", "paren"] if allow_paren
                                 else ["lines", "semicolons", "custom"]))
    if style in ("brace", "paren") and not d:
        style = "lines"
    inner = indent + "  "
    entries = [f"{k}={write_value(v, draw, inner)}" if not (v == "true" and draw(st.booleans())) else k
               for k, v in d.items()]
    if style in ("brace", "paren") and entries and "=" not in entries[0]:
        entries[0] = entries[0] + "=true"
    if style == "lines":
        body = "".join(f"{inner}{e}{_comment(draw)}\n" for e in entries)
        return "[\n" + body + indent + "]"
    if style == "semicolons":
        return "[" + ";".join(entries) + "]"
    if style == "custom":
        sep = draw(st.sampled_from(list("|#!@")))
        return "[" + sep + sep.join(entries) + "]"
    opener, closer = ("{", "}") if style == "brace" else ("(", ")")
    return opener + " " + " ; ".join(entries) + " " + closer


def _comment(draw) -> str:
    return draw(st.sampled_from(["", "", " # a comment", "\t# [unbalanced ( \"quote"]))


def write_root(tree: dict, draw) -> str:
    lines = []
    for k, v in tree.items():
        if draw(st.booleans()) and not isinstance(v, dict):
            lines.append(f"{k}=decoy_{draw(st.integers(0, 9))}")  # the last assignment wins
        if isinstance(v, dict) and len(v) >= 2 and draw(st.booleans()):
            items = list(v.items())
            half = len(items) // 2
            lines.append(f"{k}={write_dict(dict(items[:half]), draw, '')}")  # sets merge
            lines.append(f"{k}={write_dict(dict(items[half:]), draw, '')}")
            continue
        if v == "true" and draw(st.booleans()):
            lines.append(k)
            continue
        lines.append(f"{k} = {write_value(v, draw, '')}{_comment(draw)}")
        if draw(st.integers(0, 5)) == 0:
            lines.append("# a full-line comment with = and [ brackets")
    return "\n".join(lines) + "\n"


@SETTINGS
@given(root_trees, st.data())
def test_written_tree_parses_back(tree, data):
    text = write_root(tree, data.draw)
    assert parse_config(text).to_dict() == tree, text


@SETTINGS
@given(root_trees, st.data())
def test_print_parse_is_identity(tree, data):
    text = write_root(tree, data.draw)
    first = parse_config(text)
    printed = dump(first)
    again = parse_config(printed)
    assert again.to_dict() == first.to_dict(), printed
    assert dump(again) == printed


@SETTINGS
@given(root_trees)
@example({"a": ["0=0", ""]})        # an array element holding '=' reads back only quoted (hypothesis found it)
def test_format_value_of_a_tree(tree):
    cfg = parse_config("")
    for k, v in tree.items():
        # a str given to insert() is configuration text: format_value() writes a string value
        cfg.insert(k, format_value(v) if isinstance(v, str) else v)
    assert cfg.to_dict() == tree
    assert parse_config(format_value(tree).strip()[1:-1]).to_dict() == tree


@SETTINGS
@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(1, 4)), min_size=1, max_size=6))
def test_repeats_expand(pairs):
    text = ":".join(f"{v}*{r}" if r > 1 else str(v) for v, r in pairs)
    expected = [v for v, r in pairs for _ in range(r)]
    assert parse_config(f"x={text}")("x").as_array().as_ints() == expected


PIECES = st.sampled_from(list("ab1=;:[]{}()\"#$*| \n\t.\\-_,!x2") + ["$a$", "include", "a*3", "1#INF"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=30).map("".join))
def test_any_text_parses_or_raises_config_error(text):
    """Arbitrary text either parses or raises ConfigError (never another exception); what parses
    prints and parses back to the same tree."""
    from cntkio.config import ConfigError

    try:
        cfg = parse_config(text, base_dir="/nonexistent")
        tree = cfg.to_dict()
    except ConfigError:
        return
    for name in cfg.keys():
        value = cfg(name)
        for convert in (value.as_int, value.as_float, value.as_bool, value.as_array, value.as_params):
            try:
                convert()
            except ConfigError:
                pass
    assert parse_config(dump(cfg)).to_dict() == tree


KEYS = st.sampled_from(["a", "A", "b", "B", "c"])
VALUES = st.one_of(st.sampled_from(["1", "x", "c:\\p", "1:2"]),
                   st.dictionaries(st.sampled_from(["a", "b", "d"]), st.sampled_from(["7", "y"]), max_size=2))


def _model_assign(tree: dict, path: list[str], value) -> None:
    """The documented meaning of an assignment: the last value wins, parameter sets merge,
    names compare without case and keep their first spelling."""
    node = tree
    for part in path[:-1]:
        key = next((k for k in node if k.lower() == part.lower()), None)
        if key is None or not isinstance(node[key], dict):
            key = key or part
            node[key] = {}
        node = node[key]
    key = next((k for k in node if k.lower() == path[-1].lower()), path[-1])
    if isinstance(value, dict) and isinstance(node.get(key), dict):
        for k, v in value.items():
            _model_assign(node[key], [k], v)
    else:
        node[key] = dict(value) if isinstance(value, dict) else value


def _assignment_text(path: list[str], value, dotted: bool) -> str:
    text = format_value(value) if isinstance(value, dict) else value
    if dotted:
        return ".".join(path) + "=" + text
    for part in reversed(path[1:]):
        text = f"[{part}={text}]"
    return f"{path[0]}={text}"


@SETTINGS
@given(st.lists(st.tuples(st.lists(KEYS, min_size=1, max_size=3), VALUES, st.booleans()), max_size=8))
def test_repeated_assignments_follow_the_documented_rules(assignments):
    model: dict = {}
    lines = []
    for path, value, dotted in assignments:
        _model_assign(model, path, value)
        lines.append(_assignment_text(path, value, dotted))
    assert parse_config("\n".join(lines)).to_dict() == model
