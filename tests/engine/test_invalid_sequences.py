"""Invalid sequences (cntk-io-semantics 2.12) are counted against ``max_errors`` on every path, and
a minibatch whose sequences are all invalid is not handed out empty in the middle of a sweep
(issue 31, item 3): CNTK's SequenceCleaner (ReaderUtil.h) counted them without the check and
returned the empty minibatch; cntkio counts, checks and goes on to the next minibatch. A minibatch
that ends a sweep is handed out even when emptied: it carries the sweep's end."""
from __future__ import annotations

import pytest

import cntkio as io
from cntkio import MinibatchSource, transforms as T

from fakes import FakeDeserializer, ids_of

import paths


def _sizes(src, n, stream="x"):
    """The number of sequences of each minibatch up to the end; an empty one must end a sweep."""
    out = []
    while True:
        mb = src.next_minibatch(n)
        if not mb:
            return out
        data = mb[getattr(src.streams, stream)]
        assert data.num_sequences or data.end_of_sweep
        out.append(data.num_sequences)


def test_an_all_invalid_minibatch_is_counted_and_skipped():
    src = MinibatchSource(FakeDeserializer([[1] * 6], invalid={1, 2}), randomize=False, max_errors=5, max_sweeps=1)
    assert ids_of(src.next_minibatch(1)[src.streams.x]) == [0]
    assert ids_of(src.next_minibatch(1)[src.streams.x]) == [3]        # 1 and 2 skipped, not handed out empty
    assert src.stats()["errors"] == 2
    assert _sizes(src, 1) == [1, 1]


def test_an_all_invalid_minibatch_runs_the_max_errors_check():
    src = MinibatchSource(FakeDeserializer([[1] * 4], invalid={0}), randomize=False)
    with pytest.raises(RuntimeError, match="Number of invalid sequences '1' in the input exceeded the "
                                           "specified maximum number '0'"):
        src.next_minibatch(1)


@pytest.mark.parametrize("randomize", [False, True])
def test_no_empty_minibatch_mid_sweep_and_every_invalid_one_counted(randomize):
    bad = {1, 2, 3, 9, 10, 11}
    src = MinibatchSource(FakeDeserializer([[1] * 6, [1] * 6], invalid=bad), randomize=randomize,
                          max_errors=100, max_sweeps=2)
    sizes = _sizes(src, 3)
    assert sum(sizes) == 2 * (12 - len(bad))
    assert src.stats()["errors"] == 2 * len(bad)


def _map(tmp_path):
    """A map of 6 images of the shapes example, every other line an image that does not exist."""
    lines = (paths.REPO / "examples" / "images" / "train_map.txt").read_text().splitlines()[:3]
    zipped = str(paths.REPO / "examples" / "images" / "shapes.zip")
    out = []
    for i, line in enumerate(lines):
        name, label = line.split("\t")
        out += [f"{zipped}{name[len('shapes.zip'):]}\t{label}", f"missing{i}.png\t{label}"]
    path = tmp_path / "map.txt"
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("random_transform", [False, True])
def test_bad_images_are_counted_on_every_path(tmp_path, randomize, random_transform):
    chain = ([T.crop(crop_type="randomside", side_ratio=0.8, jitter_type="uniratio")] if random_transform else []) \
        + [T.scale(width=16, height=16, channels=3)]
    src = io.MinibatchSource(io.ImageDeserializer(str(_map(tmp_path)), io.StreamDefs(
        features=io.StreamDef(field="image", transforms=chain), labels=io.StreamDef(field="label", shape=4))),
        randomize=randomize, max_sweeps=2, max_errors=100)
    sizes = _sizes(src, 1, "features")   # one image each: a bad one alone empties its minibatch
    assert sum(sizes) == 6 and len(sizes) <= 6 + 2    # empties only where they end a sweep
    assert src.stats()["errors"] == 6
