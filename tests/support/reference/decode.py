"""Plain loop reference for YOLOv8/YOLO11 head decoding and both NMS modes.

Written cell by cell and box by box, apart from :mod:`harness.decode.dfl` and
:mod:`harness.decode.nms`, so that property tests compare two independent implementations. Heads
are given explicitly (no pairing); values are dequantized, soft-maxed and sigmoided in double
precision. IoU is computed in float32 scalars with HailoRT's formula, as HailoRT and torchvision do
(hailort: hailort/libhailort/src/net_flow/ops/nms_post_process.cpp, ``compute_iou``;
torchvision/csrc/ops/cpu/nms_kernel.cpp), so that NMS decisions match the fast code exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec


@dataclass(frozen=True)
class ReferenceHead:
    """One stride's box and class output, named explicitly."""

    box_name: str
    class_name: str
    stride: int


def _frame(outputs: Mapping[str, np.ndarray], spec: OutputSpec) -> list:
    array = np.asarray(outputs[spec.name])
    if array.ndim == 4:
        array = array[0]
    return array.tolist()


def _value(raw: float, spec: OutputSpec, channel: int) -> float:
    if not spec.is_quantized:
        return float(raw)
    q = spec.quant[channel] if len(spec.quant) > 1 else spec.quant[0]
    return (float(raw) - q.zero_point) * q.scale


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _dfl(bins: list[float]) -> float:
    top = max(bins)
    weights = [math.exp(b - top) for b in bins]
    total = sum(weights)
    expectation = 0.0
    for i, w in enumerate(weights):
        expectation += i * w
    return expectation / total


def reference_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    heads: Sequence[ReferenceHead],
    classes_are_probabilities: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (A, 4) xyxy in input pixels and class probabilities (A, nc), heads in the given order,
    cells row by row."""
    boxes = []
    scores = []
    for head in heads:
        box_spec, class_spec = specs[head.box_name], specs[head.class_name]
        box_frame, class_frame = _frame(outputs, box_spec), _frame(outputs, class_spec)
        height, width, box_channels = box_spec.shape
        reg_max = box_channels // 4
        nc = class_spec.shape[2]
        for row in range(height):
            for col in range(width):
                cell = box_frame[row][col]
                sides = []
                for side in range(4):
                    bins = []
                    for i in range(reg_max):
                        channel = side * reg_max + i
                        bins.append(_value(cell[channel], box_spec, channel))
                    sides.append(_dfl(bins))
                left, top, right, bottom = sides
                cx = (col + 0.5) * head.stride
                cy = (row + 0.5) * head.stride
                boxes.append(
                    [
                        cx - left * head.stride,
                        cy - top * head.stride,
                        cx + right * head.stride,
                        cy + bottom * head.stride,
                    ]
                )
                cell_scores = []
                for k in range(nc):
                    v = _value(class_frame[row][col][k], class_spec, k)
                    cell_scores.append(v if classes_are_probabilities else _sigmoid(v))
                scores.append(cell_scores)
    return np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores, dtype=np.float32)


def _iou32(a: tuple, b: tuple) -> float:
    """HailoRT's ``compute_iou`` on float32 scalars (x_min, y_min, x_max, y_max)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    area_a = (a[3] - a[1]) * (a[2] - a[0])
    area_b = (b[3] - b[1]) * (b[2] - b[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(inter / (area_a + area_b - inter))


def _box(boxes: np.ndarray, anchor: int) -> tuple:
    return tuple(np.float32(v) for v in boxes[anchor])


def reference_nms_hailort(boxes: np.ndarray, scores: np.ndarray, config: DecodeConfig) -> Detections:
    """HailoRT's op, literally: candidates ``score >= th`` (double compare, 0 never), one sort by
    score, the O(n^2) same-class suppression ``IoU >= th``, then the first ``max_per_class`` per class."""
    candidates = []  # (score, anchor, class)
    for anchor in range(len(scores)):
        for k in range(scores.shape[1]):
            s = float(scores[anchor, k])
            if s >= config.score_threshold and s != 0.0:
                candidates.append((s, anchor, k))
    order = sorted(range(len(candidates)), key=lambda i: -candidates[i][0])
    removed = [False] * len(candidates)
    for pos, i in enumerate(order):
        if removed[i]:
            continue
        for j in order[pos + 1 :]:
            if removed[j] or candidates[i][2] != candidates[j][2]:
                continue
            if _iou32(_box(boxes, candidates[i][1]), _box(boxes, candidates[j][1])) >= config.iou_threshold:
                removed[j] = True
    out_boxes, out_scores, out_classes = [], [], []
    for k in range(scores.shape[1]):
        kept = [i for i in order if not removed[i] and candidates[i][2] == k][: max(config.max_per_class, 0)]
        for i in kept:
            s, anchor, _ = candidates[i]
            out_boxes.append(boxes[anchor])
            out_scores.append(s)
            out_classes.append(k)
    return Detections(np.array(out_boxes, dtype=np.float32).reshape(-1, 4), np.array(out_scores), np.array(out_classes))


def reference_nms_ultralytics(boxes: np.ndarray, scores: np.ndarray, config: DecodeConfig) -> Detections:
    """Ultralytics' ``non_max_suppression`` + torchvision ``nms``, literally: float32 ``score > th``
    (multi-label or best class), ``max_nms`` best, class offset 7680, one greedy ``IoU > th`` over
    all shifted boxes, first ``max_det`` kept."""
    threshold = np.float32(config.score_threshold)
    nc = scores.shape[1]
    candidates = []  # (score, anchor, class)
    for anchor in range(len(scores)):
        if config.multi_label and nc > 1:
            for k in range(nc):
                if scores[anchor, k] > threshold:
                    candidates.append((scores[anchor, k], anchor, k))
        else:
            best = 0
            for k in range(1, nc):
                if scores[anchor, k] > scores[anchor, best]:
                    best = k
            if scores[anchor, best] > threshold:
                candidates.append((scores[anchor, best], anchor, best))
    if len(candidates) > config.max_candidates:
        ranked = sorted(range(len(candidates)), key=lambda i: -float(candidates[i][0]))
        candidates = [candidates[i] for i in ranked[: config.max_candidates]]
    offset = np.float32(7680)
    shifted = [tuple(v + np.float32(k) * offset for v in _box(boxes, a)) for _, a, k in candidates]
    order = sorted(range(len(candidates)), key=lambda i: -float(candidates[i][0]))
    suppressed = [False] * len(candidates)
    keep = []
    for pos, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        for j in order[pos + 1 :]:
            if not suppressed[j] and _iou32(shifted[i], shifted[j]) > config.iou_threshold:
                suppressed[j] = True
    keep = keep[: max(config.max_total, 0)]
    return Detections(
        np.array([boxes[candidates[i][1]] for i in keep], dtype=np.float32).reshape(-1, 4),
        np.array([candidates[i][0] for i in keep], dtype=np.float32),
        np.array([candidates[i][2] for i in keep]),
    )
