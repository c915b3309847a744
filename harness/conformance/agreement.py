"""How one image's decoded cut outputs agree with an export's own decode tail (``verify-decode``): the
comparison each head family's reference (its ``scenes`` part, :func:`~harness.conformance.scenes.family_scenes`)
makes of one image, and what it is given (:class:`VerifyFrame`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.errors import HarnessError
from harness.core.settings import DecodeConfig
from harness.decode.layout import HeadLayout
from harness.decode.nms import nms

# Largest differences still counted as agreement. Measured on yolov8n (640) and yolo11n (320) over
# 16 COCO images against the float-DFL reference: 1.2e-4 px (two float32 steps at 640) and
# 1.8e-7 (sigmoid rounding). The margins leave room for larger inputs.
BOX_TOLERANCE_PX = 1e-3
SCORE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ImageAgreement:
    """How the decoded cut outputs of one image compare with the reference."""

    image: str
    max_box_diff_px: float
    max_score_diff: float
    detections: int
    reference_detections: int
    same_detections: bool


@dataclass(frozen=True)
class VerifyFrame:
    """One image as ``verify-decode`` holds it: the export's cut ``outputs`` (channel-last, of ``specs`` and
    ``layout``), the ``config`` they are decoded under, and ``reference``, what the export's decode tail
    (its output ``output_name``) made of them."""

    image: str
    outputs: dict[str, np.ndarray]
    specs: Mapping[str, Any]
    layout: HeadLayout
    config: DecodeConfig
    reference: np.ndarray
    output_name: str
    box_tolerance_px: float = BOX_TOLERANCE_PX
    score_tolerance: float = SCORE_TOLERANCE


def same_detections(a: Detections, b: Detections, box_tolerance_px: float, score_tolerance: float) -> bool:
    """Whether two detection sets are the same up to the tolerances: each detection of one has
    exactly one partner in the other, of the same class, with box and score that close."""
    if len(a) != len(b):
        return False
    close = (
        (a.class_ids[:, None] == b.class_ids[None, :])
        & (np.abs(a.boxes[:, None, :] - b.boxes[None, :, :]).max(axis=2, initial=0) <= box_tolerance_px)
        & (np.abs(a.scores[:, None] - b.scores[None, :]) <= score_tolerance)
    )
    return bool((close.sum(axis=1) == 1).all() and (close.sum(axis=0) == 1).all())


def _partners(a: Detections, b: Detections, reach_px: float = 1.0) -> np.ndarray:
    """For each detection of ``a`` the index of its partner in ``b``: same class, box within
    ``reach_px``, nearest first, each of ``b`` taken once; -1 for none."""
    distance = np.abs(a.boxes[:, None, :] - b.boxes[None, :, :]).max(axis=2, initial=0.0)
    distance[(a.class_ids[:, None] != b.class_ids[None, :]) | (distance > reach_px)] = np.inf
    partner = np.full(len(a), -1)
    taken = np.zeros(len(b), dtype=bool)
    for i in np.argsort(distance.min(axis=1, initial=np.inf), kind="stable"):
        row = np.where(taken, np.inf, distance[i])
        j = int(row.argmin()) if len(b) else -1
        if j >= 0 and np.isfinite(row[j]):
            partner[i], taken[j] = j, True
    return partner


def paired_differences(a: Detections, b: Detections, cut: float, spare: float) -> tuple[float, float]:
    """The largest box and score differences between the detections of ``a`` and ``b`` scored above
    ``cut``, each paired with its partner in the other; infinite when one above ``cut + spare`` has
    no partner (those within ``spare`` of the cut may have fallen on the other side of it)."""
    a, b = a.select(a.scores > cut - spare), b.select(b.scores > cut - spare)
    forward, backward = _partners(a, b), _partners(b, a)
    if (a.scores[forward < 0] > cut + spare).any() or (b.scores[backward < 0] > cut + spare).any():
        return math.inf, math.inf
    paired = forward >= 0
    if not paired.any():
        return 0.0, 0.0
    boxes = np.abs(a.boxes[paired] - b.boxes[forward[paired]]).max(initial=0)
    return float(boxes), float(np.abs(a.scores[paired] - b.scores[forward[paired]]).max(initial=0))


def anchored_rows(reference: np.ndarray, layout: HeadLayout) -> tuple[np.ndarray, np.ndarray]:
    """A YOLOv5 or YOLOX export's rows ``(rows, 5 + nc)`` (per stride, anchor by anchor, its cells: xywh in
    input pixels, objectness, classes) as the harness's candidates lie: per stride, cell by cell, anchor by
    anchor; boxes xyxy and scores objectness x class (ultralytics/yolov5: models/yolo.py, ``Detect``;
    utils/general.py, ``non_max_suppression``; Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py,
    ``decode_outputs``, one row per cell)."""
    blocks, start = [], 0
    for level in layout.levels:
        na = max(len(level.anchors), 1)
        block = reference[start : start + na * level.cells]
        blocks.append(block.reshape(na, level.cells, -1).transpose(1, 0, 2).reshape(na * level.cells, -1))
        start += na * level.cells
    if start != len(reference):
        raise HarnessError(
            f"export rows: {len(reference)}, expected {start} (anchors x cells over the strides of the heads)"
        )
    rows = np.concatenate(blocks).astype(np.float32, copy=False)
    return xywh_to_xyxy(rows[:, :4]), np.ascontiguousarray(rows[:, 5:] * rows[:, 4:5])


def candidate_agreement(
    frame: VerifyFrame,
    candidates: tuple[np.ndarray, np.ndarray],
    rows: tuple[np.ndarray, np.ndarray],
    detections: Detections,
) -> ImageAgreement:
    """``candidates`` (boxes, scores: one per anchor) decoded from ``frame``'s outputs against ``rows``, the
    reference's of the same anchors, and ``detections``, the family's decoder's, against the NMS of ``rows``."""
    (boxes, scores), (ref_boxes, ref_scores) = candidates, rows
    if boxes.shape != ref_boxes.shape or scores.shape != ref_scores.shape:
        raise HarnessError(
            f"decoded candidates: boxes {boxes.shape}, scores {scores.shape}; expected the reference's "
            f"{ref_boxes.shape} and {ref_scores.shape} (one per anchor of {frame.output_name!r})"
        )
    expected = nms(ref_boxes, ref_scores, frame.config)
    return ImageAgreement(
        image=frame.image,
        max_box_diff_px=float(np.abs(boxes - ref_boxes).max(initial=0)),
        max_score_diff=float(np.abs(scores - ref_scores).max(initial=0)),
        detections=len(detections),
        reference_detections=len(expected),
        same_detections=same_detections(detections, expected, frame.box_tolerance_px, frame.score_tolerance),
    )
