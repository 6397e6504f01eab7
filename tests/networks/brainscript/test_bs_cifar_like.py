"""A CIFAR-10-like BrainScript ConvNet with data augmentation (tests/data/brainscript/cifar_like.cntk,
the form of CNTK's ConvNet_CIFAR10_DataAug: ImageDeserializer with RandomSide crops, Scale, Mean
file and Transpose; eval with evalNodeNames = errs:top5Errs) on generated 40x40 colour images of
ten classes, written by the test with OpenCV, with their mean file."""
from __future__ import annotations

import os

import cv2
import numpy as np

from cntkio.actions.runner import run
import paths

CONFIG = os.path.join(str(paths.DATA), "brainscript", "cifar_like.cntk")
PALETTE = [(220, 40, 40), (40, 220, 40), (40, 40, 220), (220, 220, 40), (220, 40, 220), (40, 220, 220),
           (240, 240, 240), (30, 30, 30), (240, 140, 40), (120, 60, 200)]


def _images(root, split: str, per_class: int, rng) -> list:
    (root / split).mkdir()
    lines, imgs = [], []
    for k, colour in enumerate(PALETTE):
        for i in range(per_class):
            noise = rng.normal(0, 25, (40, 40, 3))
            img = np.clip(np.array(colour, np.float32) + noise, 0, 255).astype(np.uint8)
            cv2.imwrite(str(root / split / f"{k}_{i}.png"), img)
            lines.append(f"{split}/{k}_{i}.png\t{k}")
            imgs.append(img)
    (root / f"{split}_map.txt").write_text("\n".join(lines) + "\n")
    return imgs


def test_cifar_like_convnet_with_augmentation_trains_and_evaluates_top5(tmp_path):
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    train = _images(data, "train", 20, rng)
    _images(data, "test", 6, rng)
    mean = np.mean([cv2.resize(i, (32, 32)).astype(np.float32) for i in train], axis=0).reshape(1, -1)
    fs = cv2.FileStorage(str(data / "CIFAR-10_mean.xml"), cv2.FILE_STORAGE_WRITE)
    fs.write("Channel", 3)
    fs.write("Row", 32)
    fs.write("Col", 32)
    fs.write("MeanImg", mean)
    fs.release()
    (tn, _, tr), (en, _, ev) = run([f"configFile={CONFIG}", f"dataDir={data}", f"outputDir={tmp_path}/out",
                                    "progressBar=false"])
    assert (tn, en) == ("TrainConvNet", "Eval")
    assert [e.samples for e in tr.epochs] == [200] * 6
    assert ev.samples == 60 and sorted(ev.totals) == ["errs", "top5Errs"]
    assert ev.averages["errs"] < 0.4                     # chance: 0.9
    assert ev.averages["top5Errs"] <= ev.averages["errs"]
