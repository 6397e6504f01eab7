"""PyTorch delivery: the tensors made from the packer's tensor-ready arrays (dense padded, CSR,
token ids, masks, lengths) against concrete expected values and against the generic per-stream
conversion; DataLoader epochs (next sweep, set_epoch), worker processes, pin_memory."""
import warnings

import numpy as np
import pytest
import torch

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from cntkio.tensor_ready import TensorLayout
from cntkio.integrations.torch import MinibatchIterableDataset, to_torch

# six word sequences: (sequence id, [(word id, tag id, dense feature pair)]) of lengths 3,1,2,4,1,2
SEQUENCES = [
    [(3, 1), (7, 0), (2, 2)],
    [(5, 1)],
    [(0, 0), (9, 2)],
    [(4, 1), (4, 1), (8, 0), (1, 2)],
    [(6, 0)],
    [(2, 1), (3, 2)],
]
VOCAB, TAGS = 10, 3


def write_ctf(path, sequences=SEQUENCES):
    with open(path, "w") as f:
        for s, seq in enumerate(sequences):
            for t, (w, g) in enumerate(seq):
                f.write(f"{s}\t|w {w}:1\t|g {g}:1\t|f {s} {10 * s + t}\n")


def streams():
    return StreamDefs(w=StreamDef(field="w", shape=VOCAB, is_sparse=True),
                      g=StreamDef(field="g", shape=TAGS, is_sparse=True),
                      f=StreamDef(field="f", shape=2))


def make_source(path, randomize=False, chunk=None, **kw):
    ctf = CTFDeserializer(str(path), streams())
    if chunk:
        ctf["chunkSizeInBytes"] = chunk
    if randomize:
        kw.setdefault("randomization_window_in_chunks", 2)
        kw.setdefault("randomization_seed", 5)
    return MinibatchSource(ctf, randomize=randomize, **kw)


class Factory:
    """A picklable source factory."""

    def __init__(self, path, randomize=False, chunk=None):
        self.path, self.randomize, self.chunk = str(path), randomize, chunk

    def __call__(self):
        return make_source(self.path, self.randomize, self.chunk, max_sweeps=1)


@pytest.fixture
def ctf(tmp_path):
    path = tmp_path / "words.ctf"
    write_ctf(path)
    return path


def generic(mb, **kw):
    return to_torch(dict(mb), **kw)  # a plain dict: no packed arrays, the per-stream conversion


def same(a, b):
    assert a.layout == b.layout and a.dtype == b.dtype and a.shape == b.shape
    if a.layout == torch.sparse_csr:
        for f in ("crow_indices", "col_indices", "values"):
            assert torch.equal(getattr(a, f)(), getattr(b, f)()), f
    else:
        assert torch.equal(a, b)


def test_first_minibatch_concrete_values(ctf):
    # 6 samples: sequences 0 (3), 1 (1), 2 (2)
    src = make_source(ctf, max_sweeps=1)
    out = to_torch(src.next_minibatch(6), masks=True)
    assert sorted(out) == ["f", "f_lengths", "f_mask", "g", "g_lengths", "g_mask", "w", "w_lengths", "w_mask"]
    assert out["w_lengths"].dtype == torch.int64 and out["w_lengths"].tolist() == [3, 1, 2]
    w = out["w"]
    assert w.layout == torch.sparse_csr and w.shape == (6, VOCAB)
    assert w.crow_indices().dtype == torch.int32 and w.col_indices().dtype == torch.int32
    assert w.crow_indices().tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert w.col_indices().tolist() == [3, 7, 2, 5, 0, 9]
    assert w.values().dtype == torch.float32 and w.values().tolist() == [1.0] * 6
    f = out["f"]
    assert f.dtype == torch.float32 and f.shape == (3, 3, 2)
    assert f.tolist() == [[[0, 0], [0, 1], [0, 2]], [[1, 10], [0, 0], [0, 0]], [[2, 20], [2, 21], [0, 0]]]
    assert out["f_mask"].dtype == torch.bool
    assert out["f_mask"].tolist() == [[True, True, True], [True, False, False], [True, True, False]]


def test_token_ids_concrete_values(ctf):
    src = make_source(ctf, max_sweeps=1)
    src.next_minibatch(6)
    out = to_torch(src.next_minibatch(7), ids=("w", "g"), pad_id=-1, masks=True)
    # sequences 3 (4 samples), 4 (1), 5 (2)
    assert out["w"].dtype == torch.int64 and out["w"].shape == (3, 4)
    assert out["w"].tolist() == [[4, 4, 8, 1], [6, -1, -1, -1], [2, 3, -1, -1]]
    assert out["g"].tolist() == [[1, 1, 0, 2], [0, -1, -1, -1], [1, 2, -1, -1]]
    assert out["w_mask"].dtype == torch.bool
    assert out["w_mask"].tolist() == [[True] * 4, [True, False, False, False], [True, True, False, False]]
    assert out["w_lengths"].tolist() == [4, 1, 2]
    assert out["f"].shape == (3, 4, 2)
    # without masks: ids and lengths only
    src2 = make_source(ctf, max_sweeps=1)
    assert sorted(to_torch(src2.next_minibatch(6), ids=["w"])) == ["f", "f_lengths", "g", "g_lengths", "w",
                                                                    "w_lengths"]


def test_token_ids_feed_embedding_and_pack_padded_sequence(ctf):
    src = make_source(ctf, max_sweeps=1)
    out = to_torch(src.next_minibatch(6), ids=("w",))
    emb = torch.nn.Embedding(VOCAB, 4, padding_idx=0)
    x = emb(out["w"])
    assert x.shape == (3, 3, 4)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, out["w_lengths"], batch_first=True,
                                                     enforce_sorted=False)
    y, _ = torch.nn.GRU(4, 5, batch_first=True)(packed)
    unpacked, lengths = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=True)
    assert lengths.tolist() == [3, 1, 2] and unpacked.shape == (3, 3, 5)


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("size", [1, 3, 5, 8, 100])
@pytest.mark.parametrize("options", [{}, {"ids": ("w", "g")}, {"masks": True, "ids": ("g",), "pad_id": 7},
                                     {"lengths": False}])
def test_packed_path_equals_the_generic_conversion(tmp_path, randomize, size, options):
    rng = np.random.default_rng(size)
    seqs = [[(int(rng.integers(VOCAB)), int(rng.integers(TAGS))) for _ in range(int(rng.integers(1, 6)))]
            for _ in range(60)]
    path = tmp_path / "r.ctf"
    write_ctf(path, seqs)
    src = make_source(path, randomize, chunk=300, max_sweeps=2)
    n = 0
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            break
        assert mb.tensor_ready(TensorLayout()) is not None  # the packed path is taken
        fast, slow = to_torch(mb, **options), generic(mb, **options)
        assert sorted(fast) == sorted(slow)
        for k in fast:
            same(fast[k], slow[k])
        n += 1
    assert n > 1


def test_partitions_give_the_same_tensors_both_ways(ctf):
    for r in range(2):
        src = make_source(ctf, max_sweeps=1)
        while True:
            mb = src.next_minibatch(4, num_data_partitions=2, partition_index=r)
            if not mb:
                break
            fast, slow = to_torch(mb, ids=("w",)), generic(mb, ids=("w",))
            for k in fast:
                same(fast[k], slow[k])


def test_sparse_indices_and_values_share_the_packed_memory(ctf):
    mb = make_source(ctf, max_sweeps=1).next_minibatch(6)
    t = to_torch(mb)["w"]
    packed = mb["w"].data
    assert t.col_indices().data_ptr() == packed._indices.ctypes.data + 4 * int(packed._indptr[0])
    assert t.values().data_ptr() == packed._data.ctypes.data + 4 * int(packed._indptr[0])
    assert torch.sparse.mm(t, torch.eye(VOCAB)).tolist() == t.to_dense().tolist()


def test_dense_without_padding_shares_the_packed_memory(tmp_path):
    path = tmp_path / "flat.ctf"
    with open(path, "w") as f:
        for i in range(40):
            f.write(f"|x {i} {i + 0.5} {-i}\n")
    src = MinibatchSource(CTFDeserializer(str(path), StreamDefs(x=StreamDef(field="x", shape=3))),
                          randomize=False, max_sweeps=1)
    mb = src.next_minibatch(8)
    t = to_torch(mb)["x"]
    assert t.shape == (8, 1, 3)
    assert t.data_ptr() == mb["x"].data._values.ctypes.data  # no copy
    assert t[:, 0, 0].tolist() == list(range(8))


def test_one_hot_is_required_for_token_ids(tmp_path):
    path = tmp_path / "multi.ctf"
    path.write_text("0\t|w 1:1 2:1\n1\t|w 3:1\n")
    src = MinibatchSource(CTFDeserializer(str(path), StreamDefs(w=StreamDef(field="w", shape=5, is_sparse=True))),
                          randomize=False, max_sweeps=1)
    mb = src.next_minibatch(10)
    with pytest.raises(ValueError, match="'w'.*exactly one non-zero.*has 2"):
        to_torch(mb, ids=("w",))
    with pytest.raises(ValueError, match="'w'.*exactly one non-zero.*has 2"):
        generic(mb, ids=("w",))
    path.write_text("0\t|w 1:2\n")
    src = MinibatchSource(CTFDeserializer(str(path), StreamDefs(w=StreamDef(field="w", shape=5, is_sparse=True))),
                          randomize=False, max_sweeps=1)
    with pytest.raises(ValueError, match="value 1.*2.0"):
        to_torch(src.next_minibatch(10), ids=("w",))


def test_ids_must_name_sparse_streams(ctf):
    mb = make_source(ctf, max_sweeps=1).next_minibatch(4)
    with pytest.raises(ValueError, match="no stream named 'nope'"):
        to_torch(mb, ids=("nope",))
    with pytest.raises(ValueError, match="'f' is dense"):
        to_torch(mb, ids=("f",))


def sweep_ids(batches):
    """The sequence ids (first feature of f) of every sequence delivered, in order."""
    return [int(v) for b in batches for v in b["f"][:, 0, 0]]


def test_iterating_again_reads_the_next_sweep(ctf):
    # the reference: three sweeps read one sequence per call (the order does not depend on the
    # minibatch size), cut into sweeps of six sequences
    reference = make_source(ctf, True, chunk=60, max_sweeps=3)
    order = []
    while True:
        mb = reference.next_minibatch(1)
        if not mb:
            break
        order += [int(v) for v in to_torch(mb)["f"][:, 0, 0]]
    sweeps = [order[0:6], order[6:12], order[12:18]]
    assert len(order) == 18 and all(sorted(s) == list(range(6)) for s in sweeps)
    assert sweeps[0] != sweeps[1]  # randomized: each sweep its own order
    ds = MinibatchIterableDataset(Factory(ctf, True, chunk=60), 5)
    loader = torch.utils.data.DataLoader(ds, batch_size=None)
    assert [sweep_ids(loader) for _ in range(3)] == sweeps
    ds.set_epoch(1)
    assert sweep_ids(loader) == sweeps[1]
    assert sweep_ids(loader) == sweeps[2]
    ds.set_epoch(0)
    assert sweep_ids(loader) == sweeps[0]
    with pytest.raises(ValueError, match="set_epoch"):
        ds.set_epoch(-1)


def test_epochs_over_a_source_object_not_randomized(ctf):
    ds = MinibatchIterableDataset(make_source(ctf, max_sweeps=1), 4, epoch=2)
    loader = torch.utils.data.DataLoader(ds, batch_size=None)
    assert sweep_ids(loader) == list(range(6))
    assert sweep_ids(loader) == list(range(6))  # max_sweeps=1 does not end the dataset's epochs
    assert ds.epoch == 4


def test_dataloader_workers_warn_once_and_explain(ctf, monkeypatch):
    import cntkio.integrations.torch as integ

    class Info:
        num_workers, id = 2, 0

    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: Info())
    monkeypatch.setattr(integ, "_workers_warned", False)
    ds = MinibatchIterableDataset(Factory(ctf), 4)
    with pytest.warns(RuntimeWarning, match="num_workers=0"):
        first = list(ds)
    assert ds.partition() == (2, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sweep_ids(list(ds)) == sweep_ids(first)  # no second warning


@pytest.mark.filterwarnings("ignore:Sparse")
def test_dataloader_workers_shard_a_sweep(ctf):
    ds = MinibatchIterableDataset(Factory(ctf), 2)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context="spawn", timeout=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sorted(sweep_ids(loader)) == list(range(6))


def test_pin_memory_delivers_the_same_tensors(ctf):
    plain = list(torch.utils.data.DataLoader(MinibatchIterableDataset(Factory(ctf), 5), batch_size=None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no accelerator: torch warns and does not pin
        pinned = list(torch.utils.data.DataLoader(MinibatchIterableDataset(Factory(ctf), 5, ids=("g",)),
                                                  batch_size=None, pin_memory=True))
    assert len(plain) == len(pinned) == 4
    for a, b in zip(plain, pinned):
        same(a["w"], b["w"])
        same(a["f"], b["f"])
        assert b["g"].dtype == torch.int64 and b["g"].dim() == 2
        if torch.cuda.is_available():
            assert b["f"].is_pinned() and b["g"].is_pinned()


@pytest.mark.parametrize("randomize", [False, True])
def test_dataset_reports_a_stream_that_is_not_one_hot(tmp_path, randomize):
    # the token ids are built as batches are packed (ahead, on the packing thread when not
    # randomized): the error still reaches the loop that iterates the loader
    path = tmp_path / "multi.ctf"
    path.write_text("".join(f"{i}\t|w {i % 5}:1{' 4:1' if i == 7 else ''}\n" for i in range(12)))

    def source():
        return MinibatchSource(CTFDeserializer(str(path), StreamDefs(w=StreamDef(field="w", shape=5,
                                                                                 is_sparse=True))),
                               randomize=randomize, max_sweeps=1)
    loader = torch.utils.data.DataLoader(MinibatchIterableDataset(source, 4, ids=("w",)), batch_size=None)
    with pytest.raises(ValueError, match="'w'.*exactly one non-zero.*has 2"):
        list(loader)


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("options", [{}, {"ids": ("w", "g"), "masks": True}])
def test_dataset_items_equal_to_torch_of_the_same_minibatches(tmp_path, randomize, options):
    # the dataset reads tensor-ready minibatches (no minibatch objects)
    rng = np.random.default_rng(3)
    seqs = [[(int(rng.integers(VOCAB)), int(rng.integers(TAGS))) for _ in range(int(rng.integers(1, 6)))]
            for _ in range(80)]
    path = tmp_path / "d.ctf"
    write_ctf(path, seqs)
    factory = Factory(path, randomize, chunk=400)
    expected = []
    src = factory()
    while True:
        mb = src.next_minibatch(7)
        if not mb:
            break
        expected.append(generic(mb, **options))
    got = list(torch.utils.data.DataLoader(MinibatchIterableDataset(factory, 7, **options), batch_size=None))
    assert len(got) == len(expected) > 10
    for a, b in zip(got, expected):
        assert sorted(a) == sorted(b)
        for k in a:
            same(a[k], b[k])
