"""Partitioned reading exactly as CNTK 2.7 (cntk-readers-measured 1): golden calls of CNTK 2.7
with 2 and 3 workers in sequence, frame and truncated-BPTT mode, randomized or not
(tests/data/partitions/make_golden.py), the spec's worked tables, exact resume from every golden
position, and the position of a worker without data."""
import json
import os

import pytest

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from paths import DATA

with open(os.path.join(DATA, "partitions", "golden.json")) as _f:
    GOLDEN = json.load(_f)


def _source(path, o, chunk=None):
    cfg = CTFDeserializer(path, StreamDefs(x=StreamDef(field="x", shape=1)))
    cfg["chunkSizeInBytes"] = o.get("chunk", chunk) or 10 ** 6
    kw = dict(randomize=o["randomize"], randomization_seed=o.get("seed", 0), frame_mode=o.get("frame_mode", False),
              randomization_window_in_chunks=o.get("window", 128), truncation_length=o.get("truncation_length", 0))
    for key in ("max_samples", "max_sweeps"):
        if key in o:
            kw[key] = o[key]
    return MinibatchSource(cfg, **kw)


def _calls(src, mb, workers, rank, limit=60, states=None):
    """Per call ``[values of each sequence, sweep_end, position after it]`` (``None`` for ``{}``;
    truncated BPTT: the number of samples for the values). ``states``: gets the full checkpoint
    after each call."""
    truncated = src.truncation_length > 0
    out = []
    for _ in range(limit):
        m = src.next_minibatch(mb, num_data_partitions=workers, partition_index=rank)
        state = src.get_checkpoint_state()
        if states is not None:
            states.append(state)
        pos = state["minibatchSourcePosition"]
        if not m:
            out.append([None, False, pos])
            return out
        (md,) = m.values()
        if truncated:
            rows = int(md.num_samples)
        else:
            rows = [[int(v) for v in q.reshape(-1)] for q in md.as_sequences()] if md.num_sequences else []
        out.append([rows, bool(md.end_of_sweep), pos])
    return out


def _write(tmp_path, text):
    path = tmp_path / "p.ctf"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("n", range(len(GOLDEN)), ids=[f"{c['mode']}-W{c['workers']}-{i}"
                                                        for i, c in enumerate(GOLDEN)])
def test_calls_equal_cntk27(tmp_path, n):
    case = GOLDEN[n]
    path = _write(tmp_path, case["text"])
    for rank, expected in enumerate(case["calls"]):
        with _source(path, case["options"]) as src:
            assert _calls(src, case["mb"], case["workers"], rank) == expected, f"rank {rank}"


@pytest.mark.parametrize("n", range(0, len(GOLDEN), 3), ids=lambda n: f"{GOLDEN[n]['mode']}-W{GOLDEN[n]['workers']}-{n}")
def test_restore_from_golden_position_continues_exactly(tmp_path, n):
    # a fresh source restored after call c gives the golden calls after c: from CNTK's position
    # alone (cntkio counts the positions from the start of the timeline, so the dealing goes on),
    # and in truncated BPTT from cntkio's checkpoint, which adds the slots' sequences
    case = GOLDEN[n]
    path = _write(tmp_path, case["text"])
    truncated = case["options"]["truncation_length"] > 0
    for rank, expected in enumerate(case["calls"]):
        states: list = []
        with _source(path, case["options"]) as src:
            assert _calls(src, case["mb"], case["workers"], rank, states=states) == expected
        for c in range(len(expected) - 1):
            state = states[c] if truncated else {"minibatchSourcePosition": expected[c][2]}
            with _source(path, case["options"]) as src:
                src.restore_from_checkpoint(state)
                assert _calls(src, case["mb"], case["workers"], rank) == expected[c + 1:], f"rank {rank} cut {c}"


# --- the worked tables of cntk-readers-measured 1.1 and 1.2 ---------------------------------------
def _table(tmp_path, lengths, o, mb, workers, rank, chunk=None):
    lines = [f"{k} |x {10 * k + t}" for k, ln in enumerate(lengths) for t in range(ln)]
    with _source(_write(tmp_path, "\n".join(lines) + "\n"), o, chunk) as src:
        return [("{}" if rows is None else " ".join(f"s{r[0] // 10}" for r in rows)) + f" {pos}" + (" E" if e else "")
                for rows, e, pos in _calls(src, mb, workers, rank)]


@pytest.mark.parametrize("sweeps,rank,expected", [
    (1, 0, ["s0 1", "s2 3", "s4 5 E", "{} 5"]),
    (1, 1, ["s1 2", "s3 4", "{} 5"]),          # the trailing s4 is skipped by the next call: no E
    (2, 0, ["s0 1", "s2 3", "s4 5 E", "s1 7", "s3 9", "{} 10"]),
    (2, 1, ["s1 2", "s3 4", "s0 6 E", "s2 8", "s4 10 E", "{} 10"]),
])
def test_not_randomized_stops_when_the_budget_is_full(tmp_path, sweeps, rank, expected):
    assert _table(tmp_path, [1] * 5, dict(randomize=False, max_sweeps=sweeps), 2, 2, rank) == expected


@pytest.mark.parametrize("rank,expected", [
    (0, ["s0 1", "s3 4", "{} 5"]), (1, ["s1 2", "s4 5 E", "{} 5"]), (2, ["s2 3", "{} 5"])])
def test_not_randomized_three_workers(tmp_path, rank, expected):
    assert _table(tmp_path, [1] * 5, dict(randomize=False, max_sweeps=1), 3, 3, rank) == expected


def test_not_randomized_budget_not_full(tmp_path):
    lengths = [2, 1, 2, 1, 2, 1]
    o = dict(randomize=False, max_sweeps=2)
    assert _table(tmp_path, lengths, o, 6, 2, 0) == ["s0 3", "s2 6", "s4 9 E", "s0 12", "s2 15", "s4 18 E", "{} 18"]
    assert _table(tmp_path, lengths, o, 6, 2, 1) == ["s1 s3 s5 9 E", "s1 s3 s5 18 E", "{} 18"]


@pytest.mark.parametrize("rank,expected", [
    (0, ["s1 3", "s3 4", "s4 6 E", "s3 7", "s1 11", "s4 12 E", "{} 12"]),
    (1, ["s0 2", "s2 5", "s5 6 E", "s2 9", "s0 10", "s5 12 E", "{} 12"]),
])
def test_randomized_skips_to_the_next_own_sequence_or_the_sweep_end(tmp_path, rank, expected):
    o = dict(randomize=True, seed=0, max_sweeps=2)
    assert _table(tmp_path, [1] * 6, o, 2, 2, rank, chunk=10) == expected


def test_not_randomized_six_sequences(tmp_path):
    o = dict(randomize=False, max_sweeps=2)
    assert _table(tmp_path, [1] * 6, o, 2, 2, 0)[:4] == ["s0 1", "s2 3", "s4 5", "s0 7 E"]


@pytest.mark.parametrize("limit,expected", [({"max_samples": 4}, 4), ({}, 2 ** 63 - 1)])
def test_worker_without_chunk_reports_the_epoch_end(tmp_path, limit, expected):
    # one chunk, two randomized workers: rank 1 gets nothing, at once, at the epoch end
    path = _write(tmp_path, "".join(f"{k} |x {k}\n" for k in range(3)))
    with _source(path, dict(randomize=True, **limit)) as src:
        assert src.get_checkpoint_state() == {"minibatchSourcePosition": 0}
        assert src.next_minibatch(2, num_data_partitions=2, partition_index=1) == {}
        assert src.get_checkpoint_state() == {"minibatchSourcePosition": expected}
        # a restore of that position on a fresh source reads nothing more with max_samples, and
        # reports it back; a read as the only worker goes on from the position restored
        with _source(path, dict(randomize=True, **limit)) as fresh:
            fresh.restore_from_checkpoint({"minibatchSourcePosition": expected})
            assert fresh.get_checkpoint_state() == {"minibatchSourcePosition": expected}
            if limit:
                assert fresh.next_minibatch(2) == {}
        assert src.next_minibatch(2, num_data_partitions=1, partition_index=0)
        assert src.get_checkpoint_state()["minibatchSourcePosition"] == 2
