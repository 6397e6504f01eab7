"""The C parser keeps freed output blocks of large parses and reuses them (ctf_core.h,
CTF_POOL_*): a chunk parsed into reused blocks equals the first parse, and two chunks alive at
once never share memory."""
import gc

import numpy as np

from cntkio import CTFDeserializer, StreamDef, StreamDefs
from cntkio.deserializers.base import build_deserializer


def write_big(path):
    # about 20 MB (a parse of >= 16 MB of text writes into mapped blocks); 1000 distinct lines
    lines = [f"|w {(7 * i) % 5000}:1 |x {i % 13} {-(i % 7)}.5 {i}\n" for i in range(1000)]
    block = "".join(lines).encode()
    with open(path, "wb") as f:
        f.write(block * (20_000_000 // len(block) + 1))


def arrays(chunk):
    w, x = chunk.streams["w"], chunk.streams["x"]
    return {"indptr": w.indptr, "indices": w.indices, "data": w.data, "x": x.values, "offsets": w.offsets}


def test_reused_blocks_give_the_same_chunk(tmp_path):
    path = tmp_path / "big.ctf"
    write_big(path)
    cfg = CTFDeserializer(str(path), StreamDefs(w=StreamDef(field="w", shape=5000, is_sparse=True),
                                                 x=StreamDef(field="x", shape=3)))
    cfg["chunkSizeInBytes"] = 64 << 20
    d = build_deserializer(cfg)
    assert len(d.chunk_infos()) == 1
    first = {k: v.copy() for k, v in arrays(d.get_chunk(0)).items()}
    n = len(first["x"])
    assert n > 500_000 and first["x"][:3].tolist() == [[0, 0.5, 0], [1, -1.5, 1], [2, -2.5, 2]]
    assert first["indices"][:3].tolist() == [0, 7, 14] and first["indptr"][-1] == n
    gc.collect()  # the first parse's blocks are free (kept for reuse)
    again = d.get_chunk(0)
    other = d.get_chunk(0)  # both alive: distinct blocks
    for k, v in first.items():
        assert np.array_equal(arrays(again)[k], v), k
        assert np.array_equal(arrays(other)[k], v), k
        assert not np.shares_memory(arrays(again)[k], arrays(other)[k]), k
    arrays(other)["x"][:] = -1  # writing one leaves the other as it was
    assert np.array_equal(arrays(again)["x"], first["x"])
    d.close()
