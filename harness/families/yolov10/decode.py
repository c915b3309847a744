"""The YOLOv10 head's decoding: YOLOv8's layout (box maps of 4 x reg_max DFL bins and class maps, paired by grid
and channels) and its boxes and class probabilities (:mod:`harness.decode.dfl`), then the one-to-one head's
selection, no NMS: the anchors with the best class score, then the best (anchor, class) pairs among them
(:func:`~harness.families.yolo26.one2one.decode.top_k`).

ultralytics: ultralytics/nn/modules/head.py (``Detect.postprocess``, ``Detect.get_topk_index``: top-k of the
max class score, then top-k of the flattened scores; ``Detect.decode_bboxes``: ``dist2bbox`` xyxy where end to
end), ultralytics/utils/nms.py (an end-to-end prediction is kept when its score is above ``conf``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.dfl import candidates, passing
from harness.families.yolo26.one2one.decode import top_k
from harness.families.yolov8.decode import anchors, export_rows, layout

__all__ = ["anchors", "candidates", "decode", "export_rows", "layout"]


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """The one-to-one head: no NMS; at most ``config.max_total`` detections, best first (ties in anchor order,
    then class order), of the anchors that can pass the threshold."""
    heads = layout(specs, config.input_hw)
    boxes, scores = passing(outputs, heads, config)
    return top_k(boxes, scores, heads.cells, config)
