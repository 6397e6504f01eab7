"""The CTF format rules (spec: ctf-text-format-reader.txt, cntk-io-semantics 2.13,
cntk-ctf-behaviours), checked through the deserializer with every available parser backend."""
from __future__ import annotations

import logging

import numpy as np
import pytest
from ctf_cases import EXTENDED

from cntkio.deserializers.ctf import CNTKTextFormatDeserializer, available_backends
from cntkio.deserializers.ctf import _reference as ref
from cntkio.errors import FormatError, MaxErrorsExceeded

BACKENDS = available_backends()



def dense(dim, alias=None, defines=False):
    d = {"dim": dim, "format": "dense", "definesMBSize": defines}
    if alias:
        d["alias"] = alias
    return d


def sparse(dim, alias=None):
    d = {"dim": dim, "format": "sparse"}
    if alias:
        d["alias"] = alias
    return d


def open_ctf(tmp_path, text, inputs, backend, name="data.ctf", **options):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    config = {"type": "CNTKTextFormatDeserializer", "file": str(path), "input": inputs, **options}
    return CNTKTextFormatDeserializer(config, backend=backend)


def sequences(d):
    """[(key, length, {name: [sample as list]})] over all chunks, sparse samples densified."""
    out = []
    for info in d.chunk_infos():
        chunk = d.get_chunk(info.id)
        table = chunk.sequences
        for i in range(len(table)):
            per = {}
            for name, s in chunk.streams.items():
                a, b = int(s.offsets[i]), int(s.offsets[i + 1])
                if s.is_sparse:
                    rows = []
                    for smp in range(a, b):
                        row = np.zeros(s.dim, s.data.dtype)
                        lo, hi = s.indptr[smp], s.indptr[smp + 1]
                        np.add.at(row, s.indices[lo:hi], s.data[lo:hi])
                        rows.append(row.tolist())
                    per[name] = rows
                else:
                    per[name] = s.values[a:b].reshape(b - a, s.dim if hasattr(s, "dim") else int(np.prod(s.values.shape[1:]))).tolist()
            out.append((int(table.keys[i]), int(table.lengths[i]), per))
    return out


# ---------------------------------------------------------------------------------------------
# sequence ids, continuation lines, aliases (the format page's extended example)



def test_extended_example(tmp_path, backend):
    d = open_ctf(tmp_path, EXTENDED, {"Some_very_long_input_name": dense(3, "a"),
                                      "Some_other_also_very_long_input_name": dense(2, "b")},
                 backend)
    seqs = sequences(d)
    assert [(k, n) for k, n, _ in seqs] == [(100, 4), (200, 1), (333, 2), (400, 3), (500, 1)]
    a = {k: v["Some_very_long_input_name"] for k, _, v in seqs}
    b = {k: v["Some_other_also_very_long_input_name"] for k, _, v in seqs}
    assert a[100] == [[1, 2, 3], [4, 5, 6], [7, 8, 9], [7, 8, 9]]
    assert b[100] == [[100, 200], [101, 201], [102983, 14532]]
    # sequence 333 has no sample of a: valid, a 0-length sequence of that stream
    assert a[333] == [] and b[333] == [[500, 100], [600, -900]]
    assert a[400] == [[1, 2, 3], [4, 5, 6], [4, 5, 6]]
    assert d.chunk_infos()[0].num_samples == 4 + 1 + 2 + 3 + 1


def test_first_line_without_id_turns_ids_off(tmp_path, backend):
    text = "|a 1 2 3 |b 100 200\n100 |a 4 5 6 |b 101 201\n200 |b 102983 14532 |a 7 8 9\n"
    d = open_ctf(tmp_path, text, {"a": dense(3), "b": dense(2)}, backend)
    seqs = sequences(d)
    assert [(k, n) for k, n, _ in seqs] == [(0, 1), (1, 1), (2, 1)]
    assert seqs[2][2]["a"] == [[7, 8, 9]]


def test_skip_sequence_ids(tmp_path, backend):
    text = "7 |x 1\n7 |x 2\n8 |x 3\n"
    d = open_ctf(tmp_path, text, {"x": dense(1)}, backend, skipSequenceIds="true")
    assert [(k, n, v["x"]) for k, n, v in sequences(d)] == [(0, 1, [[1]]), (1, 1, [[2]]),
                                                            (2, 1, [[3]])]
    d = open_ctf(tmp_path, text, {"x": dense(1)}, backend)
    assert [(k, n, v["x"]) for k, n, v in sequences(d)] == [(7, 2, [[1], [2]]), (8, 1, [[3]])]


def test_id_forms(tmp_path, backend):
    # no space after the id, leading zeros, tabs, whitespace before the id, the largest uint64
    text = "0|x 1\n007 |x 2\n7\t|x 3\n  18446744073709551615 |x 4\n"
    d = open_ctf(tmp_path, text, {"x": dense(1)}, backend)
    seqs = sequences(d)
    assert [(k, n) for k, n, _ in seqs] == [(0, 1), (7, 2), (2**64 - 1, 1)]
    assert d.sequence_infos(0).keys.dtype == np.uint64


def test_label_on_its_own_line(tmp_path, backend):
    # the format page calls "lines <= longest input" a limitation to be lifted: lifted here
    text = "0 |word 234:1\n0 |word 123:1\n0 |class 3:1\n1 |word 11:1 |class 2:1\n"
    d = open_ctf(tmp_path, text, {"word": sparse(1000), "class": sparse(5)}, backend)
    seqs = sequences(d)
    assert [(k, n) for k, n, _ in seqs] == [(0, 2), (1, 1)]
    assert len(seqs[0][2]["word"]) == 2 and seqs[0][2]["class"][0][3] == 1


def test_defines_mb_size(tmp_path, backend):
    text = "0 |w 1 |c 1\n0 |w 2\n0 |w 3\n1 |c 2\n2 |w 4 |c 3\n"
    d = open_ctf(tmp_path, text, {"w": dense(1), "c": dense(1, defines=True)}, backend)
    seqs = sequences(d)
    assert [(k, n) for k, n, _ in seqs] == [(0, 1), (1, 1), (2, 1)]
    d = open_ctf(tmp_path, text, {"w": dense(1, defines=True), "c": dense(1)}, backend)
    seqs = sequences(d)
    # sequence 1 has no sample of the defining input: dropped (as CNTK did)
    assert [(k, n) for k, n, _ in seqs] == [(0, 3), (2, 1)]
    assert seqs[1][2] == {"w": [[4]], "c": [[3]]}


def test_repeated_id_reads_as_new_sequence_and_warns(tmp_path, backend, caplog):
    text = "100 |a 1\n200 |a 2\n100 |a 3\n"
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        d = open_ctf(tmp_path, text, {"a": dense(1)}, backend)
    assert [(k, v["a"]) for k, _, v in sequences(d)] == [(100, [[1]]), (200, [[2]]), (100, [[3]])]
    repeats = [r.getMessage() for r in caplog.records if "repeats" in r.getMessage()]
    assert len(repeats) == 1 and ":3:" in repeats[0] and "100" in repeats[0]
    with pytest.raises(ValueError, match=r"duplicate sequence key .*100"):
        d.lookup(np.array([200], np.uint64))


def test_lookup_by_key(tmp_path, backend):
    text = "".join(f"{k} |a {k}\n" for k in (5, 3, 9))
    d = open_ctf(tmp_path, text, {"a": dense(1)}, backend, chunkSizeInBytes=8)
    assert len(d.chunk_infos()) == 3
    chunks, pos = d.lookup(np.array([9, 5, 4], np.uint64))
    assert chunks.tolist() == [2, 0, -1] and pos.tolist() == [0, 0, -1]


# ---------------------------------------------------------------------------------------------
# values

@pytest.mark.parametrize("token", [
    "1", "-2.5", "+3", "1.", ".5", "1.e5", "1e5", "1E-5", "-6.4265e+020", "1.5e-007", "007", "0.1",
    "3.4028235e38", "1e-40", "123456789.123456789", "2.2250738585072011e-308",
    "9007199254740993", "4.9e-324", "0.30000000000000004"])
@pytest.mark.parametrize("precision", ["float", "double"])
def test_numbers_are_correctly_rounded(tmp_path, backend, token, precision):
    d = open_ctf(tmp_path, f"|x {token} |s 3:{token}\n", {"x": dense(1), "s": sparse(4)}, backend,
                 precision=precision)
    chunk = d.get_chunk(0)
    dtype = np.float64 if precision == "double" else np.float32
    with np.errstate(over="ignore"):
        expected = np.array(float(token), np.float64).astype(dtype)
    assert chunk.streams["x"].values.dtype == dtype
    assert chunk.streams["x"].values[0, 0].tobytes() == expected.tobytes()
    assert chunk.streams["s"].data[0].tobytes() == expected.tobytes()


@pytest.mark.parametrize("token,value32", [("1e39", np.inf), ("-1e39", -np.inf), ("1e-46", 0.0),
                                           ("1e400", np.inf)])
def test_out_of_range_numbers(tmp_path, backend, token, value32):
    d = open_ctf(tmp_path, f"|x {token}\n", {"x": dense(1)}, backend)
    assert d.get_chunk(0).streams["x"].values[0, 0] == value32


def test_negative_zero_is_kept(tmp_path, backend):
    d = open_ctf(tmp_path, "|x -0 -0.0 0\n", {"x": dense(3)}, backend)
    v = d.get_chunk(0).streams["x"].values[0]
    assert np.signbit(v).tolist() == [True, True, False]


@pytest.mark.parametrize("token", ["inf", "-inf", "nan", "NaN", "1-2", "3+4", "2,0", "2#0", "0x10",
                                   "1e", "1e+", "+", "-", ".", "1..2", "1e5.0", "--1", "2.0f",
                                   "1:2", "e5", "1e5e5"])
def test_malformed_numbers(tmp_path, backend, token):
    d = open_ctf(tmp_path, f"|x 1\n|x  {token}\n", {"x": dense(1)}, backend)
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(0)
    e = info.value
    assert (e.line, e.column) == (2, 5)
    assert e.found == repr(token)
    assert "number" in e.expected
    assert str(e).startswith("Reached the maximum number of allowed errors while reading the "
                             "input file (data.ctf).")


def test_sparse_values(tmp_path, backend):
    text = "|s 3:1.5 0:-2 |t\n|s\n|s 007:4 3:1\n"
    d = open_ctf(tmp_path, text, {"s": sparse(8), "t": sparse(2)}, backend)
    chunk = d.get_chunk(0)
    s = chunk.streams["s"]
    assert s.indptr.tolist() == [0, 2, 2, 4]
    assert s.indices.tolist() == [3, 0, 7, 3]  # in the order written, not sorted
    assert s.data.tolist() == [1.5, -2, 4, 1]
    assert s.offsets.tolist() == [0, 1, 2, 3]
    assert s.indices.dtype == np.int32 and s.indptr.dtype == np.int64
    # an empty sparse sample is a valid sample of zeros
    t = chunk.streams["t"]
    assert t.offsets.tolist() == [0, 1, 1, 1] and t.indptr.tolist() == [0, 0]


def test_short_dense_sample_is_zero_padded_with_a_warning(tmp_path, backend, caplog):
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        d = open_ctf(tmp_path, "|x 1 2\n|x\n|x 1 2 3\n", {"x": dense(3)}, backend)
        values = d.get_chunk(0).streams["x"].values
    assert values.tolist() == [[1, 2, 0], [0, 0, 0], [1, 2, 3]]
    msgs = [r.getMessage() for r in caplog.records]
    assert any(":1:1:" in m and "2 of 3 values, zero-padded" in m for m in msgs)
    assert any(":2:1:" in m and "0 of 3 values" in m for m in msgs)


def test_shaped_dense_input(tmp_path, backend):
    d = open_ctf(tmp_path, "|x 1 2 3 4 5 6\n", {"x": {"dim": [2, 3], "format": "dense"}}, backend)
    assert d.get_chunk(0).streams["x"].values.tolist() == [[[1, 2, 3], [4, 5, 6]]]
    assert d.stream_infos()[0].shape == (2, 3)


# ---------------------------------------------------------------------------------------------
# lexical rules

SIMPLE = """|B 100:3 123:4 |C 8 |A 0 1 2 3 4 |# a CTF comment
|# another comment |A 0 1.1 22 0.3 54 |C 123917 |B 1134:1.911 13331:0.014
|C -0.001 |# a comment with an escaped pipe: '|#' |A 3.9 1.11 121.2 99.13 0.04 |B 999:0.001 918918:-9.19
"""


def test_simple_example_with_comments(tmp_path, backend):
    d = open_ctf(tmp_path, SIMPLE, {"A": dense(5), "B": sparse(1000000), "C": dense(1)}, backend)
    chunk = d.get_chunk(0)
    assert [(int(k), int(n)) for k, n in zip(chunk.sequences.keys, chunk.sequences.lengths)] == \
        [(0, 1), (1, 1), (2, 1)]
    a = chunk.streams["A"].values
    np.testing.assert_array_equal(a, np.array([[0, 1, 2, 3, 4], [0, 1.1, 22, 0.3, 54],
                                               [3.9, 1.11, 121.2, 99.13, 0.04]], np.float32))
    assert chunk.streams["C"].values.ravel().tolist() == \
        np.array([8, 123917, -0.001], np.float32).tolist()
    b = chunk.streams["B"]
    assert b.indices.tolist() == [100, 123, 1134, 13331, 999, 918918]
    assert b.data.tolist() == np.array([3, 4, 1.911, 0.014, 0.001, -9.19], np.float32).tolist()


def test_comment_rules(tmp_path, backend):
    # a bare '|' ends a comment; '|#' inside a comment starts another; '#' in a value is not one
    text = "|#c1|x 1|#c2 |# c3 | not a name|y 2\n|####\t|x 3|####|y 4\n"
    d = open_ctf(tmp_path, text, {"x": dense(1), "y": dense(1)}, backend, maxErrors=5)
    chunk = d.get_chunk(0)
    assert chunk.streams["x"].values.ravel().tolist() == [1, 3]
    assert chunk.streams["y"].values.ravel().tolist() == [2, 4]


def test_tabs_spaces_crlf_blank_and_comment_lines(tmp_path, backend):
    text = (b"\r\n   \t\r\n|# header comment\r\n1\t|a\t1  2|b 3:1\r\n\r\n"
            b"|# only a comment |# and another\r\n1 |a 3 4\r\n  \t \n2 |# an id and a comment\n"
            b"2|a 5 6 |b\t\t0:2\r\n")
    d = open_ctf(tmp_path, text, {"a": dense(2), "b": sparse(4)}, backend)
    seqs = sequences(d)
    assert [(k, n) for k, n, _ in seqs] == [(1, 2), (2, 1)]
    assert seqs[0][2]["a"] == [[1, 2], [3, 4]] and seqs[1][2]["a"] == [[5, 6]]
    assert seqs[1][2]["b"] == [[2, 0, 0, 0]]
    assert d.sequence_infos(0).lengths.tolist() == [2, 1]


def test_last_line_without_newline_follows_the_same_rules(tmp_path, backend):
    d = open_ctf(tmp_path, "|x 1 2\n|x 3", {"x": dense(2)}, backend)
    assert d.get_chunk(0).streams["x"].values.tolist() == [[1, 2], [3, 0]]
    d = open_ctf(tmp_path, "|x 1 2\n|x 3 4 5", {"x": dense(2)}, backend)
    with pytest.raises(MaxErrorsExceeded, match="at most 2 values"):
        d.get_chunk(0)


def test_utf8_bom_is_skipped(tmp_path, backend):
    d = open_ctf(tmp_path, b"\xef\xbb\xbf5 |x 1\n5 |x 2\n", {"x": dense(1)}, backend)
    assert sequences(d) == [(5, 2, {"x": [[1], [2]]})]
    d = open_ctf(tmp_path, b"\xef\xbb\xbf|x 1 2\n", {"x": dense(1)}, backend)
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(0)
    assert (info.value.line, info.value.column) == (1, 6)  # columns count from after the BOM


@pytest.mark.parametrize("data,found", [
    ("|x 1\n".encode("utf-16"), "UTF-16 little-endian"),
    ("|x 1\n".encode("utf-16-be"), "NUL bytes"),
    (b"\xfe\xff" + "|x 1\n".encode("utf-16-be"), "UTF-16 big-endian"),
])
def test_utf16_is_rejected(tmp_path, backend, data, found):
    with pytest.raises(FormatError) as info:
        open_ctf(tmp_path, data, {"x": dense(1)}, backend)
    assert found in info.value.found and "UTF-8" in info.value.expected
    assert info.value.file.endswith("data.ctf") and info.value.line == 1


def test_utf8_alias(tmp_path, backend):
    d = open_ctf(tmp_path, "|größe 1 |x 2\n", {"g": dense(1, "größe"), "x": dense(1)}, backend)
    chunk = d.get_chunk(0)
    assert chunk.streams["g"].values.ravel().tolist() == [1]
    assert chunk.streams["x"].values.ravel().tolist() == [2]


def test_unknown_inputs_are_skipped_silently(tmp_path, backend, caplog):
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        d = open_ctf(tmp_path, "|x 1 |zz 1 2 3 |w 5:1\n|x 2\n", {"x": dense(1)}, backend)
        assert d.get_chunk(0).streams["x"].values.ravel().tolist() == [1, 2]
    assert caplog.records == []


def test_line_with_only_unknown_inputs_is_dropped(tmp_path, backend, caplog):
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        d = open_ctf(tmp_path, "|x 1\n|y 5\n|x 2\n", {"x": dense(1)}, backend)
    seqs = sequences(d)
    assert [(k, v["x"]) for k, _, v in seqs] == [(0, [[1]]), (2, [[2]])]  # keys keep the ordinal
    assert any("dropped (the first at line 2)" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------------------------------------
# errors

def _error(tmp_path, backend, text, inputs, **options):
    d = open_ctf(tmp_path, text, inputs, backend, **options)
    with pytest.raises(MaxErrorsExceeded) as info:
        for c in d.chunk_infos():
            d.get_chunk(c.id)
    return info.value


def test_bar_followed_by_nothing(tmp_path, backend):
    e = _error(tmp_path, backend, "|x 1\n|x 2 |\n", {"x": dense(1)})
    assert (e.line, e.column, e.offset) == (2, 6, 10)
    assert "not followed by an input name" in str(e)
    assert e.expected == "an input name right after '|'" and e.found == "the end of the line"
    e = _error(tmp_path, backend, "|x 1 | x 2\n", {"x": dense(1)})
    assert (e.line, e.column, e.found) == (1, 6, "a space")


def test_value_that_is_not_a_number(tmp_path, backend):
    e = _error(tmp_path, backend, "|x 1 abc\n", {"x": dense(2)})
    assert (e.line, e.column, e.found) == (1, 6, "'abc'")
    assert "malformed value in input 'x'" in str(e)


def test_sparse_pair_without_colon(tmp_path, backend):
    e = _error(tmp_path, backend, "|s 1:1\n|s 1:1 2\n", {"s": sparse(5)})
    assert (e.line, e.column, e.expected, e.found) == (2, 8, "index:value", "'2'")


@pytest.mark.parametrize("token,col,expected,found", [
    ("-2:1", 4, "a non-negative integer index", "'-2'"),
    ("2.0:1", 4, "a non-negative integer index", "'2.0'"),
    (":1", 4, "a non-negative integer index", "nothing before ':'"),
    ("5:1", 4, "an index below dim = 5", "5"),
    ("99999999999999999999999:1", 4, "an index below dim = 5", "99999999999999999999999"),
    ("1:", 6, "a number like 1, -2.5, 3e-7", "nothing after ':'"),
    ("1::2", 6, "a number like 1, -2.5, 3e-7", "':2'"),
])
def test_sparse_errors(tmp_path, backend, token, col, expected, found):
    e = _error(tmp_path, backend, f"|s {token}\n", {"s": sparse(5)})
    assert (e.line, e.column, e.expected, e.found) == (1, col, expected, found)


def test_dense_sample_longer_than_dim(tmp_path, backend):
    e = _error(tmp_path, backend, "|x 1 2 3 4\n", {"x": dense(2)})
    assert (e.column, e.expected, e.found) == (8, "at most 2 values", "4 values")


def test_duplicate_input_on_a_line(tmp_path, backend):
    text = "1 |F1 1.0 |F2 2.0 |F2 3.0\n"
    e = _error(tmp_path, backend, text, {"F1": dense(1), "F2": dense(1)})
    assert (e.line, e.column) == (1, 19) and "appears twice" in str(e)
    d = open_ctf(tmp_path, text, {"F1": dense(1), "F2": dense(1)}, backend, maxErrors=1)
    assert sequences(d) == [(1, 1, {"F1": [[1.0]], "F2": [[2.0]]})]


def test_malformed_line_starts(tmp_path, backend):
    inputs = {"x": dense(1)}
    e = _error(tmp_path, backend, "1 |x 1\n12a |x 1\n", inputs)
    assert (e.line, e.column, e.found) == (2, 3, "'a'")
    e = _error(tmp_path, backend, "1 |x 1\nabc |x 1\n", inputs)
    assert (e.line, e.column, e.found) == (2, 1, "'abc'")
    e = _error(tmp_path, backend, "1 |x 1\n18446744073709551616 |x 2\n", inputs)
    assert (e.line, e.column) == (2, 1) and "below 2**64" in e.expected
    # without ids, leading digits are ignored, however large
    d = open_ctf(tmp_path, "|x 1\n18446744073709551616 |x 2\n", inputs, backend)
    assert [v["x"] for _, _, v in sequences(d)] == [[[1]], [[2]]]


def test_errors_skip_only_the_sample_and_count_against_max_errors(tmp_path, backend, caplog):
    text = "1 |a 1 |b 1:1\n1 |a x |b 2:1\n1 |a 3 |b 9:1\n2 |a 4 4 |b 1:1\n"
    inputs = {"a": dense(1), "b": sparse(5)}
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        d = open_ctf(tmp_path, text, inputs, backend, maxErrors=3)
        seqs = sequences(d)
    assert seqs[0][2] == {"a": [[1], [3]], "b": [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]}
    assert seqs[1][2] == {"a": [], "b": [[0, 1, 0, 0, 0]]}
    assert seqs[0][1] == 3  # the index counts lines carrying an input, before parsing values
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum(":2:6:" in m for m in logged) == 1 and sum(":3:11:" in m for m in logged) == 1
    # reloading a chunk does not count its errors again
    for _ in range(3):
        d.get_chunk(0)
    e = _error(tmp_path, backend, text, inputs, maxErrors=2)
    assert (e.line, e.column) == (4, 8)  # the third error crosses maxErrors = 2
    assert "(maxErrors = 2)" in str(e)


def test_error_budget_is_shared_by_chunks(tmp_path, backend):
    text = "|x 1\n|x a\n|x 2\n|x b\n"
    d = open_ctf(tmp_path, text, {"x": dense(1)}, backend, maxErrors=1, chunkSizeInBytes=10)
    infos = d.chunk_infos()
    assert [c.num_sequences for c in infos] == [2, 2]
    assert d.get_chunk(0).streams["x"].values.ravel().tolist() == [1]
    assert d.get_chunk(0).streams["x"].offsets.tolist() == [0, 1, 1]
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(1)
    assert info.value.line == 4


def test_empty_file(tmp_path, backend):
    with pytest.raises(FormatError) as info:
        open_ctf(tmp_path, "", {"x": dense(1)}, backend)
    assert info.value.found == "an empty file" and "data.ctf" in str(info.value)
    with pytest.raises(FormatError) as info:
        open_ctf(tmp_path, "\n  \n|# nothing\n", {"x": dense(1)}, backend)
    assert info.value.found == "only blank lines and comments"


def test_file_with_no_declared_input(tmp_path, backend):
    with pytest.raises(FormatError, match="no sequence has a sample of the declared inputs"):
        open_ctf(tmp_path, "|y 1\n|z 2\n", {"x": dense(1)}, backend)


def test_missing_file(tmp_path, backend):
    config = {"type": "CNTKTextFormatDeserializer", "file": str(tmp_path / "nope.ctf"),
              "input": {"x": dense(1)}}
    with pytest.raises(FileNotFoundError, match=r"CTF input file does not exist \(the 'file' of a .*\): '.*nope.ctf'"):
        CNTKTextFormatDeserializer(config, backend=backend)


# ---------------------------------------------------------------------------------------------
# the scan itself (both backends return the same arrays)

def test_scan_index_arrays(backend):
    buf = b"\xef\xbb\xbf\n5 |a 1\n|a 2\n\n6 |b 1\n6 |# c\n5 |a 3"
    enc, ids, keys, starts, lines, lengths, chunks = backend.scan_index(buf, [b"a", b"b"], False,
                                                                       -1, 1 << 20)
    assert enc == ref.ENCODING_UTF8_BOM and ids
    assert np.frombuffer(keys, np.uint64).tolist() == [5, 6, 5]
    assert np.frombuffer(starts, np.int64).tolist() == [4, 17, 31, len(buf)]
    assert np.frombuffer(lines, np.int64).tolist() == [2, 5, 7]
    assert np.frombuffer(lengths, np.int64).tolist() == [2, 1, 1]
    assert np.frombuffer(chunks, np.int64).tolist() == [0, 3]


def test_chunk_boundaries_follow_cntk(backend):
    # a new chunk starts when the chunk's bytes plus the next sequence's exceed
    # min(chunkSizeInBytes, file size) (cntk-ctf-behaviours fact 16)
    buf = b"|a 1\n" * 3 + b"|a 12345\n" + b"|a 1\n"  # sequences of 5, 5, 5, 9, 5 bytes
    def chunks(size):
        r = backend.scan_index(buf, [b"a"], False, -1, size)
        return np.frombuffer(r[6], np.int64).tolist()
    assert chunks(10) == [0, 2, 3, 4, 5]
    assert chunks(14) == [0, 2, 4, 5]
    assert chunks(15) == [0, 3, 5]
    assert chunks(1) == [0, 1, 2, 3, 4, 5]
    assert chunks(10**9) == [0, 5]


def test_parse_chunk_error_limit(backend):
    buf = b"|x a\n|x b\n|x c\n"
    r = backend.scan_index(buf, [b"x"], False, -1, 1 << 20)
    out, issues, nwarn, aborted = backend.parse_chunk(buf, 0, r[3], r[4], r[1], [(b"x", 1, False)],
                                                      False, 2, 10)
    assert aborted and [i[0] for i in issues] == [ref.BAD_NUMBER] * 2
    out, issues, nwarn, aborted = backend.parse_chunk(buf, 0, r[3], r[4], r[1], [(b"x", 1, False)],
                                                      False, -1, 10)
    assert not aborted and [(i[0], i[2], i[3], i[4], i[5]) for i in issues] == \
        [(ref.BAD_NUMBER, 1, 4, 3, 1), (ref.BAD_NUMBER, 2, 4, 8, 1), (ref.BAD_NUMBER, 3, 4, 13, 1)]
    assert np.frombuffer(out[0][1], np.int64).tolist() == [0, 0, 0, 0]


def test_parse_chunk_warning_limit(backend):
    buf = b"|x\n" * 5
    r = backend.scan_index(buf, [b"x"], False, -1, 1 << 20)
    out, issues, nwarn, aborted = backend.parse_chunk(buf, 0, r[3], r[4], r[1], [(b"x", 2, False)],
                                                      True, -1, 2)
    assert nwarn == 5 and [i[0] for i in issues] == [ref.SHORT_DENSE] * 2 and not aborted
    assert np.frombuffer(out[0][0], np.float64).tolist() == [0.0] * 10


def test_first_data_line_with_an_invalid_id(tmp_path, backend):
    # the first sequence takes the first valid id that follows; the bad line is one error
    text = "99999999999999999999999 |x 1\n5 |x 2\n6 |x 3\n"
    d = open_ctf(tmp_path, text, {"x": dense(1)}, backend, maxErrors=1)
    assert [(k, n, v["x"]) for k, n, v in sequences(d)] == [(5, 1, [[2]]), (6, 1, [[3]])]
    assert d._errors_total == 1


def test_line_with_only_a_bad_name_is_dropped_but_its_error_counts(tmp_path, backend):
    d = open_ctf(tmp_path, "|x 1\n|\n|x 2\n", {"x": dense(1)}, backend, maxErrors=1)
    assert [(k, v["x"]) for k, _, v in sequences(d)] == [(0, [[1]]), (2, [[2]])]
    assert d._errors_total == 1
    d = open_ctf(tmp_path, "|x 1\n|\n|x 2\n", {"x": dense(1)}, backend)
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(0)
    assert (info.value.line, info.value.column) == (2, 1)
