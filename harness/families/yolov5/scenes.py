"""YOLOv5/YOLOv7's conformance scenes: one anchored map per stride (per anchor the box offsets, objectness and
class scores), the objects planted on chosen (cell, anchor) entries, with a property of its own: each
anchor's (width, height) is the config's; ``verify-decode`` held to the export's rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from harness.conformance.agreement import ImageAgreement, VerifyFrame, anchored_rows, candidate_agreement
from harness.conformance.decoder_misreadings import DecoderMisreading, half_cells
from harness.conformance.misreadings import (
    ANCHORS_REVERSED,
    ANCHORS_WH_SWAPPED,
    DEFAULT_ANCHORS_USED,
    ConfigMisreading,
    probabilities,
)
from harness.conformance.scenes import (
    BACKGROUND_LOGIT,
    Anchors,
    Decoder,
    Scene,
    SceneRecipe,
    as_output,
    class_quant,
    drawn_anchors,
    iou,
    logit,
    sigmoid,
)
from harness.conformance.scenes import logit_class_maps as logit_classes
from harness.conformance.words import (
    ANCHOR_GROUPS_REVERSED,
    ANCHORS_BY_ORDER,
    ANCHORS_HEIGHT_WIDTH,
    CENTRES_AS_YOLOV3,
    DEFAULT_ANCHORS_TAKEN,
)
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily, HeadTensor
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.heads import head_layout
from harness.decode.layout import HeadLayout
from harness.families.yolov5 import decode as yolov5
from harness.families.yolov5.decode import DEFAULT_ANCHORS, ENTRY_HEAD, OBJECTNESS

if TYPE_CHECKING:
    from onnx import ModelProto

# The parts shared with other families (harness.conformance.scenes).
__all__ = ["logit_classes"]


def recipe() -> SceneRecipe:
    return SceneRecipe(family=HeadFamily.YOLOV5, reg_max=1)


def sentences(base: SceneRecipe) -> tuple[tuple[str, SceneRecipe], ...]:
    return (
        (
            "takes each anchor's (width, height) from config.anchors, per stride",
            replace(base, drawn_anchors=True),
        ),
    )


def fcr_mixed(base: SceneRecipe) -> SceneRecipe:
    # The field report's mix, on anchored maps: FCR maps on the finest and the coarsest grid.
    nhwc, fcr = FormatOrder.NHWC, FormatOrder.FCR
    return replace(base, anchored_orders=(fcr, nhwc, fcr))


def misordered() -> str:
    return ANCHORS_BY_ORDER


def _anchors_taken(view: Callable[[Anchors], Anchors]) -> Callable[[DecodeConfig], DecodeConfig]:
    """The config a decoder that takes ``view`` of ``config.anchors`` (where it has any) decodes with."""
    return lambda config: replace(config, anchors=view(config.anchors)) if config.anchors else config


# A decoder's mistakes in taking config.anchors (stride ascending, (width, height) in input pixels).
CONFIG_MISREADINGS = (
    ConfigMisreading(ANCHOR_GROUPS_REVERSED, ANCHORS_REVERSED, _anchors_taken(lambda anchors: anchors[::-1])),
    ConfigMisreading(
        ANCHORS_HEIGHT_WIDTH,
        ANCHORS_WH_SWAPPED,
        _anchors_taken(lambda anchors: tuple(tuple((h, w) for w, h in g) for g in anchors)),
    ),
    ConfigMisreading(DEFAULT_ANCHORS_TAKEN, DEFAULT_ANCHORS_USED, _anchors_taken(lambda anchors: DEFAULT_ANCHORS)),
)


def config_misreadings() -> tuple[ConfigMisreading, ...]:
    return CONFIG_MISREADINGS


def reference_decoder() -> Decoder:
    return yolov5.decode


# ultralytics/yolov5: models/yolo.py (``Detect.forward``: ``xy = (xy * 2 + grid) * stride``, the grid at
# ``cell - 0.5``); YOLOv3's head: ``xy = (sigmoid(t) + cell) * stride``
YOLOV3_CENTRE = (
    "each centre coded as YOLOv3's, (sigmoid(t) + cell) x stride (YOLOv5's is (2 sigmoid(t) - 0.5 + cell) x stride)"
)


def _yolov3_centres(family: HeadFamily, layout: HeadLayout, reference: Decoder) -> Decoder:
    """The reference decoder given each entry's ``tx, ty`` probability ``p`` as ``(p + 0.5) / 2``: the centre
    it then computes, ``(2 (p + 0.5) / 2 - 0.5 + cell) x stride``, is YOLOv3's ``(p + cell) x stride``."""
    anchors = {level.box.name: len(level.anchors) for level in layout.levels}

    def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        seen, seen_specs = dict(outputs), dict(specs)
        for name, na in anchors.items():
            spec = specs[name]
            entries = probabilities(outputs[name], spec).reshape(*spec.shape[:2], na, -1).copy()
            entries[..., :2] = (entries[..., :2] + np.float32(0.5)) / np.float32(2)
            seen[name] = entries.reshape(spec.shape)
            seen_specs[name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
        return reference(seen, seen_specs, config)

    return decode


def coordinate_misreadings() -> tuple[DecoderMisreading, ...]:
    """YOLOv3's centre, then the centres half a cell off either way (without YOLOv5's -0.5: down and right)."""
    return (DecoderMisreading(CENTRES_AS_YOLOV3, YOLOV3_CENTRE, _yolov3_centres), *half_cells())


def plant(recipe: SceneRecipe, seed: int) -> Scene:
    """One anchored map per stride (per anchor tx, ty, tw, th, objectness, nc class scores; hailort:
    libhailort/src/net_flow/ops/yolov5_post_process.hpp, ``X_INDEX`` .. ``CLASSES_START_INDEX``),
    the objects planted on (cell, anchor) entries of each stride in turn, each with objectness and class
    score both below 1 (a score is their product); every other entry's objectness far below threshold,
    except ``recipe.decoys``: a high class score under a low objectness, or both above the threshold
    and their product below it."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    strides = (8, 16, 32)
    anchors = drawn_anchors(rng, strides) if recipe.drawn_anchors else DEFAULT_ANCHORS
    na, entry = len(anchors[0]), ENTRY_HEAD + recipe.classes
    maps = [np.full((h // s, w // s, na, entry), BACKGROUND_LOGIT, np.float64) for s in strides]
    for m in maps:
        m[..., :OBJECTNESS] = rng.normal(0, 1, (*m.shape[:3], OBJECTNESS))
    taken: set[tuple[int, int, int, int]] = set()
    planted: list[tuple[int, int, int, int, int]] = []  # grid index, row, col, anchor, class
    planted_boxes: list[np.ndarray] = []
    while len(planted) < recipe.objects:
        g = len(planted) % len(strides)
        s = strides[g]
        row, col, a = int(rng.integers(h // s)), int(rng.integers(w // s)), int(rng.integers(na))
        t = rng.uniform((0.2, 0.2, 0.3, 0.3), (0.8, 0.8, 0.6, 0.6))
        centre = (2 * t[:2] - 0.5 + (col, row)) * s
        size = np.square(2 * t[2:]) * anchors[g][a]
        box = np.concatenate([centre - size / 2, centre + size / 2])
        if (g, row, col, a) in taken or any(iou(box, other) > 0.05 for other in planted_boxes):
            continue
        cls = int(rng.integers(recipe.classes))
        # the first scores at least 0.81: the right scores never all lie where a second sigmoid squeezes them
        objectness, score = rng.uniform(0.9 if not planted else 0.7, 0.98, 2)
        maps[g][row, col, a, :OBJECTNESS] = logit(t)
        maps[g][row, col, a, OBJECTNESS] = logit(objectness)
        maps[g][row, col, a, ENTRY_HEAD + cls] = logit(score)
        taken.add((g, row, col, a))
        planted.append((g, row, col, a, cls))
        planted_boxes.append(box)
    decoys = 0
    while decoys < recipe.decoys:
        g = int(rng.integers(len(strides)))
        row, col, a = int(rng.integers(h // strides[g])), int(rng.integers(w // strides[g])), int(rng.integers(na))
        if (g, row, col, a) in taken:
            continue
        cls = int(rng.integers(recipe.classes))
        decoys += 1
        if decoys % 2:  # a high class score under a low objectness: at most 0.2 x 0.99 < 0.25
            objectness, score = rng.uniform(0.02, 0.2), rng.uniform(0.9, 0.99)
        else:  # both at the threshold or above, their product below it: at most 0.5 x 0.45 < 0.25
            objectness, score = rng.uniform(0.3, 0.5), rng.uniform(0.3, 0.45)
        maps[g][row, col, a, :OBJECTNESS] = logit(rng.uniform((0.2, 0.2, 0.3, 0.3), (0.8, 0.8, 0.6, 0.6)))
        maps[g][row, col, a, OBJECTNESS] = logit(objectness)
        maps[g][row, col, a, ENTRY_HEAD + cls] = logit(score)
        taken.add((g, row, col, a))

    quant = class_quant(recipe.logits, recipe.format_type)
    outputs: dict[str, np.ndarray] = {}
    specs = {}
    seen: list[np.ndarray] = []  # per stride, the map's values as a correct decoder reads them, (H, W, na, entry)
    for g, m in enumerate(maps):
        value = (m if recipe.logits else sigmoid(m)).astype(np.float32).reshape(*m.shape[:2], na * entry)
        name = f"p{g + 3}"  # P3 .. P5: strides 8 .. 32
        outputs[name], read, specs[name] = as_output(name, value, recipe.anchored_orders[g], quant, recipe.format_type)
        entries = read.astype(np.float64).reshape(m.shape)
        seen.append(sigmoid(entries) if recipe.logits else entries)

    expected_boxes, scores, class_ids, planted_strides = [], [], [], []
    for g, row, col, a, cls in planted:
        s = strides[g]
        t = seen[g][row, col, a]
        centre = (2 * t[:2] - 0.5 + (col, row)) * s
        size = np.square(2 * t[2:4]) * anchors[g][a]
        expected_boxes.append(np.concatenate([centre - size / 2, centre + size / 2]))
        scores.append(float(t[OBJECTNESS] * t[ENTRY_HEAD + cls]))
        class_ids.append(cls)
        planted_strides.append(s)
    config = DecodeConfig(input_hw=recipe.input_hw, score_threshold=0.25, iou_threshold=0.7, anchors=anchors)
    expected = Detections(np.array(expected_boxes), np.array(scores), np.array(class_ids))
    layout = head_layout(recipe.family, specs, recipe.input_hw, anchors)
    return Scene(outputs, specs, config, expected, np.array(planted_strides, np.float32), layout, recipe.family)


def export_reference(
    model: ModelProto, heads: Sequence[HeadTensor], config: DecodeConfig
) -> tuple[ModelProto, DecodeConfig]:
    """The export as it is, the config given the anchors its tail multiplies where it has none."""
    if not config.anchors:
        config = replace(config, anchors=tuple(h.anchors for h in heads))
    return model, config


def agreement(frame: VerifyFrame) -> ImageAgreement:
    """The export's rows ``(rows, 5 + nc)`` against :func:`~harness.families.yolov5.decode.candidates`."""
    candidates = yolov5.candidates(frame.outputs, frame.layout, frame.config)
    detections = yolov5.decode(frame.outputs, frame.specs, frame.config)
    return candidate_agreement(frame, candidates, anchored_rows(frame.reference, frame.layout), detections)
