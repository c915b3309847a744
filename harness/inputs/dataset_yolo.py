"""A YOLO-layout dataset (Ultralytics, ultralytics/data/utils.py ``check_det_dataset``,
``img2label_paths``, ``verify_image_label``): a dataset yaml or folder, its label files beside
its images."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.core import defaults
from harness.core.documents import Fields, read_bytes, read_yaml
from harness.inputs.dataset import Dataset, DatasetError, GroundTruth, Sample, Unreadable, label_file
from harness.inputs.dataset_images import by_relative, list_images, manifest, read_image

# Ultralytics accepts normalised coordinates up to 1 % outside [0, 1] (ultralytics/data/utils.py).
_COORD_TOLERANCE = 0.01
_YAML_SUFFIXES = (".yaml", ".yml")


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
    return _read_yolo(source, list_images(images), tuple(names))


def dataset_name(source: str | os.PathLike[str]) -> str:
    """The name a dataset's results, baselines and gates carry, without reading its images: the
    folder its samples are read from (a yaml's ``path``), as :func:`load_yolo` sets ``root``."""
    source = Path(source)
    if source.is_file():
        return _yaml_root(source, _read_yaml(source)).name
    return source.name


def _read_yolo(root: Path, images: list[Path], names: tuple[str, ...]) -> Dataset:
    samples, missing, unreadable, entries = [], [], [], []
    for image_id, path in by_relative(set(images), root):
        label_path = label_file(path)
        label_bytes = _read_label(label_path)
        label_digest = "missing" if label_bytes is None else hashlib.sha256(label_bytes).hexdigest()
        digest, hw = read_image(path)
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
    return Dataset(root, names, tuple(samples), tuple(missing), tuple(unreadable), manifest(names, entries))


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
            images += list_images(target)
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
