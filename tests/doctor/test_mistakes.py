"""YOLO26's host mistakes on a hand-made frame of its heads: what each keeps that the one-to-one
head's top-k does not, or drops that it keeps."""

import numpy as np
import pytest

from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.doctor.mistakes import box_distances_read_as_dfl, one2one_with_nms, one_class_per_anchor
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolo26.one2one.decode import decode as decode_one2one

INPUT_HW = (64, 64)
STRIDES = (8, 16, 32)
BACKGROUND = 0.01  # class probability of every cell not set


def _frame(cells):
    """Raw YOLO26 head outputs of a 64 x 64 input, two classes, float32 probabilities: ``cells`` are
    ``(stride, row, col, distances ltrb in strides, class probabilities)``; every other cell background."""
    outputs, specs = {}, {}
    for stride in STRIDES:
        n = INPUT_HW[0] // stride
        boxes = np.ones((n, n, 4), np.float32)
        classes = np.full((n, n, 2), BACKGROUND, np.float32)
        for s, row, col, distances, probabilities in cells:
            if s == stride:
                boxes[row, col], classes[row, col] = distances, probabilities
        for name, value in ((f"box{stride}", boxes), (f"cls{stride}", classes)):
            outputs[name] = value
            specs[name] = OutputSpec(name, value.shape, FormatOrder.NHWC, FormatType.FLOAT32, ())
    return outputs, specs, DecodeConfig(INPUT_HW, score_threshold=0.25, iou_threshold=0.7)


def _sorted(detections):
    order = np.lexsort((detections.class_ids, -detections.scores))
    return detections.boxes[order], detections.scores[order], detections.class_ids[order]


def _assert_same(got, want):
    for mine, theirs in zip(_sorted(got), _sorted(want), strict=True):
        np.testing.assert_array_equal(mine, theirs)


# Two neighbouring cells of stride 8 predicting nearly the same box of class 0 (IoU 0.83): what a
# one-to-one head does for an object it is unsure of, and an NMS merges.
TWINS = [(8, 3, 3, (2.0, 2.0, 2.0, 2.0), (0.9, BACKGROUND)), (8, 3, 4, (2.8, 2.0, 1.5, 2.0), (0.8, BACKGROUND))]


@pytest.mark.parametrize(
    "nms",
    [one2one_with_nms(), one2one_with_nms(0.45, NmsMode.ULTRALYTICS, multi_label=False)],
    ids=["the_configs_nms", "ultralytics_nms_at_0.45"],
)
def test_an_nms_over_the_one_to_one_head_drops_the_overlapping_box_its_top_k_keeps(nms):
    outputs, specs, config = _frame(TWINS)
    kept = decode_one2one(outputs, specs, config)
    assert sorted(kept.scores.tolist()) == pytest.approx([0.8, 0.9])
    merged = nms(outputs, specs, config)
    assert merged.scores.tolist() == pytest.approx([0.9]) and merged.class_ids.tolist() == [0]


def test_the_nms_decoders_of_other_settings_are_other_cache_entries():
    names = {one2one_with_nms().__name__, one2one_with_nms(0.45, NmsMode.ULTRALYTICS, multi_label=False).__name__}
    assert len(names) == 2 and all(name.startswith("one2one_with_nms(") for name in names)


def test_an_nms_over_apart_boxes_finds_what_the_top_k_finds():
    cells = [(8, 1, 1, (1.0, 1.0, 1.0, 1.0), (0.9, BACKGROUND)), (16, 3, 3, (0.5, 0.5, 0.5, 0.5), (BACKGROUND, 0.7))]
    outputs, specs, config = _frame(cells)
    _assert_same(one2one_with_nms()(outputs, specs, config), decode_one2one(outputs, specs, config))


@pytest.mark.parametrize("family_decode", [decode_one2one, decode_one2many])
def test_reading_the_four_distances_as_one_dfl_bin_a_side_makes_every_box_a_point_at_its_anchor(family_decode):
    cells = [(8, 2, 5, (2.0, 1.0, 3.0, 1.5), (0.9, BACKGROUND)), (32, 1, 0, (0.5,) * 4, (0.3, 0.6))]
    outputs, specs, config = _frame(cells)
    right = _sorted(family_decode(outputs, specs, config))
    misread = _sorted(box_distances_read_as_dfl(family_decode)(outputs, specs, config))
    np.testing.assert_allclose(misread[1], right[1])
    np.testing.assert_array_equal(misread[2], right[2])
    centres = {(5.5 * 8, 2.5 * 8), (0.5 * 32, 1.5 * 32)}  # each anchor's cell centre (x, y)
    assert {(float(x1), float(y1)) for x1, y1, _, _ in misread[0]} <= centres
    np.testing.assert_array_equal(misread[0][:, :2], misread[0][:, 2:])  # no width, no height


def test_one_class_per_anchor_drops_the_second_class_the_top_k_keeps():
    outputs, specs, config = _frame([(16, 2, 2, (1.0,) * 4, (0.9, 0.7))])
    both = decode_one2one(outputs, specs, config)
    assert both.class_ids.tolist() == [0, 1] and both.scores.tolist() == pytest.approx([0.9, 0.7])
    one = one_class_per_anchor(outputs, specs, config)
    assert one.class_ids.tolist() == [0] and one.scores.tolist() == pytest.approx([0.9])
    np.testing.assert_allclose(one.boxes, both.boxes[:1])


def test_one_class_per_anchor_finds_what_the_top_k_finds_where_each_anchor_passes_with_one_class():
    cells = [(8, 0, 7, (1.0, 2.0, 0.5, 1.0), (0.6, BACKGROUND)), (16, 1, 1, (1.0,) * 4, (BACKGROUND, 0.8))]
    outputs, specs, config = _frame(cells)
    _assert_same(one_class_per_anchor(outputs, specs, config), decode_one2one(outputs, specs, config))
