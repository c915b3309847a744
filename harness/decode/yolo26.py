"""Decoding the six raw head outputs of a YOLO26 detector: per stride a box map of 4 channels (the
distances left, top, right, bottom in cells: reg_max 1, no DFL) and a class map of ``nc`` channels,
paired by grid and channels as the YOLOv8 heads are (a class map of 4 channels is ambiguous and refused).

Two heads: the one-to-one head (``one2one_cv2/one2one_cv3``), decoded without NMS: the 300 anchors
with the best class score, then the 300 best (anchor, class) pairs among them, kept above the score
threshold; and the one-to-many head (``cv2/cv3``), decoded as YOLOv8's heads are, then the NMS of
``config.mode``.

ultralytics: ultralytics/nn/modules/head.py (``Detect.postprocess``: top-k of the max class score, then
top-k of the flattened scores), ultralytics/nn/backends/hailo.py (``_decode_raw``: box maps first, then
class maps; ``dist2bbox(xywh=False) * stride``; sigmoid on the host), ultralytics/utils/nms.py (an
end-to-end prediction is kept when its score is above ``conf``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.nms import above, nms
from harness.decode.yolo import decode_passing

BOX_CHANNELS = 4  # reg_max 1: one distance per side


def decode_one2one(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """The one-to-one head: no NMS; at most ``config.max_total`` detections, best first (ties in
    anchor order, then class order). Only anchors that can pass the threshold are ranked: the others
    rank below every one that passes and keep nothing, so the top-k keeps what it keeps over all."""
    boxes, scores = decode_passing(outputs, specs, config, BOX_CHANNELS)
    anchors_in_frame = (
        sum(spec.shape[-3] * spec.shape[-2] for spec in specs.values()) // 2
    )  # a box and a class map per grid
    k = min(config.max_total, anchors_in_frame)  # Ultralytics' k, over every anchor
    anchors = np.argsort(-scores.max(axis=1, initial=0), kind="stable")[:k]
    flat = scores[anchors].reshape(-1)
    best = np.argsort(-flat, kind="stable")[:k]
    kept = best[above(flat[best], config.score_threshold)]
    row, class_ids = np.divmod(kept, scores.shape[1])
    return Detections(boxes[anchors[row]], flat[kept], class_ids)


def decode_one2many(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """The one-to-many head: the boxes and class scores of the anchors that can pass the threshold,
    then the NMS of ``config.mode``."""
    boxes, scores = decode_passing(outputs, specs, config, BOX_CHANNELS)
    return nms(boxes, scores, config)
