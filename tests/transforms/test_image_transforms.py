"""The image transforms' random paths, statistically (CNTK's own random draws cannot be
reproduced, so they are compared by shape, range and distribution), and the determinism of random
transforms: same seed -> same pixels, whatever the thread count, and an exact resume from a
checkpoint mid-sweep with randomization and two partitions."""
from __future__ import annotations

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from cntkio import MinibatchSource, StreamDef, StreamDefs  # noqa: E402
from cntkio import transforms as T  # noqa: E402
from cntkio.deserializers.image import ImageDeserializer  # noqa: E402
from cntkio.errors import ConfigError  # noqa: E402
from cntkio.registry import build_transform  # noqa: E402

N = 4000


def _rng(i):
    return np.random.default_rng([0, 0, i, 0])


def test_random_side_crop_sides_positions_and_flips():
    crop = build_transform(T.crop(crop_type="randomside", side_ratio=(0.5, 1.0), jitter_type="uniratio"))
    W, H = 100, 80
    g = np.array([crop.geometry(W, H, _rng(i)) for i in range(N)])
    x0, y0, w, h = g.T
    assert (w == h).all() and w.min() >= 40 and w.max() <= 80      # ratio * min(W, H)
    assert abs(w.mean() - 60) < 1.0                                  # uniform ratio: mean 0.75 * 80
    assert (x0 >= 0).all() and (x0 + w <= W).all() and (y0 + h <= H).all()
    rel = x0 / np.maximum(W - w, 1)                                   # uniform position
    assert abs(rel.mean() - 0.5) < 0.03
    img = np.arange(H * W * 3, dtype=np.uint8).reshape(H, W, 3)
    flips = 0
    for i in range(1000):
        rng = _rng(i)
        x0, y0, w, h = crop.geometry(W, H, np.random.default_rng([0, 0, i, 0]))
        out = crop.apply(img, rng)
        plain = img[y0:y0 + h, x0:x0 + w]
        assert out.shape == plain.shape
        flips += not np.array_equal(out, plain)
        if not np.array_equal(out, plain):
            np.testing.assert_array_equal(out, plain[:, ::-1])
    assert 450 < flips < 550                                          # CNTK flips random crops with p = 1/2


def test_random_area_crop_area_and_aspect():
    crop = build_transform(T.crop(crop_type="randomarea", area_ratio=(0.25, 0.75), aspect_ratio=(0.75, 1.0),
                                  jitter_type="uniratio"))
    W, H = 200, 200
    g = np.array([crop.geometry(W, H, _rng(i)) for i in range(N)])
    area = g[:, 2] * g[:, 3] / (W * H)
    assert area.min() > 0.23 and area.max() < 0.76 and abs(area.mean() - 0.5) < 0.02
    aspect = g[:, 2] / g[:, 3]                       # a or 1/a, by a coin (CNTK 2.7)
    assert aspect.min() > 0.74 and aspect.max() < 1.35
    assert 0.45 < (aspect < 1).mean() < 0.55


def test_without_jitter_ratios_are_the_low_end_and_too_large_crops_are_drawn_again():
    crop = build_transform(T.crop(crop_type="randomside", side_ratio=(0.5, 1.0)))
    assert {crop.geometry(100, 80, _rng(i))[2:] for i in range(50)} == {(40, 40)}
    # side 64 of 100x80 with aspect 0.5: 90x45 fits, 45x90 does not and is drawn again (the coin),
    # 10 times at most; side 80: 113x56 and 56x113 never fit, so the whole image
    crop = build_transform(T.crop(crop_type="center", side_ratio=0.8, aspect_ratio=0.5))
    sizes = [crop.geometry(100, 80, _rng(i)) for i in range(200)]
    assert {g[2:] for g in sizes} <= {(90, 45), (100, 80)}
    assert sum(g[2:] == (90, 45) for g in sizes) >= 195 and (5, 17, 90, 45) in sizes
    crop = build_transform(T.crop(crop_type="center", side_ratio=1.0, aspect_ratio=0.5))
    assert {crop.geometry(100, 80, _rng(i)) for i in range(20)} == {(0, 0, 100, 80)}


def test_center_crop_is_deterministic_and_never_flips():
    crop = build_transform(T.crop(crop_type="center", crop_size=3))
    assert not crop.hflip and not crop.random
    assert {crop.geometry(6, 4, _rng(i)) for i in range(20)} == {(1, 0, 3, 3)}


def test_center_crop_with_uniratio_jitter_draws_its_side_in_the_range():
    crop = build_transform(T.crop(crop_type="center", side_ratio=(0.5, 1.0), jitter_type="uniratio"))
    assert crop.random and not crop.hflip
    g = np.array([crop.geometry(40, 40, _rng(i)) for i in range(1000)])
    assert g[:, 2].min() >= 20 and g[:, 2].max() <= 40 and abs(g[:, 2].mean() - 30) < 1
    np.testing.assert_array_equal(g[:, 0], (40 - g[:, 2]) // 2)      # centred
    none = build_transform(T.crop(crop_type="center", side_ratio=(0.5, 1.0)))
    assert not none.random and none.geometry(40, 40, None) == (10, 10, 20, 20)   # the low end


def test_color_brightness_and_contrast_ranges():
    color = build_transform(T.color(brightness_radius=0.2))
    img = np.full((4, 4, 3), 100, np.uint8)
    img[0, 0] = 50
    m = float(img.astype(np.float32).mean())
    betas = np.array([float((color.apply(img, _rng(i)) - img)[1, 1, 0]) for i in range(N)])
    assert betas.min() >= -0.2 * m - 1e-3 and betas.max() <= 0.2 * m + 1e-3
    assert abs(betas.mean()) < 0.02 * m and betas.std() == pytest.approx(0.4 * m / np.sqrt(12), rel=0.05)
    contrast = build_transform(T.color(contrast_radius=0.5))
    alphas = np.array([float(contrast.apply(img, _rng(i))[1, 1, 0]) / 100 for i in range(N)])
    assert alphas.min() >= 0.5 - 1e-6 and alphas.max() <= 1.5 + 1e-6 and abs(alphas.mean() - 1) < 0.02
    bright = np.full((2, 2, 3), 250, np.uint8)
    assert max(float(contrast.apply(bright, _rng(i)).max()) for i in range(50)) == 255.0   # clipped


def test_saturation_leaves_gray_pixels_and_scales_colour():
    sat = build_transform(T.color(saturation_radius=0.5))
    gray = np.full((2, 2, 3), 77, np.uint8)
    for i in range(20):
        np.testing.assert_allclose(sat.apply(gray, _rng(i)), 77, atol=1e-3)
    col = np.zeros((1, 1, 3), np.uint8)
    col[0, 0] = (50, 100, 200)
    outs = np.array([sat.apply(col, _rng(i))[0, 0] for i in range(500)])
    assert np.allclose(outs.max(axis=1), 200, atol=1e-2)          # saturation keeps V (the max)
    assert outs[:, 0].min() < 50 < outs[:, 0].max()               # S up and down


def test_intensity_adds_pca_noise(tmp_path):
    path = tmp_path / "eig.xml"
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    fs.write("EigVal", np.array([[0.2, 0.02, 0.002]], np.float32))
    fs.write("EigVec", np.eye(3, dtype=np.float32))
    fs.release()
    t = build_transform(T.intensity(0.1, str(path)))
    img = np.full((1, 1, 3), 128, np.uint8)
    shifts = np.array([t.apply(img, _rng(i))[0, 0] for i in range(N)]) - 128
    assert shifts.mean(axis=0) == pytest.approx([0, 0, 0], abs=0.002)
    # the eigenvectors are in RGB order: B gets the third component, R the first (CNTK)
    assert shifts.std(axis=0) == pytest.approx([0.0002, 0.002, 0.02], rel=0.06)
    np.testing.assert_array_equal(t.apply(np.full((1, 1, 3), 255, np.uint8), _rng(1)).max() <= 255, True)
    assert not build_transform({"type": "Intensity", "intensityStdDev": 0.1}).random   # no file: nothing


def test_several_interpolations_draw_one_per_image():
    scale = build_transform(T.scale(3, 3, 3, interpolations="nearest:linear"))
    img = np.random.default_rng(1).integers(0, 256, (7, 7, 3), dtype=np.uint8)
    outs = {scale.apply(img, _rng(i)).tobytes() for i in range(50)}
    assert len(outs) == 2


@pytest.mark.parametrize("bad", [
    T.crop(crop_type="randomside"), T.crop(crop_type="center", side_ratio=1.5),
    T.crop(crop_type="multiview", side_ratio=0.5), T.scale(8, 8, 3, scale_mode="stretch"),
    T.color(brightness_radius=2.0), {"type": "Crop", "cropType": "sideways"},
])
def test_bad_options_name_the_option(bad):
    with pytest.raises(ConfigError, match=r"transforms\[|cropType|sideRatio|scaleMode|brightnessRadius"):
        build_transform(bad)


# --- determinism through a source ----------------------------------------------------------------

@pytest.fixture
def image_map(tmp_path):
    rng = np.random.default_rng(5)
    lines = []
    for i in range(24):
        cv2.imwrite(str(tmp_path / f"im{i}.bmp"), rng.integers(0, 256, (20, 24, 3), dtype=np.uint8))
        lines.append(f"im{i}.bmp\t{i % 5}\n")
    (tmp_path / "map.txt").write_text("".join(lines))
    return str(tmp_path / "map.txt")


def _random_chain():
    return [T.crop(crop_type="randomside", side_ratio=(0.4, 0.9), aspect_ratio=(0.8, 1.0), jitter_type="uniratio"),
            T.scale(8, 8, 3, "linear:cubic"), T.color(0.2, 0.2, 0.2)]


def _source(map_file, seed=0, **kw):
    d = ImageDeserializer(map_file, StreamDefs(features=StreamDef(field="image", transforms=_random_chain()),
                                               labels=StreamDef(field="label", shape=5)), seed=seed)
    return MinibatchSource(d, randomization_seed=7, **kw)


def _read(src, n_mb, mb=5, W=1, r=0):
    out = []
    for _ in range(n_mb):
        m = src.next_minibatch(mb, num_data_partitions=W, partition_index=r)
        out.append(m[src.streams.features].asarray().copy())
    return out


def test_same_seed_same_pixels_any_thread_count(image_map):
    a = _read(_source(image_map, multithreaded_deserializer=True), 6)
    b = _read(_source(image_map, multithreaded_deserializer=False), 6)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = _read(_source(image_map, seed=1), 6)
    assert any(not np.array_equal(x, y) for x, y in zip(a, c))


@pytest.mark.parametrize("W", [1, 2])
def test_exact_resume_mid_sweep(image_map, W):
    for r in range(W):
        src = _source(image_map)
        _read(src, 3, W=W, r=r)                       # mid-sweep (24 images, 5 per call)
        state = src.get_checkpoint_state()
        want = _read(src, 6, W=W, r=r)                # crosses into the next sweep
        again = _source(image_map)
        again.restore_from_checkpoint(state)
        got = _read(again, 6, W=W, r=r)
        for x, y in zip(want, got):
            np.testing.assert_array_equal(x, y)


def _pixels(src, n_mb=5, mb=5):
    out = _read(src, n_mb, mb)
    src.close()
    return np.concatenate(out)


def _plain_source(map_file, seed=None, randomize=False, **kw):
    # randomize=False: the order does not depend on the randomization seed, only the draws do
    d = ImageDeserializer(map_file, StreamDefs(features=StreamDef(field="image", transforms=_random_chain()),
                                               labels=StreamDef(field="label", shape=5)), seed=seed)
    return MinibatchSource(d, randomize=randomize, **kw)


def test_the_source_randomization_seed_seeds_the_transforms(image_map):
    # no seed on the deserializer: the source's randomization_seed is the transforms' seed
    a = _pixels(_plain_source(image_map, randomization_seed=1))
    b = _pixels(_plain_source(image_map, randomization_seed=1))
    c = _pixels(_plain_source(image_map, randomization_seed=2))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (25, 1, 3, 8, 8)
    differ = [not np.array_equal(x, y) for x, y in zip(a, c)]
    assert sum(differ) >= 20, differ        # a new crop, interpolation and colour for nearly every image
    # the number itself is the seed: randomization_seed=2 draws as the deserializer's seed=2
    np.testing.assert_array_equal(c, _pixels(_plain_source(image_map, seed=2, randomization_seed=9)))
    # the default randomization_seed is 0: as seed=0
    np.testing.assert_array_equal(_pixels(_plain_source(image_map)),
                                  _pixels(_plain_source(image_map, seed=0, randomization_seed=5)))


def test_the_deserializer_seed_overrides_the_source_seed(image_map):
    a = _pixels(_plain_source(image_map, seed=4, randomization_seed=1))
    b = _pixels(_plain_source(image_map, seed=4, randomization_seed=2))
    np.testing.assert_array_equal(a, b)
    c = _pixels(_plain_source(image_map, seed=5, randomization_seed=1))
    assert sum(not np.array_equal(x, y) for x, y in zip(a, c)) >= 20


def test_the_config_randomization_seed_seeds_the_transforms(image_map, tmp_path):
    import textwrap

    from cntkio.config import parse_config
    from cntkio.readers import build_reader

    def config(rand_seed, seed_line=""):
        text = textwrap.dedent(f"""
            reader = [
                randomize = false
                randomizationSeed = {rand_seed}
                deserializers = ([
                    type = "ImageDeserializer"
                    file = "{image_map}"
                    {seed_line}
                    input = [
                        features = [ transforms = (
                            [type = "Crop"; cropType = "RandomSide"; sideRatio = 0.4:0.9; aspectRatio = 0.8:1.0
                             jitterType = "UniRatio"]:
                            [type = "Scale"; width = 8; height = 8; channels = 3; interpolations = "linear:cubic"]:
                            [type = "Color"; brightnessRadius = 0.2; contrastRadius = 0.2; saturationRadius = 0.2]:
                            [type = "Transpose"]) ]
                        labels = [ labelDim = 5 ]
                    ]
                ])
            ]""")
        return build_reader(parse_config(text)("reader"))

    def pixels(src):
        names = {s.name: s for s in src.stream_infos()}
        out = [src.next_minibatch(5)[names["features"]].asarray().copy() for _ in range(5)]
        src.close()
        return np.concatenate(out)

    three = pixels(config(3))
    np.testing.assert_array_equal(three, _pixels(_plain_source(image_map, randomization_seed=3)))
    assert sum(not np.array_equal(x, y) for x, y in zip(three, pixels(config(4)))) >= 20
    # the deserializer's own seed wins
    np.testing.assert_array_equal(pixels(config(4, "seed = 3")), three)


@pytest.mark.parametrize("W", [1, 2])
def test_exact_resume_with_the_source_seed(image_map, W):
    def source():
        return _plain_source(image_map, randomize=True, randomization_seed=11, randomization_window_in_chunks=6)
    for r in range(W):
        src = source()
        _read(src, 3, W=W, r=r)                       # mid-sweep (24 images, 5 per call)
        state = src.get_checkpoint_state()
        want = _read(src, 6, W=W, r=r)                # crosses into the next sweep
        again = source()
        again.restore_from_checkpoint(state)
        got = _read(again, 6, W=W, r=r)
        for x, y in zip(want, got):
            np.testing.assert_array_equal(x, y)


def test_the_sweep_seeds_the_draws(image_map):
    from cntkio.registry import build_deserializer
    d = build_deserializer(ImageDeserializer(image_map, StreamDefs(
        features=StreamDef(field="image", transforms=_random_chain()), labels=StreamDef(field="label", shape=5))))
    a0 = d.get_chunk(3, sweep=0).streams["features"].values
    np.testing.assert_array_equal(a0, d.get_chunk(3).streams["features"].values)
    np.testing.assert_array_equal(a0, d.get_chunk(3, sweep=0).streams["features"].values)
    assert not np.array_equal(a0, d.get_chunk(3, sweep=1).streams["features"].values)


@pytest.mark.parametrize("randomize", [False, True])
def test_every_sweep_draws_anew_through_a_source(image_map, randomize):
    # the engine passes each load's sweep (SweepDependentDeserializer): an image's random crop and
    # colour change from sweep to sweep; without a random transform its pixels stay the same
    def sweeps(transforms):
        d = ImageDeserializer(image_map, StreamDefs(features=StreamDef(field="image", transforms=transforms),
                                                    labels=StreamDef(field="label", shape=5)))
        src = MinibatchSource(d, randomize=randomize, max_sweeps=2, randomization_window_in_chunks=4,
                              randomization_seed=3)
        per_sweep = [{}, {}]
        k = 0
        for mb in src.iter(minibatch_size=6):  # 24 images: a sweep ends exactly at a call's end
            x = mb[src.streams.features]
            for img in x.asarray():
                per_sweep[k][len(per_sweep[k])] = img.copy()
            if x.end_of_sweep:
                k += 1
        src.close()
        return per_sweep
    det = [T.crop(crop_type="center", side_ratio=0.5), T.scale(8, 8, 3, "linear")]
    a, b = sweeps(_random_chain())
    c, d = sweeps(det)
    assert len(a) == len(b) == len(c) == len(d) == 24
    if not randomize:  # the same image at the same place in both sweeps
        assert all(np.array_equal(c[i], d[i]) for i in range(24))
        assert sum(not np.array_equal(a[i], b[i]) for i in range(24)) == 24
    else:  # the deterministic chain's images of sweep 1 are a permutation of sweep 0's; the random
        # chain's are new images (none equals any of sweep 0's)
        assert sorted(x.tobytes() for x in c.values()) == sorted(x.tobytes() for x in d.values())
        assert not {x.tobytes() for x in a.values()} & {x.tobytes() for x in b.values()}


def test_multiview10_views_are_cntks_corners_centre_and_their_mirrors():
    # ImageTransformers.cpp:285-325 and 154: views 0-4 top-left, top-right, bottom-left,
    # bottom-right, centre; 5-9 the same flipped horizontally
    crop = build_transform(T.crop(crop_type="multiview10", crop_size=(2, 2)))
    img = np.arange(5 * 4 * 3, dtype=np.uint8).reshape(5, 4, 3)         # H 5, W 4
    origins = [(0, 0), (2, 0), (0, 3), (2, 3), (1, 1)]
    for v in range(10):
        x0, y0 = origins[v % 5]
        want = img[y0:y0 + 2, x0:x0 + 2]
        got = crop.apply(img, None, v)
        np.testing.assert_array_equal(got, want[:, ::-1] if v >= 5 else want)
