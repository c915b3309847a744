"""The YOLOv8/YOLO11 head family's decoding: its layout, box maps of ``4 * reg_max`` DFL bins and class maps
paired by grid and channels, and its decoder: every anchor's box and class probabilities
(:mod:`harness.decode.dfl`), then the NMS of ``config.mode``.

hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp and .cpp (``get_bbox``,
``decode``); ultralytics: ultralytics/nn/modules/head.py (``Detect``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.dfl import candidates, passing
from harness.decode.layout import Anchors, HeadLayout, pair_by_grid
from harness.decode.nms import nms

__all__ = ["anchors", "bbox_only_proposals", "candidates", "decode", "export_rows", "layout"]


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors = ()) -> HeadLayout:
    """The YOLOv8/YOLO11 head layout: box maps of 4 x reg_max DFL bins and class maps, paired by grid
    and channels (:func:`~harness.decode.layout.pair_by_grid`); anchor-free: ``anchors`` are not read."""
    return pair_by_grid(specs, input_hw)


def anchors(config: DecodeConfig) -> Anchors:
    """The anchors the head decodes against: none (anchor-free)."""
    return ()


def export_rows(rows: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, np.ndarray]:
    """An Ultralytics export's own decoded head output, one frame ``(4 + nc, anchors)`` (xywh, then class
    probabilities) -> boxes ``(anchors, 4)`` xyxy in model-input pixels and scores ``(anchors, nc)``, a view:
    the NMS reads only the anchors that pass."""
    return xywh_to_xyxy(rows[:4].T), rows[4:].T.astype(np.float32, copy=False)


def bbox_only_proposals(
    raw: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> tuple[np.ndarray, np.ndarray]:
    """What HailoRT's bbox-only op writes of each proposal of one frame of raw heads: its box xyxy in
    model-input pixels and its class values (:func:`~harness.decode.dfl.candidates`). The proposals come
    stride ascending, the order of the bbox decoders the harness's DFC scripts write
    (harness/backends/dfc/scripts.py, ``nms_config``; HailoRT follows the HEF's order, ``reg_to_cls_inputs``)."""
    return candidates(raw, layout(specs, config.input_hw), config)


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """Decode one frame of raw YOLOv8/YOLO11 head outputs into detections.

    This is the decoder signature of the harness; a user's own decoder must follow it::

        decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec],
               config: DecodeConfig) -> Detections

    - ``outputs``: one frame, ``{output name: host array}`` as the backend returns it; channel-last
      ``(H, W, C)`` or ``(1, H, W, C)``, FLOAT32 or quantized UINT8/UINT16.
    - ``specs``: ``{output name: OutputSpec}`` for the same outputs (shape, format, quant infos).
    - ``config``: input size, thresholds, limits and NMS mode; part of every result.
    - returns :class:`~harness.core.detections.Detections` with boxes in model-input pixels (xyxy),
      scores in ``[0, 1]`` and class ids ``0 .. nc-1``.

    Heads are laid out by :func:`layout`; class logits get a sigmoid unless the outputs hold
    probabilities (:func:`~harness.decode.maps.classes_are_probabilities`, or
    ``config.classes_are_probabilities``); NMS follows ``config.mode`` (:func:`~harness.decode.nms.nms`) over
    :func:`~harness.decode.dfl.passing`'s anchors; the result equals the NMS of :func:`candidates`.
    """
    boxes, scores = passing(outputs, layout(specs, config.input_hw), config)
    return nms(boxes, scores, config)
