"""Benchmark: COCO box mAP by the harness against pycocotools and faster-coco-eval on the same sets.

    python -m tools.bench_coco [--sizes 500 2000] [--classes 2 80] [--repeats 3] [--seed S] [--write-figures]

faster-coco-eval (C++) is not a dependency of the harness; install it into the environment for this
benchmark alone (``.venv/bin/pip install faster-coco-eval``); without it its columns read "-".

Each set is random and realistic: ~5 ground-truth boxes per image (Poisson) in a 640x640 frame, 1 %
of them crowd regions; per box 0 to 3 detections jittered by ~8 % of its size (one in ten of another
class), plus false positives up to ~30 detections per image; float32 scores. Timed, best of
``--repeats``:

- harness: :func:`harness.verdict.metrics.coco.evaluate` from the harness's own arrays (matching,
  accumulation, per-class metrics);
- pycocotools and faster-coco-eval: ``evaluate()`` + ``accumulate()`` + ``summarize()`` on in-memory
  datasets indexed beforehand (building the annotation dicts, "to dicts", is timed apart; neither
  it nor the index is in their columns).

mAP@0.5 and mAP@0.5:0.95 are compared with pycocotools' as floats: the harness must equal them
(``==``); faster-coco-eval sums its precision cells in another order and may differ in the last
bits, which is printed. The tool exits 1 if the harness differs at all or faster-coco-eval by more
than 1e-12. A benchmark, not a test. ``--write-figures`` writes the seconds and whether the mAPs are equal
to ``docs/figures/coco.json``, where the documentation reads them (``tools/docs_figures.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from harness.core.detections import Detections
from harness.inputs.dataset import GroundTruth
from harness.verdict.metrics.coco import evaluate

FRAME = 640.0


def random_set(n_images: int, n_classes: int, seed: int) -> tuple[list[GroundTruth], list[Detections]]:
    """Ground truth and detections of ``n_images`` images, as described in the module docstring."""
    rng = np.random.default_rng(seed)
    truths, predictions = [], []
    for _ in range(n_images):
        m = int(rng.poisson(5))
        corner = rng.uniform(0, FRAME - 20, (m, 2))
        size = rng.uniform(10, 200, (m, 2))
        boxes = np.concatenate([corner, np.minimum(corner + size, FRAME)], axis=1)
        classes = rng.integers(0, n_classes, m)
        truths.append(GroundTruth(boxes, classes, rng.random(m) < 0.01))
        copies = rng.integers(0, 4, m)
        source = np.repeat(np.arange(m), copies)
        scale = np.tile(boxes[source, 2:] - boxes[source, :2], 2)
        found = boxes[source] + rng.normal(0, 0.08, scale.shape) * scale
        found_classes = np.where(
            rng.random(len(source)) < 0.1, rng.integers(0, n_classes, len(source)), classes[source]
        )
        n_false = max(0, int(rng.poisson(30)) - len(source))
        false_corner = rng.uniform(0, FRAME - 20, (n_false, 2))
        false_boxes = np.concatenate([false_corner, false_corner + rng.uniform(8, 150, (n_false, 2))], axis=1)
        predictions.append(
            Detections(
                np.concatenate([found, false_boxes]),
                np.concatenate([rng.uniform(0.3, 1.0, len(source)), rng.uniform(0.0, 0.7, n_false)]),
                np.concatenate([found_classes, rng.integers(0, n_classes, n_false)]),
            )
        )
    return truths, predictions


def coco_dicts(
    truths: list[GroundTruth], predictions: list[Detections], n_classes: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sets as COCO datasets: xywh float64 boxes as the harness converts them, ids from 1."""
    images = [{"id": i + 1} for i in range(len(truths))]
    categories = [{"id": k + 1, "name": str(k)} for k in range(n_classes)]
    gt: list[dict[str, Any]] = []
    dt: list[dict[str, Any]] = []
    for i, (t, p) in enumerate(zip(truths, predictions, strict=True)):
        for b, c, crowd in zip(_xywh(t.boxes), t.class_ids.tolist(), t.crowd.tolist(), strict=True):
            gt.append({"id": len(gt) + 1, "image_id": i + 1, "category_id": c + 1, "bbox": b,
                       "area": b[2] * b[3], "iscrowd": int(crowd)})  # fmt: skip
        for b, c, s in zip(_xywh(p.boxes), p.class_ids.tolist(), p.scores.tolist(), strict=True):
            dt.append({"id": len(dt) + 1, "image_id": i + 1, "category_id": c + 1, "bbox": b,
                       "area": b[2] * b[3], "score": s})  # fmt: skip
    return (
        {"images": images, "categories": categories, "annotations": gt},
        {"images": images, "categories": categories, "annotations": dt},
    )


def _xywh(boxes: np.ndarray) -> list[list[float]]:
    b = boxes.astype(np.float64)
    return np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], axis=1).tolist()


def indexed(coco_class: Any, dataset: dict[str, Any]) -> Any:
    """A pycocotools-compatible ``COCO`` holding ``dataset``, its index built."""
    coco = coco_class()
    coco.dataset = dict(dataset)
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def cocoeval_stats(eval_class: Any, coco_gt: Any, coco_dt: Any) -> tuple[float, float]:
    """(mAP@0.5, mAP@0.5:0.95) of ``evaluate()`` + ``accumulate()`` + ``summarize()``, default parameters."""
    with contextlib.redirect_stdout(io.StringIO()):
        e = eval_class(coco_gt, coco_dt, iouType="bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    return float(e.stats[1]), float(e.stats[0])


def best_time(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--classes", type=int, nargs="+", default=[2, 80])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-figures", action="store_true", help="write docs/figures/coco.json")
    args = parser.parse_args()
    figures: dict[str, Any] = {"repeats": args.repeats}

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    contenders: dict[str, tuple[Any, Any]] = {"pycocotools": (COCO, COCOeval)}
    try:
        from faster_coco_eval import COCO as FasterCOCO
        from faster_coco_eval import COCOeval_faster
    except ImportError:
        print("faster-coco-eval not installed: .venv/bin/pip install faster-coco-eval")
    else:
        contenders["faster-coco-eval"] = (FasterCOCO, COCOeval_faster)

    header = f"{'images':>6} {'classes':>7} {'boxes':>6} {'dets':>7} {'to dicts':>9}"
    header += "".join(f" {name:>16}" for name in ("harness", "pycocotools", "faster-coco-eval"))
    print(f"seconds, best of {args.repeats}; mAP50 and mAP50-95 equal pycocotools' (==) unless listed below")
    print(header)
    report: list[str] = []
    failed = False
    for n_images in args.sizes:
        for n_classes in args.classes:
            truths, predictions = random_set(n_images, n_classes, args.seed)
            names = [str(k) for k in range(n_classes)]
            own_s, metrics = best_time(functools.partial(evaluate, truths, predictions, names), args.repeats)
            maps = {"harness": (metrics.map50, metrics.map50_95)}
            start = time.perf_counter()
            gt, dt = coco_dicts(truths, predictions, n_classes)
            dicts_s = time.perf_counter() - start
            seconds = {"harness": own_s}
            for name, (coco_class, eval_class) in contenders.items():
                coco_gt, coco_dt = indexed(coco_class, gt), indexed(coco_class, dt)
                seconds[name], maps[name] = best_time(
                    functools.partial(cocoeval_stats, eval_class, coco_gt, coco_dt), args.repeats
                )
            row = f"{n_images:>6} {n_classes:>7} {sum(map(len, truths)):>6} {sum(map(len, predictions)):>7}"
            row += f" {dicts_s:>9.3f}"
            row += "".join(
                f" {seconds[name]:>16.3f}" if name in seconds else f" {'-':>16}"
                for name in ("harness", "pycocotools", "faster-coco-eval")
            )
            print(row + f"   mAP50 {maps['harness'][0]:.6f}  mAP50-95 {maps['harness'][1]:.6f}")
            figures[f"images_{n_images}_classes_{n_classes}"] = {
                "boxes": sum(map(len, truths)),
                "seconds": {name.replace("-", "_"): round(value, 4) for name, value in seconds.items()},
                "equal_to_pycocotools": maps["harness"] == maps["pycocotools"],
                "pycocotools_over_harness": round(seconds["pycocotools"] / seconds["harness"], 1),
            }
            for name, (map50, map50_95) in maps.items():
                difference = max(abs(map50 - maps["pycocotools"][0]), abs(map50_95 - maps["pycocotools"][1]))
                if difference:
                    report.append(f"{n_images} images, {n_classes} classes: {name} differs from pycocotools by "
                                  f"{difference:.1e} (mAP50 {map50!r}, mAP50-95 {map50_95!r})")  # fmt: skip
                failed = failed or (name == "harness" and difference > 0) or difference > 1e-12
    for line in report:
        print(line)
    if args.write_figures and not failed:
        from tools.docs_figures import write_figures

        size = f"{', '.join(map(str, args.sizes))} images of {' and '.join(map(str, args.classes))} classes"
        print(f"wrote {write_figures('coco', figures, 'python -m tools.bench_coco', size).name}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
