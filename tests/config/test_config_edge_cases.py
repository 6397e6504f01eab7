"""Config edge cases (issue 18): bracketed lists of deserializers, errors deep in included files,
and the scanner that makes the parse linear (comments, quotes and line numbers as before)."""
import pytest

from cntkio.config import ConfigParameters, ConfigValue, load_config, parse_config
from cntkio.config.parser import MAX_NESTING
from cntkio.errors import ConfigError
from cntkio.readers import build_reader, reader_spec

BRACKETED = '''
reader = [
    randomize = false
    deserializers = [
        [
            type = "CNTKTextFormatDeserializer" ; file = "{a}"
            input = [ x = [ dim = 1 ; format = "dense" ] ]
        ]:[
            type = "CNTKTextFormatDeserializer"
            file = "{b}"
            input = [ y = [ dim = 2 ; format = "dense" ] ]
        ]
    ]
]
'''


def test_bracketed_list_of_deserializers_is_the_list(tmp_path):
    a, b = tmp_path / "a.ctf", tmp_path / "b.ctf"
    a.write_text("0 |x 1\n1 |x 2\n")
    b.write_text("0 |y 10 11\n1 |y 20 21\n")
    cfg = parse_config(BRACKETED.format(a=a, b=b))
    value = cfg("reader")("deserializers")
    assert isinstance(value, ConfigValue)            # an array, converted on demand
    items = value.as_array()
    assert [type(i) for i in items] == [ConfigParameters, ConfigParameters]
    assert items[1]("file") == str(b) and items[0]("input")("x")("dim").as_int() == 1
    spec = reader_spec(cfg("reader"))
    assert [d["file"] for d in spec.deserializers] == [str(a), str(b)]
    assert spec.stream_names == ["x", "y"]
    src = build_reader(cfg("reader"))
    mb = {k.name: v for k, v in src.next_minibatch(2).items()}
    assert mb["x"].asarray().reshape(-1).tolist() == [1, 2]
    assert mb["y"].asarray().reshape(2, 2).tolist() == [[10, 11], [20, 21]]


def test_bracketed_list_forms():
    cfg = parse_config("one = [ [a=1] ]\nbraces = [ {a=1}:{b=2} ]\nsep = [|[a=1]|[b=2]]\nset = [ a = [b=1] ]")
    assert [i("a") for i in cfg("one").as_array()] == ["1"]
    assert [list(i.keys()) for i in cfg("braces").as_array()] == [["a"], ["b"]]
    assert [list(i.keys()) for i in cfg("sep").as_array()] == [["a"], ["b"]]
    assert isinstance(cfg("set"), ConfigParameters) and cfg("set")("a")("b") == "1"   # a name first: a set
    assert isinstance(parse_config("e = [ ]")("e"), ConfigParameters)


def _chain(tmp_path, deepest: str) -> str:
    """top.cntk includes mid.cntk inside a section, which includes deep.cntk (``deepest``)."""
    (tmp_path / "deep.cntk").write_text(deepest)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mid.cntk").write_text("m = 1\ninner = [\n  include = ../deep.cntk\n]\n")
    (tmp_path / "top.cntk").write_text("command = a\na = [\n  action = x\n  include = sub/mid.cntk\n]\n")
    return str(tmp_path / "top.cntk")


def test_too_deep_nesting_in_an_included_file_names_the_file_and_line(tmp_path):
    n = MAX_NESTING + 50
    top = _chain(tmp_path, "x = 1\ny = 2\ndeep = " + "[a = " * n + "1" + "]" * n + "\n")
    with pytest.raises(ConfigError) as err:
        load_config([f"configFile={top}"])
    assert err.value.file == str(tmp_path / "deep.cntk") and err.value.line == 3
    assert f"nested too deeply (more than {MAX_NESTING} levels" in str(err.value)
    with pytest.raises(ConfigError) as err:        # the same text given directly
        parse_config("deep = " + "[a = " * n + "1" + "]" * n, file="direct.cntk")
    assert err.value.file == "direct.cntk" and err.value.line == 1


def test_nesting_up_to_the_limit_parses(tmp_path):
    n = MAX_NESTING - 6   # two sets (1 each) and two includes (2 each) above: the limit counts across files
    top = _chain(tmp_path, "deep = " + "[a = " * n + "1" + "]" * n + "\n")
    node = load_config([f"configFile={top}"])("a")("inner")("deep")
    for _ in range(n - 1):
        node = node("a")
    assert node("a") == "1"


def test_long_include_chain_is_an_error_naming_the_including_file(tmp_path):
    for i in range(150):
        (tmp_path / f"f{i}.cntk").write_text(f"v{i} = {i}\n" + (f"include = f{i + 1}.cntk\n" if i < 149 else ""))
    with pytest.raises(ConfigError) as err:
        load_config([f"configFile={tmp_path / 'f0.cntk'}"])
    assert (err.value.file, err.value.line) == (str(tmp_path / "f100.cntk"), 2)
    assert "nested too deeply" in str(err.value)
    assert load_config([f"configFile={tmp_path / 'f60.cntk'}"])("v149") == "149"   # 90 files: fine


@pytest.mark.parametrize("text,line", [
    ("x = 1\nbad = [ a = 1\n  b = [ c = 2 ] ] ]\n", 3),      # a stray closing bracket
    ("x = 1\n\ns = [\n  t = [\n    u = [ = 5 ]\n  ]\n]\n", 5),  # no name, three sets deep
    ('x = 1\ns = [\n  t = "open\n]\n', 3),                    # an unterminated quote
])
def test_syntax_error_deep_in_an_included_file_names_the_file_and_line(tmp_path, text, line):
    top = _chain(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config([f"configFile={top}"])
    assert (err.value.file, err.value.line) == (str(tmp_path / "deep.cntk"), line)


def test_value_error_deep_in_an_included_file_names_the_file_and_line(tmp_path):
    top = _chain(tmp_path, "x = 1\ns = [\n  t = [\n    n = 1:two:3\n  ]\n]\n")
    cfg = load_config([f"configFile={top}"])
    with pytest.raises(ConfigError) as err:
        [v.as_int() for v in cfg("a")("inner")("s")("t")("n").as_array()]
    assert (err.value.file, err.value.line) == (str(tmp_path / "deep.cntk"), 4)
    assert err.value.path == "a.inner.s.t.n[1]"


# --- the scanner: regular expressions instead of a loop per character ------------------------------
@pytest.mark.parametrize("text,expected", [
    ('a = "x # y"  # comment', {"a": "x # y"}),
    ("a = 1#INF\nb = 2 #c\n#d\nc = 3", {"a": "1#INF", "b": "2", "c": "3"}),
    ('a = "q"#not a comment\nb = 1', {"a": '"q"#not a comment', "b": "1"}),
    ("a = [ b = 1 ; c = \"#\" ] # x\n", {"a": {"b": "1", "c": "#"}}),
    ("a = 1\r\n# c\r\nb = 2\r", {"a": "1", "b": "2"}),
])
def test_comments_and_quotes(text, expected):
    assert parse_config(text).to_dict() == expected


def test_line_numbers_after_comments_and_in_any_order():
    cfg = parse_config("# head\n\na = 1   # x\nb = [\n  c = 2\n]\n# tail\nd = \"x\"\n", file="f.cntk")
    assert (cfg("d").line, cfg("b")("c").line, cfg("a").line, cfg("b").line) == (8, 5, 3, 4)


def test_unterminated_quote_keeps_the_rest_uncommented():
    with pytest.raises(ConfigError) as err:
        parse_config('a = 1\nb = "open # not a comment\nc = 2', file="q.cntk")
    assert err.value.line == 2 and "unterminated quoted string" in str(err.value)


def test_large_inline_arrays_parse_and_convert():
    values = [f"{i * 0.5:g}" for i in range(200000)]
    cfg = parse_config("w = " + ":".join(values) + "\nv = {\n" + "\n".join(values[:5000]) + "\n}\nz = 1\n")
    assert cfg("z").line == 5004
    assert [str(x) for x in cfg("w").as_array()] == values
    assert len(cfg("v").as_array()) == 5000


def test_a_brace_set_may_start_with_a_name_and_a_bracket():
    # CNTK's ParseValue ends a name at '=' or an opening bracket (Source/Common/Include/Config.h:809):
    # ImageDeserializers.cntk writes `transforms ( {...} : {...} )` inside a { } set, with no '='
    c = parse_config('features = { transforms ( { type = "Crop"; cropRatio = 0.8 } : { type = "Scale"; width = 2 } ) }\n'
                     'y = { a [ v = 1 ] }\nz = { b { w = 2 } }\nx = { 1 : 2 }\n')
    assert c.to_dict() == {"features": {"transforms": [{"type": "Crop", "cropRatio": "0.8"},
                                                       {"type": "Scale", "width": "2"}]},
                           "y": {"a": {"v": "1"}}, "z": {"b": {"w": "2"}}, "x": ["1", "2"]}
