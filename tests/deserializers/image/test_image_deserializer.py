"""ImageDeserializer and Base64ImageDeserializer: map files, zip archives, config and Python forms,
bad input (named, counted against max_errors), the Python examples of the spec."""
from __future__ import annotations

import base64
import os
import textwrap
import zipfile

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from image_cases import IMAGE_DATA, read_all  # noqa: E402

from cntkio import MinibatchSource, StreamDef, StreamDefs  # noqa: E402
from cntkio import transforms as T  # noqa: E402
from cntkio.config import parse_config  # noqa: E402
from cntkio.deserializers.image import Base64ImageDeserializer, ImageDeserializer  # noqa: E402
from cntkio.errors import ConfigError, DataError, FormatError  # noqa: E402
from cntkio.readers import build_reader  # noqa: E402

IMG = IMAGE_DATA / "img"


def _images(folder, n=6, size=(12, 10), seed=0):
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        p = folder / f"im{i}.bmp"
        cv2.imwrite(str(p), rng.integers(0, 256, size + (3,), dtype=np.uint8))
        paths.append(p)
    return paths


def _map(folder, lines, name="map.txt"):
    p = folder / name
    p.write_text("".join(lines))
    return str(p)


def _streams(transforms=(), n=4):
    return StreamDefs(features=StreamDef(field="image", transforms=list(transforms)),
                      labels=StreamDef(field="label", shape=n))


# --- map files --------------------------------------------------------------------------------

def test_three_column_map_keys_crlf_trailing_tab_and_relative_paths(tmp_path, monkeypatch):
    _images(tmp_path, 3)
    mp = _map(tmp_path, ["5\tim0.bmp\t1\r\n", "7\tim1.bmp\t2\t\n", "9\t...im2.bmp\t3.5"])
    monkeypatch.chdir(IMAGE_DATA)          # not the map's folder: paths fall back to it
    src = MinibatchSource(ImageDeserializer(mp, _streams()), randomize=False, max_sweeps=1)
    mb = src.next_minibatch(10)
    feats = mb[src.streams.features].asarray()[:, 0]
    want = np.stack([cv2.imread(str(tmp_path / f"im{i}.bmp")).transpose(2, 0, 1) for i in range(3)])
    np.testing.assert_array_equal(feats, want.astype(np.float32))
    np.testing.assert_array_equal(mb[src.streams.labels].as_csr().indices, [1, 2, 3])
    assert mb[src.streams.features].shape[-3:] == (3, 12, 10)


def test_a_relative_path_found_in_the_working_directory_is_read_from_there(tmp_path, monkeypatch):
    # CNTK's rule: the working directory first, else the map's folder; the working directory is
    # the one the source was built in (paths are resolved on the loader threads, when first read)
    (tmp_path / "m").mkdir()
    (tmp_path / "w").mkdir()
    in_map_dir = _images(tmp_path / "m", 2, seed=1)
    in_cwd = _images(tmp_path / "w", 1, seed=2)        # only im0.bmp
    mp = _map(tmp_path / "m", ["im0.bmp\t0\n", "im1.bmp\t1\n"])
    monkeypatch.chdir(tmp_path / "w")
    src = MinibatchSource(ImageDeserializer(mp, _streams()), randomize=False, max_sweeps=1)
    monkeypatch.chdir(tmp_path / "m")                 # moving away after the build changes nothing
    feats = src.next_minibatch(10)[src.streams.features].asarray()[:, 0]
    want = np.stack([cv2.imread(str(p)).transpose(2, 0, 1) for p in (in_cwd[0], in_map_dir[1])])
    np.testing.assert_array_equal(feats, want.astype(np.float32))
    assert not np.array_equal(cv2.imread(str(in_cwd[0])), cv2.imread(str(in_map_dir[0])))


def test_files_read_through_the_reused_buffer_and_past_its_limit(tmp_path, monkeypatch):
    # small files go through each loader thread's reused buffer, larger ones get memory of their
    # own; either way every image is its own bytes (a smaller file after a larger one included)
    import cntkio.deserializers.image.deserializer as impl
    monkeypatch.setattr(impl, "_REUSED_READ_BYTES", 400)
    rng = np.random.default_rng(3)
    sizes = [(4, 4), (14, 12), (5, 3), (14, 12), (4, 4)]       # 98..558 byte BMPs
    for i, (h, w) in enumerate(sizes):
        cv2.imwrite(str(tmp_path / f"im{i}.bmp"), rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
    assert min(os.path.getsize(tmp_path / f"im{i}.bmp") for i in range(5)) < 400 < \
        max(os.path.getsize(tmp_path / f"im{i}.bmp") for i in range(5))
    mp = _map(tmp_path, [f"im{i}.bmp\t0\n" for i in range(5)])
    src = MinibatchSource(ImageDeserializer(mp, _streams([T.scale(4, 4, 3, "nearest")])), randomize=False,
                          max_sweeps=1)
    feats = src.next_minibatch(10)[src.streams.features].asarray()[:, 0]
    want = [cv2.resize(cv2.imread(str(tmp_path / f"im{i}.bmp")), (4, 4), interpolation=cv2.INTER_NEAREST)
            for i in range(5)]
    np.testing.assert_array_equal(feats, np.stack(want).transpose(0, 3, 1, 2).astype(np.float32))


@pytest.mark.parametrize("lines,message", [
    (["im0.bmp 1\n"], "Invalid map file format, must contain 2 or 3 tab-delimited columns, line 0"),
    (["im0.bmp\t1\n", "\n"], "Invalid map file format, must contain 2 or 3 tab-delimited columns, line 1"),
    (["a\tim0.bmp\t1\n"], "Invalid numeric sequence id 'a'"),
    (["im0.bmp\tabc\n"], "Cannot parse label value on line 0, second column"),
    (["im0.bmp\t4\n"], "Image 'im0.bmp' has invalid class id '4'. It is exceeding the label dimension of '4'. "
                       "Line 0 in file"),
])
def test_bad_map_lines_are_errors_at_creation(tmp_path, lines, message):
    _images(tmp_path, 1)
    mp = _map(tmp_path, lines)
    with pytest.raises(FormatError, match=message.replace(".", r"\.").replace("(", r"\(")) as e:
        MinibatchSource(ImageDeserializer(mp, _streams()), randomize=False)
    assert mp in str(e.value)


def test_one_image_and_at_most_one_label_stream(tmp_path):
    _images(tmp_path, 1)
    mp = _map(tmp_path, ["im0.bmp\t0\n"])
    d = ImageDeserializer(mp, _streams()).map_features("other", [])
    with pytest.raises(ConfigError, match="Please specify a single feature and label stream. '2' features"):
        MinibatchSource(d)


def test_the_spec_example_joining_images_with_ctf_rois_and_labels(tmp_path):
    # composite-readers-deserializers-transforms.txt, the second Python example, sizes made small
    from cntkio import CTFDeserializer
    _images(tmp_path, 3, size=(6, 8))
    map_file = _map(tmp_path, [f"im{i}.bmp\t0\n" for i in range(3)])
    n_rois, n_classes = 2, 3
    rois_dim, label_dim = 4 * n_rois, n_classes * n_rois
    roi_file, label_file = tmp_path / "rois.txt", tmp_path / "labels.txt"
    roi_file.write_text("".join(f"{i} |rois {' '.join(str(i * 10 + k) for k in range(rois_dim))}\n"
                                for i in (2, 0, 1)))
    label_file.write_text("".join(f"{i} |roiLabels {' '.join(str(float(k == i)) for k in range(label_dim))}\n"
                                  for i in range(3)))
    scale = ImageDeserializer.scale(width=10, height=10, channels=3, scale_mode="pad", pad_value=114,
                                    interpolations='linear')
    image_source = ImageDeserializer(map_file)
    image_source.ignore_labels()
    image_source.map_features('features', [scale])
    roi_source = CTFDeserializer(str(roi_file))
    roi_source.map_input('rois', dim=rois_dim, format="dense")
    label_source = CTFDeserializer(str(label_file))
    label_source.map_input('roiLabels', dim=label_dim, format="dense")
    reader = MinibatchSource([image_source, roi_source, label_source], randomize=False, max_sweeps=1)
    mb = reader.next_minibatch(3)
    feats = mb[reader.streams.features].asarray()[:, 0]
    rois = mb[reader.streams.rois].asarray()[:, 0]
    labels = mb[reader.streams.roiLabels].asarray()[:, 0]
    assert feats.shape == (3, 3, 10, 10)
    np.testing.assert_array_equal(rois[:, 0], [0, 10, 20])        # joined by key (the map's line number)
    np.testing.assert_array_equal(labels.argmax(axis=1), [0, 1, 2])
    want = cv2.resize(cv2.imread(str(tmp_path / "im1.bmp")), (10, 8))
    np.testing.assert_array_equal(feats[1][:, 1:9], want.transpose(2, 0, 1))


def test_ignore_labels_and_map_features_as_in_the_spec(tmp_path):
    _images(tmp_path, 2, size=(6, 8))
    mp = _map(tmp_path, ["im0.bmp\t0\n", "im1.bmp\t9\n"])
    # the spec's second Python example, with its scale (pad mode) on a small size
    scale = ImageDeserializer.scale(width=10, height=10, channels=3, scale_mode="pad", pad_value=114,
                                    interpolations="linear")
    image_source = ImageDeserializer(mp)
    image_source.ignore_labels()
    image_source.map_features("features", [scale])
    src = MinibatchSource([image_source], randomize=False, max_sweeps=1)
    mb = src.next_minibatch(2)
    assert [s.name for s in src.stream_infos()] == ["features"]
    a = mb[src.streams.features].asarray()[:, 0]
    assert a.shape == (2, 3, 10, 10)
    # 8x6 (w x h) resized to 10x8, one padded row above and below
    assert (a[:, :, 0] == 114).all() and (a[:, :, -1] == 114).all() and not (a[:, :, 1] == 114).all()


# --- zip archives -----------------------------------------------------------------------------

def test_zip_members_read_like_files_and_the_archive_opens_once_per_thread(tmp_path, monkeypatch):
    paths = _images(tmp_path, 12)
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        for p in paths:
            z.write(p, f"inner/{p.name}")
    plain = _map(tmp_path, [f"{p.name}\t{i % 4}\n" for i, p in enumerate(paths)], "plain.txt")
    zipped = _map(tmp_path, [f"a.zip@/inner/{p.name}\t{i % 4}\n" for i, p in enumerate(paths)], "zip.txt")
    opened = []
    real = zipfile.ZipFile

    def counting(*a, **kw):
        opened.append(a[0])
        return real(*a, **kw)

    monkeypatch.setattr(zipfile, "ZipFile", counting)
    f1, l1 = read_all(ImageDeserializer(plain, _streams()), multithreaded_deserializer=False)
    f2, l2 = read_all(ImageDeserializer(zipped, _streams()), multithreaded_deserializer=False)
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(l1, l2)
    # once when the map's members are checked, once on the creating thread (the first image gives
    # the shape) and once per loader thread (at most 2 here), not once per image
    assert 2 <= len(opened) <= 4
    from cntkio.registry import build_deserializer
    d = build_deserializer(ImageDeserializer(zipped, _streams()))
    d.get_chunk(1)
    held = list(d._all_zips)
    assert held and all(z.fp is not None for z in held)
    d.close()
    assert all(z.fp is None for z in held)                      # closed, whichever thread opened them


def test_absent_zip_member_is_named_and_counted(tmp_path, caplog):
    paths = _images(tmp_path, 2)
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        z.write(paths[0], "inner/im0.bmp")
    mp = _map(tmp_path, ["a.zip@/inner/im0.bmp\t0\n", "a.zip@/inner/nothere.bmp\t1\n"])
    # CNTK checks the members when it registers the archive's sequences (ZipByteReader), before
    # reading: CNTK's text, then the map line, the member and the archive
    with pytest.raises(FormatError, match=r"Cannot retrieve image data for some sequences\. For more detail, "
                                          r"please see the log file\. .*map\.txt:2: 'a\.zip@/inner/nothere\.bmp': "
                                          r"the archive '.*a\.zip' has no member 'inner/nothere\.bmp'"):
        MinibatchSource(ImageDeserializer(mp, _streams([T.scale(12, 10, 3)])))
    (tmp_path / "b.zip").write_bytes(b"not a zip")
    mp = _map(tmp_path, ["b.zip@/im0.bmp\t0\n"], "b.txt")
    with pytest.raises(FormatError, match=r"b\.txt:1: the archive '.*b\.zip' cannot be read"):
        MinibatchSource(ImageDeserializer(mp, _streams([T.scale(12, 10, 3)])))


# --- bad images -------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"not an image at all", b"", "truncated"])
def test_undecodable_images_are_skipped_and_counted(tmp_path, caplog, content):
    paths = _images(tmp_path, 3)
    if content == "truncated":
        content = paths[1].read_bytes()[:40]
    paths[1].write_bytes(content)
    mp = _map(tmp_path, [f"{p.name}\t{i}\n" for i, p in enumerate(paths)])
    with pytest.raises(RuntimeError, match="Number of invalid sequences '1'"):
        read_all(ImageDeserializer(mp, _streams([T.scale(12, 10, 3)])))
    feats, labels = read_all(ImageDeserializer(mp, _streams([T.scale(12, 10, 3)])), max_errors=1)
    assert list(labels) == [0, 2]
    assert f"{mp}:2: key 1: stream 'features': image 'im1.bmp'" in caplog.text


def test_images_of_another_size_without_scale_are_cntks_packer_error(tmp_path):
    # CNTK's packer refuses samples of one stream with different shapes (ImageReaderTests.cpp,
    # ImageReaderMissingScaleTransforms); the error names the stream, both shapes and the map line
    _images(tmp_path, 1)
    cv2.imwrite(str(tmp_path / "big.bmp"), np.zeros((20, 20, 3), np.uint8))
    mp = _map(tmp_path, ["im0.bmp\t0\n", "big.bmp\t1\n"])
    with pytest.raises(DataError, match=rf"{mp}:2: key 1: stream 'features': image 'big\.bmp': Packer currently "
                                        r"does not support samples with varying shapes\..*input stream 'features'"
                                        r".*The image is 20x20x3 \(HxWxC\) after the transforms; the stream's "
                                        r"samples are 12x10x3") as e:
        read_all(ImageDeserializer(mp, _streams()), max_errors=5)
    assert e.value.file == mp


def test_mean_file_errors_at_creation(tmp_path):
    _images(tmp_path, 1)
    mp = _map(tmp_path, ["im0.bmp\t0\n"])
    with pytest.raises(FormatError, match="Could not open file"):
        ImageDeserializer(mp, _streams([T.mean(str(tmp_path / "none.xml"))])) and \
            MinibatchSource(ImageDeserializer(mp, _streams([T.mean(str(tmp_path / "none.xml"))])))
    (tmp_path / "bad.xml").write_text('<?xml version="1.0"?>\n<opencv_storage>\n<Row>2</Row>\n</opencv_storage>\n')
    with pytest.raises(FormatError, match="Invalid data in file"):
        MinibatchSource(ImageDeserializer(mp, _streams([T.mean(str(tmp_path / "bad.xml"))])))


# --- Base64 -----------------------------------------------------------------------------------

def _b64(p):
    return base64.b64encode(p.read_bytes()).decode()


def test_base64_equals_files_and_keeps_the_first_line_of_a_key(tmp_path):
    paths = _images(tmp_path, 3)
    mp = _map(tmp_path, [f"{p.name}\t{i}\n" for i, p in enumerate(paths)])
    b64 = _map(tmp_path, [f"{i}\t{i}\t{_b64(p)}\n" for i, p in enumerate(paths)] + [f"1\t3\t{_b64(paths[0])}\n"],
               "b64.txt")
    f1, l1 = read_all(ImageDeserializer(mp, _streams()))
    f2, l2 = read_all(Base64ImageDeserializer(b64, _streams()))
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(l1, l2)


def test_bad_base64_lines_are_skipped_and_counted(tmp_path, caplog):
    paths = _images(tmp_path, 3)
    lines = [f"{i}\t{_b64(p)}\n" for i, p in enumerate(paths)]
    lines[1] = "1\t" + _b64(paths[1]).rstrip("=")[:-1] + "\n"        # no padding: not base64
    b64 = _map(tmp_path, lines, "b64.txt")
    with pytest.raises(RuntimeError, match="Number of invalid sequences '1'"):
        read_all(Base64ImageDeserializer(b64, _streams([T.scale(12, 10, 3)])))
    feats, labels = read_all(Base64ImageDeserializer(b64, _streams([T.scale(12, 10, 3)])), max_errors=1)
    assert list(labels) == [0, 2]
    # lines counted from 1 (the second line of the file is line 2), with its key and stream
    assert f"{b64}:2: key 1: stream 'features': Could not decompress sequence: bad base64" in caplog.text


def test_base64_chunks_follow_chunk_size(tmp_path):
    paths = _images(tmp_path, 6)
    b64 = _map(tmp_path, [f"{i % 4}\t{_b64(p)}\n" for i, p in enumerate(paths)], "b64.txt")
    d = Base64ImageDeserializer(b64, _streams())
    d["chunkSizeInBytes"] = 1200
    from cntkio.registry import build_deserializer
    built = build_deserializer(d)
    assert [c.num_sequences for c in built.chunk_infos()] == [2, 2, 2]   # each line ~ 560 bytes
    f1, _ = read_all(d)
    f2, _ = read_all(Base64ImageDeserializer(b64, _streams()))
    np.testing.assert_array_equal(f1, f2)


# --- config forms -----------------------------------------------------------------------------

def _source_from_config(text):
    return build_reader(parse_config(textwrap.dedent(text))("reader"))


def _drain(src, n=100):
    mb = src.next_minibatch(n)
    names = {s.name: s for s in src.stream_infos()}
    return mb[names["features"]].asarray()[:, 0], mb[names["labels"]].as_csr().indices


def test_config_composite_legacy_and_python_forms_give_identical_minibatches(tmp_path):
    _images(tmp_path, 6, size=(20, 16))
    mp = _map(tmp_path, [f"im{i}.bmp\t{i % 4}\n" for i in range(6)])
    mean = IMAGE_DATA / "mean8x8.xml"
    composite = _source_from_config(f"""
        reader = [
            randomize = true
            randomizationSeed = 3
            sampleBasedRandomizationWindow = false    # as the Python default: a window of chunks
            deserializers = ([
                type = "ImageDeserializer"
                module = "ImageReader"
                file = "{mp}"
                input = [
                    features = [
                        transforms = (
                            [type = "Crop"; cropType = "Center"; sideRatio = 0.875; jitterType = "UniRatio"]:
                            [type = "Scale"; width = 8; height = 8; channels = 3; interpolations = "linear"]:
                            [type = "Mean"; meanFile = "{mean}"]:
                            [type = "Transpose"]
                        )
                    ]
                    labels = [labelDim = 4]
                ]
            ])
        ]""")
    legacy = _source_from_config(f"""
        reader = [
            readerType = "ImageReader"
            file = "{mp}"
            randomize = "auto"
            randomizationSeed = 3
            features = [width = 8; height = 8; channels = 3; cropType = "Center"; sideRatio = 0.875
                        jitterType = "UniRatio"; interpolations = "linear"; meanFile = "{mean}"]
            labels = [labelDim = 4]
        ]""")
    # a config reader with one image deserializer randomizes over a window of one image (CNTK's
    # ImageReader.cpp:52 and CompositeDataReader.cpp:139-143): the Python form does so when asked
    py = MinibatchSource(ImageDeserializer(mp, _streams([
        T.crop(crop_type="center", side_ratio=0.875, jitter_type="uniratio"), T.scale(8, 8, 3, "linear"),
        T.mean(str(mean))])), randomization_seed=3, max_sweeps=1, randomization_window_in_chunks=1)
    f0, l0 = _drain(py)
    for src in (composite, legacy):
        f, lab = _drain(src, 6)
        np.testing.assert_array_equal(f, f0)
        np.testing.assert_array_equal(lab, l0)
    assert f0.shape == (6, 3, 8, 8)


def test_the_legacy_form_applies_colour_before_the_mean_and_honours_image_layout(tmp_path):
    _images(tmp_path, 2, size=(8, 8))
    mp = _map(tmp_path, ["im0.bmp\t0\n", "im1.bmp\t1\n"])
    mean = IMAGE_DATA / "mean8x8.xml"
    from cntkio.deserializers.image.deserializer import ImageConfig
    cfg = ImageConfig({"type": "ImageDeserializer", "file": mp,
                       "features": {"width": "8", "height": "8", "channels": "3", "meanFile": str(mean),
                                    "brightnessRadius": "0.2"},
                       "labels": {"labelDim": "2"}})
    assert [type(t).__name__ for t in cfg.transforms] == ["Scale", "Color"] and cfg.tail_mean is not None
    assert cfg.chw
    src = _source_from_config(f"""
        reader = [
            readerType = "ImageReader"
            file = "{mp}"
            randomize = false
            features = [width = 8; height = 8; channels = 3; imageLayout = "legacy"]
            labels = [labelDim = 2]
        ]""")
    f, _ = _drain(src, 2)
    assert f.shape == (2, 8, 8, 3)                       # HWC


def test_a_config_without_transpose_delivers_hwc(tmp_path):
    _images(tmp_path, 2)
    mp = _map(tmp_path, ["im0.bmp\t0\n", "im1.bmp\t1\n"])
    src = _source_from_config(f"""
        reader = [
            randomize = false
            deserializers = ([type = "ImageDeserializer"; file = "{mp}"
                              input = [features = [transforms = ([type = "Scale"; width = 5; height = 4; channels = 3])]
                                       labels = [labelDim = 2]]])
        ]""")
    f, _ = _drain(src, 2)
    assert f.shape == (2, 4, 5, 3)


def test_the_alexnet_example_of_the_spec_runs(tmp_path):
    # composite-readers-deserializers-transforms.txt, the first Python example (sizes made small)
    _images(tmp_path, 4, size=(40, 30))
    map_file = _map(tmp_path, [f"im{i}.bmp\t{i}\n" for i in range(4)])
    mean_file = str(IMAGE_DATA / "mean8x8.xml")
    image_height, image_width, num_channels, num_classes = 8, 8, 3, 4
    transforms = [
        ImageDeserializer.crop(crop_type='randomside', side_ratio=0.88671875, jitter_type='uniratio'),
        ImageDeserializer.scale(width=image_width, height=image_height, channels=num_channels,
                                interpolations='linear'),
        ImageDeserializer.mean(mean_file)
    ]
    reader = MinibatchSource(
        ImageDeserializer(map_file, StreamDefs(
            features=StreamDef(field='image', transforms=transforms),
            labels=StreamDef(field='label', shape=num_classes))))
    mb = reader.next_minibatch(4)
    assert mb[reader.streams.features].asarray().shape == (4, 1, 3, 8, 8)


def test_channel_order_rgb_reverses_the_channels(tmp_path):
    _images(tmp_path, 2)
    mp = _map(tmp_path, ["im0.bmp\t0\n", "im1.bmp\t1\n"])
    bgr, _ = read_all(ImageDeserializer(mp, _streams()))
    rgb, _ = read_all(ImageDeserializer(mp, _streams(), channel_order="rgb"))
    np.testing.assert_array_equal(rgb, bgr[:, ::-1])


def test_uint8_output_equals_the_float_output_and_reaches_torch_as_bytes(tmp_path):
    torch = pytest.importorskip("torch")
    _images(tmp_path, 4, size=(20, 16))
    mp = _map(tmp_path, [f"im{i}.bmp\t{i}\n" for i in range(4)])
    chain = [T.crop(crop_type="center", side_ratio=0.75), T.scale(8, 8, 3, "linear")]
    f32, _ = read_all(ImageDeserializer(mp, _streams(chain)))
    src = MinibatchSource(ImageDeserializer(mp, _streams(chain), dtype="uint8"), randomize=False, max_sweeps=1)
    mb = src.next_minibatch(4)
    u8 = mb[src.streams.features].asarray()[:, 0]
    assert u8.dtype == np.uint8 and src.streams.features.dtype == np.uint8
    np.testing.assert_array_equal(u8.astype(np.float32), f32)
    x = mb[src.streams.features].to_torch()[:, 0]
    assert x.dtype == torch.uint8 and tuple(x.shape) == (4, 3, 8, 8) and x.is_contiguous()
    with pytest.raises(ConfigError, match="elementType = uint8 .* Mean makes floats"):
        MinibatchSource(ImageDeserializer(mp, _streams(chain + [T.mean(str(IMAGE_DATA / "mean8x8.xml"))]),
                                          dtype="uint8"))


@pytest.mark.parametrize("bad_line", [None, 17])
def test_base64_random_access_reads_what_whole_chunks_read(tmp_path, bad_line):
    from cntkio.deserializers.protocol import has_random_access
    from cntkio.registry import build_deserializer
    paths = _images(tmp_path, 40, size=(14, 12))
    lines = [f"{i % 4}\t{_b64(p)}\n" for i, p in enumerate(paths)]
    if bad_line is not None:
        lines[bad_line] = f"1\t{_b64(paths[0])[:-8]}!!!!!!!!\n"
    b64 = _map(tmp_path, lines, "b64.txt")
    chain = [T.crop(crop_type="randomside", side_ratio=(0.5, 1.0), jitter_type="uniratio"), T.scale(6, 6, 3)]

    def config():
        d = Base64ImageDeserializer(b64, _streams(chain))
        d["chunkSizeInBytes"] = 3000          # about 5 images a chunk: 8 chunks
        return d

    assert has_random_access(build_deserializer(config()))
    got = {}
    for direct in (True, False):
        src = MinibatchSource(config(), randomization_window_in_chunks=3, randomization_seed=5, max_sweeps=2,
                              random_access=direct, max_errors=2)
        mbs = []
        while True:
            mb = src.next_minibatch(7)
            if not mb:
                break
            mbs.append((mb[src.streams.features].asarray().copy(), mb[src.streams.labels].as_csr().indices.copy()))
        got[direct] = mbs
    assert len(got[True]) == len(got[False]) >= 10
    for (fa, la), (fb, lb) in zip(got[True], got[False]):
        np.testing.assert_array_equal(fa, fb)
        np.testing.assert_array_equal(la, lb)
    n = sum(len(lab) for _, lab in got[True])
    assert n == (80 if bad_line is None else 78)


def test_base64_index_cache_is_reused_and_rebuilt_when_the_file_changes(tmp_path, monkeypatch):
    from cntkio.deserializers.image import mapfile
    paths = _images(tmp_path, 4)
    b64 = _map(tmp_path, [f"{i}\t{_b64(p)}\n" for i, p in enumerate(paths)], "b64.txt")
    d = Base64ImageDeserializer(b64, _streams())
    d["cacheIndex"] = True
    f1, l1 = read_all(d)
    cache = tmp_path / ("b64.txt" + mapfile.CACHE_SUFFIX)
    assert cache.exists()
    built = []
    real = mapfile.index_base64_map
    monkeypatch.setattr(mapfile, "index_base64_map", lambda *a: built.append(a) or real(*a))
    f2, l2 = read_all(d)
    assert built == []                                             # read from the cache
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(l1, l2)
    with open(b64, "a") as f:                                      # the map changes: indexed again
        f.write(f"3\t{_b64(paths[0])}\n")
    f3, l3 = read_all(d)
    assert len(built) == 1 and list(l3) == [0, 1, 2, 3, 3]
    assert not list(tmp_path.glob("*.tmp"))
