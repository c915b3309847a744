"""The decoder against real exports' own decode tails: cut at the six heads, decode, compare with the
full head output ``[1, 4 + nc, anchors]`` on all 16 COCO fixture images, for YOLOv8n and YOLO11n.

The reference is the model's decode tail run on the cut heads; that it is the full model's output
is checked on a few images."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest

from harness.backends.onnx.runner import DecodeTailRunner, FullHeadRunner, OnnxRunner
from harness.conformance.agreement import same_detections
from harness.core.detections import xywh_to_xyxy
from harness.core.settings import DecodeConfig, NmsMode
from harness.core.specs import OutputSpec
from harness.decode.dfl import decode_candidates
from harness.decode.nms import nms_hailort, nms_ultralytics
from harness.families.yolov8.decode import decode
from harness.families.yolov8.onnx import find_heads
from harness.inputs.onnx_graph import cut_at_heads, decode_tail, dequantize_decode_tail, load_model, model_input
from harness.inputs.preprocess import letterbox, load_image, to_nchw_float

# Against the full head with its DFL conv run in float. Measured maxima over both models and all
# 16 images: boxes 1.22e-4 px (yolov8n at 640; two float32 steps there), 6.1e-5 px (yolo11n at
# 320); scores 1.78e-7.
BOX_TOLERANCE_PX = 2.5e-4
SCORE_TOLERANCE = 3e-7

# Against the full head as shipped, whose DFL conv runs on 8-bit dynamically quantized softmax
# probabilities. Measured maxima: 0.159 stride (yolo11n), 0.154 (yolov8n); 4.61 px.
SHIPPED_BOX_TOLERANCE_STRIDES = 0.17
SHIPPED_BOX_TOLERANCE_PX = 5.0

MODELS = ["yolov8n_coco80_640_int8.onnx", "yolo11n_coco80_320_int8.onnx"]
NMS = {NmsMode.HAILORT: nms_hailort, NmsMode.ULTRALYTICS: nms_ultralytics}


@dataclass(frozen=True)
class Frame:
    feed: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    shipped: np.ndarray  # (4 + nc, anchors)
    float_dfl: np.ndarray


@dataclass(frozen=True)
class Oracle:
    model: onnx.ModelProto
    input_hw: tuple[int, int]
    specs: dict[str, OutputSpec]
    strides: np.ndarray  # per anchor
    frames: list[Frame]


@pytest.fixture(scope="module", params=MODELS)
def oracle(request, shared_fixtures: Path) -> Oracle:
    model = load_model(shared_fixtures / "onnx" / request.param)
    input_name, input_hw = model_input(model)
    heads = find_heads(model)
    images = sorted((shared_fixtures / "datasets/coco128_val16/images/val2017").glob("*.jpg"))
    assert len(images) == 16
    frames = []
    with (
        OnnxRunner(cut_at_heads(model, heads), threads=1) as cut,
        DecodeTailRunner(decode_tail(model, heads), threads=1) as shipped,
        DecodeTailRunner(decode_tail(dequantize_decode_tail(model), heads), threads=1) as float_dfl,
    ):
        for path in images:
            feed = {input_name: to_nchw_float(letterbox(load_image(path), input_hw)[0])}
            outputs = cut.infer(feed)
            frames.append(Frame(feed, outputs, shipped.infer(outputs), float_dfl.infer(outputs)))
        specs = cut.output_specs
    strides = np.concatenate(
        [np.full(h.grid[0] * h.grid[1], input_hw[0] / h.grid[0]) for h in heads if h.role == "box"]
    )
    return Oracle(model, input_hw, specs, strides, frames)


def _reference(head: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return xywh_to_xyxy(head[:4].T), np.ascontiguousarray(head[4:].T)


def test_decode_tail_on_the_cut_heads_gives_the_full_model_output(oracle: Oracle) -> None:
    with FullHeadRunner(oracle.model, threads=1) as full:
        for frame in oracle.frames[:2]:
            np.testing.assert_array_equal(full.infer(frame.feed), frame.shipped)


def test_decoded_cut_outputs_equal_the_full_head_with_float_dfl(oracle: Oracle) -> None:
    config = DecodeConfig(input_hw=oracle.input_hw)
    for frame in oracle.frames:
        boxes, scores = decode_candidates(frame.outputs, oracle.specs, config)
        ref_boxes, ref_scores = _reference(frame.float_dfl)
        assert boxes.shape == ref_boxes.shape and scores.shape == ref_scores.shape
        assert np.abs(boxes - ref_boxes).max() <= BOX_TOLERANCE_PX
        assert np.abs(scores - ref_scores).max() <= SCORE_TOLERANCE


def test_decoded_cut_outputs_are_within_the_8_bit_dfl_error_of_the_shipped_full_head(oracle: Oracle) -> None:
    config = DecodeConfig(input_hw=oracle.input_hw)
    worst_px = 0.0
    for frame in oracle.frames:
        boxes, scores = decode_candidates(frame.outputs, oracle.specs, config)
        ref_boxes, ref_scores = _reference(frame.shipped)
        diff = np.abs(boxes - ref_boxes).max(axis=1)
        assert (diff <= SHIPPED_BOX_TOLERANCE_STRIDES * oracle.strides).all()
        assert diff.max() <= SHIPPED_BOX_TOLERANCE_PX
        assert np.abs(scores - ref_scores).max() <= SCORE_TOLERANCE
        worst_px = max(worst_px, float(diff.max()))
    assert worst_px > 1.0  # the 8-bit DFL is why the tight comparison runs the DFL in float


@pytest.mark.parametrize("mode", list(NmsMode))
@pytest.mark.parametrize("score_threshold", [0.2, 0.001])
def test_detections_after_nms_are_identical(oracle: Oracle, mode: NmsMode, score_threshold: float) -> None:
    config = DecodeConfig(input_hw=oracle.input_hw, mode=mode, score_threshold=score_threshold)
    total = 0
    for frame in oracle.frames:
        detections = decode(frame.outputs, oracle.specs, config)
        ref_boxes, ref_scores = _reference(frame.float_dfl)
        expected = NMS[mode](ref_boxes, ref_scores, config)
        assert same_detections(detections, expected, BOX_TOLERANCE_PX, SCORE_TOLERANCE)
        total += len(expected)
    assert total > 16  # detections on most images, not an empty comparison
