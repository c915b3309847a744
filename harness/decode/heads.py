"""The harness's decoder of each head family, and the box channels its heads are paired by."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.yolo import decode
from harness.decode.yolo26 import BOX_CHANNELS, decode_one2many, decode_one2one

Decode = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]

_DECODERS: dict[HeadFamily, Decode] = {
    HeadFamily.YOLOV8: decode,
    HeadFamily.YOLO26_ONE2ONE: decode_one2one,
    HeadFamily.YOLO26_ONE2MANY: decode_one2many,
}


def decoder(family: HeadFamily) -> Decode:
    """Six raw head outputs of ``family`` -> detections in input pixels."""
    return _DECODERS[family]


def box_channels(family: HeadFamily) -> int | None:
    """The box maps' channels for :func:`~harness.decode.yolo.pair_heads`: None (4 x reg_max DFL bins) for YOLOv8."""
    return None if family is HeadFamily.YOLOV8 else BOX_CHANNELS
