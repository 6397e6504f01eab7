"""cntkio.values: the one conversion of CNTK option values, each error naming the option."""
import math
import os

import numpy as np
import pytest

from cntkio.errors import ConfigError
from cntkio.values import (MAX_REPEAT, check_int, split_repeat, to_array, to_bool, to_choice, to_dims,
                           to_float, to_int, to_pair, to_path, to_range, to_str)


def raises(fn, *args, match, option="opt.key", **kw):
    with pytest.raises(ConfigError) as info:
        fn(*args, **kw)
    assert info.value.path == option
    assert match in str(info.value), str(info.value)
    return info.value


# --- booleans ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("t", True), ("T", True), ("true", True), ("True", True), ("TRUE", True), ("1", True), (" true ", True),
    ("f", False), ("F", False), ("false", False), ("False", False), ("FALSE", False), ("0", False),
    ("", False),                                   # CNTK's ConfigValue::operator bool
    (True, True), (False, False), (1, True), (0, False), (np.bool_(True), True), (np.int64(0), False),
])
def test_to_bool_accepts(value, expected):
    assert to_bool(value, "opt.key") is expected


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "2", "Tru", "maybe", 2, -1, 0.5, None, {}])
def test_to_bool_rejects_naming_the_option(value):
    e = raises(to_bool, value, "opt.key", match="expected a boolean, found ")
    assert e.hint and "true or false" in e.hint


def test_to_bool_error_carries_file_and_line():
    with pytest.raises(ConfigError) as info:
        to_bool("maybe", "r.frameMode", file="a.cntk", line=7)
    assert str(info.value).startswith("a.cntk:7: r.frameMode: expected a boolean, found 'maybe'")


# --- integers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("0", 0), ("-17", -17), ("+5", 5), (" 42 ", 42), ("1e3", 1000), ("2.0", 2), ("123456789012345678901",
                                                                           123456789012345678901),
    (7, 7), (np.int32(9), 9), (3.0, 3), (np.float32(4.0), 4),
])
def test_to_int_accepts(value, expected):
    result = to_int(value, "opt.key")
    assert result == expected and type(result) is int


@pytest.mark.parametrize("value,found", [
    ("1.5", "'1.5'"), ("abc", "'abc'"), ("", "''"), ("1_000", "'1_000'"), ("0x10", "'0x10'"),
    ("1#INF", "'1#INF'"), (True, "True"), (2.5, "2.5"), (np.float64(2.5), "2.5"), (math.inf, "inf"),
    ({"a": 1}, "a parameter set [...]"), ([1, 2], "an array of 2 values"), (None, "None"),
])
def test_to_int_rejects_naming_the_option(value, found):
    raises(to_int, value, "opt.key", match=f"expected an integer, found {found}")


def test_to_int_minimum():
    assert to_int("0", "opt.key", minimum=0) == 0
    raises(to_int, "0", "opt.key", minimum=1, match="expected an integer >= 1, found 0")
    raises(to_int, -1, "opt.key", minimum=0, match="expected an integer >= 0, found -1")


# --- floats -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("1e-3", 1e-3), ("1e-10", 1e-10), ("-2.5", -2.5), (".5", 0.5), ("3.", 3.0), ("1.25E+2", 125.0),
    ("1#INF", math.inf), ("-1#INF", -math.inf), ("inf", math.inf), ("Infinity", math.inf),
    ("-inf", -math.inf), (2, 2.0), (np.float32(0.5), 0.5), (0.25, 0.25),
])
def test_to_float_accepts(value, expected):
    assert to_float(value, "opt.key") == expected


@pytest.mark.parametrize("value", ["nan", "1#QNAN", "1#IND", "-nan"])
def test_to_float_nan_spellings(value):
    assert math.isnan(to_float(value, "opt.key"))


@pytest.mark.parametrize("value", ["abc", "1.2.3", "1e", "1_0", "--1", "", True, None, [1.0]])
def test_to_float_rejects_naming_the_option(value):
    raises(to_float, value, "opt.key", match="expected a floating-point number, found ")


# --- strings and choices ----------------------------------------------------------------------

def test_to_str_and_choice():
    assert to_str("  a b ", "opt.key") == "a b"
    raises(to_str, {"x": 1}, "opt.key", match="expected a single value, found a parameter set")
    assert to_choice("Dense", "opt.key", ("dense", "sparse")) == "dense"
    assert to_choice(" DOUBLE ", "opt.key", ("float", "double")) == "double"
    raises(to_choice, "csr", "opt.key", ("dense", "sparse"), match="expected dense or sparse, found 'csr'")
    raises(to_choice, "x", "opt.key", ("a", "b", "c"), match="expected a, b or c, found 'x'")


# --- arrays -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("256:512*3:1024", ["256", "512", "512", "512", "1024"]),
    ("0.8*2:0.2", ["0.8", "0.8", "0.2"]),
    ("(;c:\\a.txt;c:\\b.txt)", ["c:\\a.txt", "c:\\b.txt"]),
    ("{|c:\\temp\\new.txt|12*3|1e-12}", ["c:\\temp\\new.txt", "12", "12", "12", "1e-12"]),
    ("(a:b)", ["a", "b"]),
    ("{-1:2}", ["-1", "2"]),                   # '-' starts a value, it is no separator
    ("a::b:", ["a", "b"]),                     # empty elements dropped
    ("x*0:y", ["y"]),
    ("a*b", ["a*b"]),                          # a repeat needs digits after '*'
    ("*2", ["*2"]),                            # ... and a value before it
    ("", []),
    (["a", ["b", "c"], 3], ["a", "b", "c", 3]),  # a list is already split (nested ones flattened)
    (["x*3"], ["x*3"]),
    ((1, 2), [1, 2]),
    (5, [5]),
])
def test_to_array(value, expected):
    assert to_array(value, "opt.key") == expected


def test_to_array_converts_items_naming_the_element():
    assert to_array("1:2*2", "opt.key", item=to_int) == [1, 2, 2]
    assert to_array("0.5:1#INF", "opt.key", item=to_float) == [0.5, math.inf]
    raises(to_array, "1:x", "opt.key", item=to_int, option="opt.key[1]",
           match="expected an integer, found 'x'")


def test_split_repeat():
    assert split_repeat("v*3") == ("v", 3)
    assert split_repeat("v * 3") == ("v", 3)
    assert split_repeat("v*1") == ("v", 1)
    assert split_repeat("v") == ("v", None)
    assert split_repeat("v*x") == ("v*x", None)
    assert split_repeat("[a=1]*2", star=5) == ("[a=1]", 2)
    raises(split_repeat, f"1e-3*{MAX_REPEAT + 1}", "opt.key", match="repeat count")


# --- pairs, ranges, dims ----------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [("3", (3, 3)), (3, (3, 3)), ("2:5", (2, 5)), ((4, 1), (4, 1)),
                                            ([7], (7, 7))])
def test_to_pair(value, expected):
    assert to_pair(value, "opt.key") == expected


def test_to_pair_rejects():
    raises(to_pair, "1:2:3", "opt.key", match="expected a pair (one value or l:r), found '1:2:3'")
    raises(to_pair, "1:x", "opt.key", match="expected an integer, found 'x'")
    raises(to_pair, "", "opt.key", match="expected a pair")


@pytest.mark.parametrize("value,expected", [("0.08:1", (0.08, 1.0)), ("0.875", (0.875, 0.875)),
                                            ((0.4, 0.875), (0.4, 0.875)), (1, (1.0, 1.0))])
def test_to_range(value, expected):
    assert to_range(value, "opt.key") == expected


def test_to_range_rejects():
    raises(to_range, "1:0.5", "opt.key", match="lo <= hi, found 1.0:0.5")
    raises(to_range, "a:1", "opt.key", match="expected a floating-point number, found 'a'")
    assert to_range("1:3", "opt.key", item=to_int) == (1, 3)


@pytest.mark.parametrize("value,expected", [("28:28:1", (28, 28, 1)), (784, (784,)), ("10", (10,)),
                                            ([3, 2], (3, 2)), ((np.int64(5),), (5,))])
def test_to_dims(value, expected):
    assert to_dims(value, "opt.key") == expected


def test_to_dims_rejects():
    raises(to_dims, "28:0", "opt.key", match="expected an integer >= 1, found 0")
    raises(to_dims, "x", "opt.key", match="expected an integer, found 'x'")
    raises(to_dims, [], "opt.key", match="empty shape")


# --- paths ------------------------------------------------------------------------------------

def test_to_path(tmp_path):
    base = str(tmp_path)
    assert to_path("data.txt", "opt.key") == "data.txt"                  # relative to the cwd
    assert to_path("data.txt", "opt.key", base) == os.path.join(base, "data.txt")
    absolute = os.path.join(base, "x", "y.txt")
    assert to_path(absolute, "opt.key", "/elsewhere") == absolute
    assert to_path(tmp_path / "z.txt", "opt.key") == os.path.join(base, "z.txt")
    raises(to_path, "", "opt.key", match="expected a file path, found ''")
    raises(to_path, 5, "opt.key", match="expected a file path, found 5")


# --- Python API arguments ---------------------------------------------------------------------

def test_check_int_messages():
    assert check_int("12", "max_samples", owner="MinibatchSource") == 12
    assert check_int(np.int64(3), "max_errors") == 3
    with pytest.raises(TypeError, match=r"^MinibatchSource: max_samples must be an int, got 'x'$"):
        check_int("x", "max_samples", owner="MinibatchSource")
    with pytest.raises(TypeError, match=r"^max_errors must be an int, got None$"):
        check_int(None, "max_errors")
    with pytest.raises(ValueError, match=r"^MinibatchSource: max_sweeps must be >= 0, got -1$"):
        check_int(-1, "max_sweeps", owner="MinibatchSource")
    assert check_int(-1, "offset", minimum=None) == -1


# --- the callers use it -----------------------------------------------------------------------

def test_config_values_and_ctf_options_share_the_conversion():
    from cntkio.config import parse_config
    from cntkio.deserializers.ctf.deserializer import parse_options
    cfg = parse_config("a=T\nb=1e3\nc=yes", file="x.cntk")
    assert cfg("a").as_bool() is True and cfg("b").as_int() == 1000
    with pytest.raises(ConfigError) as info:
        cfg("c").as_bool()
    assert str(info.value).startswith("x.cntk:3: c: expected a boolean, found 'yes'")
    opts = parse_options({"file": "a", "input": {"f": {"dim": "2:3", "definesMBSize": "T"}},
                          "cacheIndex": "F", "maxErrors": "1e2"})
    assert opts["streams"][0].shape == (2, 3) and opts["defining_stream"] == 0
    assert opts["cache_index"] is False and opts["max_errors"] == 100


def test_reader_section_errors_name_file_and_line():
    from cntkio.config import parse_config
    from cntkio.readers import as_section
    cfg = parse_config("r=[\n  frameMode=maybe\n  n=x\n]", file="r.cntk")
    sec = as_section(cfg("r"))
    with pytest.raises(ConfigError) as info:
        sec.bool("frameMode")
    assert str(info.value).startswith("r.cntk:2: r.frameMode: expected a boolean, found 'maybe'")
    with pytest.raises(ConfigError) as info:
        sec.int("n")
    assert (info.value.file, info.value.line, info.value.path) == ("r.cntk", 3, "r.n")
    assert sec.list("missing", None) is None
