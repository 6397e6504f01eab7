"""CNTK's parser-level CTF conformance cases (conformance/cntk/README.md, section 4), run on the
deserializer directly, plus deserializer-level checks of the dump-compared cases whose whole epoch
is one minibatch of every sequence in file order.

Where cntkio differs from CNTK 2.7 on purpose (cntk-ctf-behaviours, "Where cntkio differs"), the
test says so and checks everything else: CNTK's warning wording and byte offsets are not
reproduced (cntkio names file, line and column), blank and comment-only lines are skipped rather
than errors, an empty dense sample on a last line without a newline is zero-padded like on any
other line, and a sequence's length is its largest sample count rather than its line count.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from cntkio.actions.dump import first_fit_layout
from cntkio.deserializers.ctf import CNTKTextFormatDeserializer
from cntkio.errors import MaxErrorsExceeded

# CNTK's files, from the vendored reader-test tree (conftest.reader_tests_root)
DATA = CONTROL = None


@pytest.fixture(autouse=True, scope="module")
def _cntk_files(reader_tests_root):
    global DATA, CONTROL
    DATA = reader_tests_root / "Data" / "CNTKTextFormatReader"
    CONTROL = reader_tests_root / "Control" / "CNTKTextFormatReader"



def dense(dim, alias=None):
    return {"dim": dim, "format": "dense", **({"alias": alias} if alias else {})}


def sparse(dim, alias=None):
    return {"dim": dim, "format": "sparse", **({"alias": alias} if alias else {})}


def open_file(path, inputs, backend, **options):
    config = {"type": "CNTKTextFormatDeserializer", "file": str(path), "input": inputs, **options}
    return CNTKTextFormatDeserializer(config, backend=backend)


def per_sequence(d, name):
    """Per sequence of chunk 0: the samples of one stream as dense rows."""
    s = d.get_chunk(0).streams[name]
    out = []
    for i in range(len(s.offsets) - 1):
        a, b = int(s.offsets[i]), int(s.offsets[i + 1])
        if s.is_sparse:
            rows = np.zeros((b - a, s.dim), s.data.dtype)
            for r, smp in enumerate(range(a, b)):
                lo, hi = s.indptr[smp], s.indptr[smp + 1]
                np.add.at(rows[r], s.indices[lo:hi], s.data[lo:hi])
        else:
            rows = s.values[a:b].reshape(b - a, -1)
        out.append(rows)
    return out


# ---------------------------------------------------------------------------------------------
# _invalid_inputs: A dense dim 1, B sparse dim 10, maxErrors 99999

CNTK_SAMPLE_ERRORS = ("Sparse index value", "Dense sample (size", "Unexpected character",
                      "Expected a uint64 value", "Input name prefix")


def _cntk_lines(kind_filter):
    """Lines of invalid_inputs.txt at which CNTK's control reports the given warnings."""
    text = (DATA / "invalid_inputs.txt").read_bytes()
    control = (CONTROL / "invalid_inputs_Control.txt").read_text()
    lines = []
    for m in re.finditer(r"WARNING: (.*?) at offset (\d+) in the input file", control, re.S):
        if m.group(1).startswith(kind_filter):
            lines.append(text[:int(m.group(2))].count(b"\n") + 1)
    return lines


def test_invalid_inputs_rejects_the_samples_cntk_rejected(backend):
    d = open_file(DATA / "invalid_inputs.txt", {"A": dense(1), "B": sparse(10)}, backend,
                  maxErrors=99999)
    chunk = d.get_chunk(0)
    assert chunk.sequences.keys.tolist() == [1, 2, 3, 4, 5, 123, 6]
    errors = sorted(d._chunk_errors.items())
    assert errors == [(0, 18)]

    # CNTK's sample-level errors, mapped from its byte offsets to lines (its messages differ on
    # purpose); the rejected samples are the same, and so is each one's line.
    cntk = _cntk_lines(CNTK_SAMPLE_ERRORS)
    assert cntk == [2, 3, 5, 6, 8, 9, 10, 11, 12, 14, 15, 16, 17, 19, 21, 28, 31, 40]
    ours = [i[2] for i in _issues(d) if i[0] < 100]
    assert ours == cntk
    # the "sparse suffix" warning (an empty dense sample, zero-padded) is a warning in both
    assert _cntk_lines("A dense sample") == [39]
    assert [i[2] for i in _issues(d) if i[0] >= 100] == [39]
    # CNTK's row-level errors ("Empty input row", for a blank line, a '|#' only line and rows
    # whose every sample failed) are not errors in cntkio: blank and comment-only lines are
    # skipped; rows whose samples failed already counted those samples.
    # CNTK's "Unknown input ('C')" is not reported: unknown inputs are skipped silently.


def _issues(d):
    buf = (DATA / "invalid_inputs.txt").read_bytes()
    idx = d.index
    _, issues, _, _ = d.backend.parse_chunk(buf, 0, idx.starts, idx.first_lines, idx.ids_mode,
                                            d._stream_args, False, -1, 100)
    return issues


def test_invalid_inputs_values_that_survive(backend):
    d = open_file(DATA / "invalid_inputs.txt", {"A": dense(1), "B": sparse(10)}, backend,
                  maxErrors=99999)
    a = [rows.ravel().tolist() for rows in per_sequence(d, "A")]
    b = [np.nonzero(rows)[1].tolist() for rows in per_sequence(d, "B")]
    assert a == [[1, 1], [2, 2, 20, 2, 2, 2, 2, 2, 2], [3, 3, 3, 3, 3], [4, 4, 4], [5],
                 [123, 124], [6, 0, 6, 6]]
    assert b == [[1, 1], [2, 2, 2, 2, 2, 2, 2], [3] * 7, [4, 4, 4], [5], [1, 1], [6] * 5]
    # CNTK's "Maximum per-input number of samples ... (N vs. lines)" gives the largest surviving
    # count per sequence: 2 (id 1), 9 (id 2), 7 (id 3), 3 (id 4), 2 (id 123); id 5 and 6 had none
    # missing (1 and 5 rows).
    control = (CONTROL / "invalid_inputs_Control.txt").read_text()
    cntk_max = {int(k): int(v) for k, v in re.findall(
        r"for sequence \(id = (\d+)\) at offset \d+ in the input file \(invalid_inputs.txt\) "
        r"is less than expected \((\d+) vs", control)}
    assert cntk_max == {1: 2, 2: 9, 3: 7, 4: 3, 123: 2}
    ours = {k: max(len(x), len(y)) for k, x, y in zip([1, 2, 3, 4, 5, 123, 6], a, b)}
    assert {k: ours[k] for k in cntk_max} == cntk_max and ours[5] == 1 and ours[6] == 5
    # sequence lengths: the index counts lines carrying an input (CNTK counted all rows: 3, 14,
    # 9, 7, 1, 3, 5); 123 has 3 lines but at most 2 samples per input (valid in cntkio)
    assert d.sequence_infos(0).lengths.tolist() == [3, 14, 7, 3, 1, 2, 5]


def test_invalid_inputs_with_default_max_errors_raises(backend):
    d = open_file(DATA / "invalid_inputs.txt", {"A": dense(1), "B": sparse(10)}, backend)
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(0)
    assert str(info.value).startswith("Reached the maximum number of allowed errors while reading "
                                      "the input file (invalid_inputs.txt).")
    assert (info.value.line, info.value.column) == (2, 13)


# ---------------------------------------------------------------------------------------------
# _no_traling_newline_valid_input / _invalid_input (double, maxErrors 0, dim 1)

@pytest.mark.parametrize("value", ["-123", "45.", "6.78", "9.10e-11"])
def test_no_trailing_newline_valid_input(tmp_path, backend, value):
    path = tmp_path / "no_trailing_newline.txt"
    path.write_bytes(b"|A " + value.encode())
    d = open_file(path, {"A": dense(1)}, backend, precision="double")
    got = d.get_chunk(0).streams["A"].values[0, 0]
    assert got == float(value)


@pytest.mark.parametrize("suffix", [" -", " +", " 12.+", " 12.+e", " 1:"])
def test_no_trailing_newline_invalid_input(tmp_path, backend, suffix):
    path = tmp_path / "no_trailing_newline.txt"
    path.write_bytes(b"|A" + suffix.encode())
    d = open_file(path, {"A": dense(1)}, backend, precision="double")
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(0)
    assert str(info.value).startswith("Reached the maximum number of allowed errors while reading "
                                      "the input file (no_trailing_newline.txt).")


@pytest.mark.parametrize("suffix", ["", "\t", " ", "     "])
def test_no_trailing_newline_empty_sample_differs_on_purpose(tmp_path, backend, suffix, caplog):
    # CNTK 2.7 raised here; cntkio reads the last line like every other line: an empty dense
    # sample is zero-padded with a warning (cntk-ctf-behaviours, difference 6)
    path = tmp_path / "no_trailing_newline.txt"
    path.write_bytes(b"|A" + suffix.encode())
    d = open_file(path, {"A": dense(1)}, backend, precision="double")
    assert d.get_chunk(0).streams["A"].values.tolist() == [[0.0]]
    assert any("zero-padded" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------------------------------------
# edge_cases.cntk

def test_duplicate_inputs_throws(backend):
    d = open_file(DATA / "duplicate_inputs.txt", {"features1": dense(1, "F1"),
                                                  "features2": dense(1, "F2")}, backend,
                  precision="double")
    with pytest.raises(MaxErrorsExceeded) as info:
        d.get_chunk(0)
    assert str(info.value).startswith("Reached the maximum number of allowed errors while reading "
                                      "the input file (duplicate_inputs.txt).")


@pytest.mark.parametrize("options", [{"skipSequenceIds": "true"}, {"maxErrors": "2"}])
def test_blank_lines_are_skipped(backend, options):
    # CNTK 2.7 raised for blank_lines (skipSequenceIds=true, maxErrors=0) and read "1 2" with
    # maxErrors=2 (blank_lines_ignored). cntkio skips blank lines: both read 1 and 2
    # (cntk-ctf-behaviours, difference 3)
    d = open_file(DATA / "contains_blank_lines.txt", {"features": dense(1)}, backend,
                  precision="double", **options)
    seqs = per_sequence(d, "features")
    assert [s.ravel().tolist() for s in seqs] == [[1.0], [2.0]]
    assert d._errors_total == 0


def test_missing_trailing_newline_reads_both_rows(backend):
    d = open_file(DATA / "missing_trailing_newline.txt", {"features": dense(1)}, backend,
                  precision="double")
    seqs = per_sequence(d, "features")
    assert d.sequence_infos(0).keys.tolist() == [1]
    assert [s.ravel().tolist() for s in seqs] == [[1.0, 2.0]]  # the control's tokens "1 2"


# ---------------------------------------------------------------------------------------------
# dump-compared cases whose one epoch is one minibatch of all sequences in file order: the dump
# is, per stream, the first-fit layout of the stream's sequence lengths walked time-major
# (README section 2), each sample a line of '.6g' values

def _dump_stream(rows_per_seq, double):
    lengths = [len(r) for r in rows_per_seq]
    seq_rows, offsets, P, T = first_fit_layout(lengths)
    lines = []
    for t in range(T):
        for p in range(P):
            for i in range(len(lengths)):
                if seq_rows[i] == p and offsets[i] <= t < offsets[i] + lengths[i]:
                    row = rows_per_seq[i][t - offsets[i]]
                    lines.append(" ".join(format(float(v) if double else float(np.float32(v)),
                                                 ".6g") for v in row))
    return lines


def _tokens(text):
    return re.sub(r"e([+-])0(\d\d)", r"e\1\2", text).split()


CASES = {
    "10x10_dense": ("10x10_dense.txt", {"features": dense(5, "F0")}, "float"),
    "1x10_dense": ("1x10_dense.txt", {"features": dense(10, "F0")}, "float"),
    "50x20_jagged_sequences_dense": ("50x20_jagged_sequences_dense.txt",
                                     {"features": dense(3, "F0")}, "double"),
    "1x2_sparse": ("1x2_sparse.txt", {"features": sparse(1000, "F0")}, "float"),
    "1x10_sparse": ("1x10_sparse.txt", {"features": sparse(100, "F0")}, "double"),
    "10x10_sparse": ("10x10_sparse.txt", {"features": sparse(100, "F0")}, "double"),
    "3x5_MI_sparse": ("3x5_MI_sparse.txt", {"features1": sparse(2, "F0"),
                                            "features2": sparse(20, "F1"),
                                            "features3": sparse(200, "F2")}, "float"),
    "space_separated": ("space_separated.txt", {"features1": dense(15, "F1"),
                                                "features2": dense(12, "F2"),
                                                "features3": dense(1, "F3")}, "double"),
    "empty_samples": ("empty_samples.txt", {"features": dense(10, "F0"),
                                            "labels": sparse(10, "F1")}, "float"),
    "ref_data_with_escape_sequences": ("ref_data_with_escape_sequences.txt",
                                       {"features": sparse(100, "F0"),
                                        "labels": dense(3, "F1")}, "float"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_whole_file_minibatch_matches_control(backend, case):
    data, inputs, precision = CASES[case]
    d = open_file(DATA / data, inputs, backend, precision=precision, maxErrors=100)
    assert len(d.chunk_infos()) == 1
    lines = []
    for name in inputs:
        lines += _dump_stream(per_sequence(d, name), precision == "double")
    control = (CONTROL / (case + ".txt")).read_text()
    assert _tokens("\n".join(lines)) == _tokens(control)
    assert d._errors_total == 0
