"""The chunk cache (ranges as files, LRU under cacheLimit, shared by processes), the remote options
of a config, how paths inside a map file at a URL resolve, and file:// URLs read as local paths."""
from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from cntkio.errors import ConfigError
from cntkio.remote import is_remote, local_path, parse_size, remote_options, resolve
from cntkio.remote.cache import RangeCache


def test_lookup_fills_what_is_held_and_names_the_gaps(tmp_path):
    c = RangeCache(str(tmp_path), 1 << 20)
    data = bytes(range(256)) * 4
    c.store("k", 100, 200, data[100:200])
    c.store("k", 300, 400, data[300:400])
    buf, gaps = c.lookup("k", 150, 350)
    assert gaps == [(200, 300)]
    assert bytes(buf[:50]) == data[150:200] and bytes(buf[150:]) == data[300:350]
    buf, gaps = c.lookup("k", 120, 180)
    assert gaps == [] and bytes(buf) == data[120:180]
    assert c.lookup("k", 0, 50) == (None, [(0, 50)])
    assert c.lookup("other", 120, 180) == (None, [(120, 180)])
    assert c.covers("k", 100, 200) and not c.covers("k", 100, 201)


def test_the_least_recently_used_ranges_go_first_past_the_limit(tmp_path):
    c = RangeCache(str(tmp_path), 1000)
    for i in range(4):
        c.store("k", i * 300, i * 300 + 300, b"x" * 300)
        time.sleep(0.01)       # distinct modification times
    # 1200 bytes > 1000: the oldest ranges went, down to 90% of the limit
    assert c.usage() <= 900
    assert c.lookup("k", 0, 300)[1] == [(0, 300)]
    assert c.lookup("k", 900, 1200)[1] == []
    assert not c.store("k", 0, 2000, b"y" * 2000)          # larger than the whole cache: not kept
    assert not RangeCache(str(tmp_path / "off"), 0).store("k", 0, 10, b"z" * 10)


def _writer(root, key, n):
    c = RangeCache(root, 50_000)
    for i in range(n):
        c.store(key, i * 1000, i * 1000 + 1000, bytes([i % 256]) * 1000)


def test_processes_sharing_the_folder_keep_one_bound(tmp_path):
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), f"k{p}", 40)) for p in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = RangeCache(str(tmp_path), 50_000)
    assert c.usage() <= 50_000
    assert int((tmp_path / "usage").read_text()) == c.usage()
    assert not [n for d in (tmp_path / "ranges").iterdir() for n in os.listdir(d) if n.startswith(".tmp")]


def test_remote_options_of_a_config():
    o = remote_options({"storageOptions": {"anon": "true", "client_kwargs": {"endpoint_url": "http://x"}},
                        "CACHEDIR": "/tmp/c", "cacheLimit": "2G", "remoteRetries": "3"})
    assert o.storage_options == {"anon": True, "client_kwargs": {"endpoint_url": "http://x"}}
    assert (o.cache_dir, o.cache_limit, o.retries) == ("/tmp/c", 2 << 30, 3)
    assert remote_options({"storage_options": {"key": "123"}}).storage_options == {"key": "123"}
    assert parse_size("512M", "cacheLimit") == 512 << 20 and parse_size(0, "cacheLimit") == 0
    with pytest.raises(ConfigError, match="cacheLimit"):
        remote_options({"cacheLimit": "lots"})
    with pytest.raises(ConfigError, match="storageOptions"):
        remote_options({"storageOptions": "anon"})


def test_paths_in_a_file_at_a_url_resolve_against_its_folder():
    assert resolve("s3://b/maps/train.txt", "img/1.jpg") == "s3://b/maps/img/1.jpg"
    assert resolve("s3://b/maps/train.txt", "../img/1.jpg") == "s3://b/img/1.jpg"
    assert resolve("s3://b/maps/train.txt", ".../1.jpg") == "s3://b/maps/1.jpg"
    assert resolve("https://h:8080/a/b.scp", "gs://o/x.htk") == "gs://o/x.htk"
    assert resolve("s3://b/maps/train.txt", "/local/abs.jpg") == "/local/abs.jpg"


def test_file_urls_are_local_paths():
    assert local_path("file:///data/a.ctf") == "/data/a.ctf"
    assert local_path("/data/a.ctf") == "/data/a.ctf"
    assert not is_remote("file:///data/a.ctf") and not is_remote("C:\\data\\a.ctf") and is_remote("s3://b/k")


def test_a_ctf_file_url_reads_the_local_file(tmp_path):
    from test_remote_formats import assert_same, ctf_source, minibatches, write_ctf
    local = write_ctf(tmp_path / "a.ctf", n=50)
    assert_same(minibatches(ctf_source("file://" + local, max_sweeps=1)),
                minibatches(ctf_source(local, max_sweeps=1)))


def test_the_remote_layer_imports_only_the_base_and_fsspec_lazily():
    # the formats call cntkio.remote, never the other way; fsspec is imported when a URL is opened
    import ast
    import pathlib

    import cntkio.remote
    folder = pathlib.Path(cntkio.remote.__file__).parent
    allowed = {"_log", "errors", "values", "options", "store", "cache", "objects"}
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                names = [node.module] if node.module else [a.name for a in node.names]
                assert {n.split(".")[0] for n in names} <= allowed, (path.name, names)
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not any(isinstance(n, ast.Import) and n.names[0].name.split(".")[0] in ("fsspec", "s3fs")
                       for n in top), path.name
