"""The CTF index cache (``cacheIndex=True``): written beside the input via a temporary name,
reused only when it matches the file and the options that shape the index, rebuilt otherwise,
and a documented binary layout (docs/ctf.md)."""
from __future__ import annotations

import hashlib
import logging
import os
import struct

import numpy as np
import pytest

from cntkio.deserializers.ctf import CNTKTextFormatDeserializer, available_backends
from cntkio.deserializers.ctf import _reference as ref
from cntkio.deserializers.ctf.index import CACHE_SUFFIX, index_options_digest

BACKENDS = available_backends()
TEXT = "".join(f"{i // 2} |x {i} |y {i % 3}:1\n" for i in range(40))



class NoScan:
    """A backend that parses but must not scan (proves the index came from the cache)."""

    def __init__(self, inner):
        self.inner = inner
        self.__name__ = "NoScan"

    def scan_index(self, *args):
        raise AssertionError("the file was scanned although a valid cache exists")

    def parse_chunk(self, *args):
        return self.inner.parse_chunk(*args)


class CountingScan(NoScan):
    def __init__(self, inner):
        super().__init__(inner)
        self.scans = 0

    def scan_index(self, *args):
        self.scans += 1
        return self.inner.scan_index(*args)


def config(path, **options):
    return {"type": "CNTKTextFormatDeserializer", "file": str(path), "cacheIndex": True,
            "chunkSizeInBytes": 100, "input": {"x": {"dim": 1}, "y": {"dim": 3, "format": "sparse"}},
            **options}


def snapshot(d):
    return ([(c.num_sequences, c.num_samples) for c in d.chunk_infos()],
            [(d.sequence_infos(c.id).keys.tolist(), d.sequence_infos(c.id).lengths.tolist())
             for c in d.chunk_infos()],
            [d.get_chunk(c.id).streams["x"].values.ravel().tolist() for c in d.chunk_infos()])


def test_cache_is_written_and_reused(tmp_path, backend, caplog):
    path = tmp_path / "data.ctf"
    path.write_text(TEXT)
    first = CNTKTextFormatDeserializer(config(path), backend=backend)
    cache = tmp_path / ("data.ctf" + CACHE_SUFFIX)
    assert cache.is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    with caplog.at_level(logging.INFO, logger="cntkio"):
        again = CNTKTextFormatDeserializer(config(path, traceLevel=2), backend=NoScan(backend))
    assert snapshot(again) == snapshot(first)
    assert len(first.chunk_infos()) > 1
    assert any("index loaded from cache" in r.getMessage() for r in caplog.records)


def test_cache_not_written_without_cache_index(tmp_path, backend):
    path = tmp_path / "data.ctf"
    path.write_text(TEXT)
    CNTKTextFormatDeserializer(config(path, cacheIndex="false"), backend=backend)
    assert list(tmp_path.iterdir()) == [path]


def _rebuild_reason(tmp_path, backend, caplog, change, **options):
    path = tmp_path / "data.ctf"
    path.write_text(TEXT)
    CNTKTextFormatDeserializer(config(path), backend=backend)
    change(path)
    counting = CountingScan(backend)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cntkio"):
        d = CNTKTextFormatDeserializer(config(path, **options), backend=counting)
    assert counting.scans == 1
    reasons = [r.getMessage() for r in caplog.records if "index cache not used" in r.getMessage()]
    assert len(reasons) == 1
    # the rebuilt cache is valid for the new state
    CNTKTextFormatDeserializer(config(path, **options), backend=NoScan(backend))
    return reasons[0], d


def test_content_change_with_same_size_and_mtime_rebuilds(tmp_path, backend, caplog):
    def change(path):
        st = os.stat(path)
        path.write_text(TEXT.replace("|x 5 ", "|x 7 "))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    reason, d = _rebuild_reason(tmp_path, backend, caplog, change)
    assert "content changed" in reason
    assert 7.0 in sum(snapshot(d)[2], [])


def test_size_change_rebuilds(tmp_path, backend, caplog):
    reason, d = _rebuild_reason(tmp_path, backend, caplog,
                                lambda p: p.write_text(TEXT + "99 |x 1\n"))
    assert "size changed" in reason
    assert snapshot(d)[1][-1][0][-1] == 99


def test_mtime_change_rebuilds(tmp_path, backend, caplog):
    def change(path):
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    reason, _ = _rebuild_reason(tmp_path, backend, caplog, change)
    assert "modification time changed" in reason


@pytest.mark.parametrize("options", [{"chunkSizeInBytes": 50}, {"skipSequenceIds": True},
                                     {"input": {"x": {"dim": 1, "definesMBSize": True},
                                                "y": {"dim": 3, "format": "sparse"}}},
                                     {"input": {"x": {"dim": 1, "alias": "y"},
                                                "y": {"dim": 3, "format": "sparse", "alias": "x"}}}])
def test_option_change_rebuilds(tmp_path, backend, caplog, options):
    reason, _ = _rebuild_reason(tmp_path, backend, caplog, lambda p: None, **options)
    assert "options that shape the index changed" in reason


def test_corrupt_cache_rebuilds(tmp_path, backend, caplog):
    def change(path):
        cache = path.with_name(path.name + CACHE_SUFFIX)
        blob = bytearray(cache.read_bytes())
        blob[200] ^= 0xFF
        cache.write_bytes(bytes(blob))
    reason, _ = _rebuild_reason(tmp_path, backend, caplog, change)
    assert "checksum mismatch" in reason


def test_unwritable_cache_is_a_warning(tmp_path, backend, caplog):
    path = tmp_path / "data.ctf"
    path.write_text(TEXT)
    (tmp_path / ("data.ctf" + CACHE_SUFFIX)).mkdir()  # the cache path cannot become a file
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        d = CNTKTextFormatDeserializer(config(path), backend=backend)
    assert sum(c.num_sequences for c in d.chunk_infos()) == 20
    assert any("could not write the index cache" in r.getMessage() for r in caplog.records)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_binary_layout(tmp_path, backend):
    path = tmp_path / "data.ctf"
    path.write_bytes(b"\xef\xbb\xbf7 |x 1\n7 |x 2\n9 |y 0:1\n")
    CNTKTextFormatDeserializer(config(path), backend=backend)
    blob = (tmp_path / ("data.ctf" + CACHE_SUFFIX)).read_bytes()
    head = struct.unpack_from("<8sIIQq32s32sBB6xQQ", blob, 0)
    magic, version, fmt, size, mtime_ns, head_hash, opts, enc, ids_mode, n, c = head
    st = os.stat(path)
    assert (magic, version, fmt) == (b"CNTKIOCI", 1, ref.FORMAT_VERSION)
    assert (size, mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert head_hash == hashlib.sha256(path.read_bytes()).digest()
    assert opts == index_options_digest([b"x", b"y"], False, -1, 100)
    assert (enc, ids_mode, n, c) == (ref.ENCODING_UTF8_BOM, 1, 2, 1)
    arrays = np.frombuffer(blob, "<i8", count=(n + (n + 1) + n + n + c + 1), offset=120)
    keys, starts = arrays[:n], arrays[n:2 * n + 1]
    lines, lengths, chunks = arrays[2 * n + 1:3 * n + 1], arrays[3 * n + 1:4 * n + 1], arrays[4 * n + 1:]
    assert keys.tolist() == [7, 9] and starts.tolist() == [3, 17, 26]
    assert lines.tolist() == [1, 3] and lengths.tolist() == [2, 1] and chunks.tolist() == [0, 2]
    assert blob[-32:] == hashlib.sha256(blob[:-32]).digest()
    assert len(blob) == 120 + 8 * (4 * n + c + 2) + 32


# --- scanning a large file in windows ----------------------------------------------------------------
def _random_ctf(rng, ids: bool) -> str:
    """A CTF text with multi-line sequences (ids), stray leading digits (no ids), blank and comment
    lines, repeated ids, empty samples and, sometimes, a BOM or no final newline."""
    lines = ["|# header"] if rng.random() < 0.2 else []
    key = 0
    for _ in range(rng.randint(0, 40)):
        key += rng.choice([1, 1, 2, 0])
        for line in range(rng.randint(1, 4)):
            prefix = f"{key} " if ids and (line == 0 or rng.random() < 0.5) else ""
            if not ids and rng.random() < 0.1:
                prefix = f"{rng.randint(0, 9)} "
            body = " ".join(rng.choice(["|a 1 2", "|b 3:1", "|c 9", "|#x", "|a"]) for _ in range(rng.randint(1, 3)))
            lines.append(prefix + body)
            if rng.random() < 0.1:
                lines.append(rng.choice(["", "  ", "|# only a comment"]))
    return ("\ufeff" if rng.random() < 0.1 else "") + "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")


@pytest.mark.parametrize("seed", range(40))
def test_windowed_scan_equals_one_scan_of_the_whole_file(backend, tmp_path, seed):
    import random

    from cntkio.deserializers.ctf.index import scan, scan_file
    rng = random.Random(seed)
    path = tmp_path / "w.ctf"
    path.write_text(_random_ctf(rng, ids=rng.random() < 0.6), encoding="utf-8")
    data = path.read_bytes()
    for window in (8, 40, 200):
        for skip_ids in (False, True):
            for chunk_size in (30, 1000):
                whole = scan(backend, data, [b"a", b"b"], skip_ids, -1, chunk_size)
                windowed = scan_file(str(path), backend, [b"a", b"b"], skip_ids, -1, chunk_size, window=window)
                assert (windowed.encoding, windowed.ids_mode) == (whole.encoding, whole.ids_mode)
                for field in ("keys", "starts", "first_lines", "lengths", "chunk_starts"):
                    assert np.array_equal(getattr(windowed, field), getattr(whole, field)), (field, window)
