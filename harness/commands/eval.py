"""``eval``: run one path (model + backend + decoder) over a labelled dataset and print its metrics."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from harness.backends.dfc import EmulationStage, HarRunner, check_compiled_thresholds
from harness.backends.hailort import OUTPUT_FORMATS, HailoRTRunner
from harness.cache import DEFAULT_ROOT, PredictionCache
from harness.data.dataset import Dataset, class_map, load_yolo
from harness.decode.config import NmsMode
from harness.detect import (
    DFC_FP_OPTIMIZED,
    DFC_QUANTIZED,
    EMULATED_HAILO,
    HAILO,
    DetectionPath,
    OnnxPath,
    onnx_class_names,
    runner_path,
)
from harness.errors import HarnessError
from harness.evaluate import evaluate_path
from harness.onnx_graph import load_model, model_input
from harness.result import PathResult
from harness.settings import EvalSettings, Preprocess

HELP = (
    "run a model through one backend over a labelled YOLO dataset and report COCO mAP, box counts and "
    "score distribution (predictions cached per image, so an interrupted run resumes)"
)

BACKENDS = ("onnx", "emulator", "hailort", "dfc")
STAGE_PATHS = {EmulationStage.FP_OPTIMIZED: DFC_FP_OPTIMIZED, EmulationStage.QUANTIZED: DFC_QUANTIZED}
_DEFAULTS = EvalSettings(input_hw=(640, 640))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--onnx", type=Path, metavar="M.onnx", help="Ultralytics detect export (names the classes)")
    parser.add_argument("--hef", type=Path, metavar="M.hef", help="compiled HEF (runs on a Hailo device)")
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help="onnx: the full export with onnxruntime (default for --onnx); emulator: the export quantized "
        "into an emulated HEF on the CPU; hailort: a Hailo device (default for --hef); dfc: an optimized HAR "
        "in the Dataflow Compiler's emulator (default for --har)",
    )
    parser.add_argument("--dataset", required=True, type=Path, metavar="D", help="YOLO dataset yaml or folder")
    parser.add_argument("--split", default="val", help="dataset split (default: val)")
    parser.add_argument("--score-threshold", type=float, default=_DEFAULTS.score_threshold)
    parser.add_argument("--iou-threshold", type=float, default=_DEFAULTS.iou_threshold)
    parser.add_argument("--max-per-class", type=int, default=_DEFAULTS.max_per_class)
    parser.add_argument("--max-total", type=int, default=_DEFAULTS.max_total)
    parser.add_argument(
        "--nms", choices=[m.value for m in NmsMode], default=_DEFAULTS.nms_mode.value, help="NMS semantics"
    )
    parser.add_argument(
        "--preprocess", choices=[p.value for p in Preprocess], default=_DEFAULTS.preprocess.value, help="image fit"
    )
    parser.add_argument(
        "--map-class",
        action="append",
        default=[],
        metavar="DATASET=MODEL",
        help="map a dataset class name to a model class name (repeatable); without it the names must be equal",
    )
    emulator = parser.add_argument_group("emulator backend")
    emulator.add_argument("--calibration", type=Path, metavar="DIR", help="calibration images for quantization")
    emulator.add_argument(
        "--calibration-count", type=int, metavar="N", help="calibration images used (default: the emulator's, 64)"
    )
    emulator.add_argument("--sigmoid-inside", action="store_true", help="sigmoid after the class convs, as compiled")
    emulator.add_argument(
        "--hef-nms", action="store_true", help="HailoRT's NMS op inside (NMS_BY_CLASS output) at these thresholds"
    )
    device = parser.add_argument_group("hailort backend")
    device.add_argument(
        "--hailo-device",
        action="append",
        default=[],
        metavar="ID",
        help="HailoRT device id, e.g. 0000:01:00.0 (repeatable: several make one virtual device; default: any free)",
    )
    device.add_argument(
        "--hailo-format",
        choices=OUTPUT_FORMATS,
        default="float32",
        help="output type asked of HailoRT: float32 (HailoRT dequantizes; default) or uint8 (the device's own "
        "type, dequantized by the harness from the HEF's quant infos)",
    )
    dfc = parser.add_argument_group("dfc backend")
    dfc.add_argument("--har", type=Path, metavar="M.har", help="optimized HAR (hailo-harness compile writes one)")
    dfc.add_argument(
        "--stage",
        choices=[s.value for s in EmulationStage],
        default=EmulationStage.QUANTIZED.value,
        help="the emulator's context: fp_optimized (float, with the model script) or quantized (default)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--save-predictions", type=Path, metavar="P.json", help="write the predictions in the COCO results format"
    )
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache", type=Path, metavar="DIR", help=f"prediction cache folder (default {DEFAULT_ROOT}/)")
    cache.add_argument("--no-cache", action="store_true", help="infer every image, keep nothing")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: on a terminal, for more than 20 images)",
    )


def explicit_map(pairs: list[str]) -> dict[str, str] | None:
    """``["smoke=Smoke", ...]`` -> ``{"smoke": "Smoke"}``; None when nothing is mapped."""
    if not pairs:
        return None
    mapping = {}
    for pair in pairs:
        dataset_name, sep, model_name = pair.partition("=")
        if not sep or not dataset_name or not model_name:
            raise HarnessError(f"--map-class {pair!r}: expected DATASET_NAME=MODEL_NAME")
        mapping[dataset_name] = model_name
    return mapping


def _settings(args: argparse.Namespace, input_hw: tuple[int, int], mapping: tuple[int, ...]) -> EvalSettings:
    return EvalSettings(
        input_hw=input_hw,
        score_threshold=args.score_threshold,
        iou_threshold=args.iou_threshold,
        max_per_class=args.max_per_class,
        max_total=args.max_total,
        nms_mode=NmsMode(args.nms),
        preprocess=Preprocess(args.preprocess),
        class_map=mapping,
    )


def backend_of(args: argparse.Namespace) -> str:
    """The backend asked for (or implied by --hef / --har); options of another backend are refused."""
    backend: str = args.backend or ("hailort" if args.hef is not None else "dfc" if args.har is not None else "onnx")
    if args.hailo_device and backend != "hailort":
        raise HarnessError(f"--hailo-device belongs to --backend hailort, not --backend {backend}")
    if args.har is not None and backend != "dfc":
        raise HarnessError(f"--har belongs to --backend dfc, not --backend {backend}")
    if backend == "hailort" and args.hef is None:
        raise HarnessError("--backend hailort: needs --hef M.hef (the compiled model to run on the device)")
    if backend == "dfc" and args.har is None:
        raise HarnessError("--backend dfc: needs --har M.har (the optimized HAR to emulate)")
    return backend


@contextmanager
def open_path(args: argparse.Namespace, dataset: Dataset) -> Iterator[DetectionPath]:
    """The path the arguments name, with the class map by name settled; closed afterwards."""
    backend = backend_of(args)
    if args.onnx is None:
        # The HEF carries no class names: the export's metadata gives them, and the class map by name.
        raise HarnessError(f"--backend {backend}: needs --onnx M.onnx (the model's export, for its class names)")
    model = load_model(args.onnx)
    _, input_hw = model_input(model)
    names = onnx_class_names(model, str(args.onnx))
    if names is None:
        raise HarnessError(f"--onnx {str(args.onnx)!r}: no class names in its metadata ('names'), expected an export")
    settings = _settings(
        args, input_hw, tuple(int(i) for i in class_map(dataset.names, names, explicit_map(args.map_class)))
    )
    with ExitStack() as stack:
        if backend == "hailort":
            yield _device_path(args, settings, names, stack)
            return
        if backend == "dfc":
            yield _dfc_path(args, settings, names, stack)
            return
        if backend == "onnx":
            if args.calibration is not None or args.sigmoid_inside or args.hef_nms:
                raise HarnessError("--calibration, --sigmoid-inside and --hef-nms belong to --backend emulator")
            yield stack.enter_context(OnnxPath(args.onnx, settings, names))
            return
        yield _emulated_path(args, settings, names, stack)


def _device_path(
    args: argparse.Namespace, settings: EvalSettings, names: tuple[str, ...], stack: ExitStack
) -> DetectionPath:
    format_type = OUTPUT_FORMATS[args.hailo_format]
    runner = stack.enter_context(HailoRTRunner(args.hef, format_type=format_type, device_ids=args.hailo_device or None))
    return runner_path(runner, settings, args.hef, HAILO, names, variant=args.hailo_format)


def _dfc_path(
    args: argparse.Namespace, settings: EvalSettings, names: tuple[str, ...], stack: ExitStack
) -> DetectionPath:
    check_compiled_thresholds(args.har, settings.score_threshold, settings.iou_threshold)
    stage = EmulationStage(args.stage)
    runner = stack.enter_context(HarRunner(args.har, stage, settings.input_hw))
    return runner_path(runner, settings, args.har, STAGE_PATHS[stage], names)


def _emulated_path(
    args: argparse.Namespace, settings: EvalSettings, names: tuple[str, ...], stack: ExitStack
) -> DetectionPath:
    from harness.backends.emulator import EmulatorOptions, EmulatorRunner, build_emulated_hef

    if args.calibration is None:
        raise HarnessError("--backend emulator: needs --calibration DIR (images to quantize the model on)")
    count = EmulatorOptions.calibration_count if args.calibration_count is None else args.calibration_count
    options = EmulatorOptions(
        calibration_count=count,
        sigmoid_inside=args.sigmoid_inside,
        nms=args.hef_nms,
        score_threshold=settings.score_threshold,
        iou_threshold=settings.iou_threshold,
        max_proposals_per_class=settings.max_per_class,
    )
    hef = build_emulated_hef(args.onnx, args.calibration, options, cache_dir=(args.cache or DEFAULT_ROOT) / "emulator")
    runner = stack.enter_context(EmulatorRunner(hef))
    return runner_path(runner, settings, args.onnx, EMULATED_HAILO, names, variant=hef.content_hash)


def _finite(value: Any) -> Any:
    """NaN and infinities -> None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def result_as_dict(result: PathResult) -> dict[str, Any]:
    """Everything but the predictions, JSON-ready (NaN as null)."""
    data = {
        "path": result.path,
        "label": result.label,
        "emulated": result.emulated,
        "fps": result.fps,
        "settings": result.settings.to_dict(),
        "provenance": {**dataclasses.asdict(result.provenance), "environment": dict(result.provenance.environment)},
        "n_images": len(result.image_ids),
        "metrics": dataclasses.asdict(result.metrics),
        "box_counts": dataclasses.asdict(result.box_counts),
        "scores": dataclasses.asdict(result.scores),
        "cells": None if result.cells is None else {**dataclasses.asdict(result.cells), "share": result.cells.share},
    }
    return _finite(data)


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
    try:
        path.write_text(json.dumps(data) + "\n", encoding="utf-8")
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
    backend_of(args)  # a wrong combination of options is refused before any image is read
    dataset = load_yolo(args.dataset, args.split)
    cache = None if args.no_cache else PredictionCache(args.cache or DEFAULT_ROOT)
    with open_path(args, dataset) as path:
        result = evaluate_path(path, dataset, cache, args.progress, sys.stderr)
    if args.save_predictions is not None:
        write_json(args.save_predictions, coco_predictions(result))
    print(json.dumps(result_as_dict(result), indent=2) if args.json else format_result(result, dataset))
    return 0
