"""``eval``: run one path (model + backend + decoder) over a labelled dataset and print its metrics."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.core.errors import HarnessError
from harness.core.files import write_atomic
from harness.pipeline.argparse_options import add_options
from harness.pipeline.options import EVAL_OPTIONS, onnx_of, path_spec, settings_spec
from harness.pipeline.spec import Backend

if TYPE_CHECKING:
    from harness.inputs.dataset import Dataset
    from harness.verdict.result import PathResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, EVAL_OPTIONS)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--save-predictions", type=Path, metavar="P.json", help="write the predictions in the COCO results format"
    )
    cache = parser.add_mutually_exclusive_group()
    add_options(cache, ["cache"])
    cache.add_argument("--no-cache", action="store_true", help="infer every image, keep nothing")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: on a terminal, for more than 20 images)",
    )


def coco_image_id(image_id: str) -> int | str:
    """A numeric file stem as COCO's integer image id (``000000000802.jpg`` -> 802), else the dataset's id,
    as Ultralytics writes ``predictions.json`` (ultralytics: ultralytics/models/yolo/detect/val.py)."""
    stem = Path(image_id).stem
    return int(stem) if stem.isdigit() else image_id


def coco_predictions(result: PathResult) -> list[dict[str, Any]]:
    """COCO results: per detection ``image_id``, ``category_id`` (the model's class id), ``bbox``
    ``[x, y, width, height]`` in original-image pixels and ``score``."""
    rows = []
    for image_id, detections in zip(result.image_ids, result.predictions, strict=True):
        coco_id = coco_image_id(image_id)
        boxes = detections.boxes.astype(np.float64)
        xywh = np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], axis=1)
        for box, class_id, score in zip(
            xywh.tolist(), detections.class_ids.tolist(), detections.scores.tolist(), strict=True
        ):
            rows.append({"image_id": coco_id, "category_id": class_id, "bbox": box, "score": score})
    return rows


def write_json(path: Path, data: Any) -> None:
    """``data`` as JSON in ``path``, whole or not at all."""
    try:
        write_atomic(path, json.dumps(data) + "\n")
    except OSError as error:
        raise HarnessError(f"--save-predictions {os.fspath(path)!r}: cannot be written ({error.strerror})") from error


def format_result(result: PathResult, dataset: Dataset) -> str:
    s, m, b, sc = result.settings, result.metrics, result.box_counts, result.scores
    p = result.provenance
    lines = [
        f"eval {result.label}: {p.model_path} on {p.dataset} ({m.n_images} images"
        + (f", {len(dataset.unreadable)} unreadable left out" if dataset.unreadable else "")
        + ")",
        f"settings: {s.preprocess.value} {s.input_hw[0]}x{s.input_hw[1]}, {s.nms_mode.value} NMS, "
        f"score threshold {s.score_threshold:g}, IoU threshold {s.iou_threshold:g}, "
        f"max {s.max_per_class} per class / {s.max_total} total",
        f"mAP@0.5 {m.map50:.4f}   mAP@0.5:0.95 {m.map50_95:.4f}",
        f"boxes per image: mean {b.mean:.2f}, p95 {b.p95:.1f}, max {b.max} ({b.total} in all); "
        f"scores >= 0.99: {sc.saturation:.1%}"
        + (f", outside [0, 1]: {sc.below_zero + sc.above_one}" if sc.below_zero + sc.above_one else ""),
    ]
    if result.fps is not None:
        lines.append(f"throughput on the device: {result.fps:.1f} frames per second (wall time of the infer calls)")
    if result.cells is not None:
        c = result.cells
        lines.append(
            f"class cells at or above {c.threshold:g}: {c.cells_above} of {c.cells} ({c.share:.2%}), "
            f"{c.candidates} (cell, class) candidates"
        )
    lines.append(f"{'class':<20} {'gt':>5} {'pred':>6} {'AP50':>7} {'AP':>7} {'P':>6} {'R':>6}")
    for k in m.per_class:
        if k.n_ground_truth or k.n_predictions:
            ap50 = "-" if math.isnan(k.ap50) else f"{k.ap50:.3f}"
            ap = "-" if math.isnan(k.ap50_95) else f"{k.ap50_95:.3f}"
            lines.append(
                f"{k.name[:20]:<20} {k.n_ground_truth:>5} {k.n_predictions:>6} {ap50:>7} {ap:>7} "
                f"{k.precision:>6.3f} {k.recall:>6.3f}"
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from harness.pipeline.factory import (  # the evaluation, once the options hold
        evaluate_spec,
        load_dataset,
        prepare_run,
    )

    values = vars(args)
    spec = path_spec(values, single=True)  # a wrong combination of options is refused before any image is read
    onnx = onnx_of(values, hef_alone=spec.backend in (Backend.HAILORT, Backend.REPLAY))  # and missing files
    spec.check_files()
    dataset = load_dataset(args.dataset, args.split, args.cache, args.images)
    run = prepare_run(
        onnx,
        dataset,
        settings_spec(values),
        args.cache,
        use_cache=not args.no_cache,
        progress=args.progress,
        log=lambda line: print(line, file=sys.stderr),
        max_unreadable=args.max_unreadable,
        paths=(spec,),
        batch=args.batch,
    )
    part = None
    if args.shard is not None:  # this runner's share: its predictions cached and saved, the set's mAP not measured
        part = replace(run.dataset, samples=args.shard.share(run.dataset.samples))
        print(f"shard {args.shard}: {len(part.samples)} of {len(run.dataset.samples)} images", file=sys.stderr)
    result = evaluate_spec(spec, run, part)
    if args.save_predictions is not None:
        write_json(args.save_predictions, coco_predictions(result))
    from harness.verdict.result import result_json

    print(json.dumps(result_json(result), indent=2) if args.json else format_result(result, dataset))
    return 0
