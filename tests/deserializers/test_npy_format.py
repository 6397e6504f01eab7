"""The toy .npy format (npy_format.py): one module plus one registry line, read from Python and
from a config file, randomized or not, with exact checkpoints and the files' values."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from npy_format import TYPE_NAME, NpyDeserializer, NpySequenceDeserializer

from cntkio import MinibatchSource
from cntkio.config import load_config, parse_config
from cntkio.deserializers.protocol import Deserializer, has_random_access, is_local_timeline
from cntkio.errors import ConfigError
from cntkio.readers import build_reader
from cntkio.registry import registered_deserializers


def sequences_of(rng, n, dim, name="s"):
    return {f"{name}{i:03d}": rng.standard_normal((int(rng.integers(1, 6)), dim)).astype(np.float32)
            for i in range(n)}


@pytest.fixture
def npy_dir(tmp_path):
    seqs = sequences_of(np.random.default_rng(7), 23, 3)
    d = tmp_path / "seqs"
    d.mkdir()
    for stem, arr in seqs.items():
        np.save(d / f"{stem}.npy", arr)
    return d, seqs


def read_sweep(src, name="features", mb_size=7, count=None):
    """Every sequence delivered (as arrays), in delivery order; ``count`` minibatches at most."""
    out = []
    while count is None or count > 0:
        mb = src.next_minibatch(mb_size)
        if not mb:
            break
        out.extend(mb[name].as_sequences())
        if count is not None:
            count -= 1
    return out


def test_registered_by_its_one_line_and_declares_the_plain_protocol(npy_dir):
    assert TYPE_NAME in registered_deserializers()
    d = NpySequenceDeserializer(NpyDeserializer(str(npy_dir[0]), shape=3))
    assert isinstance(d, Deserializer)
    assert not has_random_access(d) and not is_local_timeline(d)


def test_not_randomized_delivers_the_files_in_order(npy_dir):
    d, seqs = npy_dir
    src = MinibatchSource(NpyDeserializer(str(d), shape=3, sequences_per_chunk=5), randomize=False,
                          max_sweeps=1)
    got = read_sweep(src)
    expected = [seqs[k] for k in sorted(seqs)]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_a_deserializer_instance_works_as_well_as_its_config(npy_dir):
    d, seqs = npy_dir
    inst = NpySequenceDeserializer(NpyDeserializer(str(d), shape=3, sequences_per_chunk=4))
    got = read_sweep(MinibatchSource(inst, randomize=False, max_sweeps=1))
    for g, k in zip(got, sorted(seqs)):
        np.testing.assert_array_equal(g, seqs[k])


def test_randomized_delivers_every_sequence_once_per_sweep_in_another_order(npy_dir):
    d, seqs = npy_dir
    src = MinibatchSource(NpyDeserializer(str(d), shape=3, sequences_per_chunk=3), max_sweeps=1,
                          randomization_window_in_chunks=3, randomization_seed=5)
    got = read_sweep(src)
    by_bytes = {seqs[k].tobytes(): k for k in seqs}
    order = [by_bytes[g.tobytes()] for g in got]
    assert sorted(order) == sorted(seqs)
    assert order != sorted(seqs)


@pytest.mark.parametrize("randomize", [False, True])
def test_checkpoint_restores_exactly(npy_dir, randomize):
    d, _ = npy_dir
    cfg = NpyDeserializer(str(d), shape=3, sequences_per_chunk=4)
    kw = dict(randomize=randomize, max_sweeps=3, randomization_window_in_chunks=2, randomization_seed=1)
    src = MinibatchSource(cfg, **kw)
    read_sweep(src, count=9)
    state = src.get_checkpoint_state()
    rest = read_sweep(src)
    again = MinibatchSource(cfg, **kw)
    again.restore_from_checkpoint(state)
    resumed = read_sweep(again)
    assert len(rest) == len(resumed) > 0
    for a, b in zip(rest, resumed):
        np.testing.assert_array_equal(a, b)


def test_from_a_config_file_with_a_list_file_and_stem_keys(npy_dir, tmp_path):
    d, seqs = npy_dir
    chosen = sorted(seqs)[::2][::-1]               # every other file, in reverse order
    listing = tmp_path / "list.txt"
    listing.write_text("# sequences\n" + "".join(f"seqs/{k}.npy\n" for k in chosen) + "\n")
    cfg_file = tmp_path / "reader.cntk"
    cfg_file.write_text(textwrap.dedent(f"""
        precision = double
        train = [
            reader = [
                randomize = false
                deserializers = ([
                    type = "NpySequenceDeserializer"
                    file = "{listing}"
                    keys = stem
                    sequencesPerChunk = 2
                    input = [ features = [ dim = 3 ] ]
                ])
            ]
        ]
        """))
    src = build_reader(load_config([f"configFile={cfg_file}"])("train")("reader"), max_sweeps=1)
    got = read_sweep(src, mb_size=5)
    assert [g.dtype for g in got[:1]] == [np.float64]
    assert len(got) == len(chosen)
    for g, k in zip(got, chosen):
        np.testing.assert_array_equal(g, seqs[k].astype(np.float64))


def test_composite_joins_two_npy_inputs_by_stem(tmp_path):
    rng = np.random.default_rng(3)
    feats, labels = sequences_of(rng, 9, 2), sequences_of(rng, 9, 1)
    for sub, seqs in (("f", feats), ("l", labels)):
        (tmp_path / sub).mkdir()
        for stem, arr in seqs.items():
            np.save(tmp_path / sub / f"{stem}.npy", arr[:1] if sub == "l" else arr)
    # the labels are listed in another order: the join goes by key
    (tmp_path / "labels.txt").write_text("".join(f"l/{k}.npy\n" for k in sorted(labels, reverse=True)))
    reader = parse_config(textwrap.dedent(f"""
        reader = [ randomize = false
            deserializers = (
                [ type = NpySequenceDeserializer; file = "{tmp_path / 'f'}"; keys = stem
                  input = [ x = [ dim = 2 ] ] ]:
                [ type = NpySequenceDeserializer; file = "{tmp_path / 'labels.txt'}"; keys = stem
                  input = [ y = [ dim = 1 ] ] ]) ]"""))("reader")
    src = build_reader(reader, max_sweeps=1)
    xs, ys = [], []
    while mb := src.next_minibatch(50):
        xs.extend(mb["x"].as_sequences())
        ys.extend(mb["y"].as_sequences())
    assert len(xs) == len(ys) == 9
    for k, x, y in zip(sorted(feats), xs, ys):
        np.testing.assert_array_equal(x, feats[k])
        np.testing.assert_array_equal(y[0], labels[k][0])


def test_a_file_of_the_wrong_shape_is_named(npy_dir):
    d, seqs = npy_dir
    np.save(d / "zzz.npy", np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"zzz\.npy: an array of shape \(2, 4\)"):
        MinibatchSource(NpyDeserializer(str(d), shape=3))


def test_a_bad_option_names_it(npy_dir):
    with pytest.raises(ConfigError, match="keys"):
        NpySequenceDeserializer(NpyDeserializer(str(npy_dir[0]), shape=3, keys="hash"))
    reader = parse_config(f"""reader = [ deserializers = ([ type = NpySequenceDeserializer
        file = "{npy_dir[0]}"; sequencesPerChunk = many; input = [ x = [ dim = 3 ] ] ]) ]""")("reader")
    with pytest.raises(ConfigError) as err:
        build_reader(reader)
    assert err.value.path == "reader.deserializers[0].sequencesPerChunk"
