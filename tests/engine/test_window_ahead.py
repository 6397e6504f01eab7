"""Chunks much smaller than a minibatch (an image each) are loaded minibatches ahead on the loader
threads, not one by one when a minibatch is packed."""
import pytest
from fakes import FakeDeserializer

from cntkio.engine.schedule import _AHEAD_MINIBATCHES
from cntkio.source import MinibatchSource


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("workers", [1, 2])
def test_the_window_keeps_the_next_minibatches_chunks_loading(randomize, workers):
    src = MinibatchSource(FakeDeserializer([[1]] * 200), randomize=randomize, max_sweeps=1,
                          randomization_window_in_chunks=50)   # 200 chunks of one sample
    policy = src._reader.policy
    size = 10
    assert src.next_minibatch(size, num_data_partitions=workers, partition_index=0)
    window, walker = policy.window, policy.walker
    assert window.ahead == _AHEAD_MINIBATCHES * (size // workers) * workers > 3
    k, i = policy.cursor
    tl = walker.timeline(k)
    next_samples = {int(c) for c in tl.chunk[i:i + window.ahead]}
    loc, _ = walker._local(k, workers, 0)
    mine = {int(tl.chunk[p]) for p in loc if i <= p < i + window.ahead}
    need = window.needed(policy.cursor, workers, 0)
    assert mine <= need and len(mine) >= window.ahead // workers - 1
    # without the minibatches ahead, the walker's span is three randomized chunks (3W positions)
    assert len(walker.span(policy.cursor, workers, 0) & next_samples) <= 3 * workers
    src.close()


def test_random_access_reads_keep_the_window_of_randomized_chunks():
    # CTF-like random access parses each batch's sequences out of the window's bytes: nothing is
    # loaded ahead of the randomized chunks there
    import os
    import tempfile

    from cntkio import CTFDeserializer, StreamDef
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "f.ctf")
        with open(path, "w") as f:
            f.writelines(f"{q} |a {q}\n" for q in range(300))
        cfg = CTFDeserializer(path, {"A": StreamDef(field="a", shape=1)})
        cfg["chunkSizeInBytes"] = 100
        src = MinibatchSource(cfg, max_sweeps=1, randomization_window_in_chunks=3)
        assert src.next_minibatch(16) and src._reader.policy.direct
        assert src._reader.policy.window.ahead == 0
        src.close()
