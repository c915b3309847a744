"""A dataset's image files: listed by suffix, read (their sha256, and their size after EXIF
orientation from the header alone, or why PIL cannot open them), and hashed with their labels into
the manifest; a folder of images without labels (:func:`load_images`)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from harness.core import defaults
from harness.inputs.dataset import Dataset, DatasetError, GroundTruth, Sample, Unreadable

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
# Far above an image file within the pixel limit (40 MP of 16-bit RGBA is 320 MB).
_MAX_IMAGE_BYTES = 1 << 30


def load_images(folder: str | os.PathLike[str]) -> Dataset:
    """A folder of images without labels (recursively): what a label-free run holds the Hailo path
    to the ONNX path on. Its class names are the model's (see :func:`with_names`)."""
    root = Path(folder)
    if not root.is_dir():
        raise DatasetError(f"--images {root}: no such folder of images")
    samples, unreadable, entries = [], [], []
    empty = GroundTruth(np.zeros((0, 4)), np.zeros(0))
    for image_id, path in by_relative(list_images(root), root):
        digest, hw = read_image(path)
        entries.append((image_id, digest, "unlabelled"))
        if isinstance(hw, str):
            unreadable.append(Unreadable(image_id, hw))
        else:
            samples.append(Sample(path, image_id, digest, hw, empty))
    if not entries:
        raise DatasetError(f"--images {root}: no image files in it (or below it)")
    return Dataset(root, (), tuple(samples), (), tuple(unreadable), manifest((), entries), labelled=False)


def read_image(path: Path) -> tuple[str, tuple[int, int] | str]:
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


def list_images(folder: Path) -> list[Path]:
    """Entries under ``folder`` (recursively, hidden ones and folders excepted) whose suffix names an
    image format: a link to a device, a pipe or nothing is listed too, and refused as unreadable
    when read (counted against ``--max-unreadable``, never dropped unsaid)."""
    return [
        p
        for p in folder.rglob("*")
        if not p.name.startswith(".") and p.suffix.lower() in _IMAGE_SUFFIXES and not p.is_dir()
    ]


def by_relative(paths: Iterable[Path], root: Path) -> list[tuple[str, Path]]:
    """Each path's id (its path relative to ``root``, with forward slashes) and the path, by id."""
    return sorted(((os.path.relpath(p, root).replace(os.sep, "/"), p) for p in paths), key=lambda pair: pair[0])


def manifest(names: Sequence[str], entries: list[tuple[str, str, str]]) -> str:
    """sha256 of the class names and the sorted (path, image sha256, label sha256 | "missing")."""
    payload = {"names": list(names), "files": sorted(entries)}
    return hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode()).hexdigest()
