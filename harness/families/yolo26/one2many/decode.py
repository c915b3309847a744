"""The YOLO26 one-to-many head's decoding (``cv2/cv3``): decoded as YOLOv8's heads are, then the NMS of
``config.mode`` (:mod:`harness.families.yolo26.decode`: its layout and the rest of the head's decoding)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.dfl import passing
from harness.decode.nms import nms
from harness.families.yolo26.decode import anchors, candidates, export_rows, layout

__all__ = ["anchors", "candidates", "decode", "export_rows", "layout"]


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """The one-to-many head: the boxes and class scores of the anchors that can pass the threshold,
    then the NMS of ``config.mode``."""
    boxes, scores = passing(outputs, layout(specs, config.input_hw), config)
    return nms(boxes, scores, config)
