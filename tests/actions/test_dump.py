"""The dump format of CNTK's reader unit tests (conformance README, section 2)."""
from __future__ import annotations

import collections
import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cntkio.actions.dump import dump_minibatches, first_fit_layout, format_minibatch, format_stream
from cntkio.minibatch import MinibatchData
from cntkio.streams import StreamInformation
import paths

DATA = paths.CONFORMANCE / "Data" / "CNTKTextFormatReader"


def dense_mb(name, seqs, dtype=np.float32, dim=None):
    """A MinibatchData with one row per sequence (as the sequence packer delivers them)."""
    seqs = [np.asarray(s, dtype=dtype).reshape(len(s), -1) for s in seqs]
    dim = dim or seqs[0].shape[1]
    T = max(len(s) for s in seqs)
    mask = np.zeros((len(seqs), T), np.int8)
    for i, s in enumerate(seqs):
        mask[i, :len(s)] = 1
        if len(s):
            mask[i, 0] = 2
    info = StreamInformation(name, 0, "dense", dtype, (dim,))
    return MinibatchData.from_packed(info, mask, values=np.concatenate(seqs).reshape(-1, dim))


def sparse_mb(name, seqs, dim, dtype=np.float32):
    """seqs: list of sequences, each a list of {index: value} samples."""
    lengths = [len(s) for s in seqs]
    T = max(lengths)
    mask = np.zeros((len(seqs), T), np.int8)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        if n:
            mask[i, 0] = 2
    samples = [smp for s in seqs for smp in s]
    indptr = np.concatenate([[0], np.cumsum([len(smp) for smp in samples])]).astype(np.int64)
    indices = np.array([k for smp in samples for k in sorted(smp)], np.int32)
    data = np.array([smp[k] for smp in samples for k in sorted(smp)], dtype)
    info = StreamInformation(name, 1, "sparse", dtype, (dim,))
    return MinibatchData.from_packed(info, mask, indptr=indptr, indices=indices, data=data)


# --- layout -----------------------------------------------------------------------------------

def test_first_fit_ref_data_labels_share_a_row():
    # README 2.5: label lengths 2, 1, 1 -> P=2, sequences 1 and 2 share row 1
    rows, offsets, P, T = first_fit_layout([2, 1, 1])
    assert (P, T) == (2, 2)
    assert rows.tolist() == [0, 1, 1]
    assert offsets.tolist() == [0, 0, 1]


def test_first_fit_equal_lengths_one_row_each():
    rows, offsets, P, T = first_fit_layout([10] * 10)
    assert (P, T) == (10, 10)
    assert rows.tolist() == list(range(10)) and offsets.tolist() == [0] * 10


def test_first_fit_takes_the_first_row_with_room_not_the_best():
    # T=5: [3] row0, [2] fits row0 (3+2<=5), [4] row1, [1] row1 (4+1), [1] row2
    rows, offsets, P, T = first_fit_layout([3, 2, 4, 1, 1, 5])
    assert rows.tolist() == [0, 0, 1, 1, 2, 3]
    assert offsets.tolist() == [0, 3, 0, 4, 0, 0]
    assert (P, T) == (4, 5)


@paths.needs_shared
def test_first_fit_50x20_jagged_gives_31_rows_of_19():
    # README 2.5, checked against the control: 50 sequences, T=19, P=31
    ids = [line.split("|", 1)[0].strip() for line in
           (DATA / "50x20_jagged_sequences_dense.txt").read_text().splitlines() if line.strip()]
    lengths = list(collections.Counter(ids).values())   # ids are consecutive runs, in file order
    assert len(lengths) == 50
    _, _, P, T = first_fit_layout(lengths)
    assert (P, T) == (31, 19)


def _naive_first_fit(lengths):
    T = max(lengths) if lengths else 0
    used, place = [], []
    for ln in lengths:
        for s, u in enumerate(used):  # noqa: B007 (s is the row after the loop)
            if u + ln <= T:
                break
        else:
            s = len(used)
            used.append(0)
        place.append((s, used[s]))
        used[s] += ln
    return place, len(used), T


@given(st.lists(st.integers(0, 12), min_size=1, max_size=60))
@settings(max_examples=200, deadline=None)
def test_first_fit_matches_cntk_loop(lengths):
    rows, offsets, P, T = first_fit_layout(lengths)
    place, P2, T2 = _naive_first_fit(lengths)
    assert list(zip(rows.tolist(), offsets.tolist())) == place
    assert (P, T) == (P2, T2)


# --- number format ----------------------------------------------------------------------------

def test_values_print_as_cpp_iostream_g6_of_the_float32_widened_value():
    mb = dense_mb("f", [[[1e6, -4.9518e7, 1.19651e-9, 0.0, -0.0, np.inf, np.nan, 0.1, 123456789.0]]])
    assert format_stream(mb) == "1e+06 -4.9518e+07 1.19651e-09 0 -0 inf nan 0.1 1.23457e+08\n"


def test_float32_and_double_values_differ_where_float32_rounds():
    # float32(0.64718951157425) = 0.647189497947693 -> 0.647189; the double rounds up to 0.64719
    v = 0.6471895115742501
    assert format_stream(dense_mb("f", [[[v]]], np.float32)) == "0.647189\n"
    assert format_stream(dense_mb("d", [[[v]]], np.float64)) == "0.64719\n"


# --- walk order -------------------------------------------------------------------------------

def test_lines_are_time_major_across_rows_and_skip_gaps():
    mb = dense_mb("labels", [[[1], [2]], [[3]], [[4]]])
    # rows: s0 = [1 2], s1+s2 = [3 4] -> t0: 1 3, t1: 2 4
    assert format_stream(mb) == "1\n3\n2\n4\n"


def test_ten_sequences_of_ten_interleave():
    seqs = [[[10 * s + t] for t in range(10)] for s in range(10)]
    text = format_stream(dense_mb("f", seqs))
    assert text.split() == [str(10 * s + t) for t in range(10) for s in range(10)]


def test_sparse_samples_expand_to_dense():
    mb = sparse_mb("labels", [[{2: 1.5}, {}], [{0: -1.0, 3: 2.0}]], dim=4)
    assert format_stream(mb) == "0 0 1.5 0\n-1 0 0 2\n0 0 0 0\n"


def test_rows_layout_keeps_the_packers_rows():
    # truncated BPTT slots: row 0 = [1 2 3], row 1 = [4] -> time-major over the rows as given
    info = StreamInformation("f", 0, "dense", np.float32, (1,))
    mask = np.array([[1, 1, 2], [2, 0, 0]], np.int8)
    mb = MinibatchData.from_packed(info, mask, values=np.array([[1], [2], [3], [4]], np.float32))
    assert format_stream(mb, layout="rows") == "1\n4\n2\n3\n"


def test_minibatch_writes_streams_in_the_requested_order_and_empty_streams_write_nothing():
    f = dense_mb("features", [[[1, 2]]])
    labels = dense_mb("labels", [[[7]]])
    empty = sparse_mb("extra", [[]], dim=3)
    mb = {f.stream: f, labels.stream: labels, empty.stream: empty}
    assert format_minibatch(mb) == "1 2\n7\n"
    assert format_minibatch(mb, ["labels", "features"]) == "7\n1 2\n"
    with pytest.raises(KeyError, match="nope"):
        format_minibatch(mb, ["nope"])


def test_dump_recreates_the_file_and_skips_empty_minibatches(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old content\n")
    a = dense_mb("f", [[[1]], [[2]]])
    b = dense_mb("f", [[[3], [4]]])
    n = dump_minibatches([{"f": a}, {}, {"f": b}], out)
    assert n == 4
    assert out.read_text() == "1\n2\n3\n4\n"
    buf = io.StringIO()
    dump_minibatches([{"f": b}], buf)
    assert buf.getvalue() == "3\n4\n"


def test_dump_via_cntkio_testing():
    from cntkio.testing import dump_minibatches as public
    buf = io.StringIO()
    public([{"f": dense_mb("f", [[[0.5, 2]]])}], buf)
    assert buf.getvalue() == "0.5 2\n"


@given(st.lists(st.integers(1, 6), min_size=1, max_size=25))
@settings(max_examples=100, deadline=None)
def test_every_sample_is_written_once_and_sequences_in_time_order(lengths):
    seqs, v = [], 0
    for ln in lengths:
        seqs.append([[v + t] for t in range(ln)])
        v += 100
    out = [int(x) for x in format_stream(dense_mb("f", seqs, np.float64)).split()]
    expected = sorted(x[0] for s in seqs for x in s)
    assert sorted(out) == expected
    for s in seqs:
        vals = [x[0] for x in s]
        pos = [out.index(x) for x in vals]
        assert pos == sorted(pos)
