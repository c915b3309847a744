"""YOLOv5/YOLOv7 heads decoded one (cell, anchor) at a time, as HailoRT's YOLOv5 op walks them: the
readable statement of harness.families.yolov5.decode (hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp,
``extract_detections``, and yolov5_post_process.cpp, ``decode``). Float32 scalars, HailoRT's own
formula: the box normalised by the grid and the image, then scaled to input pixels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.core.specs import OutputSpec

from support.reference.float32 import F, sigmoid, value


def reference_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    heads: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    input_hw: tuple[int, int],
    probabilities: bool,
    score_threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``heads``: per stride, ascending, (output name, its anchors). Every (cell, anchor) whose objectness
    is ``>= score_threshold``, cell by cell, anchor by anchor: boxes (N, 4) xyxy in input pixels and
    scores objectness x class (N, nc)."""
    image_h, image_w = F(input_hw[0]), F(input_hw[1])
    boxes, scores = [], []
    for name, anchors in heads:
        spec = specs[name]
        frame = np.asarray(outputs[name]).reshape(spec.shape).tolist()
        height, width, channels = spec.shape
        entry = channels // len(anchors)
        for row in range(height):
            for col in range(width):
                for a, (wa, ha) in enumerate(anchors):
                    values = []
                    for k in range(entry):
                        v = value(frame[row][col][a * entry + k], spec, a * entry + k)
                        values.append(v if probabilities else sigmoid(v))
                    tx, ty, tw, th, objectness = values[:5]
                    if float(objectness) < score_threshold:
                        continue
                    w = (F(2) * tw) ** 2 * F(wa) / image_w
                    h = (F(2) * th) ** 2 * F(ha) / image_h
                    x_centre = (tx * F(2) - F(0.5) + F(col)) / F(width)
                    y_centre = (ty * F(2) - F(0.5) + F(row)) / F(height)
                    x_min, y_min = x_centre - w / F(2), y_centre - h / F(2)
                    boxes.append([x_min * image_w, y_min * image_h, (x_min + w) * image_w, (y_min + h) * image_h])
                    scores.append([c * objectness for c in values[5:]])
    nc = channels // len(heads[-1][1]) - 5
    return np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores, dtype=np.float32).reshape(-1, nc)
