"""HailoRT's bbox-only buffers (YOLOv5, YOLOv8) <-> proposals: the output spec, round trips in every host
form, and bad buffers and specs refused naming the field."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.errors import MalformedBufferError, SpecError
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.formats.bbox_only import (
    LEADING_FIELDS,
    UNNAMED,
    bbox_only_spec,
    encode_bbox_only,
    frame_shape,
    read_bbox_only,
)

FAMILIES = (HeadFamily.YOLOV8, HeadFamily.YOLOV5)


@st.composite
def proposals(draw, sides=(32, 64, 128, 640)):
    """Proposals of one frame: boxes in input pixels (past the edges too), fields (YOLOv5's objectness and
    the class values) in [0, 1], an input size, the family."""
    family = draw(st.sampled_from(FAMILIES))
    input_hw = (draw(st.sampled_from(sides)), draw(st.sampled_from(sides)))
    n = draw(st.integers(1, 50))
    classes = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    h, w = input_hw
    corner = rng.uniform([-0.25 * w, -0.25 * h], [w, h], (n, 2)).astype(np.float32)
    size = rng.uniform(0, [0.5 * w, 0.5 * h], (n, 2)).astype(np.float32)
    boxes = np.concatenate([corner, corner + size], axis=1)
    fields = rng.random((n, len(LEADING_FIELDS[family]) - 4 + classes), dtype=np.float32)
    return boxes, fields, input_hw, family


def test_the_spec_is_the_vstream_info_hailort_gives_the_op_output():
    """hailort: src/hef/hef.cpp, create_yolov8_bbox_only_op_metadata / create_yolov5_bbox_only_op_metadata;
    nms_post_process.cpp, NmsOpMetadata::get_output_vstream_info (also held to HailoRT's own by
    tests/backends/test_hailort_oracle_bbox_only.py)."""
    v8 = bbox_only_spec("yolov8n/yolov8_nms_postprocess", 8400, 80, HeadFamily.YOLOV8)
    assert v8 == OutputSpec(
        "yolov8n/yolov8_nms_postprocess",
        (1, 8400, 84),
        FormatOrder.NHWC,
        FormatType.FLOAT32,
        (QuantInfo(0.0, 1.0, 0.0, 0.0),),
    )
    assert bbox_only_spec("out", 25200, 80, HeadFamily.YOLOV5).shape == (1, 25200, 85)


@pytest.mark.parametrize(("proposals_", "classes"), [(0, 3), (10, 0)])
def test_a_spec_without_proposals_or_classes_is_refused(proposals_, classes):
    with pytest.raises(SpecError, match=rf"output 'out': {proposals_} proposals of {classes} classes; expected"):
        bbox_only_spec("out", proposals_, classes, HeadFamily.YOLOV8)


@pytest.mark.parametrize("family", [HeadFamily.YOLO26_ONE2ONE, HeadFamily.YOLO26_ONE2MANY])
def test_a_family_without_a_bbox_only_op_is_refused_naming_those_with_one(family):
    with pytest.raises(SpecError, match=rf"head family '{family.value}': HailoRT has no bbox-only op for it; expected"):
        bbox_only_spec("out", 10, 2, family)
    with pytest.raises(SpecError, match="'yolov8' or 'yolov5'"):
        read_bbox_only(np.zeros((1, 10, 6), np.float32), (1, 10, 6), (32, 32), family)


@settings(max_examples=100, deadline=None)
@given(proposals())
def test_reading_the_encoded_buffer_gives_the_proposals_back(case):
    boxes, fields, input_hw, family = case
    buffer = encode_bbox_only(boxes, fields, input_hw)
    spec = bbox_only_spec("out", len(boxes), fields.shape[1] - (len(LEADING_FIELDS[family]) - 4), family)
    assert buffer.shape == spec.shape and buffer.dtype == np.float32
    frame = read_bbox_only(buffer, spec, input_hw, family)
    # a power-of-two side divides and multiplies back exactly; others within float32 rounding
    np.testing.assert_allclose(frame.boxes, boxes, rtol=1e-6, atol=1e-4)
    if family is HeadFamily.YOLOV5:
        np.testing.assert_array_equal(frame.objectness, fields[:, 0])
        np.testing.assert_array_equal(frame.classes, fields[:, 1:])
    else:
        assert frame.objectness is None
        np.testing.assert_array_equal(frame.classes, fields)


@settings(max_examples=50, deadline=None)
@given(proposals(sides=(32, 64, 128, 1024)))
def test_a_power_of_two_input_gives_the_boxes_back_to_the_bit(case):
    boxes, fields, input_hw, family = case
    buffer = encode_bbox_only(boxes, fields, input_hw)
    np.testing.assert_array_equal(read_bbox_only(buffer, buffer.shape, input_hw, family).boxes, boxes)


def test_the_buffer_is_y_first_and_normalised_to_the_input():
    buffer = encode_bbox_only(np.array([[10, 20, 30, 60]]), np.array([[0.5, 0.25]]), (80, 40))
    np.testing.assert_array_equal(buffer, np.array([[[0.25, 0.25, 0.75, 0.75, 0.5, 0.25]]], np.float32))


@settings(max_examples=30, deadline=None)
@given(proposals())
def test_every_host_form_of_one_frame_reads_alike(case):
    boxes, fields, input_hw, family = case
    buffer = encode_bbox_only(boxes, fields, input_hw)
    want = read_bbox_only(buffer, buffer.shape, input_hw, family)
    transposed = np.asfortranarray(buffer)  # the same values, another memory order
    for form in (
        buffer[0],
        buffer.ravel(),
        buffer.tobytes(),
        bytearray(buffer.tobytes()),
        memoryview(buffer),
        transposed,
        memoryview(transposed),
    ):
        got = read_bbox_only(form, buffer.shape, input_hw, family)
        np.testing.assert_array_equal(got.boxes, want.boxes)
        np.testing.assert_array_equal(got.classes, want.classes)


def test_nan_boxes_are_read_as_written():
    """HailoRT's DFL softmax overflows into NaN boxes (tests/backends/test_hailort_oracle.py): a device
    frame, not a damaged buffer."""
    buffer = np.array([[[np.nan, 0.1, 0.5, 0.5, 0.9]]], np.float32)
    frame = read_bbox_only(buffer, buffer.shape, (32, 32), HeadFamily.YOLOV8)
    assert np.isnan(frame.boxes[0, 1]) and frame.classes[0, 0] == np.float32(0.9)


def spec(**changes) -> OutputSpec:
    fields = {"name": "out", "shape": (1, 4, 7), "format_order": FormatOrder.NHWC, "format_type": FormatType.FLOAT32}
    return OutputSpec(**{**fields, **changes})


@pytest.mark.parametrize(
    ("given_", "family", "message"),
    [
        (spec(format_order=FormatOrder.NHCW), HeadFamily.YOLOV8, "output 'out': format order NHCW; expected NHWC"),
        (spec(format_type=FormatType.UINT8), HeadFamily.YOLOV8, "output 'out': format type UINT8; expected FLOAT32"),
        (spec(shape=(4, 7)), HeadFamily.YOLOV8, r"output 'out': shape \(4, 7\); expected \(1, proposals, 4 \+ classes"),
        (spec(shape=(2, 4, 7)), HeadFamily.YOLOV8, r"shape \(2, 4, 7\); expected \(1, proposals"),
        (spec(shape=(1, 0, 7)), HeadFamily.YOLOV8, r"shape \(1, 0, 7\); expected"),
        (spec(shape=(1, 4, 4)), HeadFamily.YOLOV8, r"shape \(1, 4, 4\); expected .* at least one class"),
        (spec(shape=(1, 4, 5)), HeadFamily.YOLOV5, r"\(1, proposals, 5 \+ classes\) of a yolov5 .*objectness"),
        ((1, 4, 5), HeadFamily.YOLOV5, rf"output '{UNNAMED}': shape \(1, 4, 5\); expected"),
    ],
)
def test_a_spec_or_shape_that_is_not_a_bbox_only_output_is_refused_naming_the_field(given_, family, message):
    with pytest.raises(SpecError, match=message):
        frame_shape(given_, family)
    with pytest.raises(SpecError, match=message):
        read_bbox_only(np.zeros(28, np.float32), given_, (32, 32), family)


@pytest.mark.parametrize(
    ("buffer", "message"),
    [
        (np.zeros((1, 4, 7), np.float64), "output 'out': buffer dtype: expected float32, found float64"),
        (np.zeros((1, 4, 7), ">f4"), r"buffer dtype: expected float32, found >f4 \(byte-swapped\)"),
        (np.zeros((1, 7, 4), np.float32), r"buffer shape: expected \(1, 4, 7\), \(4, 7\) or \(28,\), found \(1, 7"),
        (np.zeros((2, 4, 7), np.float32), r"buffer shape: .*found \(2, 4, 7\)"),
        (np.zeros(27, np.float32), r"buffer shape: .*found \(27,\)"),
        (bytes(27 * 4), r"buffer size: expected 112 bytes \(4 proposals x 7 float32\), found 108 bytes"),
        (bytes(113), "buffer size: expected 112 bytes"),
        ([0.0] * 28, "buffer type: expected bytes or a numpy array, found list"),
    ],
)
def test_a_buffer_of_the_wrong_type_or_shape_is_refused_naming_the_field(buffer, message):
    with pytest.raises(MalformedBufferError, match=message):
        read_bbox_only(buffer, spec(), (32, 32), HeadFamily.YOLOV8)


def test_fields_that_do_not_match_the_boxes_are_refused():
    with pytest.raises(SpecError, match=r"fields of shape \(3, 2\) for 4 boxes; expected \(4, k\)"):
        encode_bbox_only(np.zeros((4, 4)), np.zeros((3, 2)), (32, 32))
