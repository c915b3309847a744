"""Each head family's module as the harness uses it: how its layout is read from output specs, and its decoder.

A family is one module of :mod:`harness.decode` (:mod:`~harness.decode.yolo`, :mod:`~harness.decode.yolo26`)
registered here once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode import yolo, yolo26
from harness.decode.layout import HeadLayout

Decode = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]
ReadLayout = Callable[[Mapping[str, OutputSpec], tuple[int, int]], HeadLayout]


@dataclass(frozen=True)
class Family:
    """``layout``: the family's head layout from its outputs' specs and the input size; ``decode``:
    one frame of its raw outputs -> detections in input pixels."""

    layout: ReadLayout
    decode: Decode


_FAMILIES: dict[HeadFamily, Family] = {
    HeadFamily.YOLOV8: Family(yolo.layout, yolo.decode),
    HeadFamily.YOLO26_ONE2ONE: Family(yolo26.layout, yolo26.decode_one2one),
    HeadFamily.YOLO26_ONE2MANY: Family(yolo26.layout, yolo26.decode_one2many),
}


def decoder(family: HeadFamily) -> Decode:
    """The raw outputs of ``family`` -> detections in input pixels."""
    return _FAMILIES[family].decode


def head_layout(family: HeadFamily, specs: Mapping[str, OutputSpec], input_hw: tuple[int, int]) -> HeadLayout:
    """The layout of ``family``'s outputs ``specs``; a :class:`~harness.core.errors.HeadPairingError`
    naming the outputs where they are not that family's heads."""
    return _FAMILIES[family].layout(specs, input_hw)
