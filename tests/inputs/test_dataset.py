import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from harness.core import defaults
from harness.core.errors import HarnessError
from harness.inputs.dataset import (
    LEFT_OUT,
    DatasetError,
    GroundTruth,
    class_map,
    left_out,
    left_out_note,
    require_evaluable,
)
from harness.inputs.dataset_coco import load_coco
from harness.inputs.dataset_images import _IMAGE_SUFFIXES, load_images
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.preprocess import load_image
from harness.pipeline.options import OPTIONS

# --- the real fixtures ---------------------------------------------------------------------------


@pytest.mark.fixtures
def test_fire_smoke_folder_has_200_images_287_boxes_and_two_images_without_labels(shared_fixtures):
    dataset = load_yolo(shared_fixtures / "datasets" / "fire_smoke_val")
    assert dataset.names == ("fire", "smoke")
    assert len(dataset.samples) == 200
    assert dataset.n_boxes == 287
    assert dataset.missing_labels == ("images/val/fire-image_46.jpg", "images/val/smoke-image_53.jpg")
    assert dataset.unreadable == ()
    assert len({s.original_hw for s in dataset.samples}) == 70
    first = next(s for s in dataset.samples if s.image_id == "images/val/fire-image_0.jpg")
    # labels/val/fire-image_0.txt: "0 0.466077 0.394648 0.306785 0.774336" on a 300x168 image
    assert first.original_hw == (168, 300)
    np.testing.assert_allclose(
        first.ground_truth.boxes,
        [
            [
                (0.466077 - 0.306785 / 2) * 300,
                (0.394648 - 0.774336 / 2) * 168,
                (0.466077 + 0.306785 / 2) * 300,
                (0.394648 + 0.774336 / 2) * 168,
            ]
        ],
        atol=1e-3,
    )
    assert first.ground_truth.class_ids.tolist() == [0]


@pytest.mark.fixtures
def test_fire_smoke_yaml_whose_val_points_outside_the_folder_is_an_error_naming_the_value(shared_fixtures):
    with pytest.raises(DatasetError, match=r"fire-smoke\.yaml: val '\.\./fire-smoke/images/val/' resolves to"):
        load_yolo(shared_fixtures / "datasets" / "fire_smoke_val" / "fire-smoke.yaml")


@pytest.mark.fixtures
def test_coco128_yaml_has_16_images_53_boxes_and_80_names(shared_fixtures):
    dataset = load_yolo(shared_fixtures / "datasets" / "coco128_val16" / "config.yaml")
    assert len(dataset.samples) == 16
    assert dataset.n_boxes == 53
    assert len(dataset.names) == 80 and dataset.names[:3] == ("person", "bicycle", "car")
    assert dataset.missing_labels == () and dataset.unreadable == ()
    assert len(dataset.manifest) == 64


@pytest.mark.fixtures
def test_sizes_read_from_headers_equal_the_decoded_image_sizes(shared_fixtures):
    dataset = load_yolo(shared_fixtures / "datasets" / "coco128_val16" / "config.yaml")
    for sample in dataset.samples[:6]:
        assert load_image(sample.path).shape[:2] == sample.original_hw


# --- messy datasets built here -------------------------------------------------------------------


def _image(path: Path, size=(40, 30), mode="RGB", fmt=None, **save) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    colour = {"L": 128, "RGBA": (10, 20, 30, 128), "P": 3}.get(mode, (10, 20, 30))
    Image.new(mode, size, colour).save(path, format=fmt, **save)
    return path


def _label(root: Path, stem: str, text: str, split="val") -> Path:
    path = root / "labels" / split / f"{stem}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    images = root / "images" / "val"
    _image(images / "plain.jpg", (40, 30))
    _label(root, "plain", "0 0.5 0.5 0.5 0.5\n1 0.25 0.25 0.5 0.5\n")
    (root / "data.yaml").write_text(yaml.safe_dump({"names": ["fire", "smoke"]}))
    return root


def test_images_are_read_by_content_whatever_their_name_says(tmp_path):
    root = _folder(tmp_path)
    images = root / "images" / "val"
    _image(images / "png_named.jpg", (21, 13), fmt="PNG")
    _image(images / "anim.gif", (17, 11), mode="P", fmt="GIF")
    _image(images / "grey.jpg", (15, 9), mode="L")
    _image(images / "alpha.png", (12, 8), mode="RGBA")
    dataset = load_yolo(root)
    sizes = {s.image_id.rsplit("/", 1)[1]: s.original_hw for s in dataset.samples}
    assert sizes == {
        "plain.jpg": (30, 40),
        "png_named.jpg": (13, 21),
        "anim.gif": (11, 17),
        "grey.jpg": (9, 15),
        "alpha.png": (8, 12),
    }
    for sample in dataset.samples:
        assert load_image(sample.path).shape[:2] == sample.original_hw
    assert len(dataset.missing_labels) == 4


def test_the_image_suffixes_are_those_the_installed_pillow_opens():
    assert _IMAGE_SUFFIXES == frozenset(Image.registered_extensions())


def test_a_folder_is_listed_without_registering_every_pillow_plugin(tmp_path):
    """Listing by suffix loads none of the plugins ``registered_extensions()`` would import
    (PDF, EPS, ...): a PNG and a JPEG are opened with the few Pillow loads first."""
    root = _folder(tmp_path)
    _image(root / "images" / "val" / "b.png", (9, 7), fmt="PNG")
    (root / "images" / "val" / "notes.txt").write_text("not an image")
    script = (
        "import sys\nfrom harness.inputs.dataset_yolo import load_yolo\n"
        f"dataset = load_yolo({str(root)!r})\n"
        "print(sorted(s.image_id for s in dataset.samples), 'PIL.PdfImagePlugin' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['images/val/b.png',", "'images/val/plain.jpg']", "False"]


def test_exif_rotated_jpeg_has_its_displayed_size_and_boxes_in_that_frame(tmp_path):
    root = _folder(tmp_path)
    exif = Image.Exif()
    exif[274] = 6  # rotate 90 degrees clockwise to display
    path = _image(root / "images" / "val" / "rotated.jpg", (40, 20), exif=exif.tobytes())
    _label(root, "rotated", "0 0.5 0.25 1.0 0.5\n")
    sample = next(s for s in load_yolo(root).samples if s.image_id.endswith("rotated.jpg"))
    assert sample.original_hw == (40, 20) == load_image(path).shape[:2]
    np.testing.assert_allclose(sample.ground_truth.boxes, [[0, 0, 20, 20]])


def test_an_unreadable_image_is_named_and_counted_not_dropped(tmp_path):
    root = _folder(tmp_path)
    (root / "images" / "val" / "broken.jpg").write_bytes(b"not an image at all")
    _label(root, "broken", "0 0.5 0.5 0.1 0.1\n")
    dataset = load_yolo(root)
    assert [s.image_id for s in dataset.samples] == ["images/val/plain.jpg"]
    assert [u.image_id for u in dataset.unreadable] == ["images/val/broken.jpg"]
    assert "PIL" in dataset.unreadable[0].reason
    before = dataset.manifest
    (root / "images" / "val" / "broken.jpg").write_bytes(b"other bytes")
    assert load_yolo(root).manifest != before


def test_a_missing_label_file_means_no_objects_and_is_counted_an_empty_one_is_not(tmp_path):
    root = _folder(tmp_path)
    _image(root / "images" / "val" / "nolabel.jpg")
    _image(root / "images" / "val" / "empty.jpg")
    _label(root, "empty", "\n")
    dataset = load_yolo(root)
    assert dataset.missing_labels == ("images/val/nolabel.jpg",)
    by_id = {s.image_id: s for s in dataset.samples}
    assert len(by_id["images/val/nolabel.jpg"].ground_truth) == 0
    assert len(by_id["images/val/empty.jpg"].ground_truth) == 0
    assert dataset.n_boxes == 2


def test_labels_become_pixel_xyxy_boxes_clipped_to_the_image(tmp_path):
    root = _folder(tmp_path)
    _label(root, "plain", "1 0.5 0.5 0.5 0.5\n0 1.005 0.5 0.2 0.2\n")
    truth = load_yolo(root).samples[0].ground_truth
    np.testing.assert_allclose(truth.boxes, [[10, 7.5, 30, 22.5], [36.2, 12, 40, 18]], atol=1e-4)
    assert truth.class_ids.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 0.5 0.5 0.2\n", r"plain\.txt:2: 4 fields '0 0\.5 0\.5 0\.2', expected 5: class x_center"),
        ("0 a 0.5 0.2 0.2\n", r"plain\.txt:2: '0 a 0\.5 0\.2 0\.2' is not five numbers"),
        ("2 0.5 0.5 0.2 0.2\n", r"plain\.txt:2: class id '2', expected an integer in 0\.\.1"),
        ("0.5 0.5 0.5 0.2 0.2\n", r"plain\.txt:2: class id '0\.5', expected an integer"),
        ("0 1.5 0.5 0.2 0.2\n", r"plain\.txt:2: box '1\.5 0\.5 0\.2 0\.2', expected normalised"),
        ("0 0.5 0.5 nan 0.2\n", r"plain\.txt:2: box"),
    ],
)
def test_a_bad_label_line_is_an_error_naming_file_and_line(tmp_path, text, message):
    root = _folder(tmp_path)
    _label(root, "plain", "0 0.5 0.5 0.5 0.5\n" + text)
    with pytest.raises(DatasetError, match=message):
        load_yolo(root)


def test_dataset_error_is_a_harness_error():
    assert issubclass(DatasetError, HarnessError)


def test_a_yaml_with_path_names_mapping_and_a_txt_image_list_is_read(tmp_path):
    root = _folder(tmp_path)
    _image(root / "images" / "val" / "other.jpg")
    (root / "val.txt").write_text("./images/val/plain.jpg\n\n")
    config = tmp_path / "cfg" / "ds.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump({"path": "../ds", "val": "val.txt", "names": {0: "fire", 1: "smoke"}, "nc": 2}))
    dataset = load_yolo(config)
    assert dataset.names == ("fire", "smoke")
    assert [s.image_id for s in dataset.samples] == ["images/val/plain.jpg"]
    config.write_text(yaml.safe_dump({"path": "../ds", "val": "images/val", "names": ["fire", "smoke"]}))
    assert len(load_yolo(config).samples) == 2


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"val": "images/val", "names": ["a", "b"], "nc": 3}, "nc 3 but 2 names"),
        ({"val": "images/val", "names": {0: "a", 2: "b"}}, r"names keys \[0, 2\], expected 0\.\.1"),
        ({"val": "images/val"}, "names None, expected a list"),
        ({"train": "images/train", "names": ["a"]}, "no 'val' entry"),
    ],
)
def test_a_bad_dataset_yaml_is_an_error_naming_the_field(tmp_path, config, message):
    root = _folder(tmp_path)
    (root / "data.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(DatasetError, match=message):
        load_yolo(root / "data.yaml")


_BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_BOMB + "val: images/val\nnames: [a, b]\n", r"data\.yaml: line 1: a YAML anchor &a0"),
        ("val: images/val\nnames: " + "[" * 200 + "]" * 200 + "\n", r"data\.yaml: nested deeper than 64 levels"),
        ("val: images/val\nnames: {0: a, '1': b}\n", r"data\.yaml: names keys \[0, '1'\], expected 0\.\.1"),
        ("val: images/val\nnames: [yes, no]\n", r"data\.yaml: names\[0\] is True, expected a class name"),
        ("val: images/val\nnames: [a, b]\nnc: " + "9" * 5000 + "\n", r"data\.yaml: line 3: an integer of 5000 digits"),
        ("val: images/val\nnames: [a, b]\nnc: '2'\n", r"data\.yaml: field nc is '2', expected an integer >= 1"),
        ("val: images/val\nval: images/x\nnames: [a, b]\n", r"data\.yaml: line 2: key 'val' given twice"),
        ("val: [images/val, 3]\nnames: [a, b]\n", r"data\.yaml: field val is \['images/val', 3\], expected a folder"),
        ("path: 5\nval: images/val\nnames: [a, b]\n", r"data\.yaml: field path is 5, expected the dataset's folder"),
    ],
)
def test_a_dataset_yaml_a_lenient_reader_would_guess_at_is_refused_naming_file_and_field(tmp_path, text, message):
    """Bombs (an alias bomb of 9**9 strings in under 600 bytes, 200 levels) are refused before they cost
    anything; mixed, coerced, oversized or doubled values are refused, not read as something."""
    root = _folder(tmp_path)
    (root / "data.yaml").write_text(text)
    started = time.perf_counter()
    with pytest.raises(HarnessError, match=message):
        load_yolo(root / "data.yaml")
    assert time.perf_counter() - started < 2


def test_an_image_list_that_is_not_utf8_text_is_refused_naming_the_list_and_the_byte(tmp_path):
    root = _folder(tmp_path)
    (root / "val.txt").write_bytes(b"images/val/plain.jpg\n\xff\xfe\n")
    (root / "data.yaml").write_text("val: val.txt\nnames: [fire, smoke]\n")
    with pytest.raises(DatasetError, match=r"val\.txt: not UTF-8 text \(byte 21\), expected one image path per line"):
        load_yolo(root / "data.yaml")


def test_a_folder_takes_names_given_or_from_its_one_yaml(tmp_path):
    root = _folder(tmp_path)
    assert load_yolo(root).names == ("fire", "smoke")
    assert load_yolo(root, names=["a", "b"]).names == ("a", "b")
    (root / "data.yaml").unlink()
    with pytest.raises(DatasetError, match=r"ds: no dataset yaml naming the classes \('names'\)"):
        load_yolo(root)


def test_a_split_the_folder_does_not_have_is_refused_naming_the_splits_it_has(tmp_path):
    root = _folder(tmp_path)
    _image(root / "images" / "calib" / "other.jpg", (40, 30))
    assert [s.image_id for s in load_yolo(root, "val").samples] == ["images/val/plain.jpg"]
    with pytest.raises(
        DatasetError, match=r"no images/test/ folder \(split 'test'\); its splits are \['calib', 'val'\]"
    ):
        load_yolo(root, "test")


def test_manifest_is_stable_and_changes_with_labels_names_and_file_names(tmp_path):
    root = _folder(tmp_path)
    first = load_yolo(root).manifest
    assert load_yolo(root).manifest == first
    assert load_yolo(root, names=["smoke", "fire"]).manifest != first
    _label(root, "plain", "0 0.5 0.5 0.5 0.5\n1 0.25 0.25 0.5 0.51\n")
    changed_label = load_yolo(root).manifest
    assert changed_label != first
    (root / "images" / "val" / "plain.jpg").rename(root / "images" / "val" / "renamed.jpg")
    assert load_yolo(root).manifest not in (first, changed_label)


# --- class names between dataset and model -------------------------------------------------------


def test_identical_class_names_map_to_themselves():
    assert class_map(["fire", "smoke"], ("fire", "smoke")).tolist() == [0, 1]


def test_names_in_another_order_are_an_error_naming_both_lists():
    # D-Fire labels 0 = smoke, 1 = fire; fire_smoke_val and its models 0 = fire, 1 = smoke
    with pytest.raises(DatasetError, match=r"\['smoke', 'fire'\].*\['fire', 'smoke'\].*another order"):
        class_map(["smoke", "fire"], ["fire", "smoke"])
    with pytest.raises(DatasetError, match=r"\['flame'\].*\['fire'\].*different names"):
        class_map(["flame"], ["fire"])


def test_an_explicit_map_translates_by_name():
    assert class_map(["smoke", "fire"], ["fire", "smoke"], {}).tolist() == [1, 0]
    assert class_map(["flame", "smoke"], ["smoke", "fire"], {"flame": "fire"}).tolist() == [1, 0]
    with pytest.raises(DatasetError, match=r"'smoke' -> 'smoke' name no model class"):
        class_map(["flame", "smoke"], ["fire"], {"flame": "fire"})
    with pytest.raises(DatasetError, match=r"--map-class 'flames=fire': names no dataset class before an '='"):
        class_map(["flame"], ["fire"], {"flames": "fire"})


def test_two_pairs_read_as_one_dataset_class_are_refused_naming_both():
    # 'a=b=c' reads as dataset class 'a=b' onto 'c' (no class 'a'); 'a=b' given again onto 'd' maps it twice.
    twice = r"^--map-class a=b=c and --map-class a=b=d: dataset class 'a=b' mapped twice"
    with pytest.raises(DatasetError, match=twice):
        class_map(["a=b"], ["c", "d"], {"a": "b=c", "a=b": "d"})


def test_mapped_ground_truth_carries_model_class_ids():
    truth = GroundTruth(np.zeros((3, 4)), np.array([0, 1, 1]))
    assert truth.mapped(class_map(["smoke", "fire"], ["fire", "smoke"], {})).class_ids.tolist() == [1, 0, 0]


# --- COCO JSON -----------------------------------------------------------------------------------


def _coco(tmp_path: Path, **override) -> Path:
    images = tmp_path / "imgs"
    _image(images / "a.jpg", (40, 30))
    _image(images / "b.png", (20, 10), fmt="PNG")
    data = {
        "images": [
            {"id": 5, "file_name": "a.jpg", "width": 40, "height": 30},
            {"id": 9, "file_name": "b.png", "width": 20, "height": 10},
        ],
        "categories": [{"id": 7, "name": "smoke"}, {"id": 3, "name": "fire"}],
        "annotations": [
            {"id": 1, "image_id": 5, "category_id": 7, "bbox": [1, 2, 10, 20], "iscrowd": 0},
            {"id": 2, "image_id": 5, "category_id": 3, "bbox": [5, 5, 4, 4], "iscrowd": 1},
        ],
    }
    data.update(override)
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(data))
    return path


def test_coco_json_gives_classes_by_category_id_xyxy_boxes_and_crowd_flags(tmp_path):
    dataset = load_coco(_coco(tmp_path), tmp_path / "imgs")
    assert dataset.names == ("fire", "smoke")
    assert [s.image_id for s in dataset.samples] == ["a.jpg", "b.png"]
    a, b = dataset.samples
    np.testing.assert_allclose(a.ground_truth.boxes, [[1, 2, 11, 22], [5, 5, 9, 9]])
    assert a.ground_truth.class_ids.tolist() == [1, 0]
    assert a.ground_truth.crowd.tolist() == [False, True]
    assert len(b.ground_truth) == 0 and b.original_hw == (10, 20)
    assert dataset.missing_labels == ()


def test_coco_image_missing_on_disk_is_unreadable_and_a_wrong_size_is_an_error(tmp_path):
    path = _coco(tmp_path)
    (tmp_path / "imgs" / "b.png").unlink()
    dataset = load_coco(path, tmp_path / "imgs")
    assert [u.image_id for u in dataset.unreadable] == ["b.png"]
    assert len(dataset.samples) == 1
    bad_size = [{"id": 5, "file_name": "a.jpg", "width": 41, "height": 30}]
    with pytest.raises(DatasetError, match=r"'a\.jpg' height, width \(30, 41\), but the image is \(30, 40\)"):
        load_coco(_coco(tmp_path, images=bad_size, annotations=[]), tmp_path / "imgs")


def test_coco_annotation_with_an_unknown_category_is_an_error(tmp_path):
    anns = [{"id": 4, "image_id": 5, "category_id": 8, "bbox": [1, 2, 3, 4]}]
    with pytest.raises(DatasetError, match=r"annotation id 4: category_id 8, expected one of \[3, 7\]"):
        load_coco(_coco(tmp_path, annotations=anns), tmp_path / "imgs")


_IMAGES = [{"id": 5, "file_name": "a.jpg", "width": 40, "height": 30}]
_ANN = {"id": 1, "image_id": 5, "category_id": 7, "bbox": [1, 2, 10, 20]}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"categories": [{"id": 7, "name": "smoke"}, {"id": "3", "name": "fire"}]}, "is a str, but other category"),
        ({"images": [{**_IMAGES[0], "id": [5]}], "annotations": []}, r"image id \[5\], expected an integer or a str"),
        ({"images": _IMAGES * 2, "annotations": []}, r"image id \['5'\] listed more than once"),
        ({"categories": [{"id": 7, "name": "smoke"}] * 2}, r"category id \['7'\] listed more than once"),
        ({"annotations": [{**_ANN, "iscrowd": "no"}]}, r"annotation id 1: iscrowd 'no', expected 0 or 1"),
        ({"annotations": [{**_ANN, "image_id": "5"}]}, "is a str, but other image ids are ints"),
        ({"images": [{**_IMAGES[0], "file_name": 12}], "annotations": []}, "image file_name 12, expected a non-empty"),
    ],
)
def test_a_malformed_coco_record_is_refused_naming_the_record_and_the_field(tmp_path, override, expected):
    with pytest.raises(DatasetError, match=expected):
        load_coco(_coco(tmp_path, **override), tmp_path / "imgs")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"bbox": [1, 2, 1' + "0" * 400 + ", 20]", r"an integer of 401 digits \(field annotations\[0\]\.bbox\[2\]\)"),
        ('"bbox": [1, 2, 1e400, 20]', r"the number '1e400' is too large \(field annotations\[0\]\.bbox\[2\]\)"),
        (
            '"bbox": [1, 2, 1e300, 20]',
            r"annotation id 1: bbox .*, expected \[x, y, width, height\] of 4 finite numbers",
        ),
        ('"bbox": [40, 2, 10, 20]', r"annotation id 1: bbox \[40, 2, 10, 20\] lies wholly outside its image 'a\.jpg'"),
        ('"bbox": [-11, 2, 10, 20]', r"annotation id 1: bbox .* lies wholly outside its image 'a\.jpg' \(id 5, 40x30"),
        ('"bbox": [1, 2, 10, 20], "iscrowd": true', r"annotation id 1: iscrowd True, expected 0 or 1"),
        (
            '"bbox": [1, 2, 10, 20], "bbox": [1, 2, 3, 4]',
            r"key 'bbox' given twice in one object \(field annotations\[0\]\)",
        ),
    ],
)
def test_a_coco_value_a_lenient_reader_would_guess_at_is_refused_naming_the_annotation(tmp_path, text, expected):
    """Huge numbers (which overflowed), boxes wholly off their image (which the YOLO loader refuses and
    a run would bless as missed), a bool crowd flag and a key given twice."""
    path = _coco(tmp_path, annotations=[])
    document = json.loads(path.read_text())
    document["annotations"] = ["@"]
    path.write_text(json.dumps(document).replace('"@"', '{"id": 1, "image_id": 5, "category_id": 7, ' + text + "}"))
    with pytest.raises(HarnessError, match=expected):
        load_coco(path, tmp_path / "imgs")


def test_a_coco_file_name_naming_a_device_a_pipe_or_a_folder_is_unreadable_not_read(tmp_path):
    """/dev/zero would be read without end, a pipe waited on forever: each is refused unread."""
    path = _coco(tmp_path, annotations=[])
    os.mkfifo(tmp_path / "imgs" / "pipe.jpg")
    document = json.loads(path.read_text())
    document["images"] += [
        {"id": 20 + i, "file_name": name, "width": 4, "height": 3}
        for i, name in enumerate(["/dev/zero", "pipe.jpg", "."])
    ]
    path.write_text(json.dumps(document))
    started = time.perf_counter()
    dataset = load_coco(path, tmp_path / "imgs")
    assert time.perf_counter() - started < 2
    assert {u.image_id: u.reason for u in dataset.unreadable} == dict.fromkeys(
        ["/dev/zero", "pipe.jpg", "."], "not a regular file (a folder, a device, a pipe or a socket)"
    )


def test_a_coco_file_nested_past_the_depth_bound_or_not_an_object_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"images": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(HarnessError, match=r"deep\.json: nested deeper than 64 levels"):
        load_coco(path, tmp_path)
    path.write_text('{"images": {}, "annotations": [], "categories": []}')
    with pytest.raises(HarnessError, match=r"deep\.json: field images is \{\}, expected a list"):
        load_coco(path, tmp_path)


# --- datasets a run would check nothing on ------------------------------------------------------


def _small_set(root: Path, labels: dict[str, str | None]) -> Path:
    """``images/<name>.png`` (16x16 grey) with ``labels/<name>.txt`` holding the given text (None: none)."""
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for name, text in labels.items():
        Image.new("RGB", (16, 16), (90, 90, 90)).save(root / "images" / f"{name}.png")
        if text is not None:
            (root / "labels" / f"{name}.txt").write_text(text)
    (root / "data.yaml").write_text("names: {0: fire, 1: smoke}\n")
    return root


def test_a_label_path_that_is_a_folder_or_a_symlink_loop_is_an_error_not_no_objects(tmp_path):
    folder = _small_set(tmp_path / "a", {"x": "0 0.5 0.5 0.2 0.2\n", "y": None})
    (folder / "labels" / "y.txt").mkdir()
    with pytest.raises(DatasetError, match=r"label file .*y\.txt: exists but is not a file"):
        load_yolo(folder)
    looped = _small_set(tmp_path / "b", {"x": "0 0.5 0.5 0.2 0.2\n", "y": None})
    (looped / "labels" / "y.txt").symlink_to(looped / "labels" / "y.txt")
    with pytest.raises(DatasetError, match=r"label file .*y\.txt: exists but is not a file"):  # ELOOP
        load_yolo(looped)


def test_an_image_over_the_pixel_limit_is_unreadable_without_being_decoded(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "MAX_IMAGE_PIXELS", 100)
    dataset = load_yolo(_small_set(tmp_path / "a", {"x": "0 0.5 0.5 0.2 0.2\n"}))
    assert [u.reason for u in dataset.unreadable] == ["16x16 pixels, more than the limit of 100 pixels"]
    with pytest.raises(HarnessError, match=r"16x16 pixels, more than the limit of 100 pixels"):
        load_image(tmp_path / "a" / "images" / "x.png")


def test_a_set_without_one_labelled_object_is_refused_naming_where_labels_are_read(tmp_path):
    dataset = load_yolo(_small_set(tmp_path / "a", {"x": "", "y": None}))
    with pytest.raises(DatasetError, match=r"0 labelled objects in 2 images \(1 without a label file; labels are read"):
        require_evaluable(dataset)


def test_a_set_of_crowd_regions_only_is_refused_like_a_set_without_labels(tmp_path):
    """Crowd regions count neither as hits nor as misses: a set of them alone holds a model to nothing."""
    crowd = [{"id": 1, "image_id": 5, "category_id": 7, "bbox": [1, 2, 10, 20], "iscrowd": 1}]
    dataset = load_coco(_coco(tmp_path, annotations=crowd), tmp_path / "imgs")
    with pytest.raises(DatasetError, match=r"0 labelled objects in 2 images, only 1 crowd regions \(iscrowd 1"):
        require_evaluable(dataset)
    dataset = load_coco(_coco(tmp_path), tmp_path / "imgs")  # one object beside a crowd region: evaluable
    require_evaluable(dataset)


def test_unreadable_images_beyond_the_allowed_share_are_refused_and_within_it_accepted(tmp_path):
    root = _small_set(tmp_path / "a", {"x": "0 0.5 0.5 0.2 0.2\n", "y": "1 0.5 0.5 0.2 0.2\n"})
    (root / "images" / "z.png").write_bytes(b"not an image")
    dataset = load_yolo(root)
    with pytest.raises(DatasetError, match=r"1 of 3 images cannot be read \(images/z\.png: not an image"):
        require_evaluable(dataset)
    with pytest.raises(DatasetError, match=r"more than --max-unreadable 0\.3 allows"):
        require_evaluable(dataset, 0.3)
    require_evaluable(dataset, 0.34)


def test_a_folder_of_images_without_labels_is_a_label_free_set_with_a_manifest(tmp_path):
    _image(tmp_path / "cam" / "a.jpg", (40, 30))
    _image(tmp_path / "cam" / "night" / "b.png", (20, 10), fmt="PNG")
    (tmp_path / "cam" / "notes.txt").write_text("not an image")
    found = load_images(tmp_path / "cam")
    assert not found.labelled and found.names == () and found.n_boxes == 0
    assert [s.image_id for s in found.samples] == ["a.jpg", "night/b.png"]
    require_evaluable(found)  # no labels is what the set is, not a refusal
    _image(tmp_path / "cam" / "a.jpg", (40, 31))
    assert load_images(tmp_path / "cam").manifest != found.manifest
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no image files in it"):
        load_images(tmp_path / "empty")


# --- what a run leaves out: classes the model lacks, unreadable images ------------------------------


def _advised(error: DatasetError) -> list[tuple[str, str]]:
    """The --map-class values the error's advice gives, as the option parses them."""
    words = str(error.value).split("(leaving them all out: ")[1].rstrip(")").split()
    return [OPTIONS["map_class"].value(shlex.split(w)[0]) for w in words if w != "--map-class"]


def test_a_dataset_class_the_model_lacks_is_refused_with_advice_that_leads_to_a_working_map():
    names, model = ["fire", "smoke", "steam"], ["fire", "smoke"]
    with pytest.raises(DatasetError, match=r"--map-class steam=\)") as refused:
        class_map(names, model)
    advised = _advised(refused)
    assert advised == [("steam", "")]
    assert class_map(names, model, dict(advised)).tolist() == [0, 1, LEFT_OUT]
    with pytest.raises(DatasetError, match=r"'steam' -> 'smok' name no model class.*--map-class steam=\)"):
        class_map(names, model, {"steam": "smok"})
    with pytest.raises(DatasetError, match=r"every dataset class is left out, nothing to evaluate"):
        class_map(["steam"], model, {"steam": ""})


def test_names_holding_an_equals_sign_are_split_where_the_class_names_say():
    names, model = ["fire", "a=b", "smoke"], ["fire", "smoke=grey"]
    with pytest.raises(DatasetError) as refused:
        class_map(names, model)
    assert _advised(refused) == [("a", "b="), ("smoke", "")]  # split at the first '=': read again below
    given = dict(_advised(refused))
    assert class_map(names, model, given).tolist() == [0, LEFT_OUT, LEFT_OUT]
    assert class_map(names, model, {"a": "b=smoke=grey", "smoke": "smoke=grey"}).tolist() == [0, 1, 1]
    with pytest.raises(DatasetError, match=r"--map-class 'a=b=': reads as 'a' -> 'b=' or 'a=b' left out"):
        class_map(["a", "a=b"], ["b="], {"a": "b="})
    with pytest.raises(DatasetError, match=r"--map-class 'x=fire': names no dataset class before an '='"):
        class_map(names, model, {"x": "fire"})


def test_labels_of_a_class_left_out_are_not_evaluated_and_said_with_their_count(tmp_path):
    truth = GroundTruth(np.zeros((3, 4)), np.array([0, 2, 1]), np.array([False, True, False]))
    mapped = truth.mapped(np.array([1, 0, LEFT_OUT]))
    assert mapped.class_ids.tolist() == [1, 0] and mapped.crowd.tolist() == [False, False]
    root = _folder(tmp_path)
    _label(root, "plain", "0 0.5 0.5 0.5 0.5\n2 0.25 0.25 0.5 0.5\n2 0.2 0.2 0.1 0.1\n")
    (root / "images" / "val" / "zero.jpg").write_bytes(b"")
    dataset = load_yolo(root, names=["fire", "smoke", "steam"])
    assert left_out(dataset, [0, 1, LEFT_OUT]) == (("steam", 2),)
    note = left_out_note(dataset, [0, 1, LEFT_OUT])
    assert note == (
        "left out of the evaluation: 1 unreadable image (images/val/zero.jpg: empty (0 bytes): no image in it), "
        "the 2 labels of class 'steam' (--map-class steam=)"
    )
    assert left_out_note(dataset, []).startswith("left out of the evaluation: 1 unreadable image")


def test_an_unreadable_image_is_said_by_its_name_not_by_the_stream_pil_was_given(tmp_path):
    root = _folder(tmp_path)
    (root / "images" / "val" / "text.jpg").write_bytes(b"hello")
    (reason,) = [u.reason for u in load_yolo(root).unreadable]
    assert "BytesIO" not in reason and "cannot identify image file 'text.jpg'" in reason


def test_images_without_labels_or_a_yaml_are_told_what_is_missing(tmp_path):
    _image(tmp_path / "frames" / "images" / "a.jpg")
    with pytest.raises(DatasetError, match=r"no labels/ folder beside images/ and no dataset yaml naming the classes"):
        load_yolo(tmp_path / "frames")
    _label(tmp_path / "frames", "a", "0 0.5 0.5 0.1 0.1\n", split="")
    with pytest.raises(DatasetError, match=r"frames: no dataset yaml naming the classes \('names'\)"):
        load_yolo(tmp_path / "frames")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_an_image_linked_to_a_device_a_pipe_or_nothing_is_counted_unreadable_never_dropped(tmp_path):
    root = _small_set(tmp_path / "a", {"x": "0 0.5 0.5 0.2 0.2\n", "y": "1 0.5 0.5 0.2 0.2\n"})
    (root / "images" / "zero.jpg").symlink_to("/dev/zero")
    os.mkfifo(root / "images" / "pipe.png")
    (root / "images" / "gone.jpg").symlink_to(tmp_path / "nothing.jpg")
    for name in ("zero", "pipe", "gone"):
        (root / "labels" / f"{name}.txt").write_text("0 0.5 0.5 0.4 0.4\n")
    started = time.monotonic()
    dataset = load_yolo(root)
    assert time.monotonic() - started < 10  # neither the pipe nor the device is read
    reasons = {u.image_id: u.reason for u in dataset.unreadable}
    assert set(reasons) == {"images/zero.jpg", "images/pipe.png", "images/gone.jpg"}
    assert "not a regular file" in reasons["images/zero.jpg"] and "not a regular file" in reasons["images/pipe.png"]
    assert "cannot be read" in reasons["images/gone.jpg"]
    with pytest.raises(DatasetError, match=r"3 of 5 images cannot be read.*more than --max-unreadable 0 allows"):
        require_evaluable(dataset, 0.0)
    assert [f"images/{u.image_id}" for u in load_images(root / "images").unreadable] == sorted(reasons)
