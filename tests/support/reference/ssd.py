"""SSD heads decoded one (cell, anchor) at a time, as HailoRT's SSD op walks them: the readable statement of
harness.families.ssd.decode (hailort: libhailort/src/net_flow/ops/ssd_post_process.cpp, ``extract_detections``, and
ssd_post_process.hpp, ``extract_bbox_detections``, ``extract_bbox_classes``). Float32 scalars, HailoRT's own
formula: the box in fractions of the input, then scaled to input pixels."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from harness.core.settings import SsdConfig
from harness.core.specs import OutputSpec

from support.reference.float32 import F, value


def _expf(x: np.float32) -> np.float32:
    """glibc's ``expf``, correctly rounded but in rare cases: the exponential in double, rounded to float32."""
    try:
        return F(math.exp(float(x)))
    except OverflowError:
        return F(np.inf)


def _clip(n: np.float32, top: int) -> np.float32:
    """hailort: include/hailo/quantization.hpp, ``Quantization::clip(n, 0, top)``."""
    if n >= F(top):
        return F(top)
    if n <= F(0):
        return F(0)
    return n


def reference_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    heads: Sequence[tuple[str, str]],
    ssd: SsdConfig,
    input_hw: tuple[int, int],
    score_threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``heads``: per layer, in ``ssd.anchors``' order, the names of its (regression, class) maps. Every
    (cell, anchor) with a class value ``>= score_threshold`` (the background class aside), row by row,
    column by column, anchor by anchor: boxes (N, 4) xyxy in input pixels and scores (N, classes)."""
    image_h, image_w = F(input_hw[0]), F(input_hw[1])
    ty_i, tx_i, th_i, tw_i = ssd.box_indices
    boxes, scores = [], []
    nc = 0
    for (reg_name, cls_name), layer_anchors in zip(heads, ssd.anchors, strict=True):
        reg_spec, cls_spec = specs[reg_name], specs[cls_name]
        reg = np.asarray(outputs[reg_name]).reshape(reg_spec.shape).tolist()
        cls = np.asarray(outputs[cls_name]).reshape(cls_spec.shape).tolist()
        height, width, _ = reg_spec.shape
        nc = cls_spec.channels // len(layer_anchors)
        kept = [c for c in range(nc) if c != ssd.background_class]
        for row in range(height):
            for col in range(width):
                for anchor, (wa, ha) in enumerate(layer_anchors):
                    wa, ha = F(wa), F(ha)
                    confidences = [value(cls[row][col][anchor * nc + c], cls_spec, anchor * nc + c) for c in kept]
                    if all(float(c) < score_threshold for c in confidences):
                        continue
                    t = [value(reg[row][col][anchor * 4 + k], reg_spec, anchor * 4 + k) for k in range(4)]
                    tx = t[tx_i] / F(ssd.centers_scale_factor)
                    ty = t[ty_i] / F(ssd.centers_scale_factor)
                    tw = t[tw_i] / F(ssd.bbox_dimensions_scale_factor)
                    th = t[th_i] / F(ssd.bbox_dimensions_scale_factor)
                    w = _expf(tw) * wa
                    h = _expf(th) * ha
                    w_stride, h_stride = F(1) / F(width), F(1) / F(height)
                    x_centre = tx * wa + (F(col) * w_stride + F(0.5) * w_stride)
                    y_centre = ty * ha + (F(row) * h_stride + F(0.5) * h_stride)
                    x_min, y_min = x_centre - w / F(2), y_centre - h / F(2)
                    x_max, y_max = x_centre + w / F(2), y_centre + h / F(2)
                    if ssd.normalize_boxes:
                        x_min, x_max = _clip(x_min, width - 1), _clip(x_max, width - 1)
                        y_min, y_max = _clip(y_min, height - 1), _clip(y_max, height - 1)
                    boxes.append([x_min * image_w, y_min * image_h, x_max * image_w, y_max * image_h])
                    scores.append(confidences)
    classes = nc - (ssd.background_class is not None)
    return np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores, dtype=np.float32).reshape(-1, classes)
