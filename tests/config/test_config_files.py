"""Includes, layered configuration files, command-line assignments, $var$ substitution and commands
(spec/configuration-files.txt: "Configuration override", "Layered Configuration Files", "Including
Configuration Files", "Stringize variables", "Commands and actions")."""
from __future__ import annotations

import os

import pytest

from cntkio.config import ConfigError, ConfigParameters, command_sections, load_config, parse_config


def write(dir_, name, text):
    path = os.path.join(dir_, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


# --- includes --------------------------------------------------------------------------------

def test_include_is_pasting_at_that_point(tmp_path):
    # spec: "if the first line of config2.txt was include=config1.txt, then cn.exe configFile=config2.txt
    # would be equivalent to running cn.exe configFile=config1.txt+config2.txt"
    write(tmp_path, "config1.txt", "a=1\nb=1\nsec=[x=1;y=1]\n")
    write(tmp_path, "config2.txt", "include=config1.txt\nb=2\nsec=[y=2]\n")
    write(tmp_path, "config2_noinc.txt", "b=2\nsec=[y=2]\n")
    one = load_config(["configFile=config2.txt"], base_dir=str(tmp_path))
    two = load_config(["configFile=config1.txt+config2_noinc.txt"], base_dir=str(tmp_path))
    assert one.to_dict() == two.to_dict() == {"a": "1", "b": "2", "sec": {"x": "1", "y": "2"}}


def test_include_position_matters(tmp_path):
    write(tmp_path, "base.cntk", "x=base\n")
    cfg = load_config(["configFile=" + write(tmp_path, "top.cntk", "x=top\ninclude=base.cntk\n")])
    assert cfg("x") == "base"


def test_include_chain_depth_first_relative_to_including_file(tmp_path):
    # spec: A includes B, B includes C: the full chain is resolved
    write(tmp_path, "A.cntk", "include=sub/B.cntk\norder=A\n")
    write(tmp_path, "sub/B.cntk", "include=deeper/C.cntk\norder=B\nb=1\n")
    write(tmp_path, "sub/deeper/C.cntk", "order=C\nc=1\n")
    cfg = load_config([f"configFile={tmp_path}/A.cntk"])
    assert cfg.to_dict() == {"order": "A", "b": "1", "c": "1"}
    # depth first: C's lines come before the rest of B, which come before the rest of A
    assert list(cfg.to_dict()) == ["order", "c", "b"]


def test_include_each_file_once(tmp_path):
    # spec: "A includes B and C, and B also includes C, then it will effectively only be included the
    # first time it is encountered"
    write(tmp_path, "A.cntk", "include=B.cntk\nv=A\ninclude=C.cntk\n")
    write(tmp_path, "B.cntk", "include=C.cntk\nv=B\n")
    write(tmp_path, "C.cntk", "v=C\nc=1\n")
    cfg = load_config([f"configFile={tmp_path}/A.cntk"])
    # C was pasted inside B (before v=B); the later include of C is skipped, so v=A stays
    assert cfg("v") == "A" and cfg("c") == "1"


def test_include_cycle_terminates(tmp_path):
    write(tmp_path, "A.cntk", "include=B.cntk\na=1\n")
    write(tmp_path, "B.cntk", "include=A.cntk\nb=1\n")
    assert load_config([f"configFile={tmp_path}/A.cntk"]).to_dict() == {"b": "1", "a": "1"}


def test_include_inside_a_section_and_quoted(tmp_path):
    write(tmp_path, "reader.cntk", "readerType=CNTKTextFormatReader\nfile=x.txt\n")
    cfg = parse_config('train=[\n  reader=[\n    include="reader.cntk"\n    file=y.txt\n  ]\n]',
                       base_dir=str(tmp_path))
    assert cfg("train")("reader").to_dict() == {"readerType": "CNTKTextFormatReader", "file": "y.txt"}


def test_include_plus_separated_list(tmp_path):
    write(tmp_path, "a.cntk", "a=1\nv=a\n")
    write(tmp_path, "b.cntk", "b=1\nv=b\n")
    cfg = parse_config("include=a.cntk+b.cntk\nc=1", base_dir=str(tmp_path))
    assert cfg.to_dict() == {"a": "1", "v": "b", "b": "1", "c": "1"}


def test_include_missing_file_error(tmp_path):
    with pytest.raises(ConfigError) as ei:
        parse_config("a=1\ninclude=nothere.cntk", base_dir=str(tmp_path), file="main.cntk")
    assert ei.value.line == 2 and "nothere.cntk" in str(ei.value) and "not found" in str(ei.value)


def test_errors_in_included_file_name_that_file(tmp_path):
    write(tmp_path, "bad.cntk", "ok=1\nbroken=[\n")
    with pytest.raises(ConfigError) as ei:
        parse_config("include=bad.cntk", base_dir=str(tmp_path))
    assert ei.value.file.endswith("bad.cntk") and ei.value.line == 2


# --- layered files and command-line overrides ------------------------------------------------

@pytest.fixture
def mnist(tmp_path):
    write(tmp_path, "config1.txt",
          "command=mnistTrain\nstderr=c:\\cntk\\log\\cntk\nmnistTrain=[\n action=train\n minibatchSize=32\n"
          " reader=[\n  readerType=UCIFastReader\n  file=c:\\cntk\\data\\mnist\\mnist_train.txt\n ]\n]\n")
    write(tmp_path, "config2.txt", "mnistTrain=[reader=[file=mynewfile.txt]]\n")
    write(tmp_path, "config3.txt", "var1=fromfile3\n")
    return str(tmp_path)


def test_layered_files_equivalent_forms(mnist):
    # spec: configFile=config1.txt+config2.txt == configFile=config1.txt configFile=config2.txt
    #       == configFile=config1.txt mnistTrain=[reader=[file=mynewfile.txt]]
    a = load_config(["configFile=config1.txt+config2.txt"], base_dir=mnist)
    b = load_config(["configFile=config1.txt", "configFile=config2.txt"], base_dir=mnist)
    c = load_config(["configFile=config1.txt", "mnistTrain=[reader=[file=mynewfile.txt]]"], base_dir=mnist)
    assert a.to_dict() == b.to_dict() == c.to_dict()
    assert a("mnistTrain")("reader")("file") == "mynewfile.txt"
    assert a("mnistTrain")("reader")("readerType") == "UCIFastReader"  # merged, not replaced


def test_command_line_overrides(mnist):
    # spec: cn.exe configFile=config.txt stderr=c:\temp\newpath ; mnistTrain=[minibatchSize=256]
    cfg = load_config(["configFile=config1.txt", "stderr=c:\\temp\\newpath", "mnistTrain=[minibatchSize=256]"],
                      base_dir=mnist)
    assert cfg("stderr") == "c:\\temp\\newpath"
    assert cfg("mnistTrain")("minibatchSize").as_int() == 256
    assert cfg("mnistTrain")("action") == "train"


def test_arguments_apply_in_order(mnist):
    # spec: configFile=config1.txt+config2.txt var1=value configFile=config3.txt, in order
    cfg = load_config(["configFile=config1.txt+config2.txt", "var1=value", "configFile=config3.txt"], base_dir=mnist)
    assert cfg("var1") == "fromfile3"
    cfg = load_config(["configFile=config3.txt", "var1=value"], base_dir=mnist)
    assert cfg("var1") == "value"


def test_load_config_from_string_and_dotted_override(mnist):
    cfg = load_config("configFile=config1.txt mnistTrain.reader.file=z.txt 'x=a b'", base_dir=mnist)
    assert cfg("mnistTrain.reader.file") == "z.txt" and cfg("x") == "a b"


def test_same_file_twice_is_an_error(mnist):
    # CNTK: "Cannot specify same config file multiple times at the command line."
    with pytest.raises(ConfigError, match="more than once"):
        load_config(["configFile=config1.txt", "configFile=config2.txt+config1.txt"], base_dir=mnist)


def test_include_of_a_file_given_on_the_command_line_is_skipped(tmp_path):
    write(tmp_path, "base.cntk", "x=1\n")
    write(tmp_path, "top.cntk", "x=2\ninclude=base.cntk\n")
    cfg = load_config(["configFile=base.cntk", "configFile=top.cntk"], base_dir=str(tmp_path))
    assert cfg("x") == "2"


def test_current_directory_argument(tmp_path):
    write(tmp_path, "sub/c.cntk", "x=1\n")
    cfg = load_config(["currentDirectory=sub", "configFile=c.cntk"], base_dir=str(tmp_path))
    assert cfg("x") == "1" and cfg("currentDirectory") == "sub"


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError) as ei:
        load_config(["configFile=nope.cntk"], base_dir=str(tmp_path))
    assert "nope.cntk" in str(ei.value) and ei.value.file == "<command line>"


def test_command_line_syntax_error_names_argument():
    with pytest.raises(ConfigError) as ei:
        load_config(["a=1", "b=[x=1"])
    assert ei.value.file == "<command line>" and ei.value.line == 2


# --- $var$ substitution ----------------------------------------------------------------------

def test_stringize_example():
    text = ("command=SpeechTrain\nstderr=$Root$\\$RunName$.log\nspeechTrain=[\n    modelPath=$Root$\\$RunName$.model\n"
            "    SGD=[\n        reader=[\n            features=[\n                type=Real\n"
            "                dim=$DataSet1_Dim$\n                file=$DataSet1_Features$\n]]]]\n"
            "Root=c:\\exp\nRunName=run1\nDataSet1_Dim=363\nDataSet1_Features=c:\\data\\f.scp\n")
    cfg = parse_config(text)
    assert cfg("stderr") == "c:\\exp\\run1.log"
    st = cfg("speechTrain")
    assert st("modelPath") == "c:\\exp\\run1.model"
    f = st("SGD")("reader")("features")
    assert f("dim").as_int() == 363 and f("file") == "c:\\data\\f.scp"


def test_substitution_chain():
    # spec: "if A=$B$, B=$C$, and C=HelloWorld.txt, then A would be resolved as HelloWorld.txt"
    cfg = parse_config("A=$B$\nB=$C$\nC=HelloWorld.txt")
    assert cfg("A") == "HelloWorld.txt"
    assert cfg.to_dict() == {"A": "HelloWorld.txt", "B": "HelloWorld.txt", "C": "HelloWorld.txt"}


def test_substitution_last_assignment_wins_even_from_command_line(tmp_path):
    # spec: "if Root is defined in config1.txt, but overridden at the command-line, then the value
    # specified at the command-line would be the one used"
    write(tmp_path, "config1.txt", "Root=c:\\a\nmodelPath=$Root$\\m.dnn\n")
    cfg = load_config(["configFile=config1.txt", "Root=d:\\b"], base_dir=str(tmp_path))
    assert cfg("modelPath") == "d:\\b\\m.dnn"
    cfg = parse_config("x=$v$\nv=1\nv=2")
    assert cfg("x") == "2"


def test_substitution_is_case_insensitive_and_scoped():
    # conformance README: sparse.cntk defines defMbSize and uses $defMBSize$
    cfg = parse_config("defMbSize=false\nt=[reader=[input=[f=[definesMbSize=$defMBSize$]]]]")
    assert cfg("t.reader.input.f.definesMbSize").as_bool() is False
    # a section's own values are visible to its values; a sibling section's are not
    cfg = parse_config("a=[v=1;w=$v$]\nb=[x=$v$]")
    assert cfg("a")("w") == "1"
    with pytest.raises(ConfigError) as ei:
        cfg("b")("x")
    assert ei.value.path == "b.x" and "undefined variable $v$" in str(ei.value)


def test_inner_definition_shadows_outer():
    cfg = parse_config("dir=/outer\ns=[dir=/inner;f=$dir$/x]\ng=$dir$/y")
    assert cfg("s")("f") == "/inner/x" and cfg("g") == "/outer/y"


def test_self_reference_reads_the_outer_value():
    # cntkio: file=$file$ inside a section means the enclosing sections' file
    cfg = parse_config("file=data.txt\ns=[file=$file$.bak]")
    assert cfg("s")("file") == "data.txt.bak"


def test_undefined_variable_suggests_closest_name():
    cfg = parse_config("RunName=r1\nlog=$RunNme$.log", file="x.cntk")
    with pytest.raises(ConfigError) as ei:
        cfg("log")
    e = ei.value
    assert e.path == "log" and e.line == 2 and "did you mean $RunName$?" in str(e)


def test_circular_reference_is_an_error():
    cfg = parse_config("a=$b$\nb=$a$")
    with pytest.raises(ConfigError, match="circular"):
        cfg("a")


def test_substitution_in_quoted_strings_and_arrays():
    cfg = parse_config('d=/data\nf="$d$/a b.txt"\narr=(;$d$/1;$d$/2)\nmbs=64\nsizes=$mbs$:$mbs$*2')
    assert cfg("f") == "/data/a b.txt"
    assert cfg("arr").as_array().as_strs() == ["/data/1", "/data/2"]
    assert cfg("sizes").as_array().as_ints() == [64, 64, 64]


def test_substitution_inside_array_of_sets_uses_each_sets_scope():
    cfg = parse_config("dir=/d\nds=([dir=/own;file=$dir$/a]:[file=$dir$/b])")
    a, b = cfg("ds").as_array()
    assert a("file") == "/own/a" and b("file") == "/d/b"


def test_variable_naming_a_section_copies_it():
    cfg = parse_config("common=[readerType=CNTKTextFormatReader;randomize=false]\nt=[top=1;reader=$common$]")
    r = cfg("t")("reader")
    assert isinstance(r, ConfigParameters)
    assert r.to_dict() == {"readerType": "CNTKTextFormatReader", "randomize": "false"}
    assert r("top") == "1" and r.path == "t.reader"


def test_dotted_variable():
    cfg = parse_config("paths=[root=/r]\nf=$paths.root$/x")
    assert cfg("f") == "/r/x"


def test_resolve_helper():
    cfg = parse_config("Root=/r\ns=[Run=7]")
    assert cfg("s").resolve("$Root$/$Run$.log") == "/r/7.log"


def test_dollar_without_variable_is_literal():
    assert parse_config("x=costs $5 or $")("x") == "costs $5 or $"


# --- command and action ----------------------------------------------------------------------

def test_command_sections_and_actions():
    cfg = parse_config("command=mnistTrain:mnistTest\nmnistTrain=[action=train]\nmnistTest=[action=eval]\n"
                       "both=[action=train:test]")
    cmds = command_sections(cfg)
    assert [(c.name, c.actions) for c in cmds] == [("mnistTrain", ["train"]), ("mnistTest", ["eval"])]
    assert cmds[0].section.path == "mnistTrain"
    cfg.insert("command", "both")
    assert command_sections(cfg)[0].actions == ["train", "test"]


def test_command_errors():
    with pytest.raises(ConfigError, match="'command' not found"):
        command_sections(parse_config("a=1"))
    with pytest.raises(ConfigError) as ei:
        command_sections(parse_config("command=mnistTrian\nmnistTrain=[action=train]"))
    assert "did you mean 'mnistTrain'?" in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        command_sections(parse_config("command=t\nt=[reader=[a=1]]", file="c.cntk"))
    assert ei.value.path == "t.action" and ei.value.file == "c.cntk"


def test_dump_resolves_variables_inside_arrays_of_sets():
    cfg = parse_config('dir=/d\nds=([dir=/own;file=$dir$/a]:[file=$dir$/b]:"s:t":plain)')
    printed = cfg.dump()
    assert "$" not in printed
    assert "file = /own/a" in printed and "file = /d/b" in printed
    assert parse_config(printed).to_dict() == cfg.to_dict() == {
        "dir": "/d", "ds": [{"dir": "/own", "file": "/own/a"}, {"file": "/d/b"}, "s:t", "plain"]}


def test_pickle_and_deepcopy_keep_the_tree():
    import copy
    import pickle

    cfg = parse_config("dir=/d\ns=[a=1;f=$dir$/x;ds=([k=$dir$])]", file="p.cntk")
    for clone in (pickle.loads(pickle.dumps(cfg)), copy.deepcopy(cfg)):
        assert clone.to_dict() == cfg.to_dict()
        a = clone("s")("a")
        assert (a.path, a.file, a.line, a.as_int()) == ("s.a", "p.cntk", 2, 1)
        assert clone("s")("ds").as_array()[0]("k") == "/d"


def test_action_may_come_from_the_root():
    # lookup rules apply to 'action' too (CNTK reads it with commandParams("action", ...))
    cmds = command_sections(parse_config("command=a:b\naction=eval\na=[x=1]\nb=[action=train]"))
    assert [(c.name, c.actions) for c in cmds] == [("a", ["eval"]), ("b", ["train"])]


def test_variables_in_include_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="not supported in include"):
        parse_config("d=x\ninclude=$d$/a.cntk", base_dir=str(tmp_path))


def test_from_dict_is_the_inverse_of_to_dict():
    tree = {"command": "t", "t": {"action": "train", "reader": {"file": "c:\\a b.txt", "input": {"f": {"dim": "3"}}},
                                   "lr": ["0.1", "0.01"], "ds": [{"type": "A"}, {"type": "B"}]}}
    cfg = ConfigParameters.from_dict(tree)
    assert cfg.to_dict() == tree
    assert cfg("t")("reader")("input")("f")("dim").as_int() == 3
    assert cfg("t")("reader")("input")("f")("file") == "c:\\a b.txt"  # parent lookup works
