"""Each head family's decoding as the harness uses it: how its layout is read from output specs, the anchors
it decodes against, and its decoder.

A family's decoding is its decode part (``harness/families/<family>/decode.py``, loaded by
:func:`harness.families.part`), one API for every family: :class:`FamilyDecode`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, cast

import numpy as np

from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.layout import Anchors as Anchors
from harness.decode.layout import HeadLayout
from harness.families import part

Decode = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]


class FamilyDecode(Protocol):
    """A family's decode part.

    - ``layout``: its head layout from its outputs' specs, the input size and (anchored families) the anchors;
    - ``anchors``: the anchors it decodes against, from a decode config (``()`` for an anchor-free family);
    - ``decode``: one frame of its raw outputs -> detections in input pixels (the harness's decoder signature);
    - ``candidates``: one frame of its raw outputs laid out -> every entry's boxes xyxy in input pixels and
      its scores, before any threshold or NMS;
    - ``export_rows``: one frame of its export's own decoded head output -> boxes xyxy in input pixels and
      scores, as :func:`candidates` lays them.
    """

    def layout(self, specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors) -> HeadLayout: ...

    def anchors(self, config: DecodeConfig) -> Anchors: ...

    def decode(
        self, outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
    ) -> Detections: ...

    def candidates(
        self, outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def export_rows(self, rows: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, np.ndarray]: ...


def family_decode(family: HeadFamily) -> FamilyDecode:
    """``family``'s decode part."""
    return cast(FamilyDecode, part(family, "decode"))


def decoder(family: HeadFamily) -> Decode:
    """The raw outputs of ``family`` -> detections in input pixels."""
    return family_decode(family).decode


def family_anchors(family: HeadFamily, config: DecodeConfig) -> Anchors:
    """The anchors ``family`` decodes against under ``config``: YOLOv5/YOLOv7's ``config.anchors`` (per stride,
    ascending, in input pixels), SSD's ``config.ssd.anchors`` (per layer, largest grid first, as fractions of
    the input), none for an anchor-free family."""
    return family_decode(family).anchors(config)


def head_layout(
    family: HeadFamily, specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors = ()
) -> HeadLayout:
    """The layout of ``family``'s outputs ``specs`` (``anchors``: :func:`family_anchors`, for an anchored
    family); a :class:`~harness.core.errors.HeadPairingError` naming the outputs where they are not that
    family's heads."""
    return family_decode(family).layout(specs, input_hw, anchors)
