"""Labelled datasets: YOLO-layout folders and yamls, COCO JSON files, and the manifest of what was read.

YOLO layout (Ultralytics, ultralytics/data/utils.py ``check_det_dataset``, ``img2label_paths``,
``verify_image_label``): a label file sits where its image does, with the last ``/images/`` of the
path replaced by ``/labels/`` and the suffix by ``.txt``; one object per line,
``class x_center y_center width height`` normalised to the image as it appears after its EXIF
orientation is applied. A missing label file means the image shows no object.

Every image PIL can open counts, whatever its name says (a ``.jpg`` may hold PNG or GIF bytes); an
image that cannot be opened is kept out of the samples and recorded by name in
:attr:`Dataset.unreadable`. Sizes come from the image header: nothing is decoded.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shlex
import stat
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from harness.core import defaults
from harness.core.documents import Fields, read_bytes, read_json, read_yaml
from harness.core.errors import HarnessError
from harness.core.shared_entry import EntryUse

# EXIF orientations that turn the stored image by 90 degrees (transpose, rotate 270, transverse,
# rotate 90), as PIL's ImageOps.exif_transpose applies them.
_SWAPPING_ORIENTATIONS = frozenset({5, 6, 7, 8})
_EXIF_ORIENTATION = 274
# The file suffixes Pillow 13.0 opens (``PIL.Image.registered_extensions()``, which imports every one
# of its plugins to list them: 25-30 ms a run). tests/inputs/test_dataset.py holds this list to the
# installed Pillow's; a file with another suffix is not listed as an image.
_IMAGE_SUFFIXES = frozenset(
    (
        ".apng", ".avif", ".avifs", ".blp", ".bmp", ".bufr", ".bw", ".cur", ".dcx", ".dds", ".dib", ".emf",
        ".eps", ".fit", ".fits", ".flc", ".fli", ".ftc", ".ftu", ".gbr", ".gif", ".grib", ".h5", ".hdf",
        ".icb", ".icns", ".ico", ".iim", ".im", ".j2c", ".j2k", ".jfif", ".jp2", ".jpc", ".jpe", ".jpeg",
        ".jpf", ".jpg", ".jpx", ".mpeg", ".mpg", ".mpo", ".msp", ".palm", ".pbm", ".pcd", ".pcx", ".pdf",
        ".pfm", ".pgm", ".png", ".pnm", ".ppm", ".ps", ".psd", ".pxr", ".qoi", ".ras", ".rgb", ".rgba",
        ".sgi", ".tga", ".tif", ".tiff", ".vda", ".vst", ".webp", ".wmf", ".xbm", ".xpm",
    )
)  # fmt: skip
# Ultralytics accepts normalised coordinates up to 1 % outside [0, 1] (ultralytics/data/utils.py).
_COORD_TOLERANCE = 0.01
# Far above an image file within the pixel limit (40 MP of 16-bit RGBA is 320 MB).
_MAX_IMAGE_BYTES = 1 << 30
# A COCO bbox value beyond this would not survive the float32 the ground truth is kept in (x + width too).
_MAX_COCO_VALUE = float(np.finfo(np.float32).max) / 2
_YAML_SUFFIXES = (".yaml", ".yml")


class DatasetError(HarnessError):
    """A dataset whose files or description contradict the expected layout."""


@dataclass(frozen=True)
class GroundTruth:
    """Labelled objects of one image: ``boxes`` float32 ``(N, 4)`` pixel x_min, y_min, x_max, y_max
    in the original image (EXIF orientation applied), ``class_ids`` int64 ``(N,)`` in the dataset's
    class order, ``crowd`` bool ``(N,)`` (COCO ``iscrowd``: a region that neither counts as a miss
    nor turns a detection on it into a false positive)."""

    boxes: np.ndarray
    class_ids: np.ndarray
    crowd: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # empty: no crowd regions

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, dtype=np.float32).reshape(-1, 4)
        class_ids = np.asarray(self.class_ids, dtype=np.int64).reshape(-1)
        crowd = np.asarray(self.crowd, dtype=bool).reshape(-1)
        if not len(crowd):
            crowd = np.zeros(len(boxes), bool)
        if not len(boxes) == len(class_ids) == len(crowd):
            raise ValueError(
                f"ground truth: {len(boxes)} boxes, {len(class_ids)} class ids and {len(crowd)} crowd flags must match"
            )
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "class_ids", class_ids)
        object.__setattr__(self, "crowd", crowd)

    def __len__(self) -> int:
        return len(self.class_ids)

    def mapped(self, class_map: np.ndarray) -> GroundTruth:
        """The same objects with class ids translated by ``class_map`` (dataset id -> model id); those
        of a class mapped to :data:`LEFT_OUT` left out."""
        ids = np.asarray(class_map, dtype=np.int64)[self.class_ids]
        kept = ids != LEFT_OUT
        return GroundTruth(self.boxes[kept], ids[kept], self.crowd[kept])


@dataclass(frozen=True)
class Sample:
    """One readable image: ``path`` on disk, ``image_id`` its path relative to the dataset root,
    ``sha256`` of its bytes, ``original_hw`` its (height, width) after EXIF orientation."""

    path: Path
    image_id: str
    sha256: str
    original_hw: tuple[int, int]
    ground_truth: GroundTruth


@dataclass(frozen=True)
class Unreadable:
    """An image file that PIL cannot open, and why."""

    image_id: str
    reason: str


@dataclass(frozen=True)
class Dataset:
    """What was read: the readable samples in path order, the images without a label file, the files
    that could not be read as images, and a manifest hash over all of it.

    ``manifest`` is the sha256 of the class names and, for every image file found (readable or not),
    sorted by relative path: the path, the sha256 of its bytes and the sha256 of its labels
    (label-file bytes for YOLO, the image's annotations for COCO) or ``"missing"``.
    ``labelled`` is False for a folder of images without labels (:func:`load_images`): its names
    are the model's, given when the run is prepared.
    """

    root: Path
    names: tuple[str, ...]
    samples: tuple[Sample, ...]
    missing_labels: tuple[str, ...]
    unreadable: tuple[Unreadable, ...]
    manifest: str
    labelled: bool = True
    # The shared-cache entry the set was read from (the generated demo set), named in the report.
    cache_entry: EntryUse | None = field(default=None, compare=False)

    @property
    def n_boxes(self) -> int:
        return sum(len(s.ground_truth) for s in self.samples)

    @property
    def original_hw(self) -> dict[str, tuple[int, int]]:
        """Each sample's (height, width) by image id."""
        return {s.image_id: s.original_hw for s in self.samples}

    @property
    def ground_truths(self) -> tuple[GroundTruth, ...]:
        return tuple(s.ground_truth for s in self.samples)


LEFT_OUT = -1  # a dataset class's model id where ``--map-class NAME=`` leaves its labels out of the evaluation


def class_map(
    dataset_names: Sequence[str], model_names: Sequence[str], explicit: Mapping[str, str] | None = None
) -> np.ndarray:
    """int64 ``(len(dataset_names),)``: the model class id of every dataset class, matched by name;
    :data:`LEFT_OUT` for a class whose labels are left out.

    Without ``explicit`` the two name lists must be identical, order included (a dataset with
    0 = smoke, 1 = fire against a model with 0 = fire, 1 = smoke is refused, not silently swapped).
    With ``explicit`` (``--map-class`` pairs: dataset name -> model name, ``""`` to leave the class
    out; unnamed classes keep their own name) every dataset class must land on a model class of that
    name or be left out. A pair was split at its first ``=``: where a name holds one, the split is
    read again at the ``=`` that names a dataset class on its left and a model class (or nothing)
    on its right, and refused where two would.
    """
    dataset_names, model_names = list(dataset_names), list(model_names)
    lists = f"dataset classes {dataset_names}, model classes {model_names}"
    if explicit is None:
        if dataset_names != model_names:
            raise DatasetError(f"class names: {lists}: {_class_advice(dataset_names, model_names)}")
        return np.arange(len(dataset_names), dtype=np.int64)
    pairs: dict[str, str] = {}
    for given in (f"{d}={m}" for d, m in explicit.items()):
        dataset_name, model_name = _read_pair(given, dataset_names, model_names)
        if pairs.get(dataset_name, model_name) != model_name:  # two pairs read as one class's
            raise DatasetError(
                f"--map-class {dataset_name}={pairs[dataset_name]} and --map-class {given}: dataset class "
                f"{dataset_name!r} mapped twice, expected one --map-class per dataset class"
            )
        pairs[dataset_name] = model_name
    model_index = {name: i for i, name in enumerate(model_names)}
    targets = [pairs.get(name, name) for name in dataset_names]
    absent = [f"{d!r} -> {t!r}" for d, t in zip(dataset_names, targets, strict=True) if t and t not in model_index]
    if absent:
        raise DatasetError(
            f"class map: {', '.join(absent)} name no model class; {lists}: "
            f"{_class_advice(dataset_names, model_names, pairs)}"
        )
    if all(not t for t in targets):
        raise DatasetError(f"class map: every dataset class is left out, nothing to evaluate; {lists}")
    return np.array([model_index[t] if t else LEFT_OUT for t in targets], dtype=np.int64)


def left_out(dataset: Dataset, mapping: Sequence[int]) -> tuple[tuple[str, int], ...]:
    """The dataset classes ``mapping`` (see :func:`class_map`) leaves out, each with its labels' count."""
    ids = np.asarray(mapping, dtype=np.int64)
    if not len(ids) or not (ids == LEFT_OUT).any():
        return ()
    labels = np.concatenate([np.zeros(0, np.int64), *(s.ground_truth.class_ids for s in dataset.samples)])
    counts = np.bincount(labels, minlength=len(ids))
    return tuple((dataset.names[i], int(counts[i])) for i in np.flatnonzero(ids == LEFT_OUT))


def left_out_note(dataset: Dataset, mapping: Sequence[int], shown: int = 5) -> str:
    """What a run leaves out of ``dataset``, in a line: its unreadable images (count, and the first
    ``shown`` with why) and the classes ``mapping`` leaves out (with their labels); "" for nothing."""
    parts = []
    if dataset.unreadable:
        named = "; ".join(f"{u.image_id}: {u.reason}" for u in dataset.unreadable[:shown])
        more = len(dataset.unreadable) - shown
        parts.append(
            f"{len(dataset.unreadable)} unreadable image{'s' if len(dataset.unreadable) > 1 else ''} "
            f"({named}{f'; and {more} more' if more > 0 else ''})"
        )
    parts += [
        f"the {labels} labels of class {name!r} (--map-class {shlex.quote(name + '=')})"
        for name, labels in left_out(dataset, mapping)
    ]
    return f"left out of the evaluation: {', '.join(parts)}" if parts else ""


def _read_pair(text: str, dataset_names: Sequence[str], model_names: Sequence[str]) -> tuple[str, str]:
    """``DATASET=MODEL`` (or ``DATASET=``) split at the one ``=`` that names a dataset class before it
    and a model class, or nothing, after it."""
    splits = [(text[:i], text[i + 1 :]) for i, c in enumerate(text) if c == "="]
    readings = [(d, m) for d, m in splits if d in dataset_names and (not m or m in model_names)]
    if len(readings) == 1:
        return readings[0]
    if readings:
        said = " or ".join(f"{d!r} -> {m!r}" if m else f"{d!r} left out" for d, m in readings)
        raise DatasetError(f"--map-class {text!r}: reads as {said}; rename a class so that one '=' splits it")
    known = [d for d, _ in splits if d in dataset_names]
    if known:
        return known[0], text[len(known[0]) + 1 :]  # a dataset class onto a name no model class has: said below
    raise DatasetError(f"--map-class {text!r}: names no dataset class before an '='; dataset classes {dataset_names}")


def _class_advice(
    dataset_names: Sequence[str], model_names: Sequence[str], given: Mapping[str, str] | None = None
) -> str:
    """What to give for every dataset class that names no model class: a working ``--map-class``."""
    given = given or {}
    unmatched = [d for d in dataset_names if given.get(d, d) and given.get(d, d) not in model_names]
    if not unmatched:  # every dataset class is a model class: matched by name once a map is given
        same = "the same names in another order" if sorted(dataset_names) == sorted(model_names) else "different names"
        first = shlex.quote(f"{dataset_names[0]}={dataset_names[0]}")
        return f"{same}; match them by name with --map-class {first} (the rest follow by name)"
    options = " ".join(f"--map-class {shlex.quote(d + '=')}" for d in unmatched)
    return (
        f"different names; map each dataset class the model lacks with --map-class DATASET=MODEL, or leave its "
        f"labels out with --map-class DATASET= (leaving them all out: {options})"
    )


def require_evaluable(dataset: Dataset, max_unreadable: float = defaults.MAX_UNREADABLE) -> None:
    """Refuse a dataset that would make a run check nothing or less than it says: more unreadable
    images than the share ``max_unreadable`` allows, or not one labelled object to hold a model to."""
    found = len(dataset.samples) + len(dataset.unreadable)
    if dataset.unreadable and len(dataset.unreadable) > max_unreadable * found:
        named = "; ".join(f"{u.image_id}: {u.reason}" for u in dataset.unreadable[:3])
        raise DatasetError(
            f"dataset {dataset.root}: {len(dataset.unreadable)} of {found} images cannot be read ({named}"
            f"{'; ...' if len(dataset.unreadable) > 3 else ''}), more than --max-unreadable {max_unreadable:g} allows"
        )
    if not dataset.samples:
        raise DatasetError(f"dataset {dataset.root}: no readable images")
    if not dataset.labelled:
        return
    crowd = sum(int(s.ground_truth.crowd.sum()) for s in dataset.samples)
    if crowd and crowd == dataset.n_boxes:
        raise DatasetError(
            f"dataset {dataset.root}: 0 labelled objects in {len(dataset.samples)} images, only {crowd} crowd regions "
            "(iscrowd 1: neither a hit nor a miss): nothing to hold a model to"
        )
    if not dataset.n_boxes:
        folder = _label_path(dataset.samples[0].path).parent
        raise DatasetError(
            f"dataset {dataset.root}: 0 labelled objects in {len(dataset.samples)} images "
            f"({len(dataset.missing_labels)} without a label file; labels are read from {folder} and its siblings): "
            "nothing to hold a model to"
        )


def load_yolo(
    source: str | os.PathLike[str], split: str = defaults.SPLIT, names: Sequence[str] | None = None
) -> Dataset:
    """A YOLO-layout dataset from a dataset yaml or a folder.

    - yaml (Ultralytics' ``path``/``val``/``names``): ``path`` relative to the yaml's folder
      (absent: the yaml's folder; Ultralytics itself tries the working directory first);
      ``<split>`` a folder, a ``.txt`` list of images or a list of folders, relative to ``path``
      (as in Ultralytics, a ``../``-prefixed value that does not exist is retried without it).
    - folder: images in ``images/<split>``, a flat ``images/`` folder (which has no splits), or where
      the folder's one dataset yaml puts the split; class names from ``names`` or else from that yaml.
    """
    source = Path(source)
    if source.is_file():
        if names is not None:
            raise DatasetError(f"{source}: class names come from the yaml; do not pass names as well")
        config = _read_yaml(source)
        return _read_yolo(_yaml_root(source, config), _yaml_images(source, config, split), _yaml_names(source, config))
    if not source.is_dir():
        raise DatasetError(f"{source}: no such dataset yaml or folder")
    found = sorted(p for p in source.iterdir() if p.suffix in _YAML_SUFFIXES)
    images = source / "images" / split
    if not images.is_dir():
        images = source / "images"
        if not images.is_dir():
            raise DatasetError(f"{source}: no images/{split}/ or images/ folder")
        splits = sorted(p.name for p in images.iterdir() if p.is_dir())
        if splits:  # split folders, but not this one: the folder's yaml says where the split is, or nothing does
            config = _read_yaml(found[0]) if len(found) == 1 else Fields({}, str(source))
            if not config.has(split):
                raise DatasetError(f"{source}: no images/{split}/ folder (split {split!r}); its splits are {splits}")
            return (
                load_yolo(found[0], split)
                if names is None
                else _read_yolo(_yaml_root(found[0], config), _yaml_images(found[0], config, split), tuple(names))
            )
    if names is None:
        if not found:
            labels = "" if (source / "labels").is_dir() else "no labels/ folder beside images/ and "
            raise DatasetError(
                f"{source}: {labels}no dataset yaml naming the classes ('names'): expected labels/ with YOLO label "
                f"files and one .yaml with 'names'; images alone run without labels with --images {images}"
            )
        if len(found) != 1:
            raise DatasetError(
                f"{source}: class names not given and {len(found)} yaml files found ({[p.name for p in found]}), "
                "expected exactly one with 'names'"
            )
        names = _yaml_names(found[0], _read_yaml(found[0]))
    return _read_yolo(source, _list_images(images), tuple(names))


def dataset_name(source: str | os.PathLike[str]) -> str:
    """The name a dataset's results, baselines and gates carry, without reading its images: the
    folder its samples are read from (a yaml's ``path``), as :func:`load_yolo` sets ``root``."""
    source = Path(source)
    if source.is_file():
        return _yaml_root(source, _read_yaml(source)).name
    return source.name


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
        digest, hw = _read_image(root / image_id)
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
    return Dataset(root, names, tuple(samples), (), tuple(unreadable), _manifest(names, entries))


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


def _read_yolo(root: Path, images: list[Path], names: tuple[str, ...]) -> Dataset:
    samples, missing, unreadable, entries = [], [], [], []
    for image_id, path in _by_relative(set(images), root):
        label_path = _label_path(path)
        label_bytes = _read_label(label_path)
        label_digest = "missing" if label_bytes is None else hashlib.sha256(label_bytes).hexdigest()
        digest, hw = _read_image(path)
        entries.append((image_id, digest, label_digest))
        if isinstance(hw, str):
            unreadable.append(Unreadable(image_id, hw))
            continue
        if label_bytes is None:
            missing.append(image_id)
            truth = GroundTruth(np.zeros((0, 4)), np.zeros(0))
        else:
            truth = _parse_labels(label_path, label_bytes, hw, len(names))
        samples.append(Sample(path, image_id, digest, hw, truth))
    return Dataset(root, names, tuple(samples), tuple(missing), tuple(unreadable), _manifest(names, entries))


def load_images(folder: str | os.PathLike[str]) -> Dataset:
    """A folder of images without labels (recursively): what a label-free run holds the Hailo path
    to the ONNX path on. Its class names are the model's (see :func:`with_names`)."""
    root = Path(folder)
    if not root.is_dir():
        raise DatasetError(f"--images {root}: no such folder of images")
    samples, unreadable, entries = [], [], []
    empty = GroundTruth(np.zeros((0, 4)), np.zeros(0))
    for image_id, path in _by_relative(_list_images(root), root):
        digest, hw = _read_image(path)
        entries.append((image_id, digest, "unlabelled"))
        if isinstance(hw, str):
            unreadable.append(Unreadable(image_id, hw))
        else:
            samples.append(Sample(path, image_id, digest, hw, empty))
    if not entries:
        raise DatasetError(f"--images {root}: no image files in it (or below it)")
    return Dataset(root, (), tuple(samples), (), tuple(unreadable), _manifest((), entries), labelled=False)


def _parse_labels(path: Path, data: bytes, hw: tuple[int, int], n_classes: int) -> GroundTruth:
    """YOLO label lines -> pixel xyxy boxes clipped to the image."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error}), expected YOLO label lines") from error
    rows: list[list[float]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}:{number}"
        if len(fields) != 5:
            raise DatasetError(
                f"{where}: {len(fields)} fields {line.strip()!r}, expected 5: class x_center y_center width height"
            )
        try:
            values = [float(f) for f in fields]
        except ValueError as error:
            raise DatasetError(f"{where}: {line.strip()!r} is not five numbers ({error})") from error
        class_id = values[0]
        if not class_id.is_integer() or not 0 <= class_id < n_classes:
            raise DatasetError(f"{where}: class id {fields[0]!r}, expected an integer in 0..{n_classes - 1}")
        coords = values[1:]
        if not all(math.isfinite(v) and -_COORD_TOLERANCE <= v <= 1 + _COORD_TOLERANCE for v in coords):
            raise DatasetError(
                f"{where}: box {' '.join(fields[1:])!r}, expected normalised x_center y_center width height in [0, 1]"
            )
        rows.append(values)
    table = np.array(rows, dtype=np.float64).reshape(-1, 5)
    h, w = hw
    centre, size = table[:, 1:3] * (w, h), table[:, 3:5] * (w, h)
    boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1)
    boxes = np.clip(boxes, 0, (w, h, w, h))
    return GroundTruth(boxes, table[:, 0].astype(np.int64))


def _read_image(path: Path) -> tuple[str, tuple[int, int] | str]:
    """The sha256 of the file's bytes (``"unreadable"`` if there are none to read) and the image's
    (height, width) after EXIF orientation, or the reason PIL cannot open it."""
    data = _image_bytes(path)
    if isinstance(data, str):
        return "unreadable", data
    digest = hashlib.sha256(data).hexdigest()
    if not data:
        return digest, "empty (0 bytes): no image in it"
    stream = io.BytesIO(data)
    try:
        with Image.open(stream) as image:
            width, height = image.size
            # PIL reads a PNG's EXIF after the pixel data only by decoding the whole image; a PNG
            # without EXIF ahead of its pixels is taken as upright.
            cheap_exif = image.format != "PNG" or "exif" in image.info
            orientation = image.getexif().get(_EXIF_ORIENTATION, 1) if cheap_exif else 1
            image.verify()
    except Exception as error:  # PIL raises many types for bad or unsupported files
        said = str(error).replace(repr(stream), repr(path.name))  # PIL names the stream it was given
        return digest, f"not an image PIL can read ({type(error).__name__}: {said})"
    if width * height > defaults.MAX_IMAGE_PIXELS:
        return digest, f"{width}x{height} pixels, more than the limit of {defaults.MAX_IMAGE_PIXELS:,} pixels"
    if orientation in _SWAPPING_ORIENTATIONS:
        width, height = height, width
    return digest, (height, width)


def _image_bytes(path: Path) -> bytes | str:
    """An image file's bytes, or why they are not read: a device or a pipe (which a COCO file name or
    an image list may name) is refused unread, as is a file over :data:`_MAX_IMAGE_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe without a writer: no wait
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_IMAGE_BYTES:
        os.close(fd)
        if stat.S_ISREG(status.st_mode):
            return f"{status.st_size} bytes, more than the {_MAX_IMAGE_BYTES} an image file is read up to"
        return "not a regular file (a folder, a device, a pipe or a socket)"
    with open(fd, "rb") as file:
        try:
            data = file.read(status.st_size + 1)
        except OSError as error:
            return f"cannot be read ({error.strerror or error})"
    return data if len(data) == status.st_size else "changed while it was read"


def _read_label(path: Path) -> bytes | None:
    """A label file's bytes; None where there is none (no objects). A path that exists but cannot be
    read as a file (a folder, a symlink loop, no permission) is an error, never "no objects"."""
    if not os.path.lexists(path):
        return None
    try:
        if not path.is_file():
            raise DatasetError(f"label file {path}: exists but is not a file, expected YOLO label lines or nothing")
        return path.read_bytes()
    except OSError as error:
        raise DatasetError(f"label file {path}: exists but cannot be read ({error.strerror or error})") from error


def _label_path(image: Path) -> Path:
    """Ultralytics ``img2label_paths``: the last ``/images/`` becomes ``/labels/``, the suffix ``.txt``."""
    sa, sb = f"{os.sep}images{os.sep}", f"{os.sep}labels{os.sep}"
    return Path(sb.join(str(image).rsplit(sa, 1)).rsplit(".", 1)[0] + ".txt")


def _list_images(folder: Path) -> list[Path]:
    """Entries under ``folder`` (recursively, hidden ones and folders excepted) whose suffix names an
    image format: a link to a device, a pipe or nothing is listed too, and refused as unreadable
    when read (counted against ``--max-unreadable``, never dropped unsaid)."""
    return [
        p
        for p in folder.rglob("*")
        if not p.name.startswith(".") and p.suffix.lower() in _IMAGE_SUFFIXES and not p.is_dir()
    ]


def _read_yaml(path: Path) -> Fields:
    """A dataset yaml's top level. Ultralytics' own keys the harness does not read (``train``,
    ``download``, ...) are left alone; those it reads are typed."""
    return Fields(read_yaml(path, "dataset yaml"), str(path))


def _yaml_names(path: Path, config: Fields) -> tuple[str, ...]:
    """``names``: a list of class names, or a mapping of every class index from 0 to its name."""
    names = config.raw("names", None)
    if isinstance(names, dict):
        indices = sorted(names, key=lambda k: (isinstance(k, str), str(k) if isinstance(k, str) else k))
        if not all(_is_index(k) for k in indices) or indices != list(range(len(names))):
            raise DatasetError(
                f"{path}: names keys {indices}, expected 0..{len(names) - 1} (integer class indices, each once)"
            )
        names = [names[i] for i in range(len(names))]
    if not isinstance(names, list) or not names:
        raise DatasetError(f"{path}: names {names!r:.80}, expected a list or an id -> name mapping of class names")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise DatasetError(f"{path}: names[{i}] is {name!r:.60}, expected a class name (a non-empty string)")
    count = config.integer("nc", None, lo=1)
    if count is not None and count != len(names):
        raise DatasetError(f"{path}: nc {count!r} but {len(names)} names")
    return tuple(names)


def _is_index(key: object) -> bool:
    return isinstance(key, int) and not isinstance(key, bool)


def _yaml_root(path: Path, config: Fields) -> Path:
    root = config.raw("path", None)
    if root is not None and not isinstance(root, str):
        config.fail("path", root, "the dataset's folder (a string)")
    return path.parent if not root else path.parent / root


def _yaml_images(path: Path, config: Fields, split: str) -> list[Path]:
    value = config.raw(split, None)
    if not value:
        raise DatasetError(f"{path}: no {split!r} entry, expected a folder, a .txt image list or a list of folders")
    entries = value if isinstance(value, list) else [value]
    if not all(isinstance(entry, str) and entry for entry in entries):
        config.fail(split, value, "a folder, a .txt image list or a list of folders (strings)")
    root = _yaml_root(path, config)
    images: list[Path] = []
    for entry in entries:
        target = root / entry
        if not target.exists() and entry.startswith("../"):
            target = root / entry[3:]
        if target.is_dir():
            images += _list_images(target)
        elif target.is_file() and target.suffix == ".txt":
            images += _image_list(target)
        else:
            raise DatasetError(
                f"{path}: {split} {entry!r} resolves to {target.resolve()}, which is neither a folder nor a .txt list "
                "(a folder holding images/ and labels/ can be loaded as that folder)"
            )
    return images


def _image_list(path: Path) -> list[Path]:
    """The images a ``.txt`` list names, one per line, relative to the list's folder."""
    data = read_bytes(path, "image list")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text (byte {error.start}), expected one image path per line") from None
    return [path.parent / line.strip() for line in text.splitlines() if line.strip()]


def _by_relative(paths: Iterable[Path], root: Path) -> list[tuple[str, Path]]:
    """Each path's id (its path relative to ``root``, with forward slashes) and the path, by id."""
    return sorted(((os.path.relpath(p, root).replace(os.sep, "/"), p) for p in paths), key=lambda pair: pair[0])


def _coco_value(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= _MAX_COCO_VALUE


def _manifest(names: Sequence[str], entries: list[tuple[str, str, str]]) -> str:
    """sha256 of the class names and the sorted (path, image sha256, label sha256 | "missing")."""
    payload = {"names": list(names), "files": sorted(entries)}
    return hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode()).hexdigest()
