"""SSD's conformance scenes: per layer a regression map of 4 codes per anchor and a class map of the classes
and the background per anchor, with two properties of its own: the anchors and box coding are its config's
(``config.ssd``), and the background class is left out wherever the config puts it. HailoRT's SSD op applies
no activation (hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp): an SSD decoder is given
probabilities, never logits, and the sentences about logits are not its. ``verify-decode`` held to the
export's own boxes and scores, the sigmoid put on its cut class maps as an SSD HEF holds it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from harness.conformance import scenes as shared
from harness.conformance.agreement import ImageAgreement, VerifyFrame, candidate_agreement
from harness.conformance.misreadings import (
    SSD_ANCHORS_WH_SWAPPED,
    SSD_BACKGROUND_KEPT,
    SSD_SCALES_LEFT_OUT,
    SSD_X_FIRST,
    ConfigMisreading,
)
from harness.conformance.scenes import Anchors, Decoder, Scene, SceneRecipe
from harness.conformance.scenes import export_as_reference as export_reference
from harness.conformance.scenes import fcr_mixed_grids as fcr_mixed
from harness.conformance.scenes import half_cell_misreadings as coordinate_misreadings
from harness.conformance.scenes import paired_across_grids as misordered
from harness.conformance.words import (
    SIZES_WITHOUT_THE_EXP,
    SSD_ANCHORS_HEIGHT_WIDTH,
    SSD_BACKGROUND_AS_CLASS,
    SSD_BACKGROUND_AS_FIRST_CLASS,
    SSD_CODING_X_FIRST,
    SSD_SCALE_FACTORS_LEFT_OUT,
    SSD_SCORES_SOFTMAXED,
)
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig, SsdConfig
from harness.core.specs import FormatType, OutputSpec
from harness.decode.heads import head_layout
from harness.decode.maps import host_array, to_float
from harness.decode.nms import nms
from harness.families.ssd import decode as ssd_decode
from harness.families.ssd.decode import BOX_CHANNELS

# An SSD scene's anchors per layer, largest grid first, (width, height) as fractions of the input: one square
# and two elongated per layer, as SSD's anchor generators make them.
SSD_ANCHORS: Anchors = (
    ((0.1, 0.1), (0.14, 0.07), (0.07, 0.14)),
    ((0.3, 0.3), (0.42, 0.21), (0.21, 0.42)),
    ((0.6, 0.6), (0.85, 0.42), (0.42, 0.85)),
)

# The parts shared with other families (harness.conformance.scenes).
__all__ = ["coordinate_misreadings", "export_reference", "fcr_mixed", "misordered"]


def recipe() -> SceneRecipe:
    return SceneRecipe(family=HeadFamily.SSD, reg_max=1)


def logit_classes() -> bool:
    return False


def sentences(base: SceneRecipe) -> tuple[tuple[str, SceneRecipe], ...]:
    return (
        ("takes the anchors and box coding from config.ssd, per layer", replace(base, drawn_anchors=True)),
        (
            "leaves out the background class where config.ssd puts it, first or last",
            replace(base, background_last=True),
        ),
    )


def _coding_taken(view: Callable[[SsdConfig], SsdConfig]) -> Callable[[DecodeConfig], DecodeConfig]:
    """The config a decoder that takes ``view`` of ``config.ssd`` (where it has one) decodes with."""
    return lambda config: replace(config, ssd=view(config.ssd)) if config.ssd is not None else config


# A decoder's mistakes in taking an SSD head's box coding from config.ssd
# (hailort: libhailort/src/net_flow/ops_metadata/ssd_op_metadata.hpp).
CONFIG_MISREADINGS = (
    ConfigMisreading(
        SSD_CODING_X_FIRST,
        SSD_X_FIRST,
        _coding_taken(
            lambda c: replace(c, ty_index=c.tx_index, tx_index=c.ty_index, th_index=c.tw_index, tw_index=c.th_index)
        ),
    ),
    ConfigMisreading(
        SSD_SCALE_FACTORS_LEFT_OUT,
        SSD_SCALES_LEFT_OUT,
        _coding_taken(lambda c: replace(c, centers_scale_factor=1, bbox_dimensions_scale_factor=1)),
    ),
    ConfigMisreading(
        SSD_ANCHORS_HEIGHT_WIDTH,
        SSD_ANCHORS_WH_SWAPPED,
        _coding_taken(lambda c: replace(c, anchors=tuple(tuple((h, w) for w, h in layer) for layer in c.anchors))),
    ),
    ConfigMisreading(
        SSD_BACKGROUND_AS_CLASS, SSD_BACKGROUND_KEPT, _coding_taken(lambda c: replace(c, background_class=None))
    ),
)


SIZES_LINEAR = (
    "the box sizes taken as (t_wh / bbox_dimensions_scale_factor) x the anchor's (width, height) (the box coding "
    "sizes a box exp(t_wh / bbox_dimensions_scale_factor) x the anchor's: the codes hold log sizes)"
)
SCORES_SOFTMAXED = (
    "each anchor's class values put through a softmax over its classes, the background included (the model scores "
    "each class by a sigmoid of its own, compiled into the HEF: the values are the scores)"
)


def _sizes_without_the_exp(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """What an SSD decoder that sizes each box ``t_wh / bbox_dimensions_scale_factor x (wa, ha)`` returns: every
    entry's centre and scores as the reference decoder has them (:func:`~harness.families.ssd.decode.candidates`),
    its width and height from its raw codes without the exp (a negative one too), then the NMS of ``config.mode``
    (tensorflow/models: research/object_detection/box_coders/faster_rcnn_box_coder.py, ``_decode``:
    ``exp(tw) * wa``; hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp, ``expf``)."""
    ssd = ssd_decode.ssd_config(config)
    heads = ssd_decode.layout(specs, config.input_hw, ssd.anchors)
    boxes, scores = ssd_decode.candidates(outputs, heads, config)
    t = np.concatenate(
        [
            to_float(host_array(outputs, lv.box.host_spec), lv.box.host_spec).reshape(-1, BOX_CHANNELS)
            for lv in heads.levels
        ]
    )
    anchors = np.concatenate([np.tile(np.asarray(lv.anchors, np.float32), (lv.cells, 1)) for lv in heads.levels])
    in_h, in_w = config.input_hw
    _, _, th, tw = ssd.box_indices
    size = t[:, [tw, th]].astype(np.float32) / np.float32(ssd.bbox_dimensions_scale_factor) * anchors
    half = size * np.array([in_w, in_h], np.float32) / np.float32(2)
    centre = (boxes[:, :2] + boxes[:, 2:]) / np.float32(2)
    return nms(np.concatenate([centre - half, centre + half], axis=1).astype(np.float32), scores, config)


def _scores_softmaxed(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """What an SSD decoder that takes each anchor's class values for softmax logits returns (torchvision's SSD
    heads are softmax over the classes and the background: torchvision/models/detection/ssd.py,
    ``postprocess_detections``, ``F.softmax(head_outputs["cls_logits"], dim=-1)``): the reference decoder over
    class maps softmaxed per anchor. An SSD HEF holds each class's sigmoid, as the export scores it, and HailoRT's
    SSD op applies no activation (hailort: libhailort/src/net_flow/ops/ssd_post_process.hpp,
    ``extract_bbox_classes``: every class value only dequantized)."""
    ssd = ssd_decode.ssd_config(config)
    heads = ssd_decode.layout(specs, config.input_hw, ssd.anchors)
    seen, seen_specs = dict(outputs), dict(specs)
    for level in heads.levels:
        spec = level.classes.host_spec
        values = to_float(host_array(outputs, spec), spec).astype(np.float32).reshape(-1, heads.classes)
        weights = np.exp(values - values.max(axis=1, keepdims=True))
        seen[spec.name] = (weights / weights.sum(axis=1, keepdims=True)).reshape(spec.shape).astype(np.float32)
        seen_specs[spec.name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
    return ssd_decode.decode(seen, seen_specs, config)


BACKGROUND_FIRST_READ = (
    "the background class read as the first class (each anchor's first nc class values taken for its nc classes: "
    "config.ssd puts the background first, so every class comes back one id higher than the model's and the last "
    "is lost)"
)


def _background_read_as_the_first_class(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """What an SSD decoder that takes each anchor's first ``nc`` class values for the model's ``nc`` classes
    returns where config.ssd puts the background first (TensorFlow's label maps count the classes from 1, the
    background 0): the reference decoder over class maps whose every anchor's values are moved one channel on,
    so that it reads the background and the first ``nc - 1`` classes where it leaves channel 0 out. Refused where
    the background is not the first (the mistake then reads the classes right)."""
    ssd = ssd_decode.ssd_config(config)
    if ssd.background_class != 0:
        raise HarnessError(f"SSD config: background class {ssd.background_class}; the mistake reads it first")
    heads = ssd_decode.layout(specs, config.input_hw, ssd.anchors)
    seen = dict(outputs)
    for level in heads.levels:
        values = np.asarray(outputs[level.classes.name])
        seen[level.classes.name] = np.roll(values.reshape(-1, heads.classes), 1, axis=1).reshape(values.shape)
    return ssd_decode.decode(seen, specs, config)


# An SSD decoder's mistakes in its own arithmetic or in where it reads its classes, reproduced by the reference
# decoder making them.
ARITHMETIC_MISREADINGS = (
    ConfigMisreading(SIZES_WITHOUT_THE_EXP, SIZES_LINEAR, lambda c: c, _sizes_without_the_exp),
    ConfigMisreading(SSD_SCORES_SOFTMAXED, SCORES_SOFTMAXED, lambda c: c, _scores_softmaxed),
    ConfigMisreading(
        SSD_BACKGROUND_AS_FIRST_CLASS, BACKGROUND_FIRST_READ, lambda c: c, _background_read_as_the_first_class
    ),
)


def config_misreadings() -> tuple[ConfigMisreading, ...]:
    return (*CONFIG_MISREADINGS, *ARITHMETIC_MISREADINGS)


def reference_decoder() -> Decoder:
    return ssd_decode.decode


def _coding(recipe: SceneRecipe, rng: np.random.Generator, classes: int) -> SsdConfig:
    """The scene's SSD config: :data:`SSD_ANCHORS` and TensorFlow's box coder scales (10, 5) in HailoRT's
    default ty, tx, th, tw order; drawn per seed with ``recipe.drawn_anchors`` (anchors none within 20 % of
    square but the first of each layer, other scales, another channel order)."""
    background = classes - 1 if recipe.background_last else 0
    if not recipe.drawn_anchors:
        return SsdConfig(SSD_ANCHORS, 10, 5, background_class=background)
    layers = []
    for size in (0.1, 0.3, 0.6):
        layer = [(size, size)]
        while len(layer) < 3:
            w, h = (float(round(v, 3)) for v in rng.uniform(0.5, 1.6, 2) * size)
            if abs(w - h) >= 0.2 * max(w, h):
                layer.append((w, h))
        layers.append(tuple(layer))
    ty, tx, th, tw = (int(i) for i in rng.permutation(4))
    centres, dimensions = int(rng.choice((5, 8, 16))), int(rng.choice((2, 3, 4)))
    return SsdConfig(tuple(layers), centres, dimensions, ty, tx, th, tw, background_class=background)


def plant(recipe: SceneRecipe, seed: int) -> Scene:
    """Per layer (grids of 8, 16 and 32 input pixels a cell, largest first) a regression map of 4 codes per
    anchor and a class map of ``recipe.classes`` + 1 probabilities per anchor (the background class first, or
    last with ``recipe.background_last``), both anchor-major (hailort: libhailort/src/net_flow/ops/
    ssd_post_process.cpp, ``extract_detections``); the objects planted on (cell, anchor) entries of each layer in
    turn, their class probability below 1 and their background low; every other entry's background high and
    its classes far below threshold. HailoRT's SSD op applies no activation, so the class maps hold
    probabilities (the HEF's sigmoid)."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    cells_px = (8, 16, 32)
    nc = recipe.classes + 1
    ssd = _coding(recipe, rng, nc)
    background = ssd.background_class
    assert background is not None
    real = [c for c in range(nc) if c != background]
    codes = [
        rng.normal(0, 0.5, (h // s, w // s, len(a), BOX_CHANNELS)) for s, a in zip(cells_px, ssd.anchors, strict=True)
    ]
    scores = [np.full((h // s, w // s, len(a), nc), 3e-4) for s, a in zip(cells_px, ssd.anchors, strict=True)]
    for layer in scores:
        layer[..., background] = 0.95
    taken: set[tuple[int, int, int, int]] = set()
    planted: list[tuple[int, int, int, int, int]] = []  # layer, row, col, anchor, class id (background left out)
    planted_boxes: list[np.ndarray] = []
    while len(planted) < recipe.objects:
        g = len(planted) % len(cells_px)
        s = cells_px[g]
        row, col, a = int(rng.integers(h // s)), int(rng.integers(w // s)), int(rng.integers(len(ssd.anchors[g])))
        t = rng.uniform(-1.0, 1.0, 4)  # ty, tx, th, tw: a centre within the anchor, a size 0.8 to 1.25 of it
        wa, ha = ssd.anchors[g][a]
        centre = (np.array([col + 0.5, row + 0.5]) / (w // s, h // s)) + t[[1, 0]] / ssd.centers_scale_factor * (wa, ha)
        size = np.exp(t[[3, 2]] / ssd.bbox_dimensions_scale_factor) * (wa, ha)
        box = np.concatenate([centre - size / 2, centre + size / 2]) * (w, h, w, h)
        if (g, row, col, a) in taken or any(shared.iou(box, other) > 0.05 for other in planted_boxes):
            continue
        cls = int(rng.integers(recipe.classes))
        codes[g][row, col, a] = t[list(np.argsort(ssd.box_indices))]  # channel ssd.box_indices[k] holds t[k]
        scores[g][row, col, a, background] = 0.05
        scores[g][row, col, a, real[cls]] = rng.uniform(0.9 if not planted else 0.6, 0.98)
        taken.add((g, row, col, a))
        planted.append((g, row, col, a, cls))
        planted_boxes.append(box)

    outputs: dict[str, np.ndarray] = {}
    specs = {}
    seen: dict[tuple[int, HeadRole], np.ndarray] = {}  # the values a correct decoder reads
    for g in range(len(cells_px)):
        for role, value, order, quant in (
            (HeadRole.ANCHOR_BOXES, codes[g], recipe.box_order, shared.box_quant(recipe.format_type)),
            (HeadRole.ANCHOR_CLASSES, scores[g], recipe.class_orders[g], shared.class_quant(False, recipe.format_type)),
        ):
            name = f"{'box' if role is HeadRole.ANCHOR_BOXES else 'cls'}{g}"
            flat = value.astype(np.float32).reshape(*value.shape[:2], -1)
            outputs[name], read, specs[name] = shared.as_output(name, flat, order, quant, recipe.format_type)
            seen[g, role] = read.astype(np.float64).reshape(value.shape)

    expected_boxes, expected_scores, class_ids, planted_strides = [], [], [], []
    for g, row, col, a, cls in planted:
        s = cells_px[g]
        t = seen[g, HeadRole.ANCHOR_BOXES][row, col, a][list(ssd.box_indices)]  # ty, tx, th, tw
        wa, ha = ssd.anchors[g][a]
        centre = (np.array([col + 0.5, row + 0.5]) / (w // s, h // s)) + t[[1, 0]] / ssd.centers_scale_factor * (wa, ha)
        size = np.exp(t[[3, 2]] / ssd.bbox_dimensions_scale_factor) * (wa, ha)
        expected_boxes.append(np.concatenate([centre - size / 2, centre + size / 2]) * (w, h, w, h))
        expected_scores.append(float(seen[g, HeadRole.ANCHOR_CLASSES][row, col, a, real[cls]]))
        class_ids.append(cls)
        planted_strides.append(s)
    config = DecodeConfig(input_hw=recipe.input_hw, score_threshold=0.25, iou_threshold=0.7, ssd=ssd)
    expected = Detections(np.array(expected_boxes), np.array(expected_scores), np.array(class_ids))
    layout = head_layout(recipe.family, specs, recipe.input_hw, ssd.anchors)
    return Scene(outputs, specs, config, expected, np.array(planted_strides, np.float32), layout, recipe.family)


def agreement(frame: VerifyFrame) -> ImageAgreement:
    """The export's own boxes and scores (:func:`~harness.families.ssd.decode.export_rows`) against
    :func:`~harness.families.ssd.decode.candidates`, the cut class maps put through the sigmoid first (float32, as
    onnxruntime's Sigmoid gives it): inside an SSD HEF, before HailoRT's SSD op."""
    classes = {level.classes.name for level in frame.layout.levels}
    outputs = {
        name: (1 / (1 + np.exp(-value, dtype=np.float32))).astype(np.float32) if name in classes else value
        for name, value in frame.outputs.items()
    }
    candidates = ssd_decode.candidates(outputs, frame.layout, frame.config)
    rows = ssd_decode.export_rows(frame.reference, frame.config)
    detections = ssd_decode.decode(outputs, frame.specs, frame.config)
    return candidate_agreement(frame, candidates, rows, detections)
