"""The legacy ``readerType = HTKMLFReader`` section gives the same minibatches as the
deserializer form of the same corpus (composite-readers-deserializers-transforms.txt, old versus
new configuration)."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

import paths
from cntkio.config import parse_config
from cntkio.constants import RANDOMIZE_AUTO
from cntkio.readers import build_reader, reader_spec

sys.path.insert(0, str(paths.TESTS / "deserializers" / "htk"))
import htk_corpus  # noqa: E402

LEGACY = """
reader = [
    readerType = "HTKMLFReader"
    miniBatchMode = "partial"
    nbruttsineachrecurrentiter = 1
    verbosity = 0
    {extra}
    features = [ dim = 11; type = "real"; scpFile = "big.scp" ]
    labels = [ mlfFile = "big.mlf"; labelMappingFile = "states.list"; labelDim = 6; labelType = "category" ]
]
"""
COMPOSITE = """
reader = [
    verbosity = 0
    {extra}
    deserializers = (
        [ type = "HTKFeatureDeserializer"; module = "HTKDeserializers"
          input = [ features = [ dim = 11; scpFile = "big.scp" ] ] ]:
        [ type = "HTKMLFDeserializer"; module = "HTKDeserializers"
          input = [ labels = [ dim = 6; mlfFile = "big.mlf"; labelMappingFile = "states.list" ] ] ]
    )
]
"""


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return htk_corpus.write_big(tmp_path, n_utts=25)


def _reader(text: str, extra: str = ""):
    return parse_config(textwrap.dedent(text.format(extra=extra)))("reader")


def _read(src, size=3000, limit=12):
    out = []
    for _ in range(limit):
        mb = src.next_minibatch(size)
        if not mb:
            break
        out.append({s.name: (v.asarray() if not v.is_sparse else np.asarray(v.as_csr().todense()))
                    for s, v in mb.items()})
    return out


@pytest.mark.parametrize("legacy_extra,composite_extra", [
    ("randomize = auto", "randomize = true; frameMode = true; randomizationSeed = 0"),
    ("randomize = 40000", "randomize = true; frameMode = true; randomizationWindow = 40000"),
    ("readMethod = rollingWindow; randomize = none", "randomize = false; frameMode = true"),
    ("randomize = auto; frameMode = false", "randomize = true; frameMode = false"),
])
def test_legacy_section_equals_the_deserializer_form(corpus, legacy_extra, composite_extra):
    a = _read(build_reader(_reader(LEGACY, legacy_extra), max_sweeps=1))
    b = _read(build_reader(_reader(COMPOSITE, composite_extra), max_sweeps=1))
    assert len(a) == len(b) > 1
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


def test_legacy_defaults_frame_mode_and_whole_corpus_window(corpus):
    spec = reader_spec(_reader(LEGACY))
    # randomize = auto: CNTK's randomizeAuto frame window (HTKDeserializers/ConfigHelper.cpp:186)
    assert spec.source_kwargs["frame_mode"] is True and spec.whole_dataset_window is None
    assert spec.source_kwargs["randomization_window_in_samples"] == RANDOMIZE_AUTO
    spec = reader_spec(_reader(LEGACY, "randomize = 5000"))
    assert spec.source_kwargs["randomization_window_in_samples"] == 5000
    spec = reader_spec(_reader(LEGACY, "readMethod = rollingWindow; randomize = none"))
    assert spec.source_kwargs["randomize"] is False


def test_a_section_without_features_is_an_error(corpus):
    text = LEGACY.replace('features = [ dim = 11; type = "real"; scpFile = "big.scp" ]', "")
    with pytest.raises(Exception, match="feature section"):
        reader_spec(_reader(text))


def test_minibatch_mode_full_drops_a_short_last_minibatch_of_an_epoch(corpus):
    # HTKMLFReader.cpp:794-805, 1022: in frame mode a minibatch short of the size is not delivered
    from cntkio.readers import EpochReader
    sizes = {}
    for mode in ("partial", "full"):
        sec = _reader(LEGACY.replace('miniBatchMode = "partial"', f'miniBatchMode = "{mode}"'))
        er = EpochReader(build_reader(sec), minibatch_size=1000, epoch_size=2500)
        sizes[mode] = [next(iter(mb.values())).num_samples for mb in er.epoch(0)]
    assert sizes == {"partial": [1000, 1000, 500], "full": [1000, 1000]}
