"""What the doctor's diagnosis is given: the reference after an NMS per class."""

import numpy as np
import pytest

from harness.core.detections import Detections
from harness.doctor.evidence import after_nms


def test_an_nms_over_the_reference_keeps_the_best_of_overlapping_boxes_of_a_class_and_every_other_class():
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 11], [0, 0, 10, 10], [20, 20, 30, 30]], np.float32)
    frame = Detections(boxes, np.array([0.6, 0.9, 0.5, 0.4], np.float32), np.array([0, 0, 1, 0]))
    (kept,) = after_nms([frame], iou_threshold=0.7, max_per_class=100)
    found = sorted(zip(kept.class_ids.tolist(), kept.scores.tolist(), strict=True))
    assert found == [(0, pytest.approx(0.4)), (0, pytest.approx(0.9)), (1, pytest.approx(0.5))]
    (apart,) = after_nms([frame], iou_threshold=0.95, max_per_class=100)  # IoU 0.91: both kept
    assert len(apart) == 4
