"""The YOLO26 one-to-one head's decoding (``one2one_cv2/one2one_cv3``): no NMS; the anchors with the best
class score, then the best (anchor, class) pairs among them (:mod:`harness.families.yolo26.decode`: its
layout and the rest of the head's decoding).

ultralytics: ultralytics/nn/modules/head.py (``Detect.postprocess``: top-k of the max class score, then
top-k of the flattened scores), ultralytics/utils/nms.py (an end-to-end prediction is kept when its score is
above ``conf``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.dfl import passing
from harness.decode.nms import above
from harness.families.yolo26.decode import anchors, candidates, export_rows, layout

__all__ = ["anchors", "candidates", "decode", "export_rows", "layout", "top_k"]


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """The one-to-one head: no NMS; at most ``config.max_total`` detections, best first (ties in
    anchor order, then class order). Only anchors that can pass the threshold are ranked: the others
    rank below every one that passes and keep nothing, so the top-k keeps what it keeps over all."""
    heads = layout(specs, config.input_hw)
    boxes, scores = passing(outputs, heads, config)
    return top_k(boxes, scores, heads.cells, config)


def top_k(boxes: np.ndarray, scores: np.ndarray, cells: int, config: DecodeConfig) -> Detections:
    """An end-to-end head's selection among the boxes ``(n, 4)`` and class scores ``(n, nc)`` of its anchors
    that can pass the threshold (:func:`~harness.decode.dfl.passing`), of ``cells`` anchors in all: the ``k``
    anchors with the best class score, then the ``k`` best (anchor, class) pairs among them, kept above the
    threshold; ``k`` is ``config.max_total``, at most ``cells`` (every family with such a head decodes so)."""
    k = min(config.max_total, cells)  # Ultralytics' k, over every anchor
    ranked = np.argsort(-scores.max(axis=1, initial=0), kind="stable")[:k]
    flat = scores[ranked].reshape(-1)
    best = np.argsort(-flat, kind="stable")[:k]
    kept = best[above(flat[best], config.score_threshold)]
    row, class_ids = np.divmod(kept, scores.shape[1])
    return Detections(boxes[ranked[row]], flat[kept], class_ids)
