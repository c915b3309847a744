"""Detections, coordinate conversions and letterbox geometry."""

from __future__ import annotations

from random import Random

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.core.detections import (
    Detections,
    Letterbox,
    letterbox_boxes,
    unletterbox,
    xyxy_pixels_to_yxyx_normalized,
    yxyx_normalized_to_xyxy_pixels,
)

sizes = st.tuples(st.integers(1, 4000), st.integers(1, 4000))
model_sizes = st.tuples(st.integers(32, 1280), st.integers(32, 1280))


def boxes_of(n: int, low: float, high: float) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float32, (n, 4), elements=st.floats(low, high, width=32))


@st.composite
def detections(draw: st.DrawFn, max_size: int = 12) -> Detections:
    n = draw(st.integers(0, max_size))
    boxes = draw(boxes_of(n, -50, 700))
    scores = draw(hnp.arrays(np.float32, n, elements=st.floats(0, 1, width=32)))
    class_ids = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 3)))  # few classes: many score/box ties
    return Detections(boxes, scores, class_ids)


@given(boxes_of(8, -0.5, 1.5), model_sizes)
def test_normalised_yxyx_to_pixel_xyxy_and_back_is_the_identity(yxyx: np.ndarray, input_hw: tuple[int, int]) -> None:
    back = xyxy_pixels_to_yxyx_normalized(yxyx_normalized_to_xyxy_pixels(yxyx, input_hw), input_hw)
    np.testing.assert_allclose(back, yxyx, rtol=1e-6, atol=1e-30)


@given(boxes_of(8, -100, 2000), model_sizes)
def test_pixel_xyxy_to_normalised_yxyx_and_back_is_the_identity(xyxy: np.ndarray, input_hw: tuple[int, int]) -> None:
    back = yxyx_normalized_to_xyxy_pixels(xyxy_pixels_to_yxyx_normalized(xyxy, input_hw), input_hw)
    np.testing.assert_allclose(back, xyxy, rtol=1e-6, atol=1e-30)


def test_normalised_records_are_y_first() -> None:
    xyxy = yxyx_normalized_to_xyxy_pixels(np.array([[0.5, 0.25, 1.0, 0.75]]), (200, 400))
    np.testing.assert_array_equal(xyxy, [[100, 100, 300, 200]])


@st.composite
def placements(draw: st.DrawFn) -> tuple[Letterbox, np.ndarray]:
    original_hw, input_hw = draw(sizes), draw(model_sizes)
    letterbox = draw(st.sampled_from([Letterbox.fit, Letterbox.resize]))(original_hw, input_hw)
    assume(letterbox.scale_x > 0 and letterbox.scale_y > 0)  # an image shrunk to nothing is refused (preprocess)
    oh, ow = original_hw
    corners = draw(hnp.arrays(np.float64, (6, 4), elements=st.floats(0, 1)))
    boxes = corners * np.array([ow, oh, ow, oh])
    boxes = np.concatenate([np.minimum(boxes[:, :2], boxes[:, 2:]), np.maximum(boxes[:, :2], boxes[:, 2:])], axis=1)
    return letterbox, boxes.astype(np.float32)


@given(placements())
def test_unletterbox_inverts_letterbox_boxes_for_fit_and_resize(placement: tuple[Letterbox, np.ndarray]) -> None:
    letterbox, boxes = placement
    in_input = letterbox_boxes(boxes, letterbox)
    dets = Detections(in_input, np.ones(len(boxes)), np.zeros(len(boxes)))
    back = unletterbox(dets, letterbox, clip=False).boxes
    scale = max(letterbox.original_hw)
    np.testing.assert_allclose(back, boxes, rtol=1e-5, atol=1e-5 * scale)


def test_unletterbox_clips_to_the_original_image() -> None:
    letterbox = Letterbox.fit((720, 1280), (640, 640))  # 640 x 360 placed at top 140
    dets = Detections([[-10, 100, 700, 520]], [0.5], [0])
    np.testing.assert_allclose(unletterbox(dets, letterbox).boxes, [[0, 0, 1280, 720]])
    np.testing.assert_allclose(unletterbox(dets, letterbox, clip=False).boxes, [[-20, -80, 1400, 760]])


def ultralytics_letterbox(
    original_hw: tuple[int, int], input_hw: tuple[int, int]
) -> tuple[tuple[float, float], int, int]:
    """Ultralytics ``LetterBox.__call__`` defaults (auto=False, scaleup=True, center=True), transcribed:
    the (x, y) gains ``scale_boxes`` divides by (the resized size over the original, per axis:
    ultralytics/utils/ops.py) and the (left, top) it pads with and shifts labels by (ultralytics/data/augment.py)."""
    shape, new_shape = original_hw, input_hw
    r = min(new_shape[0] / shape[0], new_shape[1] / shape[1])
    new_unpad = round(shape[1] * r), round(shape[0] * r)
    dw, dh = new_shape[1] - new_unpad[0], new_shape[0] - new_unpad[1]
    dw /= 2
    dh /= 2
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    assert new_unpad[0] + left + right == new_shape[1] and new_unpad[1] + top + bottom == new_shape[0]
    return (new_unpad[0] / shape[1], new_unpad[1] / shape[0]), left, top


@given(sizes, model_sizes)
def test_letterbox_fit_matches_ultralytics_letterbox_arithmetic(
    original_hw: tuple[int, int], input_hw: tuple[int, int]
) -> None:
    gains, left, top = ultralytics_letterbox(original_hw, input_hw)
    letterbox = Letterbox.fit(original_hw, input_hw)
    assert (letterbox.scale_x, letterbox.scale_y) == gains
    assert (letterbox.pad_x, letterbox.pad_y) == (left, top)


@pytest.mark.parametrize(
    ("original_hw", "input_hw", "scale", "pad_x", "pad_y"),
    [
        ((720, 1280), (640, 640), 0.5, 0, 140),  # COCO-like landscape: 640 x 360, 140 above and below
        ((480, 641), (640, 640), (640 / 641, 479 / 480), 0, 80),  # 479 rows: 161 padding split 80 top / 81 bottom
        ((427, 640), (640, 640), 1.0, 0, 106),  # 213 padding split 106 / 107
        ((640, 427), (640, 640), 1.0, 106, 0),
        ((640, 640), (640, 640), 1.0, 0, 0),
    ],
)
def test_letterbox_fit_pads_left_and_top_with_the_whole_pixels_ultralytics_adds(
    original_hw: tuple[int, int], input_hw: tuple[int, int], scale: float | tuple[float, float], pad_x: int, pad_y: int
) -> None:
    letterbox = Letterbox.fit(original_hw, input_hw)
    gains = scale if isinstance(scale, tuple) else (scale, scale)
    assert (letterbox.scale_x, letterbox.scale_y) == pytest.approx(gains)
    assert (letterbox.pad_x, letterbox.pad_y) == (pad_x, pad_y)


def test_letterbox_resize_scales_each_axis_without_padding() -> None:
    letterbox = Letterbox.resize((480, 960), (640, 640))
    assert (letterbox.scale_x, letterbox.scale_y, letterbox.pad_x, letterbox.pad_y) == (640 / 960, 640 / 480, 0, 0)


@pytest.mark.parametrize(
    ("boxes", "scores", "class_ids"),
    [
        (np.zeros((2, 4)), np.zeros(3), np.zeros(2)),
        (np.zeros((3, 4)), np.zeros(3), np.zeros(2)),
        (np.zeros((1, 4)), np.zeros(0), np.zeros(0)),
    ],
)
def test_detections_rejects_mismatched_lengths(boxes: np.ndarray, scores: np.ndarray, class_ids: np.ndarray) -> None:
    with pytest.raises(ValueError, match=r"boxes, .* scores and .* class ids must match"):
        Detections(boxes, scores, class_ids)


def test_detections_normalises_dtypes_and_shapes() -> None:
    dets = Detections([1, 2, 3, 4], [0.5], [2.0])
    assert dets.boxes.shape == (1, 4) and dets.boxes.dtype == np.float32
    assert dets.scores.dtype == np.float32 and dets.class_ids.dtype == np.int64
    assert len(Detections.empty()) == 0 and len(Detections.concatenate([dets, dets])) == 2


@given(detections(), st.randoms(use_true_random=False))
def test_sorted_is_canonical_under_any_permutation_of_the_input(dets: Detections, rng: Random) -> None:
    order = list(range(len(dets)))
    rng.shuffle(order)
    a, b = dets.sorted(), dets.select(np.array(order, dtype=np.int64)).sorted()
    np.testing.assert_array_equal(a.boxes, b.boxes)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.class_ids, b.class_ids)


@given(detections())
def test_sorted_orders_by_class_then_score_descending(dets: Detections) -> None:
    s = dets.sorted()
    keys = list(zip(s.class_ids.tolist(), (-s.scores).tolist(), strict=True))
    assert keys == sorted(keys)
