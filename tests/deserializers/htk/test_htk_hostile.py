"""Hostile MLF input (issue 30): the inputs that found each defect, and what they give now."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import htk_corpus
from cntkio import MinibatchSource
from cntkio.deserializers.htk.common import FRAME_KEY
from cntkio.deserializers.htk.labels import HTKMLFDeserializerImpl
from cntkio.deserializers.htk.mlf import parse_mlf_files
from cntkio.deserializers.htk.text import hash_names
from cntkio.errors import FormatError

#: the 185-byte MLF whose end time 5042949672960000 (frame 50429496730) made the reader allocate
#: until the machine's memory was gone
MLF_185 = ('#!MLF!#\n"*/u0.lab"\n0 100000 a -1.5\n100000 5042949672960000 b -2.5\n.\n"*/u1.lab"\n'
           '0 100000 c -0.5\n100000 300000 a -1.0\n.\n"*/u2.lab"\n0 200000 b -3.25\n200000 600000 c '
           '-1.75000000000000000\n.\n')
STATES = {"a": 0, "b": 1, "c": 2}


def _features(scp="f.scp"):
    return {"type": "HTKFeatureDeserializer", "input": {"features": {"dim": 2, "scpFile": scp}}}


def _labels(mlf="l.mlf"):
    return {"type": "HTKMLFDeserializer", "input": {"labels": {"dim": 3, "mlfFile": mlf, "labelMappingFile": "s.list"}}}


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    """Two utterances of 3 frames (u0, u1) and the state list; the test writes l.mlf."""
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "a.htk", np.arange(12, dtype=np.float32).reshape(6, 2))
    (tmp_path / "f.scp").write_text("u0=a.htk[0,2]\nu1=a.htk[3,5]\n")
    (tmp_path / "s.list").write_text("a\nb\nc\n")
    return tmp_path


@pytest.mark.parametrize("vectorized", [True, False])
def test_the_185_byte_mlf_is_cntks_32_bit_frame_error(tmp_path, vectorized):
    (tmp_path / "l.mlf").write_text(MLF_185)
    assert len(MLF_185.encode()) == 185
    with pytest.raises(FormatError) as e:
        parse_mlf_files([str(tmp_path / "l.mlf")], STATES, 3, vectorized=vectorized)
    assert e.value.line == 4 and "not enough bits for one of the frame range values" in str(e.value)
    assert "5042949672960000" in str(e.value)


def test_the_185_byte_mlf_through_a_minibatch_source(corpus):
    (corpus / "l.mlf").write_text(MLF_185)
    with pytest.raises(FormatError, match=r"l.mlf:4: not enough bits"):
        MinibatchSource([_features(), _labels()])


@pytest.mark.parametrize("vectorized", [True, False])
def test_a_36_digit_time_is_a_located_error(tmp_path, vectorized):
    """The line parser turned it into an int64 with OverflowError; both parsers say where now."""
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"*/u0.lab"\n0 ' + "9" * 36 + ' a\n.\n')
    with pytest.raises(FormatError) as e:
        parse_mlf_files([str(tmp_path / "l.mlf")], STATES, 3, vectorized=vectorized)
    assert e.value.line == 3 and "must be integers in 100 ns units" in str(e.value)


def test_the_last_frame_that_fits_32_bits_is_accepted(tmp_path):
    """Frame 2^32 - 1 (time 429496729500000) is CNTK's largest; one more is refused."""
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"*/u0.lab"\n0 429496729500000 a\n.\n')
    idx = parse_mlf_files([str(tmp_path / "l.mlf")], STATES, 3)
    assert idx.seg_ends.tolist() == [2**32 - 1]
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"*/u0.lab"\n0 429496729550000 a\n.\n')
    with pytest.raises(FormatError, match="not enough bits"):
        parse_mlf_files([str(tmp_path / "l.mlf")], STATES, 3)


@pytest.mark.parametrize("frame_mode", [False, True])
def test_labels_longer_than_their_features_are_invalid_and_cut(corpus, frame_mode, caplog):
    """u0's labels claim 4e9 frames (within 32 bits): checked against its 3 feature frames before
    any array is sized, an invalid sequence (counted against max_errors), u1 read as usual."""
    (corpus / "l.mlf").write_text('#!MLF!#\n"*/u0.lab"\n0 100000 a\n100000 400000000000000 b\n.\n'
                                  '"*/u1.lab"\n0 300000 c\n.\n')
    caplog.set_level(logging.WARNING)
    src = MinibatchSource([_features(), _labels()], randomize=False, max_sweeps=1, frame_mode=frame_mode,
                          max_errors=3)
    labels = []
    while True:
        mb = src.next_minibatch(100)
        if not mb:
            break
        labels.append(mb[src.streams["labels"]].as_csr().indices)
    assert np.concatenate(labels).tolist() == [2, 2, 2]         # u1's frames only
    assert "l.mlf:2: duration mismatch (4000000000 frames in the labels of 'u0' vs. 3 in its features)" in caplog.text
    with pytest.raises(RuntimeError, match="maximum number"):
        src = MinibatchSource([_features(), _labels()], randomize=False, max_sweeps=1, max_errors=0)
        while src.next_minibatch(100):
            pass


def test_labels_cut_to_their_features_keep_their_first_frames(corpus):
    (corpus / "l.mlf").write_text('#!MLF!#\n"*/u0.lab"\n0 100000 a\n100000 200000 b\n200000 900000 c\n.\n'
                                  '"*/u1.lab"\n0 300000 c\n.\n')
    d = HTKMLFDeserializerImpl(_labels(), frame_mode=False)
    from cntkio.deserializers.htk.features import HTKFeatureDeserializerImpl
    d.bind_composite([HTKFeatureDeserializerImpl(_features()), d])
    assert d._lengths.tolist() == [3, 3] and d.mlf.valid.tolist() == [False, True]
    labels, _ = d._raw(0)
    assert labels.tolist() == [0, 1, 2, 2, 2, 2]


def test_an_mlf_with_no_entry_in_frame_mode_finds_no_frame(corpus):
    """Was IndexError (htk/common.py) when a frame-mode join looked up any key."""
    (corpus / "l.mlf").write_text("#!MLF!#\n")
    d = HTKMLFDeserializerImpl(_labels(), frame_mode=True)
    keys = np.zeros(2, FRAME_KEY)
    keys["utt"] = hash_names(["u0", "u1"])
    chunk, index = d.lookup(keys)
    assert chunk.tolist() == [-1, -1] and index.tolist() == [-1, -1]
    with pytest.raises(Exception, match="Keys of logical sequences do not match") as e:
        MinibatchSource([_features(), _labels()], frame_mode=True)
    assert not isinstance(e.value, IndexError)


def test_an_entry_name_that_is_not_utf8_is_a_key_of_its_bytes(tmp_path):
    """Was UnicodeEncodeError (the key hash of a name decoded with surrogateescape)."""
    (tmp_path / "l.mlf").write_bytes(b'#!MLF!#\n"*/u\xae0.lab"\n0 100000 a\n.\n')
    idx = parse_mlf_files([str(tmp_path / "l.mlf")], STATES, 3)
    assert idx.keys.tolist() == hash_names([b"u\xae0"]).tolist()


def test_both_parsers_end_lines_at_lf_only(tmp_path):
    """A VT inside a line (the campaign's input): the line parser split there too (str.splitlines)
    and disagreed with the scan; both read it as one line now, its fourth field on ignored."""
    (tmp_path / "l.mlf").write_bytes(b'#!MLF!#\n"*/u0.lab"\n0 200000 a -1.5\x0b200000 500000 b\n'
                                     b'200000 300000 c\n.\n')
    for vectorized in (True, False):
        idx = parse_mlf_files([str(tmp_path / "l.mlf")], STATES, 3, vectorized=vectorized)
        assert idx.seg_starts.tolist() == [0, 2] and idx.seg_ends.tolist() == [2, 3]
        assert idx.seg_labels.tolist() == [0, 2]
