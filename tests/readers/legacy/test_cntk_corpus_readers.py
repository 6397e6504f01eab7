"""What CNTK's own Examples and EndToEnd configs need of the legacy readers (issue 28): the input
words under the features section's name, LU dimensions from the token files, an MLF without a state
list, the LUSequenceWriter, and the readers outside cntkio's formats refused by name."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio.deserializers.htk.mlf import parse_mlf_files
from cntkio.errors import ConfigError, FormatError, NotImplementedInCntkio
from cntkio.readers import build_reader, reader_spec
from cntkio.readers.legacy.luwriter import LUSequenceDataWriter


def _lu(tmp_path, **extra):
    (tmp_path / "a.txt").write_text("BOS O\nfly B-x\nEOS O\n")
    (tmp_path / "in.txt").write_text("BOS\nEOS\nfly\n<unk>\n")
    (tmp_path / "out.txt").write_text("O\nB-x\n")
    sec = {"readerType": "LUSequenceReader", "file": str(tmp_path / "a.txt"), "randomize": "None", "unk": "<unk>",
           "wordContext": "0:1",
           "labelIn": {"token": str(tmp_path / "in.txt"), "beginSequence": "BOS", "endSequence": "EOS",
                       "labelDim": "10000"},
           "labels": {"token": str(tmp_path / "out.txt"), "labelDim": "127"}}
    sec.update(extra)
    return sec


def test_lu_dims_are_the_token_files_and_the_features_section_names_the_words(tmp_path):
    # Tests/EndToEndTests/Text/SLU/rnnlu.cntk: labelIn labelDim=10000, a features = [dim = 0] section;
    # CNTK's LUSequenceReader: dim = the token count; the words go to m_featuresName
    sec = _lu(tmp_path, features={"dim": "0", "sectionType": "data"})
    assert reader_spec(sec).stream_names == ["features", "labels"]
    src = build_reader(sec, max_sweeps=1)
    mb = {k.name: v for k, v in src.next_minibatch(100).items()}
    assert mb["features"].shape[-1] == 2 * 4 and mb["labels"].shape[-1] == 2
    src.close()
    assert reader_spec(_lu(tmp_path)).stream_names == ["labelIn", "labels"]     # no features section: as before


def test_lm_input_words_under_the_features_section(tmp_path):
    (tmp_path / "c.txt").write_text("</s> a b </s>\n</s> b </s>\n")
    sec = {"readerType": "LMSequenceReader", "file": str(tmp_path / "c.txt"), "randomize": "None",
           "features": {"dim": "0", "sectionType": "data"},
           "labelIn": {"labelDim": "5", "beginSequence": "</s>", "endSequence": "</s>"},
           "labels": {"labelType": "NextWord", "labelDim": "5"}}
    assert reader_spec(sec).stream_names == ["features", "labels"]
    src = build_reader(sec, max_sweeps=1)
    mb = {k.name: v for k, v in src.next_minibatch(100).items()}
    assert mb["features"].num_samples == 5 and mb["features"].shape[-1] == 5
    src.close()


def test_an_mlf_without_state_list_has_four_columns(tmp_path):
    # TIMIT.train.align_dr.mlf.cntk: "0 307 dr1 0", frame numbers (a span below 99999), the class last
    (tmp_path / "r.mlf").write_text('#!MLF!#\n"a.rec"\n0 3 dr1 0\n3 5 dr2 1\n.\n"b.rec"\n0 200000 dr3 2\n.\n')
    idx = parse_mlf_files([str(tmp_path / "r.mlf")], None, 8)
    assert list(idx.names) == ["a", "b"]
    assert idx.seg_starts.tolist() == [0, 3, 0] and idx.seg_ends.tolist() == [3, 5, 2]   # b's times: 100 ns
    assert idx.seg_labels.tolist() == [0, 1, 2]
    (tmp_path / "r.mlf").write_text('#!MLF!#\n"a.rec"\n0 3 dr1\n.\n')
    with pytest.raises(FormatError, match="4-column format"):
        parse_mlf_files([str(tmp_path / "r.mlf")], None, 8)
    (tmp_path / "r.mlf").write_text('#!MLF!#\n"a.rec"\n0 3 dr1 9\n.\n')
    with pytest.raises(FormatError, match="exceeds the model output dimension"):
        parse_mlf_files([str(tmp_path / "r.mlf")], None, 8)


@pytest.mark.parametrize("reader, name", [("Kaldi2Reader", "Kaldi feature archives"),
                                          ("LibSVMBinaryReader", "LibSVM binary format")])
def test_readers_outside_cntkios_formats_are_refused_by_name(reader, name):
    with pytest.raises(ConfigError, match=f"readerType '{reader}' is not implemented in cntkio: it is CNTK's reader "
                                          f"of .*{name}") as e:
        reader_spec({"readerType": reader, "file": "x"})
    assert isinstance(e.value, NotImplementedInCntkio) and e.value.hint is None


def test_the_lattice_reader_is_refused_by_name(tmp_path):
    sec = {"readerType": "HTKMLFReader", "features": {"dim": "3", "scpFile": "f.scp"},
           "labels": {"mlfFile": "l.mlf", "labelDim": "2"}, "lattices": {"denlatTocFile": "*.lats.toc"}}
    with pytest.raises(NotImplementedInCntkio, match="the lattice reader"):
        reader_spec(sec)


def test_the_lu_sequence_writer(tmp_path):
    (tmp_path / "out.txt").write_text("O\nB-x\nB-y\n")
    w = LUSequenceDataWriter({"outputNodeNames": "outputs",
                              "outputs": {"file": str(tmp_path / "rec.txt"), "token": str(tmp_path / "out.txt")}})
    assert w.get_sections() == {"outputs": "data"}
    w.save_data(0, {"outputs": np.array([[0.1, 0.7, 0.2], [0.9, 0.0, 0.1]])}, 2, 3)
    w.save_data(2, {"outputs": np.array([[0.0, 0.1, 0.8]])}, 1, 3)
    assert not (tmp_path / "rec.txt").exists()                     # written whole when closed
    w.destroy()
    assert (tmp_path / "rec.txt").read_text() == "B-x O \nB-y \n"
    with pytest.raises(ConfigError, match="at least one outputNodeName"):
        LUSequenceDataWriter({"outputs": {"file": "x", "token": "y"}})
