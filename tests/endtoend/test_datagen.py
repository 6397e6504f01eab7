"""cntkio.endtoend.datagen: data of the shape a configuration declares, read back by cntkio's readers."""
import struct

import numpy as np
import pytest

from cntkio.config import load_config
from cntkio.endtoend import DataShape, generate_data
from cntkio.endtoend.datagen.htk import utterances
from cntkio.errors import ConfigError
from cntkio.readers import build_reader


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)      # the configs' relative paths, as a run in currentDirectory reads them


def _write(tmp_path, text):
    (tmp_path / "c.cntk").write_text(text)
    return [f"configFile={tmp_path / 'c.cntk'}"]


def _first(cfg, section="r"):
    src = build_reader(load_config(cfg)(section)("reader"), max_sweeps=1)
    mb = src.next_minibatch(10 ** 6)
    return {k.name: v for k, v in mb.items()}, src


def test_ctf_dense_sparse_labels_and_sequence_lengths(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ readerType = CNTKTextFormatReader ; file = d.ctf
      input = [ x = [ dim = 5 ; format = dense ] ; w = [ dim = 100 ; format = sparse ; alias = W ]
                labels = [ dim = 3 ; format = dense ] ] ] ]""")
    files = generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=6, length=(2, 4), streams={"labels": 1}))
    assert files == [str(tmp_path / "d.ctf")]
    mb, src = _first(cfg)
    assert mb["x"].num_sequences == 6 and mb["x"].shape[-1] == 5 and mb["w"].is_sparse
    seqs = mb["x"].as_sequences()
    assert [len(s) for s in seqs] == [s.shape[0] for s in mb["w"].as_sequences()]  # unnamed streams share lengths
    assert all(2 <= len(s) <= 4 for s in seqs)
    labels = mb["labels"].as_sequences()
    assert all(len(s) == 1 and s.sum() == 1 for s in labels)                     # one-hot, one per sequence
    src.close()


def test_a_file_two_readers_name_is_made_once_and_an_existing_one_kept(tmp_path):
    cfg = _write(tmp_path, """command = a:b
a = [ action = dumpReader ; reader = [ readerType = CNTKTextFormatReader ; file = d.ctf ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]
b = [ action = dumpReader ; reader = [ readerType = CNTKTextFormatReader ; file = d.ctf ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]""")
    assert len(generate_data(cfg, root=str(tmp_path))) == 1
    (tmp_path / "d.ctf").write_text("|x 1 2\n")
    assert generate_data(cfg, root=str(tmp_path)) == []
    assert (tmp_path / "d.ctf").read_text() == "|x 1 2\n"


def test_nothing_is_written_outside_the_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ readerType = CNTKTextFormatReader ; file = ../d.ctf ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]""")
    with pytest.raises(ConfigError, match="lies outside the data directory"):
        generate_data(cfg, root=str(root), cwd=str(root))
    assert not (tmp_path / "d.ctf").exists()


def test_a_command_output_is_never_generated(tmp_path):
    cfg = _write(tmp_path, """command = w:r
w = [ action = writeWordAndClass ; outputVocabFile = d.ctf ]
r = [ action = dumpReader ; reader = [ readerType = CNTKTextFormatReader ; file = d.ctf ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]""")
    assert generate_data(cfg, root=str(tmp_path)) == []


def test_images_map_mean_and_sizes(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ deserializers = ( [ type = ImageDeserializer ; file = map.txt
      input = [ features = [ transforms = ( [ type = Crop ; cropType = center ; cropRatio = 0.8 ] :
                                            [ type = Scale ; width = 12 ; height = 10 ; channels = 3 ] :
                                            [ type = Mean ; meanFile = mean.xml ] ) ]
                labels = [ labelDim = 4 ] ] ] ) ] ]""")
    files = generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=5))
    assert str(tmp_path / "mean.xml") in files and str(tmp_path / "map.txt") in files
    mb, src = _first(cfg)
    assert mb["features"].num_sequences == 5 and tuple(mb["features"].shape[-3:]) == (10, 12, 3)
    assert mb["labels"].shape[-1] == 4
    src.close()


def test_legacy_image_reader(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ readerType = ImageReader ; file = map.txt
      features = [ width = 8 ; height = 6 ; channels = 1 ; meanFile = m.xml ] ; labels = [ labelDim = 3 ] ] ]""")
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=4))
    mb, src = _first(cfg)
    assert mb["features"].num_sequences == 4 and sorted(mb["features"].shape[-3:]) == [1, 6, 8]
    src.close()


def test_base64_images(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ deserializers = ( [ type = Base64ImageDeserializer ; file = map.txt
      input = [ features = [ transforms = ( [ type = Scale ; width = 4 ; height = 4 ; channels = 3 ] ) ]
                labels = [ labelDim = 2 ] ] ] ) ] ]""")
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=3))
    mb, src = _first(cfg)
    assert mb["features"].num_sequences == 3
    src.close()


HTK = """command = r
r = [ action = dumpReader ; reader = [ readerType = HTKMLFReader ; frameMode = false
      features = [ dim = 12 ; contextWindow = 1:1 ; scpFile = f.scp ]
      labels = [ mlfFile = l.mlf ; labelMappingFile = states.list ; labelDim = 7 ]
      regions = [ mlfFile = r.mlf ; labelDim = 3 ] ] ]"""


def test_htk_features_labels_and_state_lists_agree(tmp_path):
    cfg = _write(tmp_path, HTK)
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=4, options={"frames": (3, 6)}))
    head = (tmp_path / "f.scp.features").read_bytes()[:12]
    frames, period, size, kind = struct.unpack(">iihh", head)
    assert size == 4 * 4 and kind == 9 and period == 100000                  # dim 12 / context 3 = 4 per frame
    assert (tmp_path / "states.list").read_text().split() == [f"s{i}" for i in range(7)]
    assert (tmp_path / "r.mlf").read_text().splitlines()[2].count(" ") == 3     # no state list: four columns
    mb, src = _first(cfg)
    lengths = [n for _, n in utterances(4, (3, 6))]
    assert sorted(len(s) for s in mb["features"].as_sequences()) == sorted(lengths)
    assert mb["features"].shape[-1] == 12 and mb["labels"].shape[-1] == 7 and mb["regions"].shape[-1] == 3
    src.close()


def test_htk_deserializers_and_writer_output_lists(tmp_path):
    cfg = _write(tmp_path, """command = r:w
r = [ action = dumpReader ; reader = [ deserializers = (
      [ type = HTKFeatureDeserializer ; input = [ f = [ dim = 3 ; scpFile = f.scp ] ] ] :
      [ type = HTKMLFDeserializer ; input = [ l = [ dim = 5 ; mlfFile = l.mlf ; labelMappingFile = s.list ] ] ] ) ] ]
w = [ action = write ; writer = [ writerType = HTKMLFWriter ; out = [ dim = 5 ; scpFile = out.scp ] ] ]""")
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=3))
    assert len((tmp_path / "out.scp").read_text().split()) == 3               # one output file per utterance
    mb, src = _first(cfg)
    assert mb["f"].num_sequences == 3 and mb["l"].shape[-1] == 5
    src.close()


def test_lm_corpus_and_word_classes(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ readerType = LMSequenceReader ; file = c.txt ; wordclass = v.txt ; randomize = none
      labelIn = [ labelDim = 30 ; beginSequence = "</s>" ; endSequence = "</s>" ]
      labels = [ labelType = NextWord ; labelDim = 30 ] ] ]""")
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=5, options={"vocabulary": 12}))
    rows = [ln.split("\t") for ln in (tmp_path / "v.txt").read_text().splitlines()]
    assert len(rows) == 12 and [int(r[0]) for r in rows] == list(range(12))
    classes = [int(r[3]) for r in rows]
    assert classes == sorted(classes)                                          # classes in blocks
    mb, src = _first(cfg)
    assert mb["labelIn"].num_sequences == 5
    src.close()


def test_lu_corpus_and_token_files(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ readerType = LUSequenceReader ; file = a.txt ; wordContext = 0:1 ; randomize = none
      unk = "<unk>" ; wordmap = map.txt ; features = [ dim = 0 ]
      labelIn = [ usewordmap = true ; beginSequence = BOS ; endSequence = EOS ; token = in.txt ; labelDim = 500 ]
      labels = [ token = out.txt ] ] ]""")
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=4, options={"vocabulary": 20, "labels": 6}))
    assert len((tmp_path / "in.txt").read_text().split()) == 20 and len((tmp_path / "out.txt").read_text().split()) == 6
    mb, src = _first(cfg)
    # the input words come under the features section's name, as wide as the token file (2 x 20)
    assert mb["features"].shape[-1] == 40 and mb["labels"].shape[-1] == 6
    src.close()


def test_uci_records(tmp_path):
    cfg = _write(tmp_path, """command = r
r = [ action = dumpReader ; reader = [ readerType = UCIFastReader ; file = u.txt ; randomize = none
      features = [ dim = 4 ; start = 1 ] ; labels = [ dim = 1 ; start = 0 ; labelDim = 3 ; labelMappingFile = m.txt ] ] ]""")
    generate_data(cfg, root=str(tmp_path), shapes=DataShape(sequences=7))
    assert (tmp_path / "m.txt").read_text().split() == ["0", "1", "2"]
    mb, src = _first(cfg)
    assert mb["features"].num_sequences == 7 and mb["labels"].shape[-1] == 3
    assert np.all(mb["labels"].asarray().sum(-1) == 1)
    src.close()
