"""The legacy HTKMLFReader's ``readMethod = rollingWindow`` with a randomization window (cntkio's
rolling-window order: frames in corpus order, each delivered less than N/2 positions from its corpus
position, N the ``randomize`` value; ``auto`` shuffles the whole sweep) and ``unigram`` (accepted
with one info line; the file must exist)."""
from __future__ import annotations

import logging
import sys
import textwrap

import numpy as np
import pytest

import paths
from cntkio.config import parse_config
from cntkio.engine.randomizer import rolling_order
from cntkio.errors import ConfigError
from cntkio.readers import build_reader, reader_spec
from cntkio.readers.legacy.htkmlf import ROLLING_WINDOW_AUTO

sys.path.insert(0, str(paths.TESTS / "deserializers" / "htk"))
import htk_corpus  # noqa: E402

SECTION = """
reader = [
    readerType = "HTKMLFReader"
    verbosity = 0
    readMethod = "rollingWindow"
    {extra}
    features = [ dim = 1; type = "real"; scpFile = "big.scp" ]
    labels = [ mlfFile = "big.mlf"; labelMappingFile = "states.list"; labelDim = {ldim}; labelType = "category" ]
]
"""


@pytest.fixture()
def big(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return htk_corpus.write_big(tmp_path, n_utts=30)     # ~140k frames in several chunks; feature = corpus frame number


def _sec(c, extra):
    return parse_config(textwrap.dedent(SECTION.format(extra=extra, ldim=c["labels"])))("reader")


def _labels_of(c) -> np.ndarray:
    """Label index of every corpus frame (one MLF segment per utterance)."""
    return np.repeat([u % c["labels"] for u in range(len(c["lengths"]))], c["lengths"])


def _frames(src, mb=997, W=1, r=0, limit=None):
    """Feature values (= corpus positions) and labels read until the source ends (or ``limit`` minibatches)."""
    feats, labs, k = [], [], 0
    while limit is None or k < limit:
        got = src.next_minibatch(mb, num_data_partitions=W, partition_index=r)
        if not got:
            break
        for s, v in got.items():
            a = v.asarray()
            if s.name == "features":
                feats.append(a.reshape(-1))
            else:
                labs.append(a.reshape(-1, a.shape[-1]).argmax(1))
        k += 1
    return (np.concatenate(feats).astype(np.int64) if feats else np.zeros(0, np.int64),
            np.concatenate(labs) if labs else np.zeros(0, np.int64))


# --- the order itself -----------------------------------------------------------------------------

@pytest.mark.parametrize("n,half", [(10, 3), (1000, 7), (200_000, 70_000), (150_000, 40), (70_000, 65_536)])
def test_rolling_order_is_a_permutation_within_half_a_window(n, half):
    o = rolling_order(11, n, half)
    assert np.array_equal(np.sort(o), np.arange(n))
    d = np.abs(np.arange(n) - o)
    assert d.max() <= half - 1                      # the rule's guarantee
    assert d.max() >= (half - 1) // 3               # and frames do travel (not the identity)
    assert np.array_equal(o, rolling_order(11, n, half))
    assert not np.array_equal(o, rolling_order(12, n, half))


def test_rolling_order_edges():
    assert rolling_order(3, 50, 1).tolist() == list(range(50))        # a window of 1 or 2: corpus order
    whole = rolling_order(3, 50, 50)                                    # half >= n: uniform shuffle
    assert sorted(whole.tolist()) == list(range(50)) and whole.tolist() != list(range(50))
    assert rolling_order(3, 0, 5).tolist() == []


# --- through the reader ---------------------------------------------------------------------------

def test_every_frame_once_per_sweep_within_the_window_labels_follow(big):
    N = 4000
    src = build_reader(_sec(big, f"randomize = {N}"), max_sweeps=2)
    feats, labs = _frames(src)
    total = int(big["lengths"].sum())
    assert len(feats) == 2 * total
    lab_of = _labels_of(big)
    for k in range(2):
        f = feats[k * total:(k + 1) * total]
        assert np.array_equal(np.sort(f), np.arange(total))                 # every frame once
        assert np.abs(f - np.arange(total)).max() <= N // 2 - 1              # the window bound
        assert np.mean(f != np.arange(total)) > 0.9                          # randomized
        assert np.array_equal(labs[k * total:(k + 1) * total], lab_of[f])    # labels travel with frames
    assert not np.array_equal(feats[:total], feats[total:])                 # each sweep its own order
    spec = reader_spec(_sec(big, f"randomize = {N}"))
    assert spec.source_kwargs["rolling_window"] and spec.source_kwargs["randomization_window_in_samples"] == N


def test_same_seed_same_order_other_seed_other_order(big):
    a, _ = _frames(build_reader(_sec(big, "randomize = 3000"), max_sweeps=1))
    b, _ = _frames(build_reader(_sec(big, "randomize = 3000"), max_sweeps=1))
    c, _ = _frames(build_reader(_sec(big, "randomize = 3000"), max_sweeps=1, randomization_seed=5))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.array_equal(a, rolling_order(0, len(a), 1500))               # the documented rule, seed 0
    assert np.array_equal(c, rolling_order(5, len(c), 1500))


def test_auto_shuffles_the_whole_sweep(big):
    spec = reader_spec(_sec(big, "randomize = auto"))
    assert spec.source_kwargs["randomization_window_in_samples"] == ROLLING_WINDOW_AUTO == 2**62 - 1
    f, _ = _frames(build_reader(_sec(big, "randomize = auto"), max_sweeps=1))
    total = int(big["lengths"].sum())
    assert np.array_equal(np.sort(f), np.arange(total))
    assert np.abs(f - np.arange(total)).max() > total // 2                  # no window: frames go anywhere


@pytest.mark.parametrize("W", [1, 2])
def test_exact_resume_mid_sweep(big, W):
    """Stop after 7 minibatches (mid sweep 0), restore the state into a fresh reader: the rest is
    the same as without the stop, for every worker; the workers' frames make up each sweep once."""
    sec = "randomize = 5000"
    total = int(big["lengths"].sum())
    union = []
    for r in range(W):
        whole, _ = _frames(build_reader(_sec(big, sec), max_sweeps=2), 613, W, r)
        first = build_reader(_sec(big, sec), max_sweeps=2)
        head, _ = _frames(first, 613, W, r, limit=7)
        state = first.get_checkpoint_state()
        assert 0 < len(head) < total // W
        second = build_reader(_sec(big, sec), max_sweeps=2)
        second.restore_from_checkpoint(state)
        tail, _ = _frames(second, 613, W, r)
        assert np.array_equal(np.concatenate([head, tail]), whole)
        union.append(whole)
    allf = np.concatenate(union)
    assert len(allf) == 2 * total
    assert np.array_equal(np.sort(allf), np.sort(np.concatenate([np.arange(total)] * 2)))


def test_rolling_window_needs_frame_mode(big):
    with pytest.raises(ConfigError, match="rollingWindow randomizes frames") as e:
        reader_spec(_sec(big, "randomize = 4000; frameMode = false"))
    assert "readMethod" in str(e.value)
    assert reader_spec(_sec(big, "randomize = none; frameMode = false")).source_kwargs.get("rolling_window") is None


# --- unigram --------------------------------------------------------------------------------------

def test_unigram_is_accepted_with_one_info_line(big, caplog):
    with open("lm.arpa", "w") as f:
        f.write("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0 <s>\n-1.0 </s>\n\n\\end\\\n")
    with caplog.at_level(logging.INFO, logger="cntkio"):
        src = build_reader(_sec(big, 'randomize = none; unigram = "lm.arpa"'), max_sweeps=1)
    lines = [r.getMessage() for r in caplog.records if "unigram" in r.getMessage()]
    assert len(lines) == 1 and "reader.unigram=lm.arpa is accepted and has no effect" in lines[0]
    assert "lattice" in lines[0]
    f, _ = _frames(src)
    assert f.tolist() == list(range(int(big["lengths"].sum())))            # the same frames, in order


def test_unigram_missing_file_names_the_key_and_line(big):
    text = textwrap.dedent(SECTION.format(extra='randomize = none\n    unigram = "nowhere.arpa"',
                                          ldim=big["labels"]))
    with pytest.raises(ConfigError, match="nowhere.arpa") as e:
        reader_spec(parse_config(text)("reader"))
    msg = str(e.value)
    assert "reader.unigram" in msg and "does not exist" in msg
    assert e.value.line == 7                       # the line of "unigram = ..."


def test_a_chunk_is_live_only_half_a_window_beyond_its_frames():
    """Bounded memory: chunk c (corpus positions [a, b)) is first used at or after a - (N/2 - 1) and
    last used before b + N/2 - 1, so the chunks loaded at any time are those within half a window."""
    from cntkio.engine.randomizer import RollingWindowRandomizer
    sizes = [5000, 12000, 300, 8000, 20000, 7000]
    r = RollingWindowRandomizer([np.ones(s, np.int64) for s in sizes], 3000, seed=2)
    tl = r.timeline(1)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    assert tl.chunk.tolist() != np.repeat(np.arange(len(sizes)), sizes).tolist()
    for c in range(len(sizes)):
        assert starts[c] - 1499 <= tl.first_use[c] <= starts[c] + 1499
        assert starts[c + 1] - 1 - 1499 <= tl.last_use[c] <= starts[c + 1] - 1 + 1499
    # index within the chunk and the chunk give back the corpus position, each once
    pos = starts[tl.chunk] + tl.index
    assert np.array_equal(np.sort(pos), np.arange(sum(sizes))) and np.abs(pos - np.arange(len(pos))).max() <= 1499
    assert np.array_equal(pos, rolling_order(2 + 1, sum(sizes), 1500))
