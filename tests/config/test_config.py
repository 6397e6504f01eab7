"""The CNTK configuration language: values, arrays, parameter sets, comments, lazy typing, lookup.

Expected values come from spec/configuration-files.txt (quoted next to each test) and the reader
pages; the examples of that page each have a test in test_config_spec_examples.py.
"""
from __future__ import annotations

import math

import pytest

from cntkio.config import ConfigArray, ConfigError, ConfigParameters, ConfigValue, parse_config


# --- simple values and conversions -----------------------------------------------------------

def test_simple_value_is_a_string_until_converted():
    cfg = parse_config("deviceId=auto\nminibatchSize = 32\nlr=0.001\n")
    assert cfg("deviceId") == "auto"
    v = cfg("minibatchSize")
    assert isinstance(v, ConfigValue) and v == "32"
    assert v.as_int() == 32 and v.as_float() == 32.0
    assert cfg("lr").as_float() == 0.001


@pytest.mark.parametrize("text,expected", [("0", 0), ("-17", -17), ("+5", 5), ("1e3", 1000), ("2.0", 2),
                                           ("123456789012345678901", 123456789012345678901)])
def test_as_int(text, expected):
    assert parse_config(f"x={text}")("x").as_int() == expected


@pytest.mark.parametrize("text", ["1.5", "abc", '""', "1_000", "0x10", "1#INF"])
def test_as_int_rejects(text):
    with pytest.raises(ConfigError, match="expected an integer"):
        parse_config(f"x={text}")("x").as_int()


@pytest.mark.parametrize("text,expected", [("1e-10", 1e-10), ("-2.5", -2.5), (".5", 0.5), ("3.", 3.0),
                                           ("1.25E+2", 125.0), ("1#INF", math.inf), ("-1#INF", -math.inf),
                                           ("inf", math.inf)])
def test_as_float(text, expected):
    assert parse_config(f"x={text}")("x").as_float() == expected


def test_as_float_nan_forms():
    assert math.isnan(parse_config("x=1#QNAN")("x").as_float())
    assert math.isnan(parse_config("x=nan")("x").as_float())


@pytest.mark.parametrize("text", ["abc", "1.2.3", "1e", "1_0", "--1"])
def test_as_float_rejects(text):
    with pytest.raises(ConfigError, match="expected a floating-point number"):
        parse_config(f"x={text}")("x").as_float()


@pytest.mark.parametrize("text,expected", [("T", True), ("True", True), ("true", True), ("TRUE", True),
                                           ("1", True), ("F", False), ("False", False), ("false", False),
                                           ("0", False)])
def test_as_bool(text, expected):
    # spec: "boolean bool T/True/1, F/False/0"
    assert parse_config(f"x={text}")("x").as_bool() is expected


def test_bare_name_is_a_true_flag():
    # spec: "may be specified by existence or absence of a boolean parameter with no = or value"
    cfg = parse_config("[#parameter1=value1#parameter2=value2#boolparam]".join(["s=", ""]))
    assert cfg("s")("boolparam").as_bool() is True
    cfg = parse_config("keepDataInMemory\nx=1")
    assert cfg("keepDataInMemory").as_bool() is True


def test_empty_string_is_false():
    # CNTK's ConfigValue::operator bool: "" is false
    assert parse_config('x=""')("x").as_bool() is False


@pytest.mark.parametrize("text", ["yes", "2", "on", "Tru"])
def test_as_bool_rejects(text):
    with pytest.raises(ConfigError, match="expected a boolean"):
        parse_config(f"x={text}")("x").as_bool()


def test_quoted_string_quotes_removed_backslashes_kept():
    cfg = parse_config('file = "c:\\mydata\\SampleInput.txt" # comment\nname="a ; b # c"\nempty=""')
    assert cfg("file") == "c:\\mydata\\SampleInput.txt"
    assert cfg("name") == "a ; b # c"
    assert cfg("empty") == ""
    # a quoted value is one element, even with ':' in it
    assert cfg("file").as_array() == ["c:\\mydata\\SampleInput.txt"]


def test_unquoted_value_keeps_internal_spaces_and_trims_ends():
    cfg = parse_config("x =   a b  c   \ny=a=b")
    assert cfg("x") == "a b  c"
    assert cfg("y") == "a=b"


# --- arrays ----------------------------------------------------------------------------------

def test_colon_array_and_repeat():
    # spec: minibatchSize=256:512:512:512:1024 equals minibatchSize=256:512*3:1024
    a = parse_config("minibatchSize=256:512:512:512:1024")("minibatchSize").as_array()
    b = parse_config("minibatchSize=256:512*3:1024")("minibatchSize").as_array()
    assert isinstance(a, ConfigArray)
    assert a.as_ints() == b.as_ints() == [256, 512, 512, 512, 1024]


def test_array_alternate_separator_paren():
    # spec: files=(;c:\data.txt;c:\labels.txt)
    arr = parse_config("files=(;c:\\data.txt;c:\\labels.txt)")("files").as_array()
    assert arr.as_strs() == ["c:\\data.txt", "c:\\labels.txt"]


def test_array_alternate_separator_brace_with_repeat():
    # spec: "array={|c:\temp\new.txt|12*3|1e-12} ... there are 5 elements in the array, with three 12
    # values occupying the center 3 positions"
    arr = parse_config("array={|c:\\temp\\new.txt|12*3|1e-12}")("array").as_array()
    assert len(arr) == 5
    assert arr[0] == "c:\\temp\\new.txt"
    assert arr[1:4].__class__ is list and [v.as_int() for v in arr[1:4]] == [12, 12, 12]
    assert arr[4].as_float() == 1e-12


def test_array_braces_spanning_lines():
    # spec: "{\nvalue\nvalue\nvalue*#\n}" braces are required if new lines are used as separators
    cfg = parse_config("a={\n  1\n  2\n  3*2\n}\nb=1")
    assert cfg("a").as_array().as_ints() == [1, 2, 3, 3]
    assert cfg("b") == "1"


def test_array_mixed_types_and_quotes():
    # spec: array=10:"this is a test":1.25
    arr = parse_config('array=10:"this is a test":1.25')("array").as_array()
    assert arr[0].as_int() == 10 and arr[1] == "this is a test" and arr[2].as_float() == 1.25


def test_array_of_parameter_sets():
    cfg = parse_config("d=([a=1]:[a=2;b=x])\ne=[k=1]:[k=2]")
    arr = cfg("d").as_array()
    assert all(isinstance(x, ConfigParameters) for x in arr)
    assert [x("a").as_int() for x in arr] == [1, 2]
    assert arr[1]("b") == "x"
    assert [x("k").as_int() for x in cfg("e").as_array()] == [1, 2]
    # a single set where an array is expected is a one-element array
    single = parse_config("d=[a=1]")("d").as_array()
    assert len(single) == 1 and single[0]("a") == "1"


def test_array_repeat_of_parameter_set_gives_copies():
    arr = parse_config("d=([a=1]*2:[a=3])")("d").as_array()
    assert [x("a").as_int() for x in arr] == [1, 1, 3]
    assert arr[0] is not arr[1]


def test_array_custom_separator_choices():
    assert parse_config("x=(,a,b)")("x").as_array().as_strs() == ["a", "b"]
    assert parse_config("x={!a!b:c}")("x").as_array().as_strs() == ["a", "b:c"]
    # '-' right after '{' is a value, not a separator (a cntkio choice, see docs/config.md)
    assert parse_config("x={-1:-2}")("x").as_array().as_ints() == [-1, -2]
    assert parse_config("wordContext=0:-1")("wordContext").as_array().as_ints() == [0, -1]


def test_empty_array_elements_are_dropped():
    assert parse_config("x=a::b:")("x").as_array().as_strs() == ["a", "b"]
    assert parse_config("x=()")("x").as_array() == []
    cfg = parse_config("")
    cfg.insert("x", "")
    assert cfg("x").as_array() == []


def test_nested_array_stays_lazy():
    arr = parse_config("x=({1:2}:{3:4:5})")("x").as_array()
    assert [a.as_array().as_ints() for a in arr] == [[1, 2], [3, 4, 5]]


def test_as_array_explicit_separator():
    assert parse_config("x=a,b,c")("x").as_array(",").as_strs() == ["a", "b", "c"]


# --- parameter sets --------------------------------------------------------------------------

def test_parameter_set_semicolon_and_newline_separated():
    # spec: section1=[id=1;size=256]
    cfg = parse_config("section1=[id=1;size=256]\nsection2=[\n  a=1\n  b=2\n]")
    s1 = cfg("section1")
    assert isinstance(s1, ConfigParameters)
    assert s1("id").as_int() == 1 and s1("size").as_int() == 256
    assert cfg("section2").to_dict() == {"a": "1", "b": "2"}


def test_parameter_set_alternate_separators():
    # spec: name=[|parameter1=value1|parameter2=value2|parameter3=value3]
    cfg = parse_config("name=[|parameter1=value1|parameter2=value2|parameter3=value3]")
    assert cfg("name").to_dict() == {"parameter1": "value1", "parameter2": "value2", "parameter3": "value3"}
    # with '|' as separator, ';' is part of a value
    assert parse_config("n=[|a=x;y|b=2]")("n")("a") == "x;y"


def test_brace_form_is_a_parameter_set_when_it_starts_with_a_name():
    # ctf-text-format-reader: reader = { verbosity = 0 ; randomize = true; ... }
    cfg = parse_config('reader = { a = 1 ; b = "x" }\narr = {1:2}\nempty = {}')
    assert isinstance(cfg("reader"), ConfigParameters)
    assert cfg("reader").to_dict() == {"a": "1", "b": "x"}
    assert cfg("arr").as_array().as_ints() == [1, 2]
    assert cfg("empty").to_dict() == {}


def test_paren_brace_array_of_one_set():
    # ctf-text-format-reader: deserializers = ({ type = ... })
    cfg = parse_config('r = { deserializers = ({ type = "CTF" ; input = { f = {dim = 3} } }) }')
    (d,) = cfg("r")("deserializers").as_array()
    assert d("type") == "CTF" and d("input")("f")("dim").as_int() == 3
    assert d.path == "r.deserializers[0]"


def test_nested_parameter_sets_and_paths():
    cfg = parse_config("a=[b=[c=[d=4]]]")
    d = cfg("a")("b")("c")
    assert d.path == "a.b.c" and d("d").path == "a.b.c.d"
    assert cfg("a.b.c.d").as_int() == 4


def test_dotted_assignment_is_nested():
    cfg = parse_config("a=[b=[c=1;e=5]]\na.b.c=2\nx.y=3")
    assert cfg.to_dict() == {"a": {"b": {"c": "2", "e": "5"}}, "x": {"y": "3"}}


# --- repeated names --------------------------------------------------------------------------

def test_repeated_simple_value_last_wins():
    assert parse_config("x=1\nx=2")("x") == "2"


def test_repeated_parameter_sets_merge():
    # spec: params=[a=1;b=2;c=3] then params=[c=5;d=6;e=7] is params=[a=1;b=2;c=5;d=6;e=7]
    cfg = parse_config("params=[a=1;b=2;c=3]\nparams=[c=5;d=6;e=7]")
    assert cfg("params").to_dict() == {"a": "1", "b": "2", "c": "5", "d": "6", "e": "7"}


def test_repeated_nested_sets_merge_deeply():
    cfg = parse_config("t=[reader=[file=a;dim=3];sgd=[lr=1]]\nt=[reader=[file=b]]")
    assert cfg.to_dict() == {"t": {"reader": {"file": "b", "dim": "3"}, "sgd": {"lr": "1"}}}


def test_repeated_arrays_are_replaced_whole():
    # spec: "this append processing is not used for arrays elements, and the entire array will be replaced"
    cfg = parse_config("a=1:2:3\na=4\nb=(x:y)\nb=(z)")
    assert cfg("a").as_array().as_ints() == [4]
    assert cfg("b").as_array().as_strs() == ["z"]


def test_set_replaced_by_value_and_value_by_set():
    cfg = parse_config("a=[x=1]\na=5\nb=5\nb=[x=1]")
    assert cfg.to_dict() == {"a": "5", "b": {"x": "1"}}


def test_names_are_case_insensitive_first_spelling_kept():
    cfg = parse_config("defMbSize=false\nDEFMBSIZE=true\nSec=[a=1]\nsec=[b=2]")
    assert cfg("defmbsize").as_bool() is True
    assert cfg.to_dict() == {"defMbSize": "true", "Sec": {"a": "1", "b": "2"}}
    assert cfg.exists("DefMbSize") and "SEC" in cfg


# --- comments --------------------------------------------------------------------------------

def test_comments():
    # spec: "The # must be preceded by whitespace or be at the beginning of the line"
    text = ("#commands used will be appended the stderr name to create a path\n"
            "stderr=c:\\cntk\\log\\cntk # \"_mnistTrain_mnistTest.log\" would be appended\n"
            "# the parameter below is set to infinity, the # in 1#INF is not a comment marker\n"
            "var = 1#INF\n"
            "\t# indented comment\n"
            "s=[a=1 # comment inside a set\n b=2]\n")
    cfg = parse_config(text)
    assert cfg.to_dict() == {"stderr": "c:\\cntk\\log\\cntk", "var": "1#INF", "s": {"a": "1", "b": "2"}}
    assert cfg("var").as_float() == math.inf


def test_hash_inside_quotes_is_not_a_comment():
    assert parse_config('x="a #b"')("x") == "a #b"


def test_crlf_and_bom():
    cfg = parse_config("\ufeffa=1\r\nb=[c=2\r\nd=3]\r\n")
    assert cfg.to_dict() == {"a": "1", "b": {"c": "2", "d": "3"}}


# --- lookup ----------------------------------------------------------------------------------

def test_lookup_searches_parents():
    cfg = parse_config("precision=float\nt=[minibatchSize=32\nSGD=[lr=1]\nreader=[file=x]]")
    sgd = cfg("t")("SGD")
    assert sgd("minibatchSize").as_int() == 32
    assert sgd("precision") == "float"
    assert not sgd.exists_current("minibatchSize") and sgd.exists("minibatchSize")


def test_default_values():
    cfg = parse_config("t=[a=1]")
    t = cfg("t")
    assert t("b", "256").as_int() == 256
    assert t("b", 7).as_int() == 7
    assert t("b", True).as_bool() is True
    assert t("b", None) is None
    assert t("b", [1, 2]).as_array().as_ints() == [1, 2]
    assert t("a", "9").as_int() == 1
    assert t.get("zz") is None


def test_missing_parameter_error_names_path_file_line_and_suggestion():
    text = "mnistTrain=[\n  action=train\n  reader=[\n    file=x.txt\n  ]\n]\n"
    cfg = parse_config(text, file="my.cntk")
    with pytest.raises(ConfigError) as ei:
        cfg("mnistTrain")("reader")("fiel")
    e = ei.value
    assert e.path == "mnistTrain.reader.fiel"
    assert e.file == "my.cntk" and e.line == 3
    assert "did you mean 'file'?" in str(e)
    with pytest.raises(ConfigError) as ei:
        cfg("mnistTrain.reader.fiel")
    assert ei.value.path == "mnistTrain.reader.fiel" and "'file'" in str(ei.value)


def test_conversion_error_names_path_file_and_line():
    cfg = parse_config("a=1\nmnistTrain=[\n  reader=[\n    dim=abc\n  ]\n]", file="c.cntk")
    with pytest.raises(ConfigError) as ei:
        cfg("mnistTrain")("reader")("dim").as_int()
    e = ei.value
    assert (e.path, e.file, e.line) == ("mnistTrain.reader.dim", "c.cntk", 4)
    assert "expected an integer, found 'abc'" in str(e)
    assert str(e).startswith("c.cntk:4: mnistTrain.reader.dim:")


def test_parameter_set_where_a_value_is_expected():
    cfg = parse_config("a=[b=1]")
    with pytest.raises(ConfigError, match="expected an integer, found a parameter set"):
        cfg("a").as_int()


def test_line_numbers_of_array_elements():
    text = "x=1\nd=(\n  [a=1]:\n  [a=2\n   b=oops]\n)\n"
    cfg = parse_config(text, file="f.cntk")
    arr = cfg("d").as_array()
    assert arr[1].line == 4 and arr[1].path == "d[1]"
    with pytest.raises(ConfigError) as ei:
        arr[1]("b").as_int()
    assert ei.value.line == 5 and ei.value.path == "d[1].b"


# --- syntax errors ---------------------------------------------------------------------------

def test_unclosed_bracket_error():
    with pytest.raises(ConfigError) as ei:
        parse_config("a=1\nb=[\n c=2\n", file="x.cntk")
    assert ei.value.file == "x.cntk" and ei.value.line == 2
    assert "never closed" in str(ei.value) and "expected ']'" in str(ei.value)


def test_mismatched_bracket_error():
    with pytest.raises(ConfigError) as ei:
        parse_config("a=([b=1)\n", file="x.cntk")
    assert "expected ']' to close '[' opened on line 1, found ')'" in str(ei.value)


def test_stray_closing_bracket_error():
    with pytest.raises(ConfigError) as ei:
        parse_config("a=1\n]\n", file="x.cntk")
    assert ei.value.line == 2 and "unexpected ']'" in str(ei.value)


def test_unterminated_quote_error():
    with pytest.raises(ConfigError, match="unterminated quoted string"):
        parse_config('a="abc\nb=1')


def test_missing_name_error():
    with pytest.raises(ConfigError) as ei:
        parse_config("a=1\n=5", file="x.cntk")
    assert ei.value.line == 2 and "expected a parameter name" in str(ei.value)


def test_unnamed_set_in_set_is_an_error():
    # a set whose body starts with a name: an unnamed set after it is an error ("a=[[b=1]]", a
    # body that starts with a bracket group, is the bracketed array of CNTK's configs)
    with pytest.raises(ConfigError, match="expected 'name=value'"):
        parse_config("a=[x=1\n[b=1]]")


# --- insert / exists / to_dict ---------------------------------------------------------------

def test_insert_replaces_values_and_merges_sets():
    # spec: Insert replaces a value "unless the value is itself another ConfigParameters instance, or
    # string representation surrounded by [] square braces, in which case the parameters are merged"
    cfg = parse_config("x=1\nr=[a=1;b=2]")
    cfg.insert("x", "2")
    cfg.insert("r", "[b=3;c=4]")
    cfg.insert("r", parse_config("d=5"))
    cfg.insert("r", {"e": 6, "f": [1, "a:b"], "g": {"h": True}})
    assert cfg.to_dict() == {"x": "2", "r": {"a": "1", "b": "3", "c": "4", "d": "5", "e": "6",
                                             "f": ["1", "a:b"], "g": {"h": "true"}}}
    cfg.insert("y=7")
    cfg.insert("r=[z=8]")
    assert cfg("y").as_int() == 7 and cfg("r")("z").as_int() == 8 and cfg("r")("a").as_int() == 1


def test_insert_python_values():
    cfg = ConfigParameters()
    cfg.insert("f", 1.5)
    cfg.insert("b", False)
    cfg.insert("l", ["c:\\x", "y"])
    assert cfg("f").as_float() == 1.5 and cfg("b").as_bool() is False
    assert cfg("l").as_array().as_strs() == ["c:\\x", "y"]


def test_inserted_set_is_a_copy_and_reparented():
    src = parse_config("a=1")
    cfg = parse_config("top=9\ns=[]")
    cfg("s").insert("sub", src)
    src.insert("a", "2")
    sub = cfg("s")("sub")
    assert sub("a") == "1" and sub("top") == "9" and sub.path == "s.sub"


def test_remove():
    cfg = parse_config("a=1\nb=2")
    cfg.remove("A")
    assert cfg.keys() == ["b"]


def test_to_dict_lists_only_for_array_literals():
    cfg = parse_config('a=1:2\nb=(1:2)\nc=[x=1]:[x=2]\nd=10:"t":1\ne="q:r"\nf={|p|q}')
    assert cfg.to_dict() == {"a": "1:2", "b": ["1", "2"], "c": [{"x": "1"}, {"x": "2"}],
                             "d": ["10", "t", "1"], "e": "q:r", "f": ["p", "q"]}


def test_configvalue_is_a_str():
    v = parse_config("action=train")("action")
    assert v == "train" and v.upper() == "TRAIN" and isinstance(v, str)
    assert v.as_str() == "train" and type(v.as_str()) is str


def test_include_is_a_reserved_name():
    for text in ("include", "include.a=1", "a.include=1"):
        with pytest.raises(ConfigError, match="include"):
            parse_config(text)
    with pytest.raises(ConfigError, match="reserved"):
        parse_config("").insert("include", "x")


def test_dump_of_a_value_starting_with_hash():
    cfg = parse_config("a=#x\nb=1#INF")
    assert cfg.to_dict() == {"a": "#x", "b": "1#INF"}
    assert parse_config(cfg.dump()).to_dict() == cfg.to_dict()


def test_missing_value_is_an_error():
    # CNTK: "ParseValue: No value given for 'x'"
    with pytest.raises(ConfigError) as ei:
        parse_config("a=1\nx=   # nothing\n", file="v.cntk")
    assert ei.value.line == 2 and ei.value.path == "x" and 'x=""' in str(ei.value)


def test_name_directly_followed_by_a_bracket():
    # CNTK's ParseValue ends the name at '=' or an opening bracket: reader[...] is reader=[...]
    cfg = parse_config('reader[file=a.txt]\nlist(1:2)\ns"quoted text"')
    assert cfg.to_dict() == {"reader": {"file": "a.txt"}, "list": ["1", "2"], "s": "quoted text"}


def test_default_keyword_selects_the_consumers_default():
    # CNTK's ConfigParameters::TryFind: a value "default" means "use the default value"
    cfg = parse_config("randomize=default\nt=[mbs=default]\nmbs=7")
    assert cfg("randomize", "true").as_bool() is True
    assert cfg("t")("mbs", 32).as_int() == 32  # not the parent's 7
    with pytest.raises(ConfigError, match="'default' and no default value"):
        cfg("randomize")
    assert cfg.to_dict()["randomize"] == "default"


def test_dashed_variable_names():
    assert parse_config("my-dir=/d\nf=$my-dir$/x")("f") == "/d/x"


def test_deep_nesting_is_a_config_error():
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_config("a=" + "[b=" * 2000 + "1" + "]" * 2000)
    cfg = parse_config("a=" + "[b=" * 50 + "1" + "]" * 50)
    assert cfg("a" + ".b" * 50).as_int() == 1


def test_huge_repeat_count_is_refused():
    with pytest.raises(ConfigError, match="repeat count 10000000000 is too large"):
        parse_config("lr=0.1*10000000000")("lr").as_array()
    assert len(parse_config("lr=0.1*1000")("lr").as_array()) == 1000
