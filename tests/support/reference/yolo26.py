"""YOLO26's one-to-one head decoded one anchor at a time: the readable statement of
harness.families.yolo26.one2one.decode.decode (ultralytics: ultralytics/nn/modules/head.py, Detect.postprocess)."""

from __future__ import annotations

import numpy as np


def decode_one2one(
    box_maps: dict[int, np.ndarray],
    class_maps: dict[int, np.ndarray],
    score_threshold: float,
    max_det: int,
) -> tuple[list[tuple[float, ...]], list[float], list[int]]:
    """``box_maps`` / ``class_maps``: stride -> float32 (H, W, 4) distances in cells / (H, W, nc)
    probabilities. Returns boxes (x1, y1, x2, y2 in input pixels), scores and class ids, best first."""
    anchors = []  # (box, scores) in stride, row, column order
    for stride in sorted(box_maps):
        distances, scores = box_maps[stride], class_maps[stride]
        s = np.float32(stride)
        for row in range(distances.shape[0]):
            for col in range(distances.shape[1]):
                cx = (np.float32(col) + np.float32(0.5)) * s
                cy = (np.float32(row) + np.float32(0.5)) * s
                left, top, right, bottom = (d * s for d in distances[row, col])
                anchors.append(((cx - left, cy - top, cx + right, cy + bottom), list(scores[row, col])))
    k = min(max_det, len(anchors))
    by_best = sorted(range(len(anchors)), key=lambda i: (-max(anchors[i][1]), i))[:k]
    pairs = [(anchors[a][1][c], n, a, c) for n, a in enumerate(by_best) for c in range(len(anchors[a][1]))]
    pairs.sort(key=lambda p: (-p[0], p[1], p[3]))
    kept = [p for p in pairs[:k] if p[0] > score_threshold]
    return [anchors[a][0] for _, _, a, _ in kept], [score for score, *_ in kept], [c for *_, c in kept]
