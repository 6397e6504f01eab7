"""The image facts of CNTK's Python reader tests (``bindings/python/cntk/io/tests/io_tests.py``: test_image,
test_image_with_crop_range, test_create_two_image_deserializers, test_base64_image_deserializer,
test_base64_is_equal_image, test_crop_dimensionality), run on cntkio, and the map-file defects a fuzz
run found (issue 30): each test holds the input that showed it."""
from __future__ import annotations

import base64
import logging
import os
import struct

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from cntkio import (Base64ImageDeserializer, CTFDeserializer, ImageDeserializer, MinibatchSource,  # noqa: E402
                    StreamDef, StreamDefs)
from cntkio import transforms as xforms  # noqa: E402
from cntkio.errors import FormatError, MaxErrorsExceeded  # noqa: E402


def _png(img: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", img)
    assert ok
    return buf.tobytes()


def _random_images(n, shape, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(n)]


# --- transforms report their values as CNTK does ---------------------------------------------------

def test_crop_reports_pairs_as_colon_strings():
    # io_tests.py test_image: CNTK's ReaderCrop writes each pair as "a:b" (MinibatchSource.cpp:38-43)
    t = xforms.crop(crop_type="randomside", side_ratio=0.5, jitter_type="uniratio")
    assert t == {"type": "Crop", "cropType": "randomside", "cropSize": "0:0", "sideRatio": "0.5:0.5",
                 "areaRatio": "0:0", "aspectRatio": "1:1", "jitterType": "uniratio"}
    s = xforms.scale(width=100, height=200, channels=3, interpolations="linear")
    assert (s["width"], s["height"], s["channels"], s["interpolations"]) == (100, 200, 3, "linear")
    assert xforms.mean("mean.txt") == {"type": "Mean", "meanFile": "mean.txt"}


def test_crop_with_ranges_reports_each_range():
    # io_tests.py test_image_with_crop_range
    t = xforms.crop(crop_type="randomside", crop_size=(512, 424), side_ratio=(0.2, 0.5), area_ratio=(0.1, 0.75),
                    aspect_ratio=(0.3, 0.8), jitter_type="uniratio")
    assert (t["cropSize"], t["sideRatio"], t["aspectRatio"], t["areaRatio"]) == ("512:424", "0.2:0.5", "0.3:0.8",
                                                                                "0.1:0.75")
    with pytest.raises(ValueError, match="side_ratio: .*first number is smaller than or equal"):
        xforms.crop(side_ratio=(0.5, 0.2))
    with pytest.raises(ValueError, match="crop_size"):
        xforms.crop(crop_size="big")


# --- keys are unsigned 64-bit --------------------------------------------------------------------

def test_base64_keys_of_2_63_and_more_join_a_ctf_primary(tmp_path):
    # io_tests.py test_base64_image_deserializer: keys uuid1().int >> 64 ^ i, often >= 2^63
    images = _random_images(10, (5, 7, 3))
    uid = (1 << 63) + 0x1234_5678_9ABC_DEF0
    keys = [uid ^ i for i in range(10)]
    with open(tmp_path / "b64.txt", "wb") as f:
        for i, (k, img) in enumerate(zip(keys, images)):
            f.write(b"%d\t%d\t%s\n" % (k, i, base64.b64encode(_png(img))))
    with open(tmp_path / "index.ctf", "w") as f:
        f.writelines(f"{k}\t|index {i}\n" for i, k in enumerate(keys))
    b64 = Base64ImageDeserializer(str(tmp_path / "b64.txt"), StreamDefs(
        images=StreamDef(field="image", transforms=[xforms.scale(width=7, height=5, channels=3)]),
        labels=StreamDef(field="label", shape=10)))
    ctf = CTFDeserializer(str(tmp_path / "index.ctf"), StreamDefs(index=StreamDef(field="index", shape=1)))
    src = MinibatchSource([ctf, b64])
    for _ in range(3):
        mb = src.next_minibatch(10)
        index = mb[src.streams["index"]].asarray().reshape(-1).astype(int)
        got = mb[src.streams["images"]].asarray()
        assert got.shape[0] == 10
        for j, i in enumerate(index.tolist()):
            np.testing.assert_array_equal(got[j].reshape(3, 5, 7), images[i].transpose(2, 0, 1))
        assert sorted(int(k) for k in mb.sequence_keys) == sorted(keys)
    src.close()


def test_image_map_keys_of_2_63_and_more(tmp_path):
    img = _random_images(1, (4, 4, 3))[0]
    cv2.imwrite(str(tmp_path / "a.png"), img)
    (tmp_path / "map.txt").write_text(f"{2**64 - 1}\ta.png\t0\n{2**63}\ta.png\t1\n")
    src = MinibatchSource(ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(
        f=StreamDef(field="image", transforms=[xforms.scale(4, 4, 3)]), l=StreamDef(field="label", shape=2))),
        randomize=False, max_sweeps=1)
    mb = src.next_minibatch(2)
    assert [int(k) for k in mb.sequence_keys] == [2**64 - 1, 2**63]
    src.close()


# --- a Crop after the Scale leaves the shape to the images ------------------------------------------

def test_crop_after_scale_gives_the_crops_shape(tmp_path):
    # io_tests.py test_crop_dimensionality: CNTK's Crop sets the stream's layout to unknown
    # (ImageTransformers.cpp:120-126), so a Crop after the Scale makes the samples 20x10 crops
    # of the 40x20 images, not 40x20 images (cntkio used to mark every image invalid)
    with open(tmp_path / "map.txt", "w") as f:
        for i, img in enumerate(_random_images(5, (20, 40, 3))):
            cv2.imwrite(str(tmp_path / f"{i}.png"), img)
            f.write(f".../{i}.png\t{i}\n")
    crop = dict(crop_type="randomside", crop_size=(20, 10), side_ratio=(0.2, 0.5), jitter_type="uniratio")
    d1 = ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(
        images1=StreamDef(field="image", transforms=[xforms.scale(width=40, height=20, channels=3), xforms.crop(**crop)]),
        labels1=StreamDef(field="label", shape=10)))
    d2 = ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(
        images2=StreamDef(field="image", transforms=[xforms.crop(**crop)]), labels2=StreamDef(field="label", shape=10)))
    src = MinibatchSource([d1, d2])
    assert src.streams["images1"].shape == (3, 10, 20)
    for _ in range(5):
        mb = src.next_minibatch(1)
        a1, a2 = mb[src.streams["images1"]].asarray(), mb[src.streams["images2"]].asarray()
        assert a1.shape == (1, 1, 3, 10, 20) and a1.size == a2.size
    src.close()


def test_base64_equals_the_image_files(tmp_path):
    # io_tests.py test_base64_is_equal_image (and ``.../`` paths: the map's folder)
    with open(tmp_path / "files.txt", "w") as fm, open(tmp_path / "b64.txt", "w") as fb:
        for i, img in enumerate(_random_images(10, (5, 7, 3))):
            (tmp_path / f"{i}.png").write_bytes(_png(img))
            fm.write(f".../{i}.png\t{i}\n")
            fb.write(f"{i}\t{base64.b64encode(_png(img)).decode()}\n")
    t = [xforms.scale(width=7, height=5, channels=3)]
    src = MinibatchSource([
        Base64ImageDeserializer(str(tmp_path / "b64.txt"), StreamDefs(images1=StreamDef(field="image", transforms=t),
                                                                     labels1=StreamDef(field="label", shape=10))),
        ImageDeserializer(str(tmp_path / "files.txt"), StreamDefs(images2=StreamDef(field="image", transforms=t),
                                                                  labels2=StreamDef(field="label", shape=10)))])
    for _ in range(20):
        mb = src.next_minibatch(1)
        np.testing.assert_array_equal(mb[src.streams["images1"]].asarray(), mb[src.streams["images2"]].asarray())
    src.close()


def test_two_image_deserializers_on_one_map_build_without_reading(tmp_path):
    # io_tests.py test_create_two_image_deserializers: the files need not exist to build the source
    (tmp_path / "map.txt").write_text("filename\t0\nfilename2\t0\n")
    t = [xforms.crop(crop_type="randomside", side_ratio=0.5, jitter_type="uniratio"),
         xforms.scale(width=100, height=200, channels=3, interpolations="linear")]
    src = MinibatchSource([ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(f1=StreamDef(field="image", transforms=t))),
                           ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(f2=StreamDef(field="image", transforms=t)))])
    assert {s.name for s in src.stream_infos()} == {"f1", "f2"}
    src.close()


# --- defects of the map parsers (issue 30), with the inputs that showed them -----------------------

def test_a_21_digit_key_is_a_format_error_naming_file_and_line(tmp_path):
    (tmp_path / "a.png").write_bytes(_png(np.zeros((2, 2, 3), np.uint8)))
    (tmp_path / "map.txt").write_text("0\ta.png\t0\n123456789012345678901\ta.png\t0\n")
    with pytest.raises(FormatError, match=r"map\.txt:2: Invalid numeric sequence id '123456789012345678901', line 1 .*"
                                          r"expected an unsigned 64-bit sequence key"):
        MinibatchSource(ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(
            f=StreamDef(field="image", transforms=[xforms.scale(2, 2, 3)]))))
    (tmp_path / "b64.txt").write_text(f"123456789012345678901\t0\t{base64.b64encode(_png(np.zeros((2, 2, 3), np.uint8))).decode()}\n")
    with pytest.raises(FormatError, match=r"b64\.txt:1: Invalid numeric sequence id"):
        MinibatchSource(Base64ImageDeserializer(str(tmp_path / "b64.txt"), StreamDefs(
            f=StreamDef(field="image", transforms=[xforms.scale(2, 2, 3)]))))


def test_a_non_utf8_byte_in_a_map_path_names_the_file_as_written(tmp_path, caplog):
    # a file name is bytes: a map may name one that is not UTF-8 (it used to raise a bare
    # UnicodeDecodeError); the image is read, and a message about it shows the byte as \xff
    img = _random_images(1, (3, 4, 3))[0]
    name = os.fsencode(str(tmp_path)) + b"/im\xff.png"
    with open(name, "wb") as f:
        f.write(_png(img))
    with open(tmp_path / "map.txt", "wb") as f:
        f.write(b"im\xff.png\t0\nnot\xfethere.png\t1\n")
    src = MinibatchSource(ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(
        f=StreamDef(field="image", transforms=[xforms.scale(4, 3, 3)]), l=StreamDef(field="label", shape=2))),
        randomize=False, max_sweeps=1, max_errors=1)
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        mb = src.next_minibatch(2)
    assert mb[src.streams["f"]].num_sequences == 1
    np.testing.assert_array_equal(mb[src.streams["f"]].asarray().reshape(3, 3, 4), img.transpose(2, 0, 1))
    assert "image 'not\\xfethere.png': Cannot open file 'not\\xfethere.png'" in caplog.text
    src.close()


def test_a_base64_image_claiming_a_huge_width_is_a_skipped_sequence(tmp_path, caplog):
    # a BMP header whose width is 2^31 - 1 made OpenCV raise cv2.error out of the read; it is a bad
    # sequence like any undecodable one: skipped, logged with its line (counted from 1), counted
    ok, bmp = cv2.imencode(".bmp", np.zeros((2, 3, 3), np.uint8))
    bad = bytearray(bmp.tobytes())
    bad[18:22] = struct.pack("<i", 0x7FFFFFFF)
    good = _png(np.full((2, 3, 3), 7, np.uint8))
    (tmp_path / "b64.txt").write_bytes(b"0\t%s\n1\t%s\n0\t%s\n" % (base64.b64encode(good), base64.b64encode(bytes(bad)),
                                                                   base64.b64encode(good)))
    defs = StreamDefs(f=StreamDef(field="image", transforms=[xforms.scale(3, 2, 3)]), l=StreamDef(field="label", shape=2))
    src = MinibatchSource(Base64ImageDeserializer(str(tmp_path / "b64.txt"), defs), randomize=False, max_sweeps=1)
    with pytest.raises(MaxErrorsExceeded, match=r"Number of invalid sequences '1' in the input exceeded the specified "
                                                r"maximum number '0'; the last: .*b64\.txt:2: key 1: stream 'f': Could not "
                                                r"decompress sequence: .*CV_IO_MAX_IMAGE_WIDTH"):
        src.next_minibatch(3)
    src.close()
    src = MinibatchSource(Base64ImageDeserializer(str(tmp_path / "b64.txt"), defs), randomize=False, max_sweeps=1,
                          max_errors=1)
    assert src.next_minibatch(3)[src.streams["f"]].num_sequences == 2
    src.close()


def test_too_many_invalid_images_name_the_last_ones_file_key_and_stream(tmp_path):
    # the source's generic "Number of invalid sequences exceeded the maximum" is one of cntkio's
    # errors (a RuntimeError too, CNTK's class) naming the map line, key, stream and cause
    (tmp_path / "a.png").write_bytes(_png(np.zeros((2, 2, 3), np.uint8)))
    (tmp_path / "map.txt").write_text("3\ta.png\t0\n7\tnone.png\t0\n")
    src = MinibatchSource(ImageDeserializer(str(tmp_path / "map.txt"), StreamDefs(
        f=StreamDef(field="image", transforms=[xforms.scale(2, 2, 3)]))), max_sweeps=1, randomize=False)
    with pytest.raises(MaxErrorsExceeded) as e:
        src.next_minibatch(2)
    assert isinstance(e.value, RuntimeError)
    assert f"the last: {tmp_path / 'map.txt'}:2: key 7: stream 'f': image 'none.png': Cannot open file 'none.png'" \
        in str(e.value)
    src.close()
