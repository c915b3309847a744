"""YOLOX's conformance scenes: per stride a box map of 4 (``tx, ty, tw, th``), an objectness map of 1 and a
class map of nc (its score objectness x class, a property of every objectness family); its known misreading
of how it decodes (box sizes without the exp); ``verify-decode`` held to the export's rows."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.conformance import scenes as shared
from harness.conformance.agreement import ImageAgreement, VerifyFrame, anchored_rows, candidate_agreement
from harness.conformance.misreadings import ConfigMisreading
from harness.conformance.scenes import Decoder, Scene, SceneRecipe
from harness.conformance.scenes import export_as_reference as export_reference
from harness.conformance.scenes import fcr_mixed_grids as fcr_mixed
from harness.conformance.scenes import half_cell_misreadings as coordinate_misreadings
from harness.conformance.scenes import logit_class_maps as logit_classes
from harness.conformance.scenes import no_sentences as sentences
from harness.conformance.scenes import paired_across_grids as misordered
from harness.conformance.words import SIZES_WITHOUT_THE_EXP
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.heads import head_layout
from harness.decode.layout import HeadOutput
from harness.decode.maps import host_array, to_float
from harness.decode.nms import nms
from harness.families.yolox import decode as yolox
from harness.families.yolox.decode import BOX_CHANNELS

# The parts shared with other families (harness.conformance.scenes).
__all__ = ["coordinate_misreadings", "export_reference", "fcr_mixed", "logit_classes", "misordered", "sentences"]

SIZES_LINEAR = (
    "the box sizes taken as t_wh x stride (YOLOX sizes a box exp(t_wh) x stride: the box map holds log sizes)"
)


def _sizes_without_the_exp(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """What a YOLOX decoder that sizes each box ``t_wh x stride`` returns: every cell's centre and scores as the
    reference decoder has them (:func:`~harness.families.yolox.decode.candidates`), its width and height its raw
    ``tw, th`` times its stride (a negative one too, as that arithmetic gives it), then the NMS of ``config.mode``
    (Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py, ``decode_outputs``: ``exp(wh) * stride``)."""
    heads = yolox.layout(specs, config.input_hw)
    boxes, scores = yolox.candidates(outputs, heads, config)
    t = np.concatenate([to_float(host_array(outputs, lv.box.host_spec), lv.box.host_spec) for lv in heads.levels])
    strides = np.concatenate([np.full(lv.cells, lv.stride, np.float32) for lv in heads.levels])
    centre = (boxes[:, :2] + boxes[:, 2:]) / np.float32(2)
    half = t[:, 2:4].astype(np.float32) * strides[:, None] / np.float32(2)
    return nms(np.concatenate([centre - half, centre + half], axis=1).astype(np.float32), scores, config)


# A YOLOX decoder's mistake in its own arithmetic, reproduced by the reference decoder making it.
CONFIG_MISREADINGS = (ConfigMisreading(SIZES_WITHOUT_THE_EXP, SIZES_LINEAR, lambda c: c, _sizes_without_the_exp),)


def config_misreadings() -> tuple[ConfigMisreading, ...]:
    return CONFIG_MISREADINGS


def recipe() -> SceneRecipe:
    return SceneRecipe(family=HeadFamily.YOLOX, reg_max=1)


def reference_decoder() -> Decoder:
    return yolox.decode


def plant(recipe: SceneRecipe, seed: int) -> Scene:
    """Per stride a box map of 4 (``tx, ty`` the centre's offset from the cell's corner in cells, ``tw, th``
    the log of the size in strides), an objectness map of 1 and a class map of nc (hailort:
    libhailort/src/net_flow/ops/yolox_post_process.hpp), the objects planted on cells of each stride in turn,
    each with objectness and class score below 1 (a score is their product); every other cell's objectness far
    below threshold, except ``recipe.decoys`` (see :func:`~harness.conformance.scenes.drawn_scores`). The
    objectness maps are laid out as the class maps of their stride (``recipe.class_orders``)."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    strides = (8, 16, 32)
    boxes = [rng.normal(0, 1, (h // s, w // s, BOX_CHANNELS)) for s in strides]
    objectness = [np.full((h // s, w // s, 1), shared.BACKGROUND_LOGIT) for s in strides]
    classes = [np.full((h // s, w // s, recipe.classes), shared.BACKGROUND_LOGIT) for s in strides]
    taken: set[tuple[int, int, int]] = set()
    planted: list[tuple[int, int, int, int]] = []  # grid index, row, col, class
    planted_boxes: list[np.ndarray] = []
    decoys = 0
    while len(planted) < recipe.objects or decoys < recipe.decoys:
        decoy = None if len(planted) < recipe.objects else decoys + 1
        g = len(planted) % len(strides) if decoy is None else int(rng.integers(len(strides)))
        s = strides[g]
        row, col = int(rng.integers(h // s)), int(rng.integers(w // s))
        t = np.concatenate([rng.uniform(0.1, 0.9, 2), np.log(rng.uniform(1.0, 6.0, 2))])
        centre, size = (t[:2] + np.array([col, row])) * s, np.exp(t[2:]) * s
        box = np.concatenate([centre - size / 2, centre + size / 2])
        overlaps = decoy is None and any(shared.iou(box, other) > 0.05 for other in planted_boxes)
        if (g, row, col) in taken or overlaps:
            continue
        cls = int(rng.integers(recipe.classes))
        o, score = shared.drawn_scores(rng, not planted, decoy)
        boxes[g][row, col] = t
        objectness[g][row, col, 0], classes[g][row, col, cls] = shared.logit(o), shared.logit(score)
        taken.add((g, row, col))
        if decoy is None:
            planted.append((g, row, col, cls))
            planted_boxes.append(box)
        else:
            decoys = decoy

    outputs: dict[str, np.ndarray] = {}
    specs = {}
    heads: list[HeadOutput] = []
    seen: dict[tuple[int, HeadRole], np.ndarray] = {}  # the values a correct decoder reads (probabilities)
    score_quant = shared.class_quant(recipe.logits, recipe.format_type)
    for g in range(len(strides)):
        for role, value, order, quant in (
            (HeadRole.BOX, boxes[g], recipe.box_order, shared.box_quant(recipe.format_type)),
            (HeadRole.OBJECTNESS, objectness[g], recipe.class_orders[g], score_quant),
            (HeadRole.CLASS, classes[g], recipe.class_orders[g], score_quant),
        ):
            name = f"{role.value}{g}"
            scored = role is not HeadRole.BOX
            value = (value if recipe.logits or not scored else shared.sigmoid(value)).astype(np.float32)
            outputs[name], read, specs[name] = shared.as_output(name, value, order, quant, recipe.format_type)
            heads.append(HeadOutput.of_spec(specs[name], role))
            read = read.astype(np.float64)
            seen[g, role] = shared.sigmoid(read) if recipe.logits and scored else read

    expected_boxes, scores, class_ids, planted_strides = [], [], [], []
    for g, row, col, cls in planted:
        s = strides[g]
        t = seen[g, HeadRole.BOX][row, col]
        centre, size = (t[:2] + np.array([col, row])) * s, np.exp(t[2:]) * s
        expected_boxes.append(np.concatenate([centre - size / 2, centre + size / 2]))
        scores.append(float(seen[g, HeadRole.OBJECTNESS][row, col, 0] * seen[g, HeadRole.CLASS][row, col, cls]))
        class_ids.append(cls)
        planted_strides.append(s)
    config = DecodeConfig(input_hw=recipe.input_hw, score_threshold=0.25, iou_threshold=0.7)
    expected = Detections(np.array(expected_boxes), np.array(scores), np.array(class_ids))
    layout = head_layout(recipe.family, specs, recipe.input_hw)
    return Scene(outputs, specs, config, expected, np.array(planted_strides, np.float32), layout, recipe.family)


def agreement(frame: VerifyFrame) -> ImageAgreement:
    """The export's rows ``(rows, 5 + nc)``, one per cell, against :func:`~harness.families.yolox.decode.candidates`."""
    candidates = yolox.candidates(frame.outputs, frame.layout, frame.config)
    detections = yolox.decode(frame.outputs, frame.specs, frame.config)
    return candidate_agreement(frame, candidates, anchored_rows(frame.reference, frame.layout), detections)
