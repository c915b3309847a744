"""Decoding settings: part of every result, so two runs can only be compared under equal settings."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class NmsMode(str, enum.Enum):
    """Which NMS semantics to reproduce.

    - ``hailort``: the HailoRT YOLOv8 post-process op (hailort: libhailort/src/net_flow/ops/
      yolov8_post_process.cpp, nms_post_process.cpp): every (cell, class) with score >= threshold
      is a candidate (multi-label), greedy NMS per class suppressing IoU >= threshold, then the top
      ``max_per_class`` per class.
    - ``ultralytics``: Ultralytics ``non_max_suppression`` (ultralytics/utils/ops.py or
      utils/nms.py): score > threshold, per-class NMS suppressing IoU > threshold, at most
      ``max_candidates`` boxes into NMS, ``max_total`` kept overall; ``multi_label`` as in val.
    """

    HAILORT = "hailort"
    ULTRALYTICS = "ultralytics"


@dataclass(frozen=True)
class DecodeConfig:
    input_hw: tuple[int, int]
    score_threshold: float = 0.2
    iou_threshold: float = 0.7
    max_per_class: int = 100
    max_total: int = 300
    mode: NmsMode = NmsMode.HAILORT
    multi_label: bool = True
    max_candidates: int = 30000
    # None: decide from the class outputs' quant limvals or value range whether they are logits.
    classes_are_probabilities: bool | None = None
