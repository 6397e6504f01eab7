"""A network written inline in a config file is read by BrainScript's lexical rules (the shared
lexer, cntkio.config.lexer): '...' strings holding '#', brackets or '//', and BrainScript comments
holding brackets or quotes, mean what they mean in a .bs file; $var$ is substituted outside the
comments; errors keep the file's line and column."""
import pytest

from cntkio.networks.brainscript import BrainScriptError
from cntkio.networks.brainscript.builder import evaluate_network
from cntkio.networks.brainscript.config import build_from_config, builder_source
from cntkio.config import load_config_file

NET = """dim = 3
t = [
    action = "train"  # a config comment
    BrainScriptNetworkBuilder = {
        s = 'a # b'            # a config comment after it
        u = 'x // y /* z'      // a BrainScript comment naming $undefinedVariable$ and a ( bracket
        v = '{}' + ")" + '(' + '}'
        w = "it's" + ' # }'
        d = $dim$ + 1
        /* a block comment } with a [ bracket and a " quote
           over two lines */
        x = Input {d}
        z = LinearLayer {2} (x)
        criterionNodes = (z)
    }
    after = 5
]
"""


def members(cfg, names="suvwd"):
    """The command ``t`` of config file ``cfg``, its network's members ``names``, and where the
    network's text begins (line, column)."""
    cmd = load_config_file(str(cfg))("t")
    text, file, line, col, expr, base = builder_source(cmd)
    ev, rec = evaluate_network(text, file=file, line=line, col=col, expression=expr, base_dir=base)
    return cmd, {n: rec.get(n, ev, None) for n in names}, (line, col)


def test_strings_and_comments_of_an_inline_network(tmp_path):
    cfg = tmp_path / "net.cntk"
    cfg.write_text(NET)
    cmd, got, _ = members(cfg)
    assert got == {"s": "a # b", "u": "x // y /* z", "v": "{})(}", "w": "it's # }", "d": 4}
    assert str(cmd("after")) == "5"                 # the config around the network is intact
    net = build_from_config(cmd)
    assert net.graph.groups["criterion"] == ["z"]
    assert tuple(net.tensor("z.W").shape) == (2, 4)


def test_the_value_form_is_read_the_same_way(tmp_path):
    cfg = tmp_path / "value.cntk"
    cfg.write_text("t = [\n  BrainScriptNetworkBuilder = (new ComputationNetwork {\n"
                   "    s = '}' + 'a # b'   // ) comment\n    x = Input {5} ; criterionNodes = (x)\n  })\n]\n")
    assert members(cfg, "s")[1] == {"s": "}a # b"}


def test_errors_after_such_strings_keep_line_and_column(tmp_path):
    cfg = tmp_path / "bad.cntk"
    cfg.write_text("t = [\n  BrainScriptNetworkBuilder = {\n    s = 'a # b' ; q = '}'\n"
                   "    x = Input {4}\n    z = DenseLayr {3} (x)\n  }\n]\n")
    cmd = load_config_file(str(cfg))("t")
    with pytest.raises(BrainScriptError) as e:
        build_from_config(cmd)
    assert str(e.value).startswith(f"{cfg}:5:9: undefined name 'DenseLayr'")
    cfg.write_text("t = [\n  BrainScriptNetworkBuilder = {\n    s = 'a # b' ; q = c ? d\n  }\n]\n")
    with pytest.raises(BrainScriptError) as e:
        build_from_config(load_config_file(str(cfg))("t"))
    assert str(e.value) == f"{cfg}:3:25: unexpected character '?'"


def test_a_single_quoted_string_holding_a_double_quote(tmp_path):
    cfg = tmp_path / "q.cntk"
    for net in ("(new ComputationNetwork {\n    s = 'a\"b' + 'c' # x\"\n    x = Input {5} ; criterionNodes = (x)\n  })",
                "{\n    s = 'a\"b' + 'c' # x\"\n    x = Input {5} ; criterionNodes = (x)\n  }"):
        cfg.write_text(f"t = [\n  BrainScriptNetworkBuilder = {net}\n  after = 7\n]\n")
        cmd, got, where = members(cfg, "s")
        assert str(cmd("after")) == "7"
        assert got == {"s": 'a"bc'}
        assert where == ((2, 31) if net.startswith("(") else (2, 32))    # at the "(", after the "{"


def test_a_hash_comment_without_white_space_in_a_file_without_quotes_or_slashes(tmp_path):
    cfg = tmp_path / "h.cntk"
    cfg.write_text("t = [\n  BrainScriptNetworkBuilder = {\n    d = 3#} a comment holding a bracket and a \" quote\n"
                   "    x = Input {d} ; z = LinearLayer {2} (x) ; criterionNodes = (z)\n  }\n  after = 5\n]\n")
    cmd = load_config_file(str(cfg))("t")
    assert str(cmd("after")) == "5"
    net = build_from_config(cmd)
    assert tuple(net.tensor("z.W").shape) == (2, 3)
