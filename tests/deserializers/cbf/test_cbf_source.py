"""CBF read through MinibatchSource equals the CTF read of the same data: the converter keeps the
CTF reader's chunks (``chunk_size=None``), so randomization, partitions, checkpoints, frame mode
and truncated BPTT must give bitwise the same minibatches (issue 15: "behave exactly as with the
same data in CTF")."""
import numpy as np
import pytest

from cntkio import CBFDeserializer, CTFDeserializer, MinibatchSource, StreamDef
from cntkio.deserializers.cbf import ctf2bin
from cntkio.testing import assert_resumes_exactly

CHUNK = 700  # bytes of CTF text per chunk: several chunks


def _write(path, rng, n_seq, max_len, frames=False):
    lines = []
    for sid in range(n_seq):
        n = 1 if frames else int(rng.integers(1, max_len + 1))
        for t in range(n):
            x = " ".join("%.5g" % v for v in rng.normal(size=3))
            k = int(rng.integers(0, 3))
            s = " ".join(f"{i}:{v:.4g}" for i, v in zip(rng.choice(12, k, replace=False), rng.normal(size=k)))
            line = f"{sid} |x {x} |s {s}".rstrip()
            if t == 0:
                line += f" |l {int(rng.integers(0, 4))}:1"
            lines.append(line)
    path.write_text("\n".join(lines) + "\n")


DEFS = {"x": StreamDef(field="x", shape=3), "s": StreamDef(field="s", shape=12, is_sparse=True),
        "l": StreamDef(field="l", shape=4, is_sparse=True)}


def _files(tmp_path, frames):
    rng = np.random.default_rng(11)
    ctf = tmp_path / "d.ctf"
    _write(ctf, rng, 80, 5, frames=frames)
    cbf = tmp_path / "d.cbf"
    ctf2bin(str(ctf), str(cbf), DEFS, chunk_size=None, ctf_chunk_size=CHUNK)
    return str(ctf), str(cbf), frames


@pytest.fixture(params=["sequences", "frames"])
def files(tmp_path, request):
    return _files(tmp_path, request.param == "frames")


def ctf_cfg(path):
    cfg = CTFDeserializer(path, DEFS)
    cfg["chunkSizeInBytes"] = CHUNK
    return cfg


def drain(src, sizes, parts=None, rank=None, limit=400):
    out = []
    for i in range(limit):
        mb = src.next_minibatch(sizes[i % len(sizes)], num_data_partitions=parts, partition_index=rank)
        if not mb:
            break
        rec = {}
        for info, d in mb.items():
            seqs = [s.toarray() if hasattr(s, "toarray") else np.asarray(s) for s in d.as_sequences()]
            rec[info.name] = (d.num_sequences, d.num_samples, d.sweep_end,
                              [s.tolist() for s in seqs])
        out.append(rec)
    return out


MODES = [
    dict(randomize=False, max_sweeps=2),
    dict(randomize=True, max_sweeps=3, randomization_seed=5),
    dict(randomize=True, max_sweeps=2, randomization_window_in_chunks=2, randomization_seed=1),
    dict(randomize=True, max_samples=333, randomization_window_in_chunks=0, randomization_window_in_samples=50),
]


@pytest.mark.parametrize("mode", range(len(MODES)))
def test_equals_ctf(files, mode):
    ctf, cbf, frames = files
    kw = dict(MODES[mode], frame_mode=frames)
    a = drain(MinibatchSource(ctf_cfg(ctf), **kw), [16, 7, 30])
    b = drain(MinibatchSource(CBFDeserializer(cbf), **kw), [16, 7, 30])
    assert a == b and len(a) > 5


@pytest.mark.parametrize("rank", [0, 1, 2])
@pytest.mark.parametrize("randomize", [False, True])
def test_partitions_equal_ctf(files, rank, randomize):
    ctf, cbf, frames = files
    kw = dict(randomize=randomize, max_sweeps=2, frame_mode=frames)
    a = drain(MinibatchSource(ctf_cfg(ctf), **kw), [12, 25], 3, rank)
    b = drain(MinibatchSource(CBFDeserializer(cbf), **kw), [12, 25], 3, rank)
    assert a == b and len(a) > 1


def test_truncated_bptt_equals_ctf(tmp_path):
    ctf, cbf, _ = _files(tmp_path, frames=False)
    kw = dict(randomize=True, max_sweeps=1, truncation_length=2)
    a = drain(MinibatchSource(ctf_cfg(ctf), **kw), [8])
    b = drain(MinibatchSource(CBFDeserializer(cbf), **kw), [8])
    assert a == b and len(a) > 5


def test_checkpoints_resume_exactly(files):
    _, cbf, frames = files
    n = assert_resumes_exactly(lambda: MinibatchSource(CBFDeserializer(cbf), randomize=True, max_sweeps=2,
                                                       randomization_window_in_chunks=2, frame_mode=frames),
                               [9, 20], cut_points=[0, 1, 5, 11])
    assert n > 11


def test_keep_data_in_memory_and_double(files):
    ctf, cbf, _ = files
    cfg = CBFDeserializer(cbf)
    cfg["keepDataInMemory"] = True
    cfg["precision"] = "double"
    src = MinibatchSource(cfg, randomize=False, max_sweeps=1)
    mb = src.next_minibatch(50)
    assert mb[src.streams.x].dtype == np.float64
    ref = MinibatchSource(ctf_cfg(ctf), randomize=False, max_sweeps=1).next_minibatch(50)
    assert [np.asarray(s, np.float32).tolist() for s in mb[src.streams.x].as_sequences()] == \
        [np.asarray(s).tolist() for s in next(d for i, d in ref.items() if i.name == "x").as_sequences()]
