"""The configuration syntax CNTK's own Examples and EndToEnd configs use (issue 28): BrainScript
sections that are not configuration text, `//` line comments, a bracket group at the top level."""
import pytest

from cntkio.config import ConfigParameters, ConfigValue, parse_config
from cntkio.config.parser import is_brainscript_key
from cntkio.errors import ConfigError

# Tests/EndToEndTests/Speech/DNN/cntk.cntk: an ExperimentalNetworkBuilder next to the
# SimpleNetworkBuilder used, its if/then/else on three lines
DNN = """
speechTrain = [
    action = "train"
    SimpleNetworkBuilder = [ layerSizes = 363:512:132 ]
    ExperimentalNetworkBuilder = [    // the same as above but with BS. Not active
        layerSizes = 363:512:512:132
        featNorm = if applyMeanVarNorm
                   then MeanVarNorm(features)
                   else features
        models = [| a; b |]
        model = Sequential
        (
            DenseLayer {10}
        )
    ]
    BrainScriptNetworkBuilder_disabled = [
        include "Shared.bs"
        z = x
    ]
]
"""


def test_brainscript_sections_that_are_not_configuration_are_kept_as_text():
    cfg = parse_config(DNN)
    cmd = cfg("speechTrain")
    assert isinstance(cmd("SimpleNetworkBuilder"), ConfigParameters)
    exp = cmd("ExperimentalNetworkBuilder")
    assert isinstance(exp, ConfigValue) and not isinstance(exp, ConfigParameters)
    assert exp.lstrip().startswith("[") and "then MeanVarNorm(features)" in exp and "[| a; b |]" in exp
    assert exp.line == 5                                    # where it was written, for the builder's read-back
    # a BrainScript include is BrainScript's (Shared.bs does not exist): no config include, no error
    assert cmd("BrainScriptNetworkBuilder_disabled").keys() == ["z"]


def test_a_brainscript_section_that_reads_as_configuration_stays_a_set():
    cfg = parse_config("t = [ BrainScriptNetworkBuilder = [ a = 1\n b = x ] ]")
    assert cfg("t")("BrainScriptNetworkBuilder")("a") == "1"


def test_which_keys_hold_brainscript():
    assert is_brainscript_key("BrainScriptNetworkBuilder") and is_brainscript_key("ExperimentalNetworkBuilder")
    assert is_brainscript_key("BrainScriptNetworkBuilder_plain") and is_brainscript_key("a.brainscriptnetworkbuilder")
    assert not is_brainscript_key("NDLNetworkBuilder") and not is_brainscript_key("SimpleNetworkBuilder")


def test_other_sections_still_report_their_errors_when_the_file_is_read():
    with pytest.raises(ConfigError, match=r"expected 'name=value' or a flag name, found 'then x'"):
        parse_config("reader = [\n  a = if b\n  then x\n]")


def test_a_line_comment_with_two_slashes():
    # Tests/EndToEndTests/Speech/LSTM/cntk.cntk line 9
    cfg = parse_config('modelSelector = 1\n\n// Note: These options are overridden from the command line.\n'
                       'frameMode = false\nurl = "http://x//y"\npath = a//b\n')
    assert sorted(cfg.keys()) == ["frameMode", "modelSelector", "path", "url"]
    assert cfg("url") == "http://x//y" and cfg("path") == "a//b"      # only at the start of a line


def test_a_bracket_group_at_the_top_level_is_flattened():
    # Tests/EndToEndTests/Examples/Image/Regression/RegrSimple/run-test: "[command=TrainConvNet:Test]"
    cfg = parse_config("command = a\nx = 1\n[command=TrainConvNet:Test ; y = 2]")
    assert cfg("command") == "TrainConvNet:Test" and cfg("y") == "2" and cfg("x") == "1"


def test_a_root_section_looked_up_from_a_command_sees_the_command():
    from cntkio.actions._params import get_str, section
    cfg = parse_config("SGD = [ epochSize = 1 ]\ncmd = [ modelPath = m.dnn ; SGD2 = 1 ]")
    sgd = section(cfg("cmd"), "SGD")
    assert get_str(sgd, "modelPath") == "m.dnn" and get_str(sgd, "epochSize") == "1"
    assert not cfg("SGD").exists("modelPath")               # the root's own set is unchanged


def test_a_quoted_list_of_numbers_splits_as_cntk_splits_it():
    from cntkio.actions._params import get_list
    cfg = parse_config('v = 10\nlayerSizes = "$v$:150:200:$v$"\nfile = "c:\\\\a.txt"')
    assert get_list(cfg, "layerSizes") == ["10", "150", "200", "10"]
    assert get_list(cfg, "file") == ["c:\\\\a.txt"]


def test_command_line_arguments_join_into_one_text_as_cntk_joins_them():
    # Tests/EndToEndTests/Speech/HTKDeserializers/TIMIT/WriteBottleneck/run-test:28 passes its extra
    # arguments unquoted, so the shell splits this override at its spaces; CNTK joins every argument
    # that is not configFile= with newlines before parsing (ConfigParameters::ParseCommandLine,
    # Source/Common/Config.cpp:52), so the brackets close in a later argument
    from cntkio.config import load_config
    line = ('TIMIT_WriteBottleneck=[reader=[deserializers=([type="HTKFeatureDeserializer" module="HTKDeserializers" '
            'input=[features=[dim=363 scpFile="$ScpDir$/TIMIT.core.scp.fbank.fullpath.rnn"]]])]] ScpDir=/data')
    cfg = load_config(line.split())
    des = cfg("TIMIT_WriteBottleneck")("reader")("deserializers").as_array()
    assert len(des) == 1
    first = des[0]
    assert str(first("type")) == "HTKFeatureDeserializer"
    assert str(first("input")("features")("scpFile")) == "/data/TIMIT.core.scp.fbank.fullpath.rnn"
    assert int(first("input")("features")("dim")) == 363
    # a bracket never closed is still an error at the argument that opened it
    with pytest.raises(ConfigError, match=r"<command line>:2: '\[' opened here is never closed"):
        load_config(["a=1", "b=[c=1", "d=2"])
