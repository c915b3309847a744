"""A COCO detection JSON with its image folder, every record's fields checked and each error
naming the file, the record and the field."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.documents import Fields, read_json
from harness.inputs.dataset import Dataset, DatasetError, GroundTruth, Sample, Unreadable
from harness.inputs.dataset_images import manifest, read_image

# A COCO bbox value beyond this would not survive the float32 the ground truth is kept in (x + width too).
_MAX_COCO_VALUE = float(np.finfo(np.float32).max) / 2


def load_coco(annotations: str | os.PathLike[str], images: str | os.PathLike[str]) -> Dataset:
    """A COCO detection JSON (``images``, ``annotations`` with ``bbox`` x, y, w, h in pixels,
    ``categories``; other keys, such as ``info`` and ``licenses``, are not read) with its image folder.
    Class ids follow the categories sorted by id; every image listed is a sample (one without
    annotations shows no object); ``iscrowd`` 1 regions become crowd boxes. The listed width and
    height must equal the image's size after EXIF orientation, and every box must lie at least in
    part on its image. Ids are integers or strings, one kind per field, each listed once; anything
    else is refused naming the record and the field."""
    annotations, root = Path(annotations), Path(images)
    top = Fields(read_json(annotations, "COCO annotation file"), str(annotations))
    listed_images, listed_annotations, listed_categories = (
        top.list(key) for key in ("images", "annotations", "categories")
    )
    read = _Coco(annotations)
    categories = sorted(listed_categories, key=lambda c: read.id(c, "category", "id", "category"))
    read.unique([read.id(c, "category", "id", "category") for c in categories], "category", "id")
    class_of = {c["id"]: i for i, c in enumerate(categories)}
    names = tuple(read.text(c, "category", "name") for c in categories)
    listed = sorted(listed_images, key=lambda im: read.text(im, "image", "file_name"))
    read.unique([read.id(im, "image", "id", "image") for im in listed], "image", "id")
    read.unique([read.text(im, "image", "file_name") for im in listed], "image", "file_name")
    frames = {im["id"]: (im["file_name"], *read.size(im)) for im in listed}
    per_image: dict[Any, list[dict[str, Any]]] = {im["id"]: [] for im in listed}
    for ann in listed_annotations:
        per_image[read.annotation(ann, frames, class_of)].append(ann)

    samples, unreadable, entries = [], [], []
    for im in listed:
        image_id = Path(im["file_name"]).as_posix()
        anns = sorted(per_image[im["id"]], key=lambda a: str(a.get("id")))
        label_digest = hashlib.sha256(json.dumps(anns, sort_keys=True).encode()).hexdigest()
        digest, hw = read_image(root / image_id)
        entries.append((image_id, digest, label_digest))
        if isinstance(hw, str):
            unreadable.append(Unreadable(image_id, hw))
            continue
        listed_hw = frames[im["id"]][1:]
        if listed_hw != hw:
            raise DatasetError(
                f"{annotations}: image {image_id!r} height, width {listed_hw}, but the image is {hw} (EXIF applied)"
            )
        xywh = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)
        boxes = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
        classes = np.array([class_of[a["category_id"]] for a in anns], dtype=np.int64)
        truth = GroundTruth(boxes, classes, np.array([a.get("iscrowd", 0) == 1 for a in anns], dtype=bool))
        samples.append(Sample(root / image_id, image_id, digest, hw, truth))
    return Dataset(root, names, tuple(samples), (), tuple(unreadable), manifest(names, entries))


class _Coco:
    """Field checks of a COCO file's records; every error names the file, the record and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kinds: dict[str, type] = {}

    def id(self, record: Any, kind: str, key: str, space: str) -> int | str:
        """An id of the ``space`` ("image" or "category"): all of one kind, integer or string."""
        value = _field(self.path, kind, record, key)
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise DatasetError(f"{self.path}: {kind} {key} {value!r:.60}, expected an integer or a string")
        seen = self.kinds.setdefault(space, type(value))
        if type(value) is not seen:
            raise DatasetError(
                f"{self.path}: {kind} {key} {value!r:.60} is a {type(value).__name__}, but other {space} ids are "
                f"{seen.__name__}s: expected one kind of id"
            )
        return value

    def size(self, image: Any) -> tuple[int, int]:
        """An image record's listed (height, width), each a positive integer."""
        sides = tuple(_field(self.path, "image", image, key) for key in ("height", "width"))
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sides):
            raise DatasetError(
                f"{self.path}: image {image['file_name']!r} height, width {sides!r:.60}, expected positive integers"
            )
        return sides[0], sides[1]

    def annotation(
        self, ann: Any, frames: Mapping[Any, tuple[str, int, int]], class_of: Mapping[Any, int]
    ) -> int | str:
        """A checked annotation's image id."""
        image_id, category_id = (
            self.id(ann, "annotation", "image_id", "image"),
            self.id(ann, "annotation", "category_id", "category"),
        )
        bbox = _field(self.path, "annotation", ann, "bbox")
        where = f"{self.path}: annotation id {ann.get('id')!r:.40}"
        if image_id not in frames:
            raise DatasetError(f"{where}: image_id {image_id!r} is not in 'images'")
        if category_id not in class_of:
            raise DatasetError(f"{where}: category_id {category_id!r}, expected one of {sorted(class_of)}")
        if not (isinstance(bbox, list) and len(bbox) == 4 and all(_coco_value(v) for v in bbox)):
            raise DatasetError(
                f"{where}: bbox {bbox!r:.80}, expected [x, y, width, height] of 4 finite numbers "
                f"(each at most {_MAX_COCO_VALUE:.3g})"
            )
        x, y, w, h = bbox
        if w < 0 or h < 0:
            raise DatasetError(f"{where}: bbox {bbox!r} has a negative width or height")
        file_name, height, width = frames[image_id]
        if x >= width or y >= height or x + w <= 0 or y + h <= 0:
            raise DatasetError(
                f"{where}: bbox {bbox!r} lies wholly outside its image {file_name!r} (id {image_id!r}, "
                f"{width}x{height} pixels), expected a box on the image"
            )
        crowd = ann.get("iscrowd", 0)
        if isinstance(crowd, bool | float) or crowd not in (0, 1):
            raise DatasetError(f"{where}: iscrowd {crowd!r:.40}, expected 0 or 1")
        return image_id

    def text(self, record: Any, kind: str, key: str) -> str:
        value = _field(self.path, kind, record, key)
        if not isinstance(value, str) or not value:
            raise DatasetError(f"{self.path}: {kind} {key} {value!r:.60}, expected a non-empty string")
        return value

    def unique(self, values: list[Any], kind: str, key: str) -> None:
        twice = sorted(str(v) for v, n in Counter(values).items() if n > 1)
        if twice:
            raise DatasetError(f"{self.path}: {kind} {key} {twice[:5]} listed more than once, expected each once")


def _field(path: Path, kind: str, record: Any, key: str) -> Any:
    if not isinstance(record, dict) or key not in record:
        raise DatasetError(f"{path}: {kind} {record!r:.80} has no {key!r}, expected a COCO {kind} record")
    return record[key]


def _coco_value(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= _MAX_COCO_VALUE
