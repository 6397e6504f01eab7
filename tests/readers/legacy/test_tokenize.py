"""The sentence readers' tokenizer: the C token table (``_tok.TokenTable``) numbers tokens and
counts them per line exactly as Python's text mode (universal newlines) and ``str.split()`` do,
against the pure-Python reference on any text; errors name the file and line; the LU reader's
begin/end matching, done with array operations, equals the plain loop over sentences."""
from __future__ import annotations

import io
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cntkio._native import _tok
from cntkio.errors import ConfigError
from cntkio.readers import build_reader
from cntkio.readers.legacy.lusequence import LUSequenceDeserializer
from cntkio.readers.legacy.vocab import PyTokenTable, tokenize_file

#: token characters, every whitespace str.split() knows (ASCII and not), and the line ends
PIECES = ["a", "b", "ab", "é", "字", "\x00", "\ufeff", " ", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0",
          "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\n", "\r", "\r\n"]


def _reference(text: str) -> tuple[list[int], list[str]]:
    """Tokens per line and the tokens, straight from the definition."""
    lines = io.StringIO(text, newline=None).readlines()
    return [len(line.split()) for line in lines], [w for line in lines for w in line.split()]


def test_lines_and_tokens_of_a_small_text():
    t = _tok.TokenTable()
    numbers, counts, new = t.intern("the cat\r\nsat\u3000on the\xa0mat\r\rend\n  \n x".encode())
    assert new == ["the", "cat", "sat", "on", "mat", "end", "x"]
    assert numbers.tolist() == [0, 1, 2, 3, 0, 4, 5, 6]
    assert counts.tolist() == [2, 4, 0, 1, 0, 1]            # "\r\r": an empty line between
    assert numbers.dtype == np.int32 and counts.dtype == np.int64
    numbers, counts, new = t.intern(b"x cat dog\n")          # numbering continues
    assert (numbers.tolist(), counts.tolist(), new, t.size) == ([6, 1, 7], [3], ["dog"], 8)
    assert [a.tolist() for a in t.intern(b"")[:2]] == [[], []]
    assert t.intern(b"\n")[1].tolist() == [0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=40), min_size=1, max_size=3))
def test_the_c_table_equals_the_reference(parts):
    c, py = _tok.TokenTable(), PyTokenTable()
    for part in parts:
        text = "".join(part)
        a, b = c.intern(text.encode()), py.intern(text.encode())
        assert a[0].tolist() == b[0].tolist()
        assert a[1].tolist() == b[1].tolist()
        assert a[2] == b[2]
        counts, tokens = _reference(text)
        assert a[1].tolist() == counts
        assert c.size == py.size
    words = list(py.numbers)
    text = "".join(parts[-1])
    assert [words[k] for k in c.intern(text.encode())[0].tolist()] == _reference(text)[1]


@pytest.mark.parametrize("table", [_tok.TokenTable, PyTokenTable])
def test_text_that_is_not_utf8_names_its_line_and_leaves_the_table_as_it_was(table):
    t = table()
    t.intern(b"a b\n")
    with pytest.raises(ValueError, match=r"^line 3: a token that is not UTF-8 text"):
        t.intern(b"a c\r\nd\rok \xff\xfe z\n")
    assert t.size == 2
    assert t.intern(b"c")[0].tolist() == [2]


def test_a_corpus_that_is_not_utf8_is_a_config_error_with_file_and_line(tmp_path):
    (tmp_path / "c.txt").write_bytes(b"</s> a b </s>\r\n</s> a \xe9t\xe9 </s>\n")
    sec = {"readerType": "SequenceReader", "file": str(tmp_path / "c.txt"), "randomize": "None",
           "labelIn": {"labelDim": "20"}, "labels": {"labelType": "NextWord", "labelDim": "20"}}
    with pytest.raises(ConfigError, match=r"c.txt:2: a token that is not UTF-8 text"):
        build_reader(sec)
    with pytest.raises(ConfigError, match=r"cannot be read"):
        tokenize_file(str(tmp_path / "missing.txt"))


def test_line_numbers_in_messages_follow_universal_newlines(tmp_path, caplog):
    (tmp_path / "c.txt").write_bytes(b"a b </s>\r\nb a </s>\ra b\r\n\r\nb </s>\n")
    sec = {"readerType": "SequenceReader", "file": str(tmp_path / "c.txt"), "randomize": "None",
           "maxErrors": "5", "labelIn": {"labelDim": "20"}, "labels": {"labelType": "NextWord", "labelDim": "20"}}
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = build_reader(sec, max_sweeps=1)
        mb = {s.name: v for s, v in src.next_minibatch(1000).items()}
    src.close()
    assert any("c.txt:3: the sentence does not end with '</s>'" in r.getMessage() for r in caplog.records)
    assert mb["labelIn"].num_sequences == 3                  # lines 1, 2 and 5


def _lu_loop(kind: list[int]) -> tuple[list[int], list[int], list[bool]]:
    """CNTK's begin/end matching as a plain loop over the begin lines: each sentence ends at the
    first end line after its begin line, or is cut before the next begin line (or the file's end)."""
    N = len(kind)
    bos = [i for i, k in enumerate(kind) if k & 1]
    eos = [i for i, k in enumerate(kind) if k & 2]
    starts, lengths, bad = [], [], []
    for n, b in enumerate(bos):
        e = next((x for x in eos if x > b), N)
        nb = bos[n + 1] if n + 1 < len(bos) else N
        cut = e >= nb
        e = nb - 1 if cut else e
        starts.append(b)
        lengths.append(e + 1 - b)
        bad.append(cut)
    return starts, lengths, bad


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["BOS", "EOS", "w", "w", "w"]), min_size=1, max_size=30))
def test_lu_sentences_match_the_plain_loop(tmp_path_factory, firsts):
    d = tmp_path_factory.mktemp("lu")
    if "BOS" not in firsts:
        firsts = ["BOS"] + firsts
    (d / "a.txt").write_text("".join(f"{w} O\n" for w in firsts))
    (d / "in.txt").write_text("BOS\nEOS\nw\n")
    (d / "out.txt").write_text("O\n")
    cfg = {"file": str(d / "a.txt"), "input": {"name": "labelIn", "token": str(d / "in.txt")},
           "output": {"name": "labels", "token": str(d / "out.txt")}}
    logging.getLogger("cntkio").setLevel(logging.ERROR)
    try:
        r = LUSequenceDeserializer(cfg)
    finally:
        logging.getLogger("cntkio").setLevel(logging.NOTSET)
    starts, lengths, bad = _lu_loop([1 if w == "BOS" else 2 if w == "EOS" else 0 for w in firsts])
    assert r.starts.tolist() == starts
    assert r.lengths.tolist() == lengths
    assert r.invalid.tolist() == bad
