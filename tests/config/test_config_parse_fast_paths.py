"""The config parser's fast paths (issue 18: a 50 MB config at >= 10 MB/s) give the tree the general
path gives: a parameter set written on one line (``name = [ a = 1 ; b = "x" ]``, taken in one match
with its plain items) and a bracket group with no bracket inside (stepped over whole when matching
brackets). Every case is parsed twice, with the fast paths and with them switched off, and the
trees (names, values, quoting, files, lines, paths) or the errors (message, file, line) compared;
the cases the fast paths hand over to the general path are checked with their expected values."""
import re

import pytest

from cntkio.config import ConfigParameters, ConfigValue, load_config, parse_config
from cntkio.config import text as _text, parser
from cntkio.errors import ConfigError


def _plain_words_only(sep: str) -> re.Pattern:
    """parser._plain_item without its one-line set (group 4 never matches): the simple item of before."""
    stop = re.escape(sep)
    return re.compile(r'[ \t\n\r\f\v]*([A-Za-z0-9_][\w\-]*(?:\.[A-Za-z0-9_][\w\-]*)*)[ \t]*=[ \t]*'
                      r'(?:"([^"\n]*)"|([^\s"=\[\]{}()' + stop + r']+)|((?!)))[ \t\r\f\v]*(?:[\n' + stop + r']|\Z)')


# match()'s step without its group 2 (a group with no bracket inside, whole): bracket by bracket
_BRACKET_BY_BRACKET = re.compile(r'[^\[\]{}()"]*(?:("[^"]*")|((?!))|([\[\]{}()"]))?')
# the comment pattern as first written: a search trying every offset
_COMMENT_EVERY_OFFSET = re.compile(r'("[^"]*(?:"|\Z))|(?<![^ \t\n])#[^\n]*')


def _general(monkeypatch):
    """Switch the fast paths off: no one-line set match, match() one bracket at a time, the
    comment pattern of before."""
    monkeypatch.setattr(parser, "_plain_item", _plain_words_only)
    monkeypatch.setattr(_text, "_STEP", _BRACKET_BY_BRACKET)
    monkeypatch.setattr(_text, "_COMMENT", _COMMENT_EVERY_OFFSET)


def _tree(node: ConfigParameters) -> list:
    out = [("set", node.path, node.file, node.line)]
    for key, (name, value) in node._entries.items():
        if isinstance(value, ConfigParameters):
            out.append((key, name, value._parent is node, value.name, _tree(value)))
        else:
            out.append((key, name, str(value), value.quoted, value.file, value.line, value.path,
                        value.scope is node))
    return out


def _outcome(text: str):
    try:
        return _tree(parse_config(text, file="cfg.cntk"))
    except ConfigError as e:
        return ("error", str(e), e.file, e.line)


CASES = [
    # plain one-line sets, at the top and nested, with every kind of plain item
    'a = [ dim = 3 ; init = "uniform" ; scale = -1.5e-3 ]\nb=[x=1;y="";z=$v$]\nv = 7\n',
    'outer = [\n  l1 = [ dim = 1 ; bias = true ; name = "l1" ]\n  l2 = [ dim = 2 ]\n]\n',
    # quotes holding separators, brackets, '#', '=' and '$'
    'a = [ x = "p;q]" ; y = "[z]" ; w = "a#b" ; e = "k=v" ; d = "$v$/x" ]\nv = 1\n',
    # comments: after the set, inside it at the end of the line, '#' inside a value
    'a = [ x = 1 ; y = 2 ] # a comment [ ] "\nb = [ x = 1#INF ; y = 2 # the rest ]\n]\n',
    # comments at the start, after a tab, '##', a quote inside a comment, '#' inside quotes and words
    '#c "\na = 1#INF ## c "x\nb = "q # not" # c2\n\tc = [ x = 1 ]\t# tab [\n##\nd = [ s = "#" ]#x\n',
    'a = 1\nb = "open # rest\nc = 2\n',
    # nested brackets: not one-line sets, the general path
    'a = [ x = [ y = 1 ] ; z = 2 ]\nb = [ c = { 1 : 2 } ]\nc = [ arr = (1:2) ; s = "t" ]\n',
    # flags, dotted names, include= as a name inside, words with blanks, empty pieces
    'a = [ x = 1 ; verbose ]\nb = [ c.d = 1 ; e = 2 ]\nc = [ x = b c ]\nd = [ ; x = 1 ;; y = 2 ; ]\n',
    # separators of their own, on the outer body and right after the '['
    'a = [|x=1|y=2]\nb = [#x=1#y=2]\nc = [| s = [ x = 1 ; y = 2 ] | t = 3 ]\n',
    # repeated names (the first spelling kept, the last value), sets merging, a set replacing a value
    'a = [ x = 1 ; X = 2 ; x = "3" ]\nb = [ x = 1 ]\nB = [ y = 2 ]\nc = 5\nc = [ z = 1 ]\nd = [ q = 1 ]\nd = 4\n',
    # empty sets, blank space, CRLF line ends, a set as the last thing with no line break
    'a = []\nb = [ ]\r\nc = [\t]\r\nd = [ x = 1 ]',
    # names with '-' and digits first; values with '.', '/', '\\', '*', ':', '$'
    'a-b = [ 0x = 1 ; p = c:\\data\\x.txt ; r = 256:512*3 ; s = $a$ ]\n',
    # a dotted name for a one-line set and the set as a value of a dotted name
    'a.b = [ x = 1 ]\nc = [ d.e = [ f = 1 ] ]\n',
    # arrays of small sets and groups with quoted brackets inside (match() stepping over groups)
    'l = (\n  [ a = 1 ; s = "x]" ]:\n  [ a = 2 ; s = "(" ]:\n  { b = 3 }\n)\nm = { "}" : "]" }\nn = [ [a=1]:[b=2] ]\n',
    # errors inside one-line sets: each names the file and the line
    'ok = 1\na = [ x = 1 ; = 2 ]\n',
    'ok = 1\n\na = [ x = "abc ]\n',
    'ok = 1\na = [ x = 1 )\n',
    'ok = 1\na = [ x = 1 ; y = ]\n',
    'a = 1\nb = [ x = (1:2 ; y = 3 ]\n',
    'l = (\n  [ a = 1 ]:\n  [ b = 2 ):\n)\n',
    'include = [ x = 1 ]\n',
    'a = [ include = [ x = 1 ] ]\n',
    # brackets never closed, closed by the wrong kind, closed without an opening one
    'a = 1\nb = [ x = 1\n',
    'a = 1\nb = [\n  c = (1:2\n]\n',
    'a = 1\nb = x ]\n',
    'a = 1\nb = { x = [ y = 1 } ]\n',
    # quoted text spanning lines inside groups (not one-line sets), brackets inside those quotes
    'a = ( "x\n]" : [ b = "y\n)" ] )\nc = [ s = "p\nq" ; t = 1 ]\n',
]


@pytest.mark.parametrize("text", CASES)
def test_fast_paths_give_the_general_paths_tree(text, monkeypatch):
    fast = _outcome(text)
    _general(monkeypatch)
    assert _outcome(text) == fast


def test_one_line_set_values_lines_and_paths():
    cfg = parse_config('# head\n\nlayer = [ dim = 3 ; init = "uniform" ; bias ]\n'
                       'l2 = [ dim = 4 ; name = "a;b]" ]\n', file="net.cntk")
    layer = cfg("layer")
    assert isinstance(layer, ConfigParameters) and layer.line == 3 and layer.path == "layer"
    assert layer.to_dict() == {"dim": "3", "init": "uniform", "bias": "true"}
    dim = layer("dim")
    assert isinstance(dim, ConfigValue) and dim.as_int() == 3
    assert (dim.file, dim.line, dim.path, dim.quoted) == ("net.cntk", 3, "layer.dim", False)
    assert layer("init").quoted and layer("init").line == 3
    assert cfg("l2")("name") == "a;b]" and cfg("l2")("name").line == 4
    with pytest.raises(ConfigError) as e:
        cfg("l2")("name").as_int()
    assert (e.value.file, e.value.line, e.value.path) == ("net.cntk", 4, "l2.name")
    assert str(e.value).startswith("net.cntk:4: l2.name:")


def test_one_line_sets_merge_replace_and_see_their_parents():
    cfg = parse_config('v = 5\na = [ x = 1 ; y = $v$ ]\nA = [ z = 2 ; X = 3 ]\nb = 1\nb = [ c = 2 ]\n'
                       'd = [ e = 1 ]\nd = "s"\n')
    assert list(cfg.keys()) == ["v", "a", "b", "d"]
    assert cfg("a").to_dict() == {"x": "3", "y": "5", "z": "2"}
    assert cfg("a")("y") == "5" and cfg("a")("v") == "5"          # $v$ and lookups up to the root
    assert isinstance(cfg("b"), ConfigParameters) and cfg("b").to_dict() == {"c": "2"}
    assert cfg("d") == "s" and cfg("d").quoted


def test_items_the_fast_path_hands_over():
    cfg = parse_config('a = [ x = 1 ; verbose ]\nb = [ c.d = 1 ]\nc = [|p=1|q=2]\n'
                       'd = [ x = [ y = 1 ] ; z = 2 ]\ne = [ x = "p" ; ; y = 2 ; ]\n')
    assert cfg("a").to_dict() == {"x": "1", "verbose": "true"}
    assert cfg("b").to_dict() == {"c": {"d": "1"}}
    assert cfg("c").to_dict() == {"p": "1", "q": "2"}
    assert cfg("d").to_dict() == {"x": {"y": "1"}, "z": "2"}
    assert cfg("e").to_dict() == {"x": "p", "y": "2"}


def test_include_inside_a_one_line_set(tmp_path):
    (tmp_path / "inc.cntk").write_text("dim = 7\nname = inc\n")
    (tmp_path / "top.cntk").write_text("a = [ include = inc.cntk ; x = 1 ]\nb = [ INCLUDE=\"inc.cntk\" ]\n")
    cfg = load_config([f"configFile={tmp_path / 'top.cntk'}"])
    assert cfg("a").to_dict() == {"dim": "7", "name": "inc", "x": "1"}
    assert cfg("a")("dim").file == str(tmp_path / "inc.cntk") and cfg("a")("dim").line == 1
    assert "b" in cfg and cfg("b").to_dict() == {}       # the second include of a file is skipped


@pytest.mark.parametrize("text, line, message", [
    ('ok = 1\na = [ x = 1 ; = 2 ]\n', 2, "expected a parameter name before '='"),
    ('ok = 1\n\na = [ x = "abc ]\n', 3, "unterminated quoted string"),
    ('ok = 1\na = [ x = 1 )\n', 2, "expected ']' to close '['"),
    ('ok = 1\na = [ x = 1 ; y = ]\n', 2, "expected a value after 'y='"),
    ('l = (\n  [ a = 1 ]:\n  [ b = 2 ):\n)\n', 3, "expected ']' to close '['"),
    ('include = [ x = 1 ]\n', 1, "included file '[ x = 1 ]' not found"),
    ('a = 1\nb = [ x = 1\n', 2, "'[' opened here is never closed"),
    ('a = 1\nb = [\n  c = (1:2\n]\n', 4, "expected ')' to close '(' opened on line 3, found ']'"),
    ('a = 1\nb = { x = [ y = 1 } ]\n', 2, "expected ']' to close '[' opened on line 2, found '}'"),
])
def test_errors_name_the_file_and_line(text, line, message):
    with pytest.raises(ConfigError) as e:
        parse_config(text, file="bad.cntk")
    assert e.value.file == "bad.cntk" and e.value.line == line
    assert message in str(e.value)


def test_arrays_of_sets_with_quoted_brackets():
    cfg = parse_config('l = (\n  [ a = 1 ; s = "x]" ]:\n  [ a = 2 ; s = "(" ]:\n  { b = 3 }\n)\n'
                       'm = { "}" : "]" }\n')
    items = cfg("l").as_array()
    assert [type(i) for i in items] == [ConfigParameters] * 3
    assert [i.to_dict() for i in items] == [{"a": "1", "s": "x]"}, {"a": "2", "s": "("}, {"b": "3"}]
    assert [i.line for i in items] == [2, 3, 4]
    assert cfg("m").as_array().as_strs() == ["}", "]"]
