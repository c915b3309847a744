"""The YOLO26 head family: its layout and its decoders. Per stride a box map of 4 channels (the
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
from harness.decode.layout import HeadLayout, pair_by_grid
from harness.decode.nms import above, nms
from harness.decode.yolo import passing

BOX_CHANNELS = 4  # reg_max 1: one distance per side


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int]) -> HeadLayout:
    """The YOLO26 head layout: box maps of the 4 distances and class maps, paired by grid and channels."""
    return pair_by_grid(specs, input_hw, BOX_CHANNELS)


def decode_one2one(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """The one-to-one head: no NMS; at most ``config.max_total`` detections, best first (ties in
    anchor order, then class order). Only anchors that can pass the threshold are ranked: the others
    rank below every one that passes and keep nothing, so the top-k keeps what it keeps over all."""
    heads = layout(specs, config.input_hw)
    boxes, scores = passing(outputs, heads, config)
    k = min(config.max_total, heads.cells)  # Ultralytics' k, over every anchor
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
    boxes, scores = passing(outputs, layout(specs, config.input_hw), config)
    return nms(boxes, scores, config)
