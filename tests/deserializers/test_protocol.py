"""cntkio.deserializers.protocol: what each deserializer declares, and the two questions the engine
and the source ask (has_random_access, is_local_timeline)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cntkio.deserializers import base
from cntkio.deserializers.ctf import CNTKTextFormatDeserializer, CTFDeserializer
from cntkio.deserializers.protocol import (ChunkData, ChunkInfo, DenseStream, Deserializer,
                                           LocalTimelineDeserializer, RandomAccessDeserializer, SequenceTable,
                                           has_random_access, is_local_timeline)
from cntkio.deserializers.user import UserDeserializer, UserDeserializerAdapter
from cntkio.deserializers.composite import CompositeDeserializer
from cntkio.streams import StreamDef, StreamInformation


@pytest.fixture
def ctf_file(tmp_path):
    p = tmp_path / "d.ctf"
    p.write_text("".join(f"{i} |x {i} {i + 1}\n" for i in range(10)))
    return p


def ctf(path, **options):
    cfg = CTFDeserializer(str(path), {"x": StreamDef(field="x", shape=2)})
    cfg.update(options)
    return CNTKTextFormatDeserializer(cfg)


class Plain(base.DeserializerBase):
    """A format without random access: ten one-sample sequences of stream 'y', keys 0..9."""

    def stream_infos(self):
        return [StreamInformation("y", 0, "dense", np.float32, (1,))]

    def chunk_infos(self):
        return [ChunkInfo(0, 10, 10)]

    def sequence_infos(self, chunk_id):
        return SequenceTable(np.arange(10, dtype=np.int64), np.ones(10, np.int64))

    def get_chunk(self, chunk_id):
        return ChunkData(self.sequence_infos(0),
                         {"y": DenseStream(np.zeros((10, 1), np.float32), np.arange(11, dtype=np.int64))})


class Squares(UserDeserializer):
    def stream_infos(self):
        return [StreamInformation("x", 0, "dense", np.float32, (1,))]

    def num_chunks(self):
        return 2

    def get_chunk(self, chunk_id):
        return {"x": np.arange(3, dtype=np.float32).reshape(3, 1) ** 2}


def test_ctf_declares_random_access_and_says_no_with_numChunksToCache(ctf_file):
    d = ctf(ctf_file)
    assert isinstance(d, Deserializer) and isinstance(d, RandomAccessDeserializer)
    assert has_random_access(d) and not is_local_timeline(d)
    cached = ctf(ctf_file, numChunksToCache=2)
    assert isinstance(cached, RandomAccessDeserializer) and not has_random_access(cached)


def test_the_composite_has_random_access_when_every_part_has(ctf_file):
    assert has_random_access(CompositeDeserializer([ctf(ctf_file)]))
    assert not has_random_access(CompositeDeserializer([ctf(ctf_file, numChunksToCache=1)]))
    fake = Plain()
    assert isinstance(fake, Deserializer) and not isinstance(fake, RandomAccessDeserializer)
    assert not has_random_access(fake)
    assert not has_random_access(CompositeDeserializer([ctf(ctf_file), fake]))


def test_user_deserializers_declare_the_local_timeline():
    user = Squares()
    assert is_local_timeline(user) and not isinstance(user, Deserializer)
    adapter = UserDeserializerAdapter(user)
    assert isinstance(adapter, LocalTimelineDeserializer) and is_local_timeline(adapter)
    assert adapter.num_chunks() == 2 and not has_random_access(adapter)


def test_the_older_user_flag_is_still_a_local_timeline_declaration():
    class Old:
        is_user_deserializer = True
    assert is_local_timeline(Old()) and not is_local_timeline(object())


def test_base_keeps_its_old_names():
    assert base.Deserializer is base.DeserializerBase
    from cntkio.deserializers import protocol
    for name in ("ChunkInfo", "SequenceTable", "DenseStream", "SparseStream", "StreamData", "ChunkData"):
        assert getattr(base, name) is getattr(protocol, name)


def test_the_protocol_module_imports_no_format():
    code = ("import sys, cntkio.deserializers.protocol, cntkio.deserializers.base\n"
            "print(sorted(m for m in sys.modules if m.startswith(('cntkio.deserializers.ctf', "
            "'cntkio.engine', 'cntkio.source', 'cntkio.integrations', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
