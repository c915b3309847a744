"""The YOLO26 head family's decoding, shared by its two heads (their decode parts: :mod:`.one2one.decode`
and :mod:`.one2many.decode`): its layout and every anchor's box and class probabilities. Per stride a box
map of 4 channels (the distances left, top, right, bottom in cells: reg_max 1, no DFL) and a class map of
``nc`` channels, paired by grid and channels as the YOLOv8 heads are (a class map of 4 channels is
ambiguous and refused).

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

from harness.core.detections import xywh_to_xyxy
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.dfl import candidates
from harness.decode.layout import Anchors, HeadLayout, pair_by_grid

__all__ = ["BOX_CHANNELS", "anchors", "candidates", "export_rows", "layout"]

BOX_CHANNELS = 4  # reg_max 1: one distance per side


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors = ()) -> HeadLayout:
    """The YOLO26 head layout: box maps of the 4 distances and class maps, paired by grid and channels;
    anchor-free: ``anchors`` are not read."""
    return pair_by_grid(specs, input_hw, BOX_CHANNELS)


def anchors(config: DecodeConfig) -> Anchors:
    """The anchors the head decodes against: none (anchor-free)."""
    return ()


def export_rows(rows: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, np.ndarray]:
    """An export's own decoded head output where it is not end to end, one frame ``(4 + nc, anchors)`` (xywh,
    then class probabilities) -> boxes ``(anchors, 4)`` xyxy in model-input pixels and scores
    ``(anchors, nc)``, a view: the NMS reads only the anchors that pass."""
    return xywh_to_xyxy(rows[:4].T), rows[4:].T.astype(np.float32, copy=False)
