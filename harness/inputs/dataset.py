"""Labelled datasets: YOLO-layout folders and yamls, COCO JSON files, and the manifest of what was read.

YOLO layout (Ultralytics, ultralytics/data/utils.py ``check_det_dataset``, ``img2label_paths``,
``verify_image_label``): a label file sits where its image does, with the last ``/images/`` of the
path replaced by ``/labels/`` and the suffix by ``.txt``; one object per line,
``class x_center y_center width height`` normalised to the image as it appears after its EXIF
orientation is applied. A missing label file means the image shows no object.

Every image PIL can open counts, whatever its name says (a ``.jpg`` may hold PNG or GIF bytes); an
image that cannot be opened is kept out of the samples and recorded by name in
:attr:`Dataset.unreadable`. Sizes come from the image header: nothing is decoded.

What a dataset is, and how its classes meet the model's, are here; its readers beside it:
:mod:`harness.inputs.dataset_yolo` (:func:`~harness.inputs.dataset_yolo.load_yolo`, folders and yamls),
:mod:`harness.inputs.dataset_coco` (:func:`~harness.inputs.dataset_coco.load_coco`) and
:mod:`harness.inputs.dataset_images` (image files read, listed and hashed into the manifest;
:func:`~harness.inputs.dataset_images.load_images`, a folder without labels).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.core import defaults
from harness.core.errors import HarnessError
from harness.core.shared_entry import EntryUse


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
        folder = label_file(dataset.samples[0].path).parent
        raise DatasetError(
            f"dataset {dataset.root}: 0 labelled objects in {len(dataset.samples)} images "
            f"({len(dataset.missing_labels)} without a label file; labels are read from {folder} and its siblings): "
            "nothing to hold a model to"
        )


def label_file(image: Path) -> Path:
    """Ultralytics ``img2label_paths``: the last ``/images/`` becomes ``/labels/``, the suffix ``.txt``."""
    sa, sb = f"{os.sep}images{os.sep}", f"{os.sep}labels{os.sep}"
    return Path(sb.join(str(image).rsplit(sa, 1)).rsplit(".", 1)[0] + ".txt")
