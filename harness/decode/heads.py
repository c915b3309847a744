"""Each head family's module as the harness uses it: how its layout is read from output specs, and its decoder.

A family is one module of :mod:`harness.decode` (:mod:`~harness.decode.yolo`, :mod:`~harness.decode.yolo26`,
:mod:`~harness.decode.yolov5`, :mod:`~harness.decode.yolox`, :mod:`~harness.decode.ssd`) registered here once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode import ssd, yolo, yolo26, yolov5, yolox
from harness.decode.layout import HeadLayout

Decode = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]
Anchors = tuple[tuple[tuple[float, float], ...], ...]
ReadLayout = Callable[[Mapping[str, OutputSpec], tuple[int, int], Anchors], HeadLayout]


@dataclass(frozen=True)
class Family:
    """``layout``: the family's head layout from its outputs' specs, the input size and (anchor-based
    families) the anchors; ``decode``: one frame of its raw outputs -> detections in input pixels."""

    layout: ReadLayout
    decode: Decode


def _anchor_free(read: Callable[[Mapping[str, OutputSpec], tuple[int, int]], HeadLayout]) -> ReadLayout:
    return lambda specs, input_hw, anchors: read(specs, input_hw)


_FAMILIES: dict[HeadFamily, Family] = {
    HeadFamily.YOLOV8: Family(_anchor_free(yolo.layout), yolo.decode),
    HeadFamily.YOLO26_ONE2ONE: Family(_anchor_free(yolo26.layout), yolo26.decode_one2one),
    HeadFamily.YOLO26_ONE2MANY: Family(_anchor_free(yolo26.layout), yolo26.decode_one2many),
    HeadFamily.YOLOV5: Family(yolov5.layout, yolov5.decode),
    HeadFamily.YOLOX: Family(_anchor_free(yolox.layout), yolox.decode),
    HeadFamily.SSD: Family(ssd.layout, ssd.decode),
}


def decoder(family: HeadFamily) -> Decode:
    """The raw outputs of ``family`` -> detections in input pixels."""
    return _FAMILIES[family].decode


def head_layout(
    family: HeadFamily, specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors = ()
) -> HeadLayout:
    """The layout of ``family``'s outputs ``specs`` (``anchors``: per stride, for an anchor-based family; per
    layer, largest grid first, ``SsdConfig.anchors`` for SSD);
    a :class:`~harness.core.errors.HeadPairingError` naming the outputs where they are not that family's heads."""
    return _FAMILIES[family].layout(specs, input_hw, anchors)
