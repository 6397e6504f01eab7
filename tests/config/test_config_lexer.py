"""The shared lexical layer (cntkio.config.lexer): the config dialect's strings, comments and names
(the patterns the config parser compiles from them are the ones its fast paths were tuned on) and
BrainScript's tokens, bracket matching and config view, with line and column in the errors."""
import pytest

from cntkio.config import text as _text, parse_config, parser
from cntkio.config.lexer import (LexError, brainscript_config_view, brainscript_spans, match_brainscript,
                                 tokenize_brainscript)
from cntkio.errors import ConfigError


def test_config_patterns_are_the_tuned_ones():
    # built from the lexer's fragments, the compiled patterns are character for character the
    # hand-written ones bench/config_parse.py measured (no change of speed)
    flat = r'[^\[\]{}()"]*(?:"[^"]*"[^\[\]{}()"]*)*'
    assert _text._FLAT == flat
    assert _text._STEP.pattern == (r'[^\[\]{}()"]*(?:("[^"]*")|(\[' + flat + r'\]|\{' + flat + r'\}|\(' + flat
                                   + r'\))|([\[\]{}()"]))?')
    assert _text._COMMENT.pattern == r'("[^"]*(?:"|\Z))|#(?<![^ \t\n]#)[^\n]*'
    assert parser.NAME_RE.pattern == r"[A-Za-z0-9_][\w\-]*(\.[A-Za-z0-9_][\w\-]*)*\Z"
    assert parser._GROUP_ITEM.pattern == (r"[ \t\n\r\f\v]*([A-Za-z0-9_][\w\-]*(?:\.[A-Za-z0-9_][\w\-]*)*)"
                                          r"[ \t]*=[ \t]*(?=[\[{(])")
    assert parser._SET_ITEM.pattern == r"[ \t\n\r\f\v]*([A-Za-z0-9_][\w\-]*)[ \t]*=[ \t]*\["
    assert parser._NAME_EQ.pattern == (r"[ \t\n\r\f\v]*([A-Za-z0-9_][\w\-]*(?:\.[A-Za-z0-9_][\w\-]*)*)"
                                       r"[ \t\n\r\f\v]*=")
    assert parser._BODY_ITEMS.pattern == (r'[ \t\r\f\v]*(?!(?i:include)[ \t]*=)([A-Za-z0-9_][\w\-]*)[ \t]*=[ \t]*'
                                          r'(?:"([^"\n]*)"|([^\s"=\[\]{}();]+))[ \t\r\f\v]*(?:;|\Z)')


def test_config_dialect_comments_and_strings():
    # '#' after white space or at a line start, outside "..." (which may span lines); ' is no quote
    text = 'a = 1#INF # c\n# whole line\nb = "x # y\n# z" # w\nmsg = it\'s # gone\n'
    assert _text.strip_comments(text) == 'a = 1#INF \n\nb = "x # y\n# z" \nmsg = it\'s \n'
    p = parse_config(text)
    assert str(p("a")) == "1#INF" and str(p("b")) == "x # y\n# z" and str(p("msg")) == "it's"


def kinds(text, **kw):
    return [(t.kind, t.text, t.line, t.col, t.line_start) for t in tokenize_brainscript(text, **kw)]


def test_brainscript_tokens_with_lines_and_columns():
    text = "f(x) = x .* 2.5e-1 // a comment\n  s = 'a # b' + \"c\" # more\n r = 1..3 /* x\n y */ z"
    assert kinds(text) == [
        ("name", "f", 1, 1, True), ("op", "(", 1, 2, False), ("name", "x", 1, 3, False), ("op", ")", 1, 4, False),
        ("op", "=", 1, 6, False), ("name", "x", 1, 8, False), ("op", ".*", 1, 10, False),
        ("num", "2.5e-1", 1, 13, False),
        ("name", "s", 2, 3, True), ("op", "=", 2, 5, False), ("str", "'a # b'", 2, 7, False),
        ("op", "+", 2, 15, False), ("str", '"c"', 2, 17, False),
        ("name", "r", 3, 2, True), ("op", "=", 3, 4, False), ("num", "1", 3, 6, False), ("op", "..", 3, 7, False),
        ("num", "3", 3, 9, False),
        ("name", "z", 4, 7, True),                        # after a comment that ends a line break
        ("eof", "", 4, 8, True)]
    # text placed at line 10, column 7 of a file: the first line's columns are shifted, not the others
    toks = kinds("a\n b", line=10, col=7)
    assert toks[:2] == [("name", "a", 10, 7, True), ("name", "b", 11, 2, True)]


def test_brainscript_lexical_errors_name_file_line_and_column():
    with pytest.raises(LexError) as e:
        tokenize_brainscript("a = 1\n  b = c ? d", file="net.bs")
    assert str(e.value) == "net.bs:2:9: unexpected character '?'"
    assert (e.value.file, e.value.line, e.value.column) == ("net.bs", 2, 9)
    assert isinstance(e.value, ConfigError)
    with pytest.raises(LexError, match=r"^cfg:5:12: unexpected character '\$'"):
        tokenize_brainscript("x = $dim$", file="cfg", line=5, col=8)
    # an unterminated string is no string: its quote is the unexpected character
    with pytest.raises(LexError, match=r"^<brainscript>:1:5: unexpected character \"'\""):
        tokenize_brainscript("s = 'abc\n")
    # the caller's error type (BrainScript's parser passes its own)
    with pytest.raises(KeyError):
        tokenize_brainscript("@", error=lambda message, line, col: KeyError((message, line, col)))


def test_brainscript_bracket_matching_skips_strings_and_comments():
    text = "{ s = '}' ; t = \"(\" // ]\n /* } */ u = [ 1 ] # )\n }"
    assert match_brainscript(text, 0) == len(text) - 1
    assert match_brainscript(text, text.index("[")) == text.index("]", text.index("["))
    with pytest.raises(LexError) as e:
        match_brainscript("x = {\n  a = ( 1 }\n", 4, file="c.cntk", line=3, col=1)
    assert str(e.value) == "c.cntk:4:11: expected ')' to close '(' opened on line 4, found '}'"
    with pytest.raises(LexError, match=r"^c.cntk:1:5: '\{' opened here is never closed"):
        match_brainscript("x = { a = '}'", 4, file="c.cntk")


def test_brainscript_spans_and_config_view():
    body = "s = 'a # b' // c (\nt = \"it's\" /* ] */ u = 'say \"hi\"' #}"
    assert brainscript_spans(body) == [("str", 4, 11), ("comment", 12, 18), ("str", 23, 29),
                                       ("comment", 30, 37), ("str", 42, 52), ("comment", 53, 55)]
    # BrainScript's comments removed (line breaks kept), '...' written "..." (a " inside seen as ')
    assert brainscript_config_view(body) == "s = \"a # b\" \nt = \"it's\"  u = \"say 'hi'\" "
    assert brainscript_config_view("a = /* 1\n2 */ 3") == "a = \n 3"


def test_a_brainscript_section_is_read_by_brainscript_rules_in_a_config():
    text = ("t = [\n  action = train   # a config comment\n"
            "  BrainScriptNetworkBuilder = {\n"
            "    s = 'a # b' ; v = '}' + ')'   // a } comment\n"
            "    /* ( */ w = \"x\"\n  }\n  after = 5 # c\n]\n# BrainScriptNetworkBuilder = { '\nend = 1\n")
    assert _text.strip_comments(text) == (
        "t = [\n  action = train   \n  BrainScriptNetworkBuilder = {\n"
        "    s = \"a # b\" ; v = \"}\" + \")\"   \n     w = \"x\"\n  }\n  after = 5 \n]\n\nend = 1\n")
    p = parse_config(text)
    t = p("t")
    assert str(t("action")) == "train" and str(t("after")) == "5" and str(p("end")) == "1"
    assert str(t("BrainScriptNetworkBuilder")("s")) == "a # b"


def test_a_section_key_inside_a_quoted_string_is_text():
    text = ("msg = \"BrainScriptNetworkBuilder = { x = '\" # c\nb = [ s = 'x' ] # it's\n"
            "n = [ BrainScriptNetworkBuilder = { y = '#]' } ]\n")
    # the first key is quoted text: no section there, the config rules apply up to the real one
    assert _text.strip_comments(text) == ("msg = \"BrainScriptNetworkBuilder = { x = '\" \nb = [ s = 'x' ] \n"
                                          "n = [ BrainScriptNetworkBuilder = { y = \"#]\" } ]\n")
    p = parse_config(text)
    assert str(p("msg")) == "BrainScriptNetworkBuilder = { x = '" and str(p("b")("s")) == "'x'"
    assert str(p("n")("BrainScriptNetworkBuilder")("y")) == "#]"
