"""Generated CTF files (ids or not, dense and sparse inputs, comments, tabs, CRLF, blank lines,
BOM, a missing last newline, unknown inputs, malformed samples): the index agrees with a
straightforward model built line by line while writing the file, and the parsed values equal
Python's ``float()`` of the tokens (cast to float32 unless double)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio.deserializers.ctf import CNTKTextFormatDeserializer, available_backends
from cntkio.errors import FormatError
from ctf_cases import DIM_A, DIM_B, ctf_files

def _chunks(sequences, size, limit):
    starts = [s["start"] for s in sequences] + [size]
    out, acc = [0], 0
    for i in range(len(sequences)):
        n = starts[i + 1] - starts[i]
        if i > out[-1] and acc + n > min(limit, size):
            out.append(i)
            acc = 0
        acc += n
    return out + [len(sequences)]


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=ctf_files(), chunk_size=st.integers(1, 400), double=st.booleans(),
       defining=st.sampled_from([None, "a", "b"]))
def test_generated_files(tmp_path, backend, data, chunk_size, double, defining):
    text, sequences, errors = data
    path = tmp_path / "gen.ctf"
    path.write_bytes(text)
    config = {"type": "CNTKTextFormatDeserializer", "file": str(path), "maxErrors": 10**6,
              "traceLevel": 0, "chunkSizeInBytes": chunk_size,
              "precision": "double" if double else "float",
              "input": {"A": {"alias": "a", "dim": DIM_A, "definesMBSize": defining == "a"},
                        "B": {"alias": "b", "dim": DIM_B, "format": "sparse",
                              "definesMBSize": defining == "b"}}}
    if defining is not None and not any(s[defining + "_lines"] for s in sequences):
        with pytest.raises(FormatError, match="no sequence has a sample"):
            CNTKTextFormatDeserializer(config, backend=backend)
        return
    d = CNTKTextFormatDeserializer(config, backend=backend)
    dtype = np.float64 if double else np.float32

    # the index
    assert d.index.chunk_starts.tolist() == _chunks(sequences, len(text), chunk_size)
    all_sequences = sequences
    if defining is not None:  # sequences without a sample of the defining input are dropped
        sequences = [s for s in sequences if s[defining + "_lines"]]
    keys = np.concatenate([d.sequence_infos(c.id).keys for c in d.chunk_infos()])
    lengths = np.concatenate([d.sequence_infos(c.id).lengths for c in d.chunk_infos()])
    assert keys.tolist() == [s["key"] for s in sequences]
    assert lengths.tolist() == [max(s["a_lines"], s["b_lines"]) if defining is None
                                else s[defining + "_lines"] for s in sequences]

    # the values
    got_a, got_b = [], []
    for c in d.chunk_infos():
        ch = d.get_chunk(c.id)
        a, b = ch.streams["A"], ch.streams["B"]
        assert a.values.dtype == dtype and b.data.dtype == dtype
        for i in range(len(ch.sequences)):
            got_a.append(a.values[a.offsets[i]:a.offsets[i + 1]].tobytes())
            pairs = []
            for smp in range(b.offsets[i], b.offsets[i + 1]):
                lo, hi = b.indptr[smp], b.indptr[smp + 1]
                pairs.append((b.indices[lo:hi].tolist(), b.data[lo:hi].tobytes()))
            got_b.append(pairs)
    with np.errstate(over="ignore"):
        want_a = [np.array(s["a"], np.float64).astype(dtype).reshape(-1, DIM_A).tobytes()
                  for s in sequences]
        want_b = [[([i for i, _ in p], np.array([v for _, v in p], np.float64).astype(dtype).tobytes())
                   for _, p in s["b"]] for s in sequences]
    assert got_a == want_a
    assert got_b == want_b
    assert d._errors_total == errors  # also those in dropped sequences
    assert len(all_sequences) >= len(sequences)
