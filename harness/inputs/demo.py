"""The shipped default: the demo model and its synthetic fire/smoke set (val and both calibration
splits), generated once into the cache, deterministically (harness/data/demo/MODEL_CARD.md: seed 0).

The model and its baselines ship inside the package (package data); everything a run writes goes to
the user's project, never to the install."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from harness.core.confine import check
from harness.core.files import shared_cache

PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"
DEMO_ONNX = PACKAGE_DATA / "demo" / "fire_smoke_yolo11n_256.onnx"
DEMO26_ONNX = PACKAGE_DATA / "demo" / "fire_smoke_yolo26n_256.onnx"  # YOLO26n, the one-to-one head end to end
# The demo's baselines as shipped: read where a project has not blessed its own (never written).
SHIPPED_GOLDEN = PACKAGE_DATA / "golden"
DEMO_SEED = 0
DEMO_DATASET_NAME = f"synthetic_fire_smoke_seed{DEMO_SEED}"
# The demo set's calibration splits, by name: frames of the classes, and frames that show none of them.
IN_DOMAIN, OFF_DOMAIN = "in-domain", "off-domain"
_SPLITS = {IN_DOMAIN: "calib", OFF_DOMAIN: "calib_offdomain"}


def demo_root(cache_dir: Path) -> Path:
    """Where the demo set lies: ``demo-data/`` in the shared cache (:func:`~harness.core.files.shared_cache`:
    ``cache_dir`` unless one is named); nothing is generated."""
    return shared_cache(cache_dir) / "demo-data" / DEMO_DATASET_NAME


def demo_data(cache_dir: Path, log: Callable[[str], None] | None = None) -> Path:
    """The demo set's folder, generated when first asked for (``log`` is told): into a folder of its
    own, renamed into place whole, so that a reader (another process sharing the cache included) sees
    the whole set or none."""
    out = demo_root(cache_dir)
    if not (out / ".complete").exists():
        import shutil

        from harness.inputs.synthetic import Recipe, write_dataset  # the generator, when the set is missing

        recipe = Recipe(seed=DEMO_SEED, train=0, val=100, calib=64, offdomain_calib=64, imgsz=256)
        if log is not None:
            total = recipe.val + recipe.calib + recipe.offdomain_calib
            log(f"demo set: generating {total} images (seed {DEMO_SEED}, once) into {out}")
        start = time.monotonic()
        check(out, "generating the demo set")
        making = out.with_name(f".{out.name}.{os.getpid()}.making")
        shutil.rmtree(making, ignore_errors=True)
        write_dataset(making, recipe)
        (making / ".complete").touch()
        try:
            if out.exists() and not (out / ".complete").exists():
                shutil.rmtree(out)  # a set left half-written by an older harness
            os.rename(making, out)
        except OSError:
            if not (out / ".complete").exists():  # not another process's whole set: a real failure
                raise
        finally:
            shutil.rmtree(making, ignore_errors=True)
        if log is not None:
            log(f"demo set: written in {time.monotonic() - start:.1f} s")
    return out


def demo_split(cache_dir: Path, which: str) -> Path:
    """The demo set's in-domain or off-domain calibration folder."""
    return demo_data(cache_dir) / "images" / _SPLITS[which]
