"""YOLOv8/YOLO11's conformance scenes: per stride a box map of 4 x reg_max DFL bins (a sharp bin per side) and
a class map, one confident cell per object; ``verify-decode`` held to the export's decoded head output
``[1, 4 + nc, anchors]``. YOLO26's heads are these at reg_max 1 (the 4 distances themselves): its parts
plant them with :func:`plant`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from harness.conformance import scenes as shared
from harness.conformance.agreement import ImageAgreement, VerifyFrame, candidate_agreement
from harness.conformance.scenes import Decoder, Scene, SceneRecipe
from harness.conformance.scenes import fcr_mixed_grids as fcr_mixed
from harness.conformance.scenes import half_cell_misreadings as coordinate_misreadings
from harness.conformance.scenes import logit_class_maps as logit_classes
from harness.conformance.scenes import no_config_misreadings as config_misreadings
from harness.conformance.scenes import no_sentences as sentences
from harness.conformance.scenes import paired_across_grids as misordered
from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.head_family import HeadFamily, HeadRole, HeadTensor
from harness.core.settings import DecodeConfig
from harness.decode import dfl
from harness.decode.layout import HeadOutput, layout_of
from harness.families.yolov8.decode import decode as yolov8_decode

if TYPE_CHECKING:
    from onnx import ModelProto

# The parts shared with other families (harness.conformance.scenes).
__all__ = ["config_misreadings", "coordinate_misreadings", "fcr_mixed", "logit_classes", "misordered", "sentences"]


def recipe() -> SceneRecipe:
    return SceneRecipe(family=HeadFamily.YOLOV8, reg_max=16)


def reference_decoder() -> Decoder:
    return yolov8_decode


def plant(recipe: SceneRecipe, seed: int) -> Scene:
    """Per stride a box map (``recipe.reg_max`` bins a side; at 1 the distances themselves, in cells) and a
    class map, the objects planted on random cells of random grids, none overlapping."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    strides = (8, 16, 32)
    box_ch = 4 * recipe.reg_max
    boxes = [rng.normal(0, 1, (h // s, w // s, box_ch)).astype(np.float32) for s in strides]
    classes = [np.full((h // s, w // s, recipe.classes), shared.BACKGROUND_LOGIT, np.float32) for s in strides]
    planted: list[tuple[int, int, int, int]] = []  # grid index, row, col, class
    planted_boxes: list[np.ndarray] = []
    while len(planted) < recipe.objects:
        g = int(rng.integers(3))
        s = strides[g]
        row, col = int(rng.integers(h // s)), int(rng.integers(w // s))
        # YOLO26 (reg_max 1) carries the distances themselves, in cells; DFL heads a sharp bin per side
        sides = rng.uniform(0.5, 6.0, 4) if recipe.reg_max == 1 else rng.integers(1, recipe.reg_max - 1, 4)
        cx, cy = (col + 0.5) * s, (row + 0.5) * s
        box = np.array([cx - sides[0] * s, cy - sides[1] * s, cx + sides[2] * s, cy + sides[3] * s])
        if any(shared.iou(box, other) > 0.05 for other in planted_boxes):
            continue
        cls = int(rng.integers(recipe.classes))
        if recipe.reg_max == 1:
            boxes[g][row, col] = sides
        else:
            boxes[g][row, col] = 0.0
            boxes[g][row, col, np.arange(4) * recipe.reg_max + sides] = shared.DFL_PEAK
        p = rng.uniform(0.6, 0.98)
        classes[g][row, col, cls] = np.log(p / (1 - p))
        planted.append((g, row, col, cls))
        planted_boxes.append(box)
    if not recipe.logits:
        classes = [shared.sigmoid(c).astype(np.float32) for c in classes]

    outputs: dict[str, np.ndarray] = {}
    specs = {}
    heads: list[HeadOutput] = []
    seen_boxes: list[np.ndarray] = []
    seen_classes: list[np.ndarray] = []
    for g in range(3):
        for role, value, order, quant in (
            (HeadRole.BOX, boxes[g], recipe.box_order, shared.box_quant(recipe.format_type)),
            (HeadRole.CLASS, classes[g], recipe.class_orders[g], shared.class_quant(recipe.logits, recipe.format_type)),
        ):
            name = f"{'box' if role is HeadRole.BOX else 'cls'}{g}"
            outputs[name], seen, specs[name] = shared.as_output(name, value, order, quant, recipe.format_type)
            heads.append(HeadOutput.of_spec(specs[name], role))
            (seen_boxes if role is HeadRole.BOX else seen_classes).append(seen)

    expected_boxes, scores, class_ids, planted_strides = [], [], [], []
    bins = np.arange(recipe.reg_max, dtype=np.float64)
    for g, row, col, cls in planted:
        s = strides[g]
        logits = seen_boxes[g][row, col].astype(np.float64).reshape(4, recipe.reg_max)
        prob = np.exp(logits - logits.max(axis=1, keepdims=True))
        dist = logits[:, 0] if recipe.reg_max == 1 else (prob / prob.sum(axis=1, keepdims=True)) @ bins
        cx, cy = (col + 0.5) * s, (row + 0.5) * s
        expected_boxes.append([cx - dist[0] * s, cy - dist[1] * s, cx + dist[2] * s, cy + dist[3] * s])
        class_value = float(seen_classes[g][row, col, cls])
        scores.append(float(shared.sigmoid(class_value)) if recipe.logits else class_value)
        class_ids.append(cls)
        planted_strides.append(s)
    config = DecodeConfig(input_hw=recipe.input_hw, score_threshold=0.25, iou_threshold=0.7)
    expected = Detections(np.array(expected_boxes), np.array(scores), np.array(class_ids))
    strides_planted = np.array(planted_strides, dtype=np.float32)
    layout = layout_of(heads, recipe.input_hw)
    return Scene(outputs, specs, config, expected, strides_planted, layout, recipe.family)


def export_reference(
    model: ModelProto, heads: Sequence[HeadTensor], config: DecodeConfig
) -> tuple[ModelProto, DecodeConfig]:
    """The model with its DFL conv run in float where onnxruntime's dynamic quantization put it on 8-bit
    activations (:func:`~harness.inputs.onnx_graph.dequantize_decode_tail`)."""
    from harness.inputs.onnx_graph import dequantize_decode_tail

    return dequantize_decode_tail(model), config


def decoded_head_agreement(frame: VerifyFrame, decoder: Decoder) -> ImageAgreement:
    """The export's decoded head output ``[4 + nc, anchors]`` (xywh, class probabilities) against
    :func:`~harness.decode.dfl.candidates` and ``decoder``'s detections."""
    boxes, scores = dfl.candidates(frame.outputs, frame.layout, frame.config)
    ref_boxes = xywh_to_xyxy(frame.reference[:4].T)
    ref_scores = np.ascontiguousarray(frame.reference[4:].T, dtype=np.float32)
    detections = decoder(frame.outputs, frame.specs, frame.config)
    return candidate_agreement(frame, (boxes, scores), (ref_boxes, ref_scores), detections)


def agreement(frame: VerifyFrame) -> ImageAgreement:
    return decoded_head_agreement(frame, yolov8_decode)
