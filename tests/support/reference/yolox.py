"""YOLOX heads decoded one cell at a time, as HailoRT's YOLOX op walks them: the readable statement of
harness.families.yolox.decode (hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp, ``extract_detections``,
and yolox_post_process.cpp, ``decode``). Float32 scalars, HailoRT's own formula: the box normalised by the
grid, then scaled to input pixels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.core.specs import OutputSpec

from support.reference.float32 import F, sigmoid, value


def reference_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    heads: Sequence[tuple[str, str, str]],
    input_hw: tuple[int, int],
    probabilities: bool,
    score_threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``heads``: per stride, ascending, the names of its (box, objectness, class) maps. Every cell whose
    objectness is ``>= score_threshold``, row by row, column by column: boxes (N, 4) xyxy in input pixels
    and scores class x objectness (N, nc)."""
    image_h, image_w = F(input_hw[0]), F(input_hw[1])
    boxes, scores = [], []
    for box_name, objectness_name, class_name in heads:
        box_spec, objectness_spec, class_spec = specs[box_name], specs[objectness_name], specs[class_name]
        reg = np.asarray(outputs[box_name]).reshape(box_spec.shape).tolist()
        obj = np.asarray(outputs[objectness_name]).reshape(objectness_spec.shape).tolist()
        cls = np.asarray(outputs[class_name]).reshape(class_spec.shape).tolist()
        height, width, nc = class_spec.shape
        for row in range(height):
            for col in range(width):
                objectness = value(obj[row][col][0], objectness_spec, 0)
                if not probabilities:
                    objectness = sigmoid(objectness)
                if float(objectness) < score_threshold:
                    continue
                tx, ty, tw, th = (value(reg[row][col][k], box_spec, k) for k in range(4))
                w = np.exp(tw) / F(width)
                h = np.exp(th) / F(height)
                x_centre = (tx + F(col)) / F(width)
                y_centre = (ty + F(row)) / F(height)
                x_min, y_min = x_centre - w / F(2), y_centre - h / F(2)
                boxes.append([x_min * image_w, y_min * image_h, (x_min + w) * image_w, (y_min + h) * image_h])
                confidences = (value(cls[row][col][c], class_spec, c) for c in range(nc))
                scores.append([(c if probabilities else sigmoid(c)) * objectness for c in confidences])
    nc = specs[heads[-1][2]].channels
    return np.array(boxes, dtype=np.float32).reshape(-1, 4), np.array(scores, dtype=np.float32).reshape(-1, nc)
