"""Calibration images: which files (a folder's images by name, a list file, or a list of paths), and their bytes
for a cache key."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from harness.core import defaults
from harness.core.errors import HarnessError
from harness.core.files import write_atomic

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})

CalibrationSource = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
# A list file: one image path a line, relative to the file's folder (blank lines and lines starting with # skipped).
LIST_SUFFIX = ".txt"


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
    """Every image of a folder (its image files, sorted by name), of a list file or of a list of paths, and where
    they are."""
    if isinstance(source, (str, os.PathLike)):
        folder = Path(source)
        if folder.suffix.lower() == LIST_SUFFIX and folder.is_file():
            return list_file(folder), f"list {os.fspath(folder)!r}"
        if not folder.is_dir():
            raise HarnessError(
                f"calibration images {os.fspath(folder)!r}: not a folder, "
                "expected a folder, a list file (*.txt) or a list"
            )
        paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
        where = f"folder {os.fspath(folder)!r}"
    else:
        paths = [Path(p) for p in source]
        where = "list"
        missing = [os.fspath(p) for p in paths if not p.is_file()]
        if missing:
            raise HarnessError(f"calibration images: files {missing[:5]} of the list do not exist")
    return paths, where


def list_file(file: Path) -> list[Path]:
    """The images a list file names, in its order; refused in one line naming the file, the line and what was
    expected where a line names no image file."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessError(f"calibration list {os.fspath(file)!r}: cannot be read ({error})") from None
    paths = []
    for number, line in enumerate(text.splitlines(), 1):
        name = line.strip()
        if not name or name.startswith("#"):
            continue
        path = file.parent / name
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            raise HarnessError(
                f"calibration list {os.fspath(file)!r}, line {number}: {name!r}; expected the path of an image file "
                f"({', '.join(sorted(IMAGE_SUFFIXES))}), relative to the list's folder"
            )
        paths.append(path)
    return paths


def write_list_file(file: Path, paths: Sequence[Path]) -> None:
    """``paths`` as a list file at ``file`` (each path relative to its folder where it lies below it), written
    whole (a temporary file renamed into place)."""
    here = file.parent.resolve()
    lines = []
    for path in paths:
        absolute = path.resolve()
        lines.append(os.fspath(absolute.relative_to(here) if absolute.is_relative_to(here) else absolute))
    write_atomic(file, "".join(f"{line}\n" for line in lines))


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
