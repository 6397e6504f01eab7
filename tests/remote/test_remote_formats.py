"""Every format read from a bucket of a real S3 server (moto) and from an HTTP server with Range
support equals the same file read locally: randomized, with a checkpoint taken mid-sweep and
restored into a new source, from a second process's partition; the chunk cache serves the second
sweep; the index cache of a URL lives in the chunk cache's folder, keyed by URL, size and ETag."""
from __future__ import annotations

import base64
import multiprocessing
import zipfile

import numpy as np
import pytest

from store_servers import RangeHTTPServer

from cntkio import MinibatchSource, StreamDef, StreamDefs
from cntkio.deserializers.cbf import CBFDeserializer
from cntkio.deserializers.cbf.convert import ctf2bin
from cntkio.deserializers.ctf import CTFDeserializer
from cntkio.remote import open_object, remote_options


def write_ctf(path, n=600, seed=0):
    """n sequences of 1-4 samples: dense x (3 values), sparse y (one of 10)."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(n):
        for _ in range(int(rng.integers(1, 5))):
            x = " ".join(f"{v:.4f}" for v in rng.random(3))
            lines.append(f"{q} |x {x} |y {int(rng.integers(0, 10))}:{rng.random():.3f}\n")
    path.write_text("".join(lines))
    return str(path)


def ctf_streams():
    return StreamDefs(x=StreamDef(field="x", shape=3), y=StreamDef(field="y", shape=10, is_sparse=True))


def ctf_source(path, keys=None, **kw):
    d = CTFDeserializer(path, ctf_streams())
    d["chunkSizeInBytes"] = 4000
    d.update(keys or {})
    return MinibatchSource(d, randomize=True, randomization_window_in_chunks=3, **kw)


def minibatches(src, count=None, size=48, **partition):
    """The values of every stream of each minibatch (dense: per-sequence arrays; sparse: dense
    copies), up to ``count`` minibatches or the end."""
    out = []
    while count is None or len(out) < count:
        mb = src.next_minibatch(size, **partition)
        if not mb:
            break
        out.append({s.name: [np.asarray(a.toarray() if hasattr(a, "toarray") else a)
                             for a in v.as_sequences()] for s, v in mb.items()})
    return out


def assert_same(a, b):
    assert len(a) == len(b) and len(a) > 0
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            assert len(x[k]) == len(y[k])
            for u, v in zip(x[k], y[k]):
                np.testing.assert_array_equal(u, v)


def test_ctf_from_a_bucket_equals_the_local_file_with_checkpoint_and_restore(s3, bucket, remote_keys, tmp_path):
    local = write_ctf(tmp_path / "a.ctf")
    s3.upload(local, f"s3://{bucket}/data/a.ctf")
    url = f"s3://{bucket}/data/a.ctf"
    want = minibatches(ctf_source(local, max_sweeps=2))
    remote = ctf_source(url, remote_keys, max_sweeps=2)
    head = minibatches(remote, count=10)
    state = remote.get_checkpoint_state()
    assert_same(head + minibatches(remote), want)
    again = ctf_source(url, remote_keys, max_sweeps=2)   # a new process would do the same
    again.restore_from_checkpoint(state)
    assert_same(head + minibatches(again), want)


def cbf_source(path, keys=None, **kw):
    d = CBFDeserializer(path)
    d.update(keys or {})
    return MinibatchSource(d, randomize=True, randomization_window_in_chunks=3, **kw)


def test_cbf_from_a_bucket_equals_the_local_file_and_the_second_sweep_reads_the_cache(s3, bucket, remote_keys,
                                                                                      tmp_path):
    local = str(tmp_path / "a.cbf")
    ctf2bin(write_ctf(tmp_path / "a.ctf", seed=1), local, ctf_streams(), chunk_size=3000, progress=False)
    url = f"s3://{bucket}/a.cbf"
    s3.upload(local, url)
    want = minibatches(cbf_source(local, max_sweeps=2))
    src = cbf_source(url, remote_keys, max_sweeps=2)
    got = minibatches(src)
    assert_same(got, want)
    obj = open_object(url, remote_options(remote_keys))
    size = obj.size
    assert obj.fetched <= size + 4096            # each byte fetched about once: sweep 2 read the cache
    assert obj.from_cache >= size // 2


def test_cbf_from_a_bucket_is_read_by_two_processes_as_two_partitions(s3, bucket, remote_keys, tmp_path):
    local = str(tmp_path / "a.cbf")
    ctf2bin(write_ctf(tmp_path / "a.ctf", seed=2), local, ctf_streams(), chunk_size=3000, progress=False)
    url = f"s3://{bucket}/a.cbf"
    s3.upload(local, url)
    want = [minibatches(cbf_source(local, max_sweeps=1), **{"num_data_partitions": 2, "partition_index": i})
            for i in range(2)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        got = pool.starmap(_partition, [(url, remote_keys, i) for i in range(2)], chunksize=1)
    for i in range(2):
        assert_same(got[i], want[i])


def _partition(url, keys, index):
    """One worker's share of a sweep (run in a process of its own)."""
    return minibatches(cbf_source(url, keys, max_sweeps=1), num_data_partitions=2, partition_index=index)


def test_ctf_over_http_with_range_requests_equals_the_local_file_and_the_index_cache_is_keyed(tmp_path):
    pytest.importorskip("aiohttp", reason="aiohttp (the http extra) is not installed")
    served = tmp_path / "www"
    served.mkdir()
    local = write_ctf(served / "a.ctf", seed=3)
    keys = {"cacheDir": str(tmp_path / "cache"), "cacheIndex": True}
    with RangeHTTPServer(str(served)) as http:
        url = f"{http.url}/a.ctf"
        want = minibatches(ctf_source(local, max_sweeps=1))
        assert_same(minibatches(ctf_source(url, keys, max_sweeps=1)), want)
        index_files = list((tmp_path / "cache" / "index").iterdir())
        assert len(index_files) == 1 and index_files[0].name.endswith(".ctfidx")
        assert not (served / "a.ctf.ctfidx").exists()      # nothing written beside the object
        assert_same(minibatches(ctf_source(url, keys, max_sweeps=1)), want)   # from the index cache


def test_images_of_a_map_in_a_bucket_plain_and_zipped_equal_the_local_read(s3, bucket, remote_keys, tmp_path):
    cv2 = pytest.importorskip("cv2")
    from cntkio.deserializers.image import ImageDeserializer
    rng = np.random.default_rng(0)
    names = []
    for i in range(8):
        names.append(f"im{i}.png")
        cv2.imwrite(str(tmp_path / names[-1]), rng.integers(0, 256, (6 + i, 5, 3), dtype=np.uint8))
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        for n in names:
            z.write(tmp_path / n, f"inner/{n}")
    (tmp_path / "plain.txt").write_text("".join(f"{n}\t{i % 3}\n" for i, n in enumerate(names)))
    (tmp_path / "zip.txt").write_text("".join(f"a.zip@/inner/{n}\t{i % 3}\n" for i, n in enumerate(names)))
    for n in names + ["a.zip", "plain.txt", "zip.txt"]:
        s3.upload(str(tmp_path / n), f"s3://{bucket}/img/{n}")

    def read(map_file, keys=None):
        from cntkio import transforms as T
        d = ImageDeserializer(map_file, StreamDefs(
            features=StreamDef(field="image", transforms=[T.scale(4, 4, 3, "nearest")]),
            labels=StreamDef(field="label", shape=3)))
        d.update(keys or {})
        return minibatches(MinibatchSource(d, randomize=True, max_sweeps=1), size=3)

    want = read(str(tmp_path / "plain.txt"))
    assert_same(read(f"s3://{bucket}/img/plain.txt", remote_keys), want)
    assert_same(read(f"s3://{bucket}/img/zip.txt", remote_keys), want)
    # the same images as base64 text in the map file (Base64ImageDeserializer), chunks of ~2 images
    from cntkio.deserializers.image import Base64ImageDeserializer
    (tmp_path / "b64.txt").write_text("".join(
        f"{i}\t{i % 3}\t{base64.b64encode((tmp_path / n).read_bytes()).decode()}\n" for i, n in enumerate(names)))
    s3.upload(str(tmp_path / "b64.txt"), f"s3://{bucket}/img/b64.txt")

    def read64(map_file, keys=None):
        from cntkio import transforms as T
        d = Base64ImageDeserializer(map_file, StreamDefs(
            features=StreamDef(field="image", transforms=[T.scale(4, 4, 3, "nearest")]),
            labels=StreamDef(field="label", shape=3)))
        d.update(keys or {}, chunkSizeInBytes=600)
        return minibatches(MinibatchSource(d, randomize=True, max_sweeps=1), size=3)
    assert_same(read64(f"s3://{bucket}/img/b64.txt", remote_keys), read64(str(tmp_path / "b64.txt")))


def test_convert_reads_from_and_writes_to_urls(s3, bucket, tmp_path, monkeypatch):
    from cntkio.tools.convert import main as convert
    local = write_ctf(tmp_path / "a.ctf", n=100, seed=7)
    s3.upload(local, f"s3://{bucket}/in/a.ctf")
    # credentials and the endpoint the back end's way: its environment variables
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CNTKIO_CACHE_DIR", str(tmp_path / "cache"))
    args = ["ctf2bin", f"s3://{bucket}/in/a.ctf", f"s3://{bucket}/out/a.cbf", "--stream", "x:x:dense:3",
            "--stream", "y:y:sparse:10", "--no-progress"]
    assert convert(args) == 0
    ctf2bin(local, str(tmp_path / "want.cbf"), ctf_streams(), progress=False)
    assert s3.fs().cat(f"{bucket}/out/a.cbf") == (tmp_path / "want.cbf").read_bytes()
    assert convert(["ctf2bin", f"s3://{bucket}/in/missing.ctf", f"s3://{bucket}/out/b.cbf"]) == 1
    assert not s3.fs().exists(f"{bucket}/out/b.cbf")


def _htk_corpus(folder):
    """Two archives of 2-dim frames (6 utterances), their SCP (relative paths, frame ranges), an MLF
    and its state list."""
    from cntkio.deserializers.htk.writer import write_htk
    rng = np.random.default_rng(8)
    lengths = [5, 3, 7, 4, 6, 2]
    scp, mlf, pos = [], ["#!MLF!#\n"], {"a.htk": 0, "b.htk": 0}
    frames = {"a.htk": [], "b.htk": []}
    for u, n in enumerate(lengths):
        arch = "a.htk" if u % 2 == 0 else "b.htk"
        frames[arch].append(rng.random((n, 2), dtype=np.float32))
        scp.append(f"u{u}.mfc={arch}[{pos[arch]},{pos[arch] + n - 1}]\n")
        pos[arch] += n
        cut = n // 2
        mlf.append(f'"*/u{u}.lab"\n0 {cut * 100000} s{u % 3}\n{cut * 100000} {n * 100000} s{(u + 1) % 3}\n.\n')
    for arch, parts in frames.items():
        write_htk(str(folder / arch), np.concatenate(parts))
    (folder / "f.scp").write_text("".join(scp))
    (folder / "l.mlf").write_text("".join(mlf))
    (folder / "states.list").write_text("s0\ns1\ns2\n")


@pytest.mark.parametrize("frame_mode", [False, True])
def test_htk_features_and_mlf_labels_from_a_bucket_equal_the_local_read(s3, bucket, remote_keys, tmp_path,
                                                                        monkeypatch, frame_mode):
    from cntkio import HTKFeatureDeserializer, HTKMLFDeserializer
    data = tmp_path / "htk"
    data.mkdir()
    _htk_corpus(data)
    s3.upload(str(data), f"s3://{bucket}/htk")
    monkeypatch.chdir(data)          # the SCP's relative paths: from the working directory here, from the
                                     # SCP's folder in the bucket

    def read(base, keys=None):
        f = HTKFeatureDeserializer({"features": StreamDef(shape=2, scp=f"{base}f.scp")})
        lab = HTKMLFDeserializer(f"{base}states.list", {"labels": StreamDef(shape=3, mlf=f"{base}l.mlf")})
        for d in (f, lab):
            d.update(keys or {})
        return minibatches(MinibatchSource([f, lab], frame_mode=frame_mode, randomize=True, max_sweeps=1), size=8)

    assert_same(read(f"s3://{bucket}/htk/", remote_keys), read(""))


def test_a_config_reads_a_url_with_a_storage_options_section(s3, bucket, tmp_path):
    from cntkio.config import parse_config
    from cntkio.readers import build_reader
    local = write_ctf(tmp_path / "a.ctf", n=120, seed=9)
    s3.upload(local, f"s3://{bucket}/a.ctf")
    text = f"""
    reader = [
        randomize = false
        cacheDir = "{tmp_path / 'cache'}"
        cacheLimit = 64M
        storageOptions = [
            key = "{s3.key}" ; secret = "{s3.secret}"
            client_kwargs = [ endpoint_url = "{s3.endpoint}" ; region_name = "us-east-1" ]
        ]
        deserializers = ([
            type = "CNTKTextFormatDeserializer" ; file = "s3://{bucket}/a.ctf"
            input = [
                x = [ dim = 3 ; format = "dense" ]
                y = [ dim = 10 ; format = "sparse" ]
            ]
        ])
    ]
    """
    src = build_reader(parse_config(text)("reader"), max_sweeps=1)
    d = CTFDeserializer(local, ctf_streams())
    want = minibatches(MinibatchSource(d, randomize=False, max_sweeps=1))
    assert_same(minibatches(src), want)
    assert any((tmp_path / "cache" / "ranges").iterdir())


def _chunk_sizes(d, queue):
    queue.put([d.get_chunk(c.id).sequences.keys.size for c in d.chunk_infos()])


def test_a_deserializer_built_before_a_fork_reads_in_the_child(s3, bucket, remote_keys, tmp_path):
    # a DataLoader worker forked from a process that already read the URL: the child must not wait
    # on the parent's event loop (gone in the child)
    from cntkio.registry import build_deserializer
    local = write_ctf(tmp_path / "a.ctf", n=200, seed=10)
    s3.upload(local, f"s3://{bucket}/a.ctf")
    cfg = CTFDeserializer(f"s3://{bucket}/a.ctf", ctf_streams())
    cfg.update(remote_keys, chunkSizeInBytes=4000, cacheLimit=0)
    d = build_deserializer(cfg)
    want = [d.get_chunk(c.id).sequences.keys.size for c in d.chunk_infos()]
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_chunk_sizes, args=(d, queue))
    child.start()
    got = queue.get(timeout=60)
    child.join(30)
    assert got == want and child.exitcode == 0


@pytest.mark.parametrize("cache_limit", ["64M", 0])
def test_a_ctf_object_larger_than_the_scan_window_is_indexed_as_the_local_file(s3, bucket, remote_keys, tmp_path,
                                                                              monkeypatch, cache_limit):
    # the index scan reads the object in windows (64 MiB; 4 KiB here): sequences cut by a window's
    # end, windows read from the cache (mapped) and from the store
    from cntkio.deserializers.ctf import index as ctf_index
    monkeypatch.setattr(ctf_index, "SCAN_WINDOW", 4096)
    local = write_ctf(tmp_path / "a.ctf", n=400, seed=11)
    url = f"s3://{bucket}/a.ctf"
    s3.upload(local, url)
    keys = dict(remote_keys, cacheLimit=cache_limit)
    want = minibatches(ctf_source(local, max_sweeps=1))
    assert_same(minibatches(ctf_source(url, keys, max_sweeps=1)), want)
    assert_same(minibatches(ctf_source(url, keys, max_sweeps=1)), want)     # again: from the cache
