"""Checkpoint positions must be non-negative integers below 2^63: anything else (1.5, strings,
bools, 2^63, 1e30, negative) is refused with an error naming the key, before the reader moves."""
import numpy as np
import pytest

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from fakes import FakeDeserializer, ids_of

BAD = [1.5, 6.0, "6", True, False, None, -1, 2 ** 63, 1e30, float("nan"), [6]]


class UserLike(FakeDeserializer):
    is_user_deserializer = True

    def num_chunks(self):
        return len(self.chunks)


@pytest.fixture
def ctf_source(tmp_path):
    path = tmp_path / "d.ctf"
    path.write_text("".join(f"{k} |x {k}\n" for k in range(5)))
    return lambda: MinibatchSource(CTFDeserializer(str(path), StreamDefs(x=StreamDef(field="x", shape=1))),
                                   randomize=False)


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_global_position_rejected_naming_the_key(ctf_source, bad):
    src = ctf_source()
    src.next_minibatch(2)
    with pytest.raises(ValueError) as err:
        src.restore_from_checkpoint({"minibatchSourcePosition": bad})
    assert "minibatchSourcePosition" in str(err.value)
    # nothing moved: the reader goes on from where it was
    assert src.get_checkpoint_state() == {"minibatchSourcePosition": 2}
    assert [int(v) for v in src.next_minibatch(2)[src.streams.x].asarray().reshape(-1)] == [2, 3]


@pytest.mark.parametrize("good,first", [(3, 3), (np.int64(4), 4), (np.uint32(5), 0), (2 ** 63 - 1, None)])
def test_global_position_accepts_integers_up_to_2_63_minus_1(ctf_source, good, first):
    src = ctf_source()
    src.restore_from_checkpoint({"minibatchSourcePosition": good})
    if first is None:  # an endless epoch: far ahead on the timeline, still a position
        assert src.get_checkpoint_state() == {"minibatchSourcePosition": 2 ** 63 - 1}
    else:
        assert int(src.next_minibatch(1)[src.streams.x].asarray().reshape(-1)[0]) == first


def test_error_message_says_what_was_found(ctf_source):
    src = ctf_source()
    with pytest.raises(ValueError, match=r"minibatchSourcePosition must be a non-negative integer, found 1\.5"):
        src.restore_from_checkpoint({"minibatchSourcePosition": 1.5})
    with pytest.raises(ValueError, match=r"minibatchSourcePosition must be an integer in \[0, 9223372036854775807\], "
                                         r"found 9223372036854775808"):
        src.restore_from_checkpoint({"minibatchSourcePosition": 2 ** 63})
    with pytest.raises(ValueError, match=r"found '12'"):
        src.restore_from_checkpoint({"minibatchSourcePosition": "12"})


@pytest.mark.parametrize("randomize,keys", [
    (False, ("baseSweepCount", "baseSampleCount", "baseCurrentSequencePositionInWindow",
             "currentChunkPosition", "currentSequencePosition")),
    (True, ("baseSweepCount", "baseSampleCount", "baseCurrentSequencePositionInWindow",
            "chunkPosition", "sweepIndex")),
])
@pytest.mark.parametrize("bad", [1.5, "1", True, 2 ** 63, 1e30, -2], ids=repr)
def test_local_timeline_keys_rejected_naming_the_key(randomize, keys, bad):
    src = MinibatchSource(UserLike([[1, 1], [1, 1, 1]]), randomize=randomize)
    first = ids_of(src.next_minibatch(2)[src.streams.x])
    state = src.get_checkpoint_state()
    assert set(keys) <= set(state)
    after = ids_of(src.next_minibatch(2)[src.streams.x])
    for key in keys:
        broken = dict(state, **{key: bad})
        with pytest.raises(ValueError) as err:
            src.restore_from_checkpoint(broken)
        assert key in str(err.value)
    # the good state still restores exactly
    src.restore_from_checkpoint(state)
    assert ids_of(src.next_minibatch(2)[src.streams.x]) == after and len(first) == 2
