"""Readers from config: every reader section of the reader pages (ctf-text-format-reader.txt,
composite-readers-deserializers-transforms.txt) and every option of their tables."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from cntkio.config import parse_config
from cntkio.constants import RANDOMIZE_AUTO
from cntkio.deserializers import base
from cntkio.errors import ConfigError, NotImplementedInCntkio
from cntkio.readers import UnsupportedReaderError, build_reader, reader_spec
from ctf_cases import EXTENDED as EXTENDED_DATA  # the format page's extended example

# --- the reader sections of the pages, as written there -----------------------------------------

SIMPLE = r'''
reader = [
    readerType = "CNTKTextFormatReader"
    file = "c:\mydata\SampleInput.txt" # See the second example for Linux path example

    # IMPORTANT!
    # All inputs are grouped within "input" sub-section.
    input = [
        A = [
            dim = 5
            format = "dense"
        ]
        B = [
            dim = 1000000
            format = "sparse"
        ]
        C = [
            dim = 1
            format = "dense"
        ]
    ]
]
'''
SIMPLE_DATA = """\
|B 100:3 123:4 |C 8 |A 0 1 2 3 4 |# a CTF comment
|# another comment |A 0 1.1 22 0.3 54 |C 123917 |B 1134:1.911 13331:0.014
|C -0.001 |# a comment with an escaped pipe: '|#' |A 3.9 1.11 121.2 99.13 0.04 |B 999:0.001 918918:-9.19
"""

EXTENDED = r'''
precision="double"

reader = [
    readerType = "CNTKTextFormatReader"
    file = "/home/mydata/SampleInput.txt" # See the first example for Windows style path example
    randomize = true
    randomizationWindow = 30
    skipSequenceIds = false
    maxErrors = 100
    traceLevel = 2

    chunkSizeInBytes = 1024

    keepDataInMemory = true
    frameMode = false

    input = [
        Some_very_long_input_name = [
            alias = "a"
            dim = 3
            format = "dense"
        ]
        Some_other_also_very_long_input_name = [
            alias = "b"
            dim = 2
            format = "dense"
        ]
    ]
]
'''

COMPOSITE_CTF = r'''
reader = {
        verbosity = 0 ;
        randomize = true;
        randomizationWindow=30
        deserializers = ({
            type = "CNTKTextFormatDeserializer" ; module = "CNTKTextFormatReader"
            file = "/home/mydata/SampleInput.txt" # See the first example for Windows style path example
            maxErrors = 100
            skipSequenceIds = false
            traceLevel = 2
            input = {
                qu1fea = {alias = "qui"; dim = 95589; format = "sparse"}
                qu2fea = {alias = "quj"; dim = 95589; format = "sparse"}
                pairweight = {alias = "wij"; dim = 1; format = "dense"}
            }
        })
    }
'''
COMPOSITE_CTF_DATA = """\
|qui 5:1 95588:2 |quj 7:1 |wij 0.5
|qui 1:1 |quj 2:1 3:1 |wij 1
|qui 95000:3 |quj 0:1 |wij -2
"""

HTK_LEGACY = r'''
DataDir = /data
# Old reader config. For illustration only.
reader = [
    readerType = "HTKMLFReader"
    readMethod = "blockRandomize"
    nbruttsineachrecurrentiter = 32
    randomize = "auto"
    verbosity = 0

    features = [
        dim = 363
        type = "real"
        scpFile = "$DataDir$/glob_0000.scp"
    ]

    labels = [
        mlfFile = "$DataDir$/glob_0000.mlf"
        labelMappingFile = "$DataDir$/state.list"

        labelDim = 132
        labelType = "category"
    ]
]
'''

HTK_COMPOSITE = r'''
DataDir = /data
reader = [
    verbosity = 0
    randomize = true

    # A list of deserializers the reader uses.
    deserializers = (
        [
            type = "HTKFeatureDeserializer"
            module = "HTKDeserializers"
            input = [
                features = [
                    dim = 363
                    scpFile = "$DataDir$/glob_0000.scp"
                ]
            ]
        ]:
        [
            type = "HTKMLFDeserializer"
            module = "HTKDeserializers"
            input = [
                labels = [
                    dim = 132
                    mlfFile = "$DataDir$/glob_0000.mlf"
                    labelMappingFile = "$DataDir$/state.list"
                    phoneBoundaries=false
                ]
            ]
        ]
    )
]
'''

IMAGE_TRANSFORMS = r'''
ConfigDir = /cfg
reader = [
deserializers = ([
    type = "ImageDeserializer"
    module = "ImageReader"

    # Map file which maps images to labels
    file = "$ConfigDir$/train_map.txt"

    # Description of input streams
    input = [
            features = [
                transforms = (
                    [
                        type = "Crop"
                        cropType = "RandomSide"
                        sideRatio = 0.875
                        jitterType = "UniRatio"
                    ]:[
                        type = "Scale"
                        width = 224
                        height = 224
                        channels = 3
                        interpolations = "linear"
                    ]:[
                        type = "Mean"
                        meanFile = "$ConfigDir$/ImageNet1K_mean.xml"
                    ]:[
                        type = "Transpose"
                    ]
                )
            ]
            labels = [
                labelDim = 1000
            ]
        ]
])
]
'''
# The page's text closes one ']' too many after the input section (it does not parse in CNTK
# either); that one bracket is removed above, the rest is as written.


def reader_of(text: str, *overrides: str):
    cfg = parse_config(textwrap.dedent(text))
    for o in overrides:
        cfg.insert(o)
    return cfg("reader")


def read_all(source, mb_size=100):
    """All minibatches of one sweep (end_of_sweep ends it)."""
    out = []
    for _ in range(1000):
        mb = source.next_minibatch(mb_size)
        if not mb:
            break
        out.append({k.name: v for k, v in mb.items()})
        if any(v.end_of_sweep for v in mb.values()):
            break
    return out


# --- translation (no file opened) -------------------------------------------------------------

def test_simple_example_translates_to_one_ctf_deserializer():
    spec = reader_spec(reader_of(SIMPLE))
    assert spec.reader_type == "CNTKTextFormatReader"
    assert spec.stream_names == ["A", "B", "C"]
    (d,) = spec.deserializers
    assert d["type"] == "CNTKTextFormatDeserializer"
    assert d["file"] == "c:\\mydata\\SampleInput.txt"          # quotes removed, backslashes kept
    assert d["input"] == {
        "A": {"dim": 5, "format": "dense", "alias": "A", "definesMBSize": False},
        "B": {"dim": 1000000, "format": "sparse", "alias": "B", "definesMBSize": False},
        "C": {"dim": 1, "format": "dense", "alias": "C", "definesMBSize": False},
    }
    assert spec.dtype == "float32" and d["precision"] == "float"
    kw = spec.source_kwargs
    # randomize defaults to true; no window: 4 GB of 32 MB chunks = 128 chunks
    assert kw["randomize"] is True and kw["randomization_window_in_chunks"] == 128
    assert kw["randomization_window_in_samples"] == 0 and kw["randomization_seed"] == 0
    assert kw["trace_level"] == 1 and kw["frame_mode"] is False and kw["truncation_length"] == 0


def test_extended_example_options():
    spec = reader_spec(reader_of(EXTENDED))
    (d,) = spec.deserializers
    assert spec.dtype == "float64" and d["precision"] == "double"
    assert d["file"] == "/home/mydata/SampleInput.txt"
    assert {k: d[k] for k in ("skipSequenceIds", "maxErrors", "traceLevel", "chunkSizeInBytes",
                              "keepDataInMemory")} == {
        "skipSequenceIds": False, "maxErrors": 100, "traceLevel": 2, "chunkSizeInBytes": 1024,
        "keepDataInMemory": True}
    assert d["input"]["Some_very_long_input_name"]["alias"] == "a"
    assert d["input"]["Some_other_also_very_long_input_name"]["alias"] == "b"
    kw = spec.source_kwargs
    assert kw["randomization_window_in_chunks"] == 30 and kw["randomization_window_in_samples"] == 0
    assert kw["trace_level"] == 2 and kw["max_errors"] == 100 and kw["frame_mode"] is False


def test_composite_example_options():
    spec = reader_spec(reader_of(COMPOSITE_CTF))
    assert spec.reader_type == "CompositeDataReader"
    (d,) = spec.deserializers
    assert d["type"] == "CNTKTextFormatDeserializer" and "module" not in d
    assert d["maxErrors"] == 100 and d["traceLevel"] == 2 and d["skipSequenceIds"] is False
    assert d["input"]["qu1fea"] == {"dim": 95589, "format": "sparse", "alias": "qui", "definesMBSize": False}
    assert spec.stream_names == ["qu1fea", "qu2fea", "pairweight"]
    kw = spec.source_kwargs
    assert kw["trace_level"] == 0                    # verbosity
    # CTF present, sampleBasedRandomizationWindow not set: the window counts chunks
    assert kw["randomization_window_in_chunks"] == 30 and kw["randomization_window_in_samples"] == 0


def test_htk_legacy_section_reads_as_the_feature_and_mlf_deserializers():
    spec = reader_spec(reader_of(HTK_LEGACY))
    assert spec.reader_type == "HTKMLFReader" and spec.stream_names == ["features", "labels"]
    parts = spec.deserializers[0]["parts"]
    assert [p["type"] for p in parts] == ["HTKFeatureDeserializer", "HTKMLFDeserializer"]
    assert parts[0]["input"]["features"]["scpFile"] == "/data/glob_0000.scp"
    assert parts[1]["input"]["labels"]["labelMappingFile"] == "/data/state.list"
    kw = spec.source_kwargs
    assert kw["frame_mode"] is True and kw["randomize"] is True and kw["trace_level"] == 0
    # randomize = auto: CNTK's randomizeAuto frame window, wider than any corpus
    assert spec.whole_dataset_window is None and kw["randomization_window_in_samples"] == RANDOMIZE_AUTO


def test_htk_composite_section_names_both_deserializers():
    spec = reader_spec(reader_of(HTK_COMPOSITE))
    assert [d["type"] for d in spec.deserializers] == ["HTKFeatureDeserializer", "HTKMLFDeserializer"]
    assert spec.stream_names == ["features", "labels"]


UNIMPLEMENTED_LEGACY = r'''
reader = [
    readerType = "LibSVMBinaryReader"
    file = "/data/x.bin"
]
'''


def test_an_unimplemented_legacy_reader_type_lists_the_implemented_ones():
    with pytest.raises(UnsupportedReaderError) as err:
        reader_spec(reader_of(UNIMPLEMENTED_LEGACY))
    msg = str(err.value)
    assert "readerType 'LibSVMBinaryReader' is not implemented" in msg
    assert "CNTKTextFormatReader" in msg and "CompositeDataReader" in msg and "HTKMLFReader" in msg
    assert "CNTKTextFormatDeserializer" in msg and err.value.path == "reader.readerType"
    assert isinstance(err.value, NotImplementedInCntkio) and isinstance(err.value, ConfigError)


def test_an_unimplemented_deserializer_type_lists_the_implemented_ones():
    with pytest.raises(UnsupportedReaderError) as err:
        reader_spec(reader_of(HTK_COMPOSITE.replace('"HTKMLFDeserializer"', '"LatticeDeserializer"')))
    msg = str(err.value)
    assert "deserializer type 'LatticeDeserializer' is not implemented" in msg
    assert "HTKMLFDeserializer" in msg
    assert err.value.path == "reader.deserializers[1].type"


def test_image_composite_with_transforms_names_the_missing_deserializer():
    if "ImageDeserializer" in base.registered_deserializers():
        spec = reader_spec(reader_of(IMAGE_TRANSFORMS))
        types = [t["type"] for t in spec.deserializers[0]["input"]["features"]["transforms"]]
        assert types == ["Crop", "Scale", "Mean", "Transpose"]
    else:
        with pytest.raises(UnsupportedReaderError, match="'ImageDeserializer' is not implemented"):
            reader_spec(reader_of(IMAGE_TRANSFORMS))


def test_transforms_on_a_deserializer_that_has_none_is_a_clear_error():
    text = COMPOSITE_CTF.replace('pairweight = {alias = "wij"; dim = 1; format = "dense"}',
                                 'pairweight = {alias = "wij"; dim = 1; format = "dense"; '
                                 'transforms = ({type = "Scale"; width = 2})}')
    with pytest.raises(ConfigError) as err:
        reader_spec(reader_of(text))
    assert err.value.path == "reader.deserializers[0].input.pairweight.transforms"
    assert "CNTKTextFormatDeserializer does not apply transforms" in str(err.value)


def test_transforms_reach_a_deserializer_that_applies_them():
    class _Fake(base.Deserializer):
        pass

    def factory(config, **kw):
        raise AssertionError("not built in this test")
    factory.supports_transforms = True
    base.register_deserializer("TransformingTestDeserializer", factory)
    try:
        spec = reader_spec(reader_of("""
reader = [ deserializers = ([ type = TransformingTestDeserializer; file = map.txt
    input = [ features = [ transforms = ([type = Crop; cropType = center]:[type = Transpose]) ]
              labels = [ labelDim = 10 ] ] ]) ]"""))
    finally:
        base._REGISTRY.pop("TransformingTestDeserializer")
    (d,) = spec.deserializers
    assert d["input"]["features"]["transforms"] == [{"type": "Crop", "cropType": "center"}, {"type": "Transpose"}]
    assert d["input"]["labels"] == {"labelDim": "10"} and d["file"] == "map.txt"
    # no CTF: sampleBasedRandomizationWindow defaults to true, the window to requestDataSize samples
    # (CompositeDataReader.cpp:137), wider than any corpus
    assert spec.source_kwargs["randomization_window_in_chunks"] == 0
    assert spec.source_kwargs["randomization_window_in_samples"] == RANDOMIZE_AUTO


CTF_MIN = """
reader = [
    readerType = CNTKTextFormatReader
    file = data.txt
    input = [ features = [ dim = 2 ; format = dense ] ]
]
"""


@pytest.mark.parametrize("options,expected", [
    ([], {"randomization_window_in_chunks": 128, "randomization_window_in_samples": 0}),
    (["reader=[chunkSizeInBytes=10000]"],
     {"randomization_window_in_chunks": 4 * 1024 ** 3 // 10000, "randomization_window_in_samples": 0}),
    (["reader=[randomizationWindow=500; sampleBasedRandomizationWindow=true]"],
     {"randomization_window_in_chunks": 0, "randomization_window_in_samples": 500}),
    (["reader=[randomizationWindow=7]"],
     {"randomization_window_in_chunks": 7, "randomization_window_in_samples": 0}),
    (["reader=[randomize=false; randomizationWindow=7]"],
     {"randomize": False, "randomization_window_in_chunks": 0, "randomization_window_in_samples": 0}),
    (["reader=[randomize=none]"], {"randomize": False}),
    (["reader=[randomize=auto]"], {"randomize": True}),
    (["reader=[randomizationSeed=5]"], {"randomization_seed": 5}),
    (["reader=[frameMode=true]"], {"frame_mode": True}),
    (["reader=[truncated=true; truncationLength=20]"], {"truncation_length": 20}),
    (["reader=[truncationLength=20]"], {"truncation_length": 0}),        # ignored unless truncated
    (["reader=[multiThreadedDeserialization=true]"], {"multithreaded_deserializer": True}),
    (["reader=[verbosity=2]"], {"trace_level": 2}),
    (["traceLevel=0"], {"trace_level": 0}),                                # from the enclosing scope
    (["reader=[maxErrors=3]"], {"max_errors": 3}),
    (["reader=[globalRandomization=true]"], {"global_randomization": True}),
    (["reader=[globalRandomization=false]"], {"global_randomization": False}),
])
def test_reader_options(options, expected):
    spec = reader_spec(reader_of(CTF_MIN, *options))
    for k, v in expected.items():
        assert spec.source_kwargs[k] == v, k


def test_sample_based_window_without_size_is_cntks_request_data_size():
    # CompositeDataReader.cpp:137: randomizationWindow defaults to requestDataSize samples
    spec = reader_spec(reader_of(CTF_MIN, "reader=[sampleBasedRandomizationWindow=true]"))
    assert spec.source_kwargs["randomization_window_in_chunks"] == 0
    assert spec.source_kwargs["randomization_window_in_samples"] == RANDOMIZE_AUTO
    assert spec.whole_dataset_window is None


def test_composite_ctf_window_defaults_to_128_chunks_unless_sample_based():
    text = """reader = [ deserializers = ([ type = CNTKTextFormatDeserializer; file = d.txt
                 input = [ x = [ dim = 1; format = dense ] ] ]) ]"""
    spec = reader_spec(reader_of(text))
    assert spec.source_kwargs["randomization_window_in_chunks"] == 128
    spec = reader_spec(reader_of(text, "reader=[sampleBasedRandomizationWindow=true]"))
    assert spec.source_kwargs["randomization_window_in_samples"] == RANDOMIZE_AUTO
    spec = reader_spec(reader_of(text, "reader=[sampleBasedRandomizationWindow=true; randomizationWindow=9]"))
    assert spec.source_kwargs["randomization_window_in_samples"] == 9


def test_deserializer_options_are_inherited_from_enclosing_sections():
    text = """
precision = double
traceLevel = 0
cacheIndex = true
reader = [
    maxErrors = 4
    useNumericSequenceKeys = true
    hashSequenceKeys = false
    deserializers = ([ type = CNTKTextFormatDeserializer; file = a.txt; skipSequenceIds = true
                        input = [ x = [ dim = 1; format = dense ] ] ]
                   :[ type = CNTKTextFormatDeserializer; file = b.txt; maxErrors = 9
                        input = [ y = [ dim = 2; format = sparse; definesMBSize = true ] ] ])
]"""
    spec = reader_spec(reader_of(text))
    a, b = spec.deserializers
    assert (a["file"], b["file"]) == ("a.txt", "b.txt")
    assert a["maxErrors"] == 4 and b["maxErrors"] == 9
    assert a["traceLevel"] == 0 and a["cacheIndex"] is True and a["skipSequenceIds"] is True
    assert "skipSequenceIds" not in b
    assert a["useNumericSequenceKeys"] is True and a["hashSequenceKeys"] is False
    assert a["precision"] == b["precision"] == "double"
    assert b["input"]["y"]["definesMBSize"] is True
    assert spec.stream_names == ["x", "y"]
    assert spec.source_kwargs["max_errors"] == 4


def test_deserializers_key_makes_a_composite_reader_whatever_reader_type_says():
    spec = reader_spec(reader_of("""reader = [ readerType = CNTKTextFormatReader
        deserializers = ([ type = CNTKTextFormatDeserializer; file = d.txt
                           input = [ x = [ dim = 1; format = dense ] ] ]) ]"""))
    assert spec.reader_type == "CompositeDataReader"


@pytest.mark.parametrize("override,path,message", [
    ("reader=[input=[features=[dim=0]]]", "reader.input.features.dim", "integer >= 1"),
    ("reader=[input=[features=[dim=two]]]", "reader.input.features.dim", "expected an integer"),
    ("reader=[input=[features=[format=csv]]]", "reader.input.features.format", "dense or sparse"),
    ("reader=[truncated=true]", "reader.truncationLength", "missing"),
    ("reader=[truncated=true; truncationLength=5; frameMode=true]", "reader.truncated", "cannot both"),
    ("reader=[randomize=5]", "reader.randomize", "true or false"),
    ("reader=[randomizationWindow=0]", "reader.randomizationWindow", "integer >= 1"),
    ("reader=[globalRandomization=sometimes]", "reader.globalRandomization", "sometimes"),
    ("precision=half", "reader.precision", "float or double"),
    ("reader=[readerType=CNTKTextFormatReadr]", "reader.readerType", "did you mean 'CNTKTextFormatReader'"),
])
def test_errors_name_the_key_path(override, path, message):
    with pytest.raises(ConfigError) as err:
        reader_spec(reader_of(CTF_MIN, override))
    assert err.value.path == path
    assert message in str(err.value)


def test_missing_file_key_suggests_the_misspelt_one():
    with pytest.raises(ConfigError) as err:
        reader_spec(reader_of(CTF_MIN.replace("file = data.txt", "fiel = data.txt")))
    assert err.value.path == "reader.file" and "did you mean 'fiel'" in str(err.value)


def test_a_reader_section_needs_a_type():
    with pytest.raises(ConfigError, match="readerType = ... or deserializers") as err:
        reader_spec({"file": "x"})
    assert "CNTKTextFormatReader" in str(err.value)


def test_plain_dicts_work_like_parsed_sections():
    spec = reader_spec({"readerType": "CNTKTextFormatReader", "file": "x.txt", "randomize": False,
                        "input": {"f": {"dim": 3, "format": "sparse", "alias": "F"}}})
    assert spec.deserializers[0]["input"]["f"] == {"dim": 3, "format": "sparse", "alias": "F",
                                                   "definesMBSize": False}
    assert spec.source_kwargs["randomize"] is False


# --- the page sections build sources that read their example data ----------------------------

def _by_name(mb):
    return {k.name: v for k, v in mb.items()}


def test_simple_example_builds_and_reads(tmp_path):
    data = tmp_path / "SampleInput.txt"
    data.write_text(SIMPLE_DATA)
    source = build_reader(reader_of(SIMPLE, f'reader=[file="{data}"]'))
    assert {s.name: (s.is_sparse, s.shape) for s in source.stream_infos()} == {
        "A": (False, (5,)), "B": (True, (1000000,)), "C": (False, (1,))}
    mb = _by_name(source.next_minibatch(3))
    assert mb["C"].num_sequences == 3 and mb["C"].end_of_sweep
    c = sorted(float(s[0, 0]) for s in mb["C"].as_sequences())
    assert c == [np.float32(-0.001), 8.0, 123917.0]
    assert mb["A"].dtype == np.float32
    assert mb["B"].as_csr().nnz == 6


def test_extended_example_builds_and_reads_sequences_by_id(tmp_path):
    data = tmp_path / "SampleInput.txt"
    data.write_text(EXTENDED_DATA)
    source = build_reader(reader_of(EXTENDED, f'reader=[file="{data}"]'))
    mb = _by_name(source.next_minibatch(11))                # one sweep: 4+1+2+3+1 lines
    a, b = mb["Some_very_long_input_name"], mb["Some_other_also_very_long_input_name"]
    assert a.dtype == np.float64                           # precision = "double"
    assert a.num_sequences == 5 and a.end_of_sweep
    # (a rows, b rows, b's first row) per sequence: ids 100, 200, 333, 400 (+2 id-less rows), 500
    seqs = sorted((len(sa), len(sb), tuple(sb[0])) for sa, sb in zip(a.as_sequences(), b.as_sequences()))
    assert seqs == [(0, 2, (500.0, 100.0)), (1, 1, (100.0, 200.0)), (1, 1, (300.0, 400.0)),
                    (3, 3, (100.0, 200.0)), (4, 3, (100.0, 200.0))]
    assert sorted(len(s) for s in a.as_sequences()) == [0, 1, 1, 3, 4]
    assert sorted(len(s) for s in b.as_sequences()) == [1, 1, 2, 3, 3]
    assert a.num_samples == 9 and b.num_samples == 10


def test_composite_example_builds_and_reads(tmp_path):
    data = tmp_path / "SampleInput.txt"
    data.write_text(COMPOSITE_CTF_DATA)
    source = build_reader(reader_of(COMPOSITE_CTF.replace("/home/mydata/SampleInput.txt", str(data))))
    mb = _by_name(source.next_minibatch(3))
    assert sorted(float(s[0, 0]) for s in mb["pairweight"].as_sequences()) == [-2.0, 0.5, 1.0]
    qui = mb["qu1fea"].as_csr()
    assert qui.shape == (3, 95589) and qui.nnz == 4 and qui[:, 95588].sum() == 2.0


def test_errors_name_the_file_and_line_where_the_value_was_written(tmp_path):
    from cntkio.config import load_config
    cfg_file = tmp_path / "r.cntk"
    cfg_file.write_text(textwrap.dedent("""\
        train = [
            reader = [
                deserializers = ([ type = CNTKTextFormatDeserializer; file = a.txt
                                   input = [ x = [ dim = 1; format = dense ] ] ]:
                                 [ type = CNTKTextFormatDeserializer; file = b.txt
                                   input = [ y = [ dim = 2
                                                   format = csr ] ] ])
            ]
        ]
        """))
    cfg = load_config([f"configFile={cfg_file}"])
    with pytest.raises(ConfigError) as err:
        reader_spec(cfg("train")("reader"))
    e = err.value
    assert e.path == "train.reader.deserializers[1].input.y.format"
    assert e.file == str(cfg_file) and e.line == 7
    assert str(e).startswith(f"{cfg_file}:7: train.reader.deserializers[1].input.y.format: ")
    cfg_file.write_text("test = [\n  reader = [\n    readerType = LibSVMBinaryReader\n  ]\n]\n")
    with pytest.raises(UnsupportedReaderError) as err:
        reader_spec(load_config([f"configFile={cfg_file}"])("test")("reader"))
    assert (err.value.file, err.value.line, err.value.path) == (str(cfg_file), 3, "test.reader.readerType")


def test_the_configuration_pages_uci_fast_reader_sections_name_the_implemented_types():
    # the sample configuration of configuration-files.txt (its reader sections, as written)
    cfg = parse_config(textwrap.dedent(r"""
        command=mnistTrain:mnistTest
        precision=float
        deviceId=auto
        mnistTrain=[
            action=train
            minibatchSize=32
            reader=[
                readerType=UCIFastReader
                file=c:\cntk\data\mnist\mnist_train.txt
                features=[
                    dim=784
                    start=1
                ]
                labels=[
                    dim=1
                    start=0
                    labelDim=10
                ]
            ]
        ]
        mnistTest=[
            action=eval
            reader=[
                readerType=UCIFastReader
                randomize=None
                file=c:\data\mnist\mnist_test.txt
                features=[ dim=784 ; start=1 ]
                labels=[ dim=1 ; start=0 ; labelDim=10 ]
            ]
        ]
        """))
    # UCIFastReader is implemented (readers/legacy/ucifast.py): each section is one deserializer
    for section, randomize in (("mnistTrain", True), ("mnistTest", False)):
        spec = reader_spec(cfg(section)("reader"))
        assert spec.reader_type == "UCIFastReader" and spec.stream_names == ["features", "labels"]
        (dconf,) = spec.deserializers
        assert dconf["type"] == "UCIFastReaderDeserializer" and dconf["file"].endswith("mnist_train.txt"
                                                                                          if randomize else "mnist_test.txt")
        assert dconf["streams"]["labels"] == {"dim": 1, "start": 0, "labelType": "category", "labelDim": 10}
        assert spec.source_kwargs["randomize"] is randomize


def test_an_undefined_variable_elsewhere_in_the_file_does_not_stop_this_reader():
    cfg = parse_config(textwrap.dedent("""
        precision = double
        other = [ modelPath = $RunDir$/model.dnn ]
        train = [
            reader = [ readerType = CNTKTextFormatReader; file = d.txt
                       input = [ x = [ dim = 1; format = dense ] ] ]
        ]"""))
    spec = reader_spec(cfg("train")("reader"))
    assert spec.dtype == "float64" and spec.deserializers[0]["file"] == "d.txt"


def test_an_object_store_error_of_a_deserializer_keeps_its_url_and_range_with_the_config_key():
    from cntkio import registry
    from cntkio.errors import RemoteError

    def factory(config, **kw):
        raise RemoteError("ConnectTimeoutError: no answer (after 6 attempts)", url="s3://b/a.ctf", begin=0, end=64)
    registry.register_deserializer("RemoteFailingTestDeserializer", factory)
    try:
        with pytest.raises(RemoteError) as err:
            build_reader(reader_of('reader = [ deserializers = ([ type = RemoteFailingTestDeserializer ; '
                                   'file = "s3://b/a.ctf" ]) ]'))
    finally:
        registry._DESERIALIZERS.pop("RemoteFailingTestDeserializer")
    assert (err.value.url, err.value.begin, err.value.end) == ("s3://b/a.ctf", 0, 64)
    assert str(err.value) == ("s3://b/a.ctf bytes 0-64: <config>:1: reader.deserializers[0].file: ConnectTimeoutError: "
                              "no answer (after 6 attempts)")


def test_a_legacy_image_reader_section_names_its_streams():
    # Examples/Image/Classification/GoogLeNet/BN-Inception/BrainScript/BN-Inception.cntk:94-110: the
    # ImageReader section has no input = [...]; its sub-sections with width (features) and labelDim
    # (labels) are the streams (CNTK's ImageConfigHelper), which validation compares with the
    # network's inputs before any work (it found none: "the reader delivers no streams")
    cfg = parse_config(textwrap.dedent('''
        reader = [
            readerType = "ImageReader"
            file = "train_map.txt"
            randomize = "Auto"
            features = [
                width = 224
                height = 224
                channels = 3
                cropType = "randomSide"
                sideRatio = 0.46666:0.875
                jitterType = "UniRatio"
                meanFile = "ImageNet1K_mean.xml"
            ]
            labels = [
                labelDim = 1000
            ]
        ]
    '''))
    assert reader_spec(cfg("reader"), "reader").stream_names == ["features", "labels"]
