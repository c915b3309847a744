"""HailoRT's bbox-only ops (YOLOv8, YOLOv5) and the host's NMS over their buffer: decoding the op's buffer
gives the family decoder's detections, the buffer holds every proposal as a loop over the heads writes it
(YOLOv5's maps in the order of their names), and what the op does not do (sigmoid, objectness x class) it
does not do. Held to HailoRT's own ops by tests/backends/test_hailort_oracle_bbox_only.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_decode_yolo import random_heads
from test_decode_yolov5 import yolov5_heads

from harness.core.detections import xyxy_pixels_to_yxyx_normalized
from harness.core.errors import HeadPairingError, SpecError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.bbox_only import bbox_only_op, decode_bbox_only
from harness.decode.heads import decoder
from harness.families.yolov8 import decode as yolov8
from harness.formats.bbox_only import bbox_only_spec

from support.reference.yolov5 import reference_candidates

modes = st.sampled_from(list(NmsMode))
thresholds = st.sampled_from([0.05, 0.25, 0.5])


def assert_same(got, want, exact_boxes: bool) -> None:
    np.testing.assert_array_equal(got.class_ids, want.class_ids)
    np.testing.assert_array_equal(got.scores, want.scores)
    if exact_boxes:
        np.testing.assert_array_equal(got.boxes, want.boxes)
    else:  # divided by a side that is not a power of two and multiplied back: float32 rounding
        np.testing.assert_allclose(got.boxes, want.boxes, rtol=1e-6, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(random_heads(max_side=6).filter(lambda h: h.probabilities), thresholds, modes)
def test_decoding_the_yolov8_ops_buffer_gives_the_decoders_detections(heads, threshold, mode):
    config = DecodeConfig(input_hw=heads.input_hw, score_threshold=threshold, mode=mode)
    buffer = bbox_only_op(heads.outputs, heads.specs, config, HeadFamily.YOLOV8)
    got = decode_bbox_only(buffer, buffer.shape, config, HeadFamily.YOLOV8)
    want = decoder(HeadFamily.YOLOV8)(heads.outputs, heads.specs, config)
    assert_same(got, want, exact_boxes=all(side & (side - 1) == 0 for side in heads.input_hw))


@settings(max_examples=40, deadline=None)
@given(yolov5_heads().filter(lambda h: h[-1] != "logits"), thresholds, modes)
def test_decoding_the_yolov5_ops_buffer_gives_the_decoders_detections(heads, threshold, mode):
    """The op writes the maps in the order of their names, the decoder reads them stride ascending: the same
    detections, in the canonical order (values are drawn without ties)."""
    outputs, specs, _, anchors, side, _ = heads
    config = DecodeConfig(input_hw=(side, side), score_threshold=threshold, mode=mode, anchors=anchors)
    buffer = bbox_only_op(outputs, specs, config, HeadFamily.YOLOV5)
    got = decode_bbox_only(buffer.tobytes(), buffer.shape, config, HeadFamily.YOLOV5)
    want = decoder(HeadFamily.YOLOV5)(outputs, specs, config)
    assert_same(got.sorted(), want.sorted(), exact_boxes=True)  # sides 32 and 64


@settings(max_examples=30, deadline=None)
@given(random_heads(max_side=4))
def test_the_yolov8_buffer_holds_every_anchors_box_and_class_values_as_the_heads_hold_them(heads):
    """Every anchor, stride ascending, row-major; class values dequantized and never sigmoided, whatever
    the config says (the op has no sigmoid: logits stay logits)."""
    config = DecodeConfig(input_hw=heads.input_hw, classes_are_probabilities=False)
    buffer = bbox_only_op(heads.outputs, heads.specs, config, HeadFamily.YOLOV8)
    as_held = dataclasses.replace(config, classes_are_probabilities=True)
    boxes, classes = yolov8.candidates(heads.outputs, yolov8.layout(heads.specs, heads.input_hw), as_held)
    spec = bbox_only_spec("out", len(boxes), heads.nc, HeadFamily.YOLOV8)
    assert buffer.shape == spec.shape
    np.testing.assert_array_equal(buffer[0, :, 4:], classes)
    np.testing.assert_array_equal(buffer[0, :, :4], xyxy_pixels_to_yxyx_normalized(boxes, heads.input_hw))


@settings(max_examples=30, deadline=None)
@given(yolov5_heads().filter(lambda h: h[-1] != "logits"))
def test_the_yolov5_buffer_is_the_loop_over_each_map_in_the_order_of_its_name(heads):
    """A loop over every cell and anchor of each map, taken in byte order of the map's names as HailoRT's
    op walks its std::map of inputs; objectness and class values apart, not multiplied."""
    outputs, specs, by_stride, anchors, side, _ = heads
    config = DecodeConfig(input_hw=(side, side), anchors=anchors)
    buffer = bbox_only_op(outputs, specs, config, HeadFamily.YOLOV5)[0]
    in_name_order = sorted(by_stride, key=lambda head: head[0].encode())
    boxes, scores = reference_candidates(outputs, specs, in_name_order, (side, side), True, 0.0)
    assert len(buffer) == len(boxes)
    np.testing.assert_allclose(buffer[:, :4], xyxy_pixels_to_yxyx_normalized(boxes, (side, side)), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(buffer[:, 5:] * buffer[:, 4:5], scores)
    assert not np.array_equal(buffer[:, 5:], scores)


def test_a_yolov5_proposal_whose_objectness_misses_the_threshold_is_never_kept():
    """HailoRT's YOLOv5 NMS skips such a proposal before its classes (yolov5_post_process.hpp,
    extract_detections), and the decoder reads only the others: a class value above 1 cannot lift it."""
    buffer = np.array([[[0, 0, 0.5, 0.5, 0.4, 1.5], [0.5, 0.5, 1, 1, 0.5, 1.0]]], np.float32)
    config = DecodeConfig(input_hw=(32, 32), score_threshold=0.5, anchors=(((1.0, 1.0),),))
    got = decode_bbox_only(buffer, buffer.shape, config, HeadFamily.YOLOV5)
    np.testing.assert_array_equal(got.scores, [0.5])
    np.testing.assert_array_equal(got.boxes, [[16, 16, 32, 32]])


def test_the_host_scores_yolov8_proposals_by_their_class_values_alone():
    buffer = np.array([[[0, 0, 0.5, 0.5, 0.2, 0.7], [0.5, 0.5, 1, 1, 0.9, 0.1]]], np.float32)
    config = DecodeConfig(input_hw=(64, 32), score_threshold=0.5)
    got = decode_bbox_only(buffer, buffer.shape, config, HeadFamily.YOLOV8)
    np.testing.assert_array_equal(got.class_ids, [0, 1])
    np.testing.assert_array_equal(got.scores, np.float32([0.9, 0.7]))
    np.testing.assert_array_equal(got.boxes, [[16, 32, 32, 64], [0, 0, 16, 32]])


@pytest.mark.parametrize("family", [HeadFamily.YOLO26_ONE2ONE, HeadFamily.YOLO26_ONE2MANY])
def test_a_family_without_a_bbox_only_op_is_refused(family):
    with pytest.raises(SpecError, match=f"head family '{family.value}': HailoRT has no bbox-only op for it"):
        bbox_only_op({}, {}, DecodeConfig(input_hw=(32, 32)), family)
    with pytest.raises(SpecError, match=f"head family '{family.value}'"):
        decode_bbox_only(np.zeros((1, 1, 5), np.float32), (1, 1, 5), DecodeConfig(input_hw=(32, 32)), family)


def test_class_values_said_to_be_logits_are_refused_by_the_host():
    config = DecodeConfig(input_hw=(32, 32), classes_are_probabilities=False)
    with pytest.raises(SpecError, match=r"DecodeConfig.classes_are_probabilities: False; expected True or None"):
        decode_bbox_only(np.zeros((1, 1, 5), np.float32), (1, 1, 5), config, HeadFamily.YOLOV8)


def test_yolov5_heads_without_anchors_are_refused():
    spec = OutputSpec("conv1", (2, 2, 6), FormatOrder.NHWC, FormatType.FLOAT32)
    outputs, specs = {"conv1": np.zeros(spec.shape, np.float32)}, {"conv1": spec}
    with pytest.raises(HeadPairingError, match="no anchors given"):
        bbox_only_op(outputs, specs, DecodeConfig(input_hw=(32, 32)), HeadFamily.YOLOV5)
