"""Image sets the benchmarks measure on, made from the fixtures and never downloaded: the fire/smoke
frames (``HARNESS_FIXTURES``) repeated to any count, each copy a link under a name of its own with its
label file beside it, in a YOLO layout under a folder the caller owns."""

from __future__ import annotations

import os
from pathlib import Path

from harness.inputs.dataset import Dataset
from harness.inputs.dataset_yolo import load_yolo

FIXTURES = Path(os.environ.get("HARNESS_FIXTURES", Path(__file__).resolve().parents[2] / "shared" / "fixtures"))
FIRE_SMOKE = FIXTURES / "datasets" / "fire_smoke_val"


def repeated(count: int, folder: Path, source: Path = FIRE_SMOKE) -> Dataset:
    """``source``'s labelled images linked under ``folder`` (made here) until there are ``count``, in order."""
    found, folder = load_yolo(source), folder.resolve()
    images, labels = folder / "images" / "val", folder / "labels" / "val"
    images.mkdir(parents=True)
    labels.mkdir(parents=True)
    for i in range(count):
        real = found.samples[i % len(found.samples)].path.resolve()
        (images / f"{i:05d}_{real.name}").symlink_to(real)
        label = Path("/labels/".join(str(real).rsplit("/images/", 1))).with_suffix(".txt")
        if label.is_file():
            (labels / f"{i:05d}_{real.stem}.txt").symlink_to(label)
    names = "".join(f"  {i}: {n}\n" for i, n in enumerate(found.names))
    (folder / "data.yaml").write_text(f"path: {folder}\nval: images/val\nnames:\n{names}")
    return load_yolo(folder / "data.yaml")
