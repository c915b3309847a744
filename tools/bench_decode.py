"""Benchmark: milliseconds per frame to decode and NMS one 640x640 YOLOv8/YOLO11 frame from its six
raw head outputs (grids 80/40/20, reg_max 16), for 2 and 80 classes, from FLOAT32 outputs (class
logits) and from UINT8 outputs with quant infos (sigmoid compiled in, as a Hailo HEF delivers them).

    python -m tools.bench_decode [--repeat N] [--seed S]

Three decoders, all at score threshold 0.2, IoU 0.7, per class NMS:

- fast: :func:`harness.families.yolov8.decode.decode`, HailoRT and Ultralytics NMS modes; beside it the YOLO26
  decoders (:mod:`harness.families.yolo26.decode`) on the same frame with box maps of the 4 distances themselves
  (reg_max 1): the one-to-one head (top-k, no NMS) and the one-to-many head (NMS);
- reference: :mod:`reference.decode`, plain loops (HailoRT mode);
- naive: a per-cell Python loop like a typical hand-written host decoder (defined here only, for
  comparison): loop over the 8400 cells, DFL per cell, sigmoid, threshold, then a simple NMS.

Two scenes: "typical" (a dozen objects, most class logits low, so few candidates pass) and
"crowded" (a worst case with thousands of candidates). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.dfl import decode_candidates
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolov8.decode import decode
from harness.formats.quant import quantize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the loop references: tests/support/reference
from support.reference.decode import ReferenceHead, reference_candidates, reference_nms_hailort

INPUT = 640
STRIDES = (8, 16, 32)
REG_MAX = 16
SCENES = {"typical": (12, 3, 1), "crowded": (90, 5, 2)}  # objects, blob size in cells, classes per object


def _box_logits(rng: np.random.Generator, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """Peaked DFL bins around a random distance per side, as trained heads give, and those distances
    (a YOLO26 box map, reg_max 1)."""
    target = rng.uniform(0.5, 6.0, (grid, grid, 4, 1))
    bins = np.arange(REG_MAX)
    logits = -2.0 * (bins - target) ** 2 + rng.normal(0, 0.3, (grid, grid, 4, REG_MAX))
    return logits.reshape(grid, grid, 4 * REG_MAX).astype(np.float32), target[..., 0].astype(np.float32)


def _class_logits(rng: np.random.Generator, grid: int, nc: int, scene: str) -> np.ndarray:
    objects, blob, classes_per_object = SCENES[scene]
    logits = rng.normal(-9.0, 1.2, (grid, grid, nc))
    for _ in range(objects // len(STRIDES)):
        row, col = rng.integers(0, grid - blob, 2)
        for k in rng.choice(nc, size=min(classes_per_object, nc), replace=False):
            logits[row : row + blob, col : col + blob, k] = rng.normal(1.5, 1.0, (blob, blob))
    return logits.astype(np.float32)


def _quant_for(values: np.ndarray) -> QuantInfo:
    lo, hi = float(min(values.min(), 0.0)), float(values.max())
    scale = (hi - lo) / 255
    zero_point = float(round(-lo / scale))
    return QuantInfo(zero_point, scale, lo, hi)


def make_frame(
    nc: int, scene: str, fmt: FormatType, seed: int, yolo26: bool = False
) -> tuple[dict, dict, tuple[ReferenceHead, ...]]:
    rng = np.random.default_rng(seed)
    outputs, specs, heads = {}, {}, []
    for i, stride in enumerate(STRIDES):
        grid = INPUT // stride
        box_name, class_name = f"/model.23/cv2.{i}/cv2.{i}.2/Conv", f"/model.23/cv3.{i}/cv3.{i}.2/Conv"
        (dfl, distances), cls = _box_logits(rng, grid), _class_logits(rng, grid, nc, scene)
        box = distances if yolo26 else dfl
        for name, values in ((box_name, box), (class_name, cls)):
            if fmt is FormatType.UINT8:
                if name == class_name:
                    values = 1 / (1 + np.exp(-values))  # the sigmoid compiled into the HEF
                quant = _quant_for(values)
                outputs[name] = quantize(values, (quant,), np.uint8)
                specs[name] = OutputSpec(name, values.shape, FormatOrder.FCR, fmt, (quant,))
            else:
                outputs[name] = values
                specs[name] = OutputSpec(name, values.shape, FormatOrder.FCR, fmt)
        heads.append(ReferenceHead(box_name, class_name, stride))
    return outputs, specs, tuple(heads)


def naive_decode(outputs: dict, specs: dict, heads: tuple[ReferenceHead, ...], config: DecodeConfig) -> list:
    """A typical hand-written host decoder: per cell, DFL, sigmoid, threshold; then a simple NMS."""
    detections = []  # (x1, y1, x2, y2, score, class)
    for head in heads:
        arrays = []
        for name in (head.box_name, head.class_name):
            spec, array = specs[name], outputs[name]
            if spec.is_quantized:
                q = spec.quant[0]
                array = (array.astype(np.float32) - q.zero_point) * q.scale
            arrays.append(array)
        box_map, class_map = arrays
        probabilities = specs[head.class_name].is_quantized
        grid_h, grid_w, _ = box_map.shape
        for row in range(grid_h):
            for col in range(grid_w):
                bins = box_map[row, col].reshape(4, REG_MAX)
                e = np.exp(bins - bins.max(axis=1, keepdims=True))
                distance = (e / e.sum(axis=1, keepdims=True)) @ np.arange(REG_MAX)
                cx, cy = (col + 0.5) * head.stride, (row + 0.5) * head.stride
                left, top, right, bottom = distance * head.stride
                scores = class_map[row, col] if probabilities else 1 / (1 + np.exp(-class_map[row, col]))
                for k in np.flatnonzero(scores >= config.score_threshold):
                    detections.append((cx - left, cy - top, cx + right, cy + bottom, float(scores[k]), int(k)))
    return _simple_nms(detections, config)


def _simple_nms(detections: list, config: DecodeConfig) -> list:
    kept = []
    for k in sorted({d[5] for d in detections}):
        mine = sorted((d for d in detections if d[5] == k), key=lambda d: -d[4])
        boxes = np.array([d[:4] for d in mine], dtype=np.float32).reshape(-1, 4)
        order = np.arange(len(mine))
        count = 0
        while order.size and count < config.max_per_class:
            i, rest = order[0], order[1:]
            kept.append(mine[i])
            count += 1
            x1 = np.maximum(boxes[i, 0], boxes[rest, 0])
            y1 = np.maximum(boxes[i, 1], boxes[rest, 1])
            x2 = np.minimum(boxes[i, 2], boxes[rest, 2])
            y2 = np.minimum(boxes[i, 3], boxes[rest, 3])
            inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
            area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
            iou = inter / (area(boxes[i]) + area(boxes[rest]) - inter)
            order = rest[iou < config.iou_threshold]
    return kept


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


COLUMNS = (("fast", 8), ("fast-ul", 8), ("y26-1to1", 9), ("y26-1toN", 9), ("reference", 10), ("naive", 8))
HEADER = f"{'scene':8} {'nc':>3} {'input':8} {'cands':>6} {'dets':>5} " + " ".join(
    f"{title:>{width}}" for title, width in COLUMNS
)


def measure(scene: str, nc: int, fmt: FormatType, repeat: int, seed: int) -> str:
    """One row of the table: candidates, detections and median ms of each decoder."""
    outputs, specs, heads = make_frame(nc, scene, fmt, seed)
    hailort = DecodeConfig((INPUT, INPUT), score_threshold=0.2, iou_threshold=0.7)
    ultralytics = dataclasses.replace(hailort, mode=NmsMode.ULTRALYTICS)
    _, scores = decode_candidates(outputs, specs, hailort)
    detections = decode(outputs, specs, hailort)

    def reference() -> object:
        boxes, class_scores = reference_candidates(outputs, specs, heads, fmt is FormatType.UINT8)
        return reference_nms_hailort(boxes, class_scores, hailort)

    fast = median_ms(lambda: decode(outputs, specs, hailort), repeat)
    fast_ul = median_ms(lambda: decode(outputs, specs, ultralytics), repeat)
    outputs26, specs26, _ = make_frame(nc, scene, fmt, seed, yolo26=True)
    one2one = median_ms(lambda: decode_one2one(outputs26, specs26, hailort), repeat)
    one2many = median_ms(lambda: decode_one2many(outputs26, specs26, hailort), repeat)
    ref = median_ms(reference, 1)
    naive = median_ms(lambda: naive_decode(outputs, specs, heads, hailort), 3)
    candidates = int((scores >= 0.2).sum())
    return (
        f"{scene:8} {nc:>3} {fmt.name:8} {candidates:>6} {len(detections):>5} "
        f"{fast:>8.2f} {fast_ul:>8.2f} {one2one:>9.2f} {one2many:>9.2f} {ref:>10.0f} {naive:>8.1f}"
    )


def measure_validation(scene: str, nc: int, repeat: int, seed: int) -> str:
    """One row at Ultralytics' validation settings: conf 0.001, IoU 0.7, multi-label, max_det 300."""
    outputs, specs, _ = make_frame(nc, scene, FormatType.FLOAT32, seed)
    val = DecodeConfig((INPUT, INPUT), score_threshold=0.001, iou_threshold=0.7, max_total=300)
    ultralytics = dataclasses.replace(val, mode=NmsMode.ULTRALYTICS)
    _, scores = decode_candidates(outputs, specs, val)
    candidates = int((scores >= 0.001).sum())
    detections = len(decode(outputs, specs, ultralytics))
    fast_ul = median_ms(lambda: decode(outputs, specs, ultralytics), repeat)
    fast = median_ms(lambda: decode(outputs, specs, val), max(1, repeat // 5))
    return f"{scene:8} {nc:>3} {candidates:>6} {detections:>5} {fast_ul:>8.2f} {fast:>8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="runs of the fast path per case (slow paths: fewer)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"decode + NMS of one {INPUT}x{INPUT} frame (grids 80/40/20, reg_max {REG_MAX}), median ms per frame")
    print(HEADER)
    print("-" * len(HEADER))
    for scene in SCENES:
        for nc in (2, 80):
            for fmt in (FormatType.FLOAT32, FormatType.UINT8):
                print(measure(scene, nc, fmt, args.repeat, args.seed), flush=True)
    print("\nat validation settings (conf 0.001, IoU 0.7, max_det 300, FLOAT32 logits), median ms per frame")
    print(f"{'scene':8} {'nc':>3} {'cands':>6} {'dets':>5} {'fast-ul':>8} {'fast':>8}")
    for scene in SCENES:
        for nc in (2, 80):
            print(measure_validation(scene, nc, args.repeat, args.seed), flush=True)


if __name__ == "__main__":
    main()
