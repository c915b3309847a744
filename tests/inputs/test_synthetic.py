"""The synthetic fire/smoke generator: deterministic bytes, sound YOLO labels, the split recipe."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from harness.core.errors import HarnessError
from harness.inputs.synthetic import (
    CLASS_NAMES,
    EMPTY_FRACTION,
    FIRE,
    OFFDOMAIN_SPLIT,
    Recipe,
    main,
    split_frame,
    write_dataset,
)

SMALL = Recipe(seed=3, train=24, val=8, calib=6, offdomain_calib=5, imgsz=64)


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def _labels(root: Path, split: str) -> dict[str, np.ndarray]:
    out = {}
    for path in sorted((root / "labels" / split).glob("*.txt")):
        rows = [line.split() for line in path.read_text().splitlines()]
        assert all(len(r) == 5 for r in rows), path
        out[path.stem] = np.array(rows, np.float64).reshape(-1, 5)
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synthetic")
    write_dataset(root, SMALL)
    return root


def test_same_seed_writes_byte_identical_files_and_another_seed_does_not(
    dataset: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    again = tmp_path_factory.mktemp("again")
    write_dataset(again, SMALL)
    other = tmp_path_factory.mktemp("other")
    write_dataset(other, Recipe(seed=4, train=24, val=8, calib=6, offdomain_calib=5, imgsz=64))
    digest = _tree_digest(dataset)
    assert len(digest) == 24 * 2 + 8 * 2 + 6 * 2 + 5 + 1
    assert _tree_digest(again) == digest
    other_digest = _tree_digest(other)
    assert other_digest.keys() == digest.keys()
    images = [k for k in digest if k.endswith(".png")]
    assert all(other_digest[k] != digest[k] for k in images)


def test_a_frame_does_not_depend_on_the_size_of_other_splits() -> None:
    bigger = Recipe(seed=3, train=24, val=8, calib=30, offdomain_calib=9, imgsz=64)
    for split, index in (("train", 5), ("val", 2), (OFFDOMAIN_SPLIT, 4)):
        a, b = split_frame(SMALL, split, index), split_frame(bigger, split, index)
        np.testing.assert_array_equal(a.image, b.image)
        np.testing.assert_array_equal(a.labels, b.labels)


def test_labels_are_normalised_boxes_inside_the_image(dataset: Path) -> None:
    for split in ("train", "val", "calib"):
        for stem, rows in _labels(dataset, split).items():
            width, height = Image.open(dataset / "images" / split / f"{stem}.png").size
            cls, cx, cy, w, h = rows.T
            assert set(cls.tolist()) <= set(CLASS_NAMES)
            assert np.all(w * width >= 6 - 1e-3) and np.all(h * height >= 6 - 1e-3), stem
            assert np.all(cx - w / 2 >= -1e-6) and np.all(cx + w / 2 <= 1 + 1e-6), stem
            assert np.all(cy - h / 2 >= -1e-6) and np.all(cy + h / 2 <= 1 + 1e-6), stem


def test_a_fire_box_frames_warm_pixels() -> None:
    frames = (split_frame(SMALL, "train", i) for i in range(24))
    frame = next(f for f in frames if (f.labels[:, 0] == FIRE).any())
    height, width = frame.image.shape[:2]
    _, cx, cy, w, h = frame.labels[frame.labels[:, 0] == FIRE][0]
    x0, x1 = round((cx - w / 2) * width), round((cx + w / 2) * width)
    y0, y1 = round((cy - h / 2) * height), round((cy + h / 2) * height)
    patch = frame.image[y0:y1, x0:x1].astype(np.int64)
    warm = (patch[..., 0] > 180) & (patch[..., 0] > patch[..., 2] + 80)
    assert warm.mean() > 0.05


def test_each_labelled_split_has_its_share_of_empty_frames(dataset: Path) -> None:
    for split, count in (("train", 24), ("val", 8), ("calib", 6)):
        labels = _labels(dataset, split)
        assert len(labels) == count
        assert sum(len(rows) == 0 for rows in labels.values()) == round(EMPTY_FRACTION * count)


def test_both_classes_appear(dataset: Path) -> None:
    classes = np.concatenate([rows[:, 0] for rows in _labels(dataset, "train").values()])
    assert set(classes.tolist()) == {0.0, 1.0}


def test_offdomain_calibration_has_images_and_no_labels(dataset: Path) -> None:
    assert len(list((dataset / "images" / OFFDOMAIN_SPLIT).glob("*.png"))) == 5
    assert not (dataset / "labels" / OFFDOMAIN_SPLIT).exists()
    assert all(len(split_frame(SMALL, OFFDOMAIN_SPLIT, i).labels) == 0 for i in range(5))


def test_image_sizes_vary_around_the_nominal_size() -> None:
    recipe = Recipe(seed=0, train=6, val=0, calib=0)
    sizes = {split_frame(recipe, "train", i).image.shape for i in range(6)}
    assert len(sizes) == 6
    assert all(240 <= w <= 480 and c == 3 for _, w, c in sizes)


def test_data_yaml_names_fire_then_smoke_and_resolves_beside_itself(dataset: Path) -> None:
    data = yaml.safe_load((dataset / "data.yaml").read_text())
    assert data["names"] == {0: "fire", 1: "smoke"}
    assert "path" not in data
    for key in ("train", "val", "calib", OFFDOMAIN_SPLIT):
        assert (dataset / data[key]).is_dir()


def test_command_line_writes_the_same_dataset_as_the_recipe(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--out", str(tmp_path), "--seed", "3", "--train", "24", "--val", "8", "--calib", "6"]
    assert main([*argv, "--offdomain-calib", "5", "--imgsz", "64"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "data.yaml")
    assert _tree_digest(tmp_path) == _tree_digest(dataset)


@pytest.mark.parametrize(("field", "value"), [("train", -1), ("imgsz", 16), ("seed", -2)])
def test_bad_recipe_names_the_field_and_value(field: str, value: int) -> None:
    kwargs = {"seed": 0, "train": 1, "val": 1, "calib": 1, field: value}
    with pytest.raises(HarnessError, match=rf"{field} is {value}"):
        Recipe(**kwargs)
