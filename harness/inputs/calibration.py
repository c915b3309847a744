"""Calibration images: which files (a folder's images by name, or a list), and their bytes for a cache key."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from harness.core.errors import HarnessError

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})

CalibrationSource = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def calibration_paths(source: CalibrationSource, count: int) -> tuple[Path, ...]:
    """The first ``count`` images of a folder (its image files, sorted by name) or of a list of paths."""
    paths, where = _listed(source)
    if len(paths) < count:
        raise HarnessError(
            f"calibration images ({where}): {len(paths)} images, expected at least {count} "
            "(--calibration-count N asks for fewer)"
        )
    return tuple(paths[:count])


def calibration_size(source: CalibrationSource) -> int:
    """How many images the calibration set holds: the most ``--calibration-count`` can take of it."""
    return len(_listed(source)[0])


def _listed(source: CalibrationSource) -> tuple[list[Path], str]:
    """Every image of a folder (its image files, sorted by name) or of a list of paths, and where they are."""
    if isinstance(source, (str, os.PathLike)):
        folder = Path(source)
        if not folder.is_dir():
            raise HarnessError(f"calibration images {os.fspath(folder)!r}: not a folder, expected a folder or a list")
        paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
        where = f"folder {os.fspath(folder)!r}"
    else:
        paths = [Path(p) for p in source]
        where = "list"
        missing = [os.fspath(p) for p in paths if not p.is_file()]
        if missing:
            raise HarnessError(f"calibration images: files {missing[:5]} of the list do not exist")
    return paths, where


def images_digest(paths: Sequence[Path]) -> str:
    """sha256 over the images' bytes, in order (each prefixed by its length)."""
    digest = hashlib.sha256()
    for path in paths:
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()
