"""Calibration images: which files (a folder's images by name, or a list), and their bytes for a cache key."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from harness.core import defaults
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


def calibration_shortfall(
    count: int, level: int = defaults.DFC_OPTIMIZATION_LEVEL, available: int | None = None
) -> str | None:
    """What the DFC will do with ``count`` calibration images that it does not say until its log:
    below :data:`~harness.core.defaults.DFC_FULL_OPTIMIZATION_IMAGES` it lowers optimization level
    ``level``; and what would give it enough, as the set's size allows (``available``: the images the
    calibration set holds, None where not known). None when the count is enough."""
    needed = defaults.DFC_FULL_OPTIMIZATION_IMAGES
    if count >= needed:
        return None
    if available is None or available >= needed:
        remedy = f"give --calibration-count {needed} or more images"
    else:
        larger = f"{needed} need a larger set (--calibration DIR)"
        taken = "this set holds no more" if available <= count else f"--calibration-count {available} takes all of it"
        remedy = f"{taken}; {larger}"
    return (
        f"{count} calibration images, below the {needed} the Dataflow Compiler wants for optimization level "
        f"{level}: it lowers the level and says so only in its log, so the quantization is optimized less "
        f"(scores and boxes may drift from the float model); {remedy}"
    )
