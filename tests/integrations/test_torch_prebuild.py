"""The PyTorch dataset's tensors are made on the thread that packs each batch (the tensor-ready
layout's ``prepare``, ``MinibatchSource.next_tensor_ready``), and handed to the consumer without a
copy: what it yields is what ``to_torch`` makes of the same minibatches."""
import threading

import numpy as np
import torch
from torch.utils.data import DataLoader

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from cntkio.integrations.torch import MinibatchIterableDataset, to_torch
from cntkio.tensor_ready import TensorLayout

SEQS = [[(3, 1.5)], [(7, 2.0), (2, -1.0)], [(5, 0.25)], [(0, 4.0), (9, 3.0), (1, 1.0)], [(6, 8.0)]]


def _write(path):
    with open(path, "w") as f:
        for s, seq in enumerate(SEQS):
            for w, x in seq:
                f.write(f"{s}\t|w {w}:1\t|x {x}\n")
    return path


def _source(path):
    return MinibatchSource(CTFDeserializer(str(path), StreamDefs(
        w=StreamDef(field="w", shape=10, is_sparse=True), x=StreamDef(field="x", shape=1))),
        randomize=False, max_sweeps=1)


def test_prepare_sees_every_packed_batch_before_it_is_handed_out(tmp_path):
    src = _source(_write(tmp_path / "a.ctf"))
    seen = []
    threads = set()

    def prepare(bt):
        seen.append(bt)
        threads.add(threading.get_ident())

    layout = TensorLayout(prepare=prepare)
    assert src.supports_tensor_ready()
    got = []
    while True:
        ready = src.next_tensor_ready(2, layout=layout)
        if ready is None:
            break
        assert any(bt is ready.batch for bt in seen[1:]) or got == []  # built, and prepared, before
        got.append([arrays[3].tolist() for arrays in ready.arrays()])
    # 2-sample budgets over lengths 1,2,1,3,1: one sequence each
    assert got == [[[1], [1]], [[2], [2]], [[1], [1]], [[3], [3]], [[1], [1]]]
    assert seen and len(seen) == len({id(b) for b in seen})  # once per batch
    assert src.stats()["minibatches"] == 5 and src.stats()["samples"] == 8
    src.close()


def test_tensor_ready_and_next_minibatch_read_the_same_minibatches(tmp_path):
    path = _write(tmp_path / "a.ctf")
    a, b = _source(path), _source(path)
    layout = TensorLayout(ids=frozenset({"w"}))
    while True:
        mb, ready = a.next_minibatch(3), b.next_tensor_ready(3, layout=layout)
        if not mb:
            assert ready is None
            break
        (wname, wkind, (ids,), wlens), (xname, xkind, x, xlens) = ready.arrays()
        assert (wname, wkind, xname, xkind) == ("w", "ids", "x", "dense")
        expected_ids, _ = mb["w"].data.token_ids()
        assert ids.tolist() == expected_ids.tolist() and wlens.tolist() == mb["w"].sequence_lengths.tolist()
        assert x.tolist() == mb["x"].asarray().tolist() if mb["x"].mask.all() else x.shape == mb["x"].shape
        assert a.position() == b.position()
    a.close()
    b.close()


def test_dataset_items_equal_to_torch_of_the_same_minibatches(tmp_path):
    path = _write(tmp_path / "a.ctf")
    ref_src = _source(path)
    expected = []
    while True:
        mb = ref_src.next_minibatch(3)
        if not mb:
            break
        expected.append(to_torch(mb))
    ref_src.close()
    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    items = list(DataLoader(ds, batch_size=None))
    ds._make_source().close()
    assert len(items) == len(expected) == 4
    for item, exp in zip(items, expected):
        assert sorted(item) == sorted(exp) == ["w", "w_lengths", "x", "x_lengths"]
        assert torch.equal(item["w"].to_dense(), exp["w"].to_dense())
        assert torch.equal(item["x"], exp["x"])
        assert torch.equal(item["w_lengths"], exp["w_lengths"])
    # concrete: the first item is sequences 0 and 1 (3 samples), padded to length 2
    assert items[0]["w_lengths"].tolist() == [1, 2]
    assert items[0]["w"].to_dense().argmax(1).tolist() == [3, 7, 2]
    assert np.allclose(items[0]["x"][:, :, 0].numpy(), [[1.5, 0.0], [2.0, -1.0]])
    items[0]["extra"] = 1  # the item is the caller's: a second iteration is unaffected
    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    again = list(DataLoader(ds, batch_size=None))
    ds._make_source().close()
    assert "extra" not in again[0]


# --- the DataLoader habits (issue 19, friction 8) ---------------------------------------------------

def test_batch_size_not_none_is_a_clear_error(tmp_path):
    import pytest
    path = _write(tmp_path / "a.ctf")
    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    with pytest.raises(ValueError, match=r"batch_size=1: each item already is a minibatch.*"
                                         r"DataLoader\(dataset, batch_size=None\)"):
        next(iter(DataLoader(ds)))  # the DataLoader default
    with pytest.raises(ValueError, match="batch_size=4"):
        next(iter(DataLoader(ds, batch_size=4)))
    assert len(list(DataLoader(ds, batch_size=None))) == 4
    assert len(list(ds)) == 4  # iterated directly: no DataLoader, no check
    ds._make_source().close()


def test_one_worker_process_warns_too(tmp_path, monkeypatch):
    import pytest

    import cntkio.integrations.torch as integ

    class Info:
        num_workers, id = 1, 0

    path = _write(tmp_path / "a.ctf")
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: Info())
    monkeypatch.setattr(integ, "_workers_warned", False)
    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    with pytest.warns(RuntimeWarning, match="1 DataLoader worker processes.*num_workers=0"):
        assert len(list(ds)) == 4
    ds._make_source().close()


def test_tensors_are_made_per_item_not_held_for_the_whole_batch(tmp_path):
    """A packed batch holds NumPy arrays only: each item's tensors are made when it is handed out,
    so a consumer that drops its items keeps a few tensors alive, not the batch's (tensors held
    for a whole batch outlive two collector generations and trigger full collections)."""
    import gc

    path = tmp_path / "many.ctf"
    with open(path, "w") as f:
        for s in range(200):  # 200 one-sample sequences: 200 one-sample minibatches, one batch
            f.write(f"{s}\t|w {s % 10}:1\t|x {s}\n")

    def live_tensors():
        gc.collect()
        return sum(issubclass(type(o), torch.Tensor) for o in gc.get_objects())

    ds = MinibatchIterableDataset(lambda: _source(path), 1)
    before = live_tensors()
    it = iter(DataLoader(ds, batch_size=None))
    first = next(it)
    assert first["w"].to_dense().argmax(1).tolist() == [0] and first["x"].flatten().tolist() == [0.0]
    del first
    assert live_tensors() - before < 20  # not 200 minibatches x 4 tensors
    rest = [item["x"].flatten().tolist() for item in it]
    assert rest == [[float(s)] for s in range(1, 200)]
    ds._make_source().close()


def test_dataset_iteration_warns_nothing(tmp_path):
    """No torch warning per process or item (sparse CSR beta, invariant checks implicitly off)."""
    import warnings

    path = _write(tmp_path / "a.ctf")
    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        items = list(DataLoader(ds, batch_size=None))
    assert [item["w_lengths"].tolist() for item in items] == [[1, 2], [1], [3], [1]]
    ds._make_source().close()


# --- per-item work (issue 18, part 3) ----------------------------------------------------------------

def test_default_convert_is_not_run_per_item(tmp_path, monkeypatch):
    """With batch_size=None the DataLoader's default collate_fn (default_convert) would copy every
    item (already a dict of tensors): the dataset replaces it for its own fetcher by a pass-through,
    and the items are the same."""
    from torch.utils.data._utils import collate

    calls = []
    real = collate.default_convert

    def counting(item):
        calls.append(1)
        return real(item)

    path = _write(tmp_path / "a.ctf")
    monkeypatch.setattr(collate, "default_convert", counting)  # what DataLoader takes as its default
    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    items = list(DataLoader(ds, batch_size=None))
    ds._make_source().close()
    assert calls == []
    assert [item["w_lengths"].tolist() for item in items] == [[1, 2], [1], [3], [1]]
    assert items[2]["w"].to_dense().argmax(1).tolist() == [0, 9, 1]
    assert items[2]["x"][0, :, 0].tolist() == [4.0, 3.0, 1.0]


def test_a_collate_fn_of_the_user_is_kept(tmp_path):
    path = _write(tmp_path / "a.ctf")
    seen = []

    def collate(item):
        seen.append(sorted(item))
        return {"n": int(item["w_lengths"].sum())}

    ds = MinibatchIterableDataset(lambda: _source(path), 3)
    assert list(DataLoader(ds, batch_size=None, collate_fn=collate)) == [{"n": 3}, {"n": 1}, {"n": 3}, {"n": 1}]
    assert seen == [["w", "w_lengths", "x", "x_lengths"]] * 4
    ds._make_source().close()


def test_masks_and_lengths_options_with_csr_and_dense_streams(tmp_path):
    """Every combination of lengths/masks on a sparse (CSR) and a dense stream: the dataset's
    items equal the generic per-stream conversion, key for key, in the same key order."""
    import itertools

    rng = np.random.default_rng(7)
    path = tmp_path / "r.ctf"
    with open(path, "w") as f:
        for s in range(60):
            for _ in range(int(rng.integers(1, 5))):
                f.write(f"{s}\t|w {int(rng.integers(10))}:1\t|x {float(rng.integers(100))}\n")
    for lengths, masks in itertools.product([True, False], [True, False]):
        expected = []
        src = _source(path)
        while True:
            mb = src.next_minibatch(5)
            if not mb:
                break
            expected.append(to_torch(dict(mb), lengths=lengths, masks=masks))  # a plain dict: generic
        src.close()
        ds = MinibatchIterableDataset(lambda: _source(path), 5, lengths=lengths, masks=masks)
        got = list(DataLoader(ds, batch_size=None))
        ds._make_source().close()
        assert len(got) == len(expected) > 20
        keys = {"w", "x"} | ({"w_lengths", "x_lengths"} if lengths else set()) | \
            ({"w_mask", "x_mask"} if masks else set())
        for a, b in zip(got, expected):
            assert set(a) == keys and list(a) == list(b)
            assert torch.equal(a["w"].to_dense(), b["w"].to_dense())
            assert a["w"].crow_indices().tolist() == b["w"].crow_indices().tolist()
            for k in keys - {"w"}:
                assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k
        if masks:  # concrete: a mask is True on exactly the valid cells
            m = got[0]["w_mask"]
            assert m.dtype == torch.bool and int(m.sum()) == got[0]["w"].shape[0]
