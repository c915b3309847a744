"""Decoder conformance: a property suite any raw-head YOLO decoder can be run against.

A decoder under test has the documented signature of :func:`harness.families.yolov8.decode.decode`::

    decoder(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections

Each property plants objects in synthetic head outputs (one confident cell per object, a sharp DFL
distribution per side, background far below threshold), so the expected detections are known
exactly. When a decoder misses them, the failure names the mistake in plain words:

- by reproduction first (:mod:`harness.conformance.misreadings`): each known misreading of an output's
  memory (channel-first, DFL bins interleaved, an anchored map read class-major, 16-bit read as 8-bit,
  a second sigmoid, the objectness left out) is applied to the reference decoder's input on every head,
  on the FCR heads, on each role's heads and on each head alone, then each known misreading of the
  anchors (groups reversed, (height, width), YOLOv5's defaults), and the one whose detections are the
  decoder's is named ("the box heads of all 3 strides read channel-first ..."); where none reproduces
  them it says so;
- else by its signature: x/y swapped boxes, half-cell anchor offsets, scores outside [0, 1] or
  squeezed into [0.5, 0.73], FCR heads read channel-first, heads paired across grids.

The properties are stated per head family (:func:`properties`): YOLOv8/YOLO11 heads carry 4 x 16 DFL
bins per box; YOLO26 heads (either head: the planted objects neither overlap nor exceed the top-k,
so the one-to-one and the one-to-many decode find the same) carry the 4 distances themselves;
YOLOv5/YOLOv7 heads one anchored map per stride (per anchor the box offsets, objectness and class
scores), the objects planted on chosen (cell, anchor) entries, with two properties of their own:
the score is objectness x class, and each anchor's (width, height) is the config's; YOLOX heads a
box map of 4 (``tx, ty, tw, th``), an objectness map of 1 and a class map of nc per stride, with the
property that the score is objectness x class.
"""

from __future__ import annotations

import importlib
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

# The misreadings' words a failure names stay importable from the suite (``suite.CHANNEL_FIRST``).
from harness.conformance.misreadings import (
    ANCHORS_REVERSED,  # noqa: F401
    ANCHORS_WH_SWAPPED,  # noqa: F401
    BOX_TOLERANCE_PX,
    CHANNEL_FIRST,  # noqa: F401
    CLASS_MAJOR,  # noqa: F401
    DEFAULT_ANCHORS_USED,  # noqa: F401
    DFL_INTERLEAVED,  # noqa: F401
    NOT_REPRODUCED,
    OBJECTNESS_LEFT_OUT,  # noqa: F401
    SIGMOID_AGAIN,  # noqa: F401
    SIXTEEN_AS_EIGHT,  # noqa: F401
    DecodedFrame,
    matches,
    reproduce,
)
from harness.conformance.words import FCR_CHANNEL_FIRST, PAIRED_ACROSS_GRIDS
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig, SsdConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.heads import head_layout
from harness.decode.layout import HeadLayout, HeadOutput, layout_of
from harness.families.ssd.decode import BOX_CHANNELS as SSD_BOX_CHANNELS
from harness.families.yolov5.decode import DEFAULT_ANCHORS, ENTRY_HEAD, OBJECTNESS
from harness.families.yolox.decode import BOX_CHANNELS
from harness.formats.quant import dequantize, quantize

Decoder = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]
Anchors = tuple[tuple[tuple[float, float], ...], ...]

BACKGROUND_LOGIT = -8.0
DFL_PEAK = 12.0

SIGMOID_MISSING = "scores outside [0,1]: sigmoid missing"
SIGMOID_TWICE = "scores squeezed into [0.5, 0.73]: sigmoid applied twice"
XY_SWAPPED = "boxes come back x/y swapped"
HALF_CELL = "anchor centres off by half a cell"
ANCHORS_BY_ORDER = (
    "anchor groups given to the outputs by their order or name (they go by grid: config.anchors is stride ascending)"
)


def load_decoder(target: str) -> Decoder:
    """``"package.module:function"`` -> the function."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise HarnessError(f"--decoder {target!r}: expected 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise HarnessError(f"--decoder {target!r}: cannot import module {module_name!r}: {error}") from error
    decoder = getattr(module, attr, None)
    if not callable(decoder):
        raise HarnessError(f"--decoder {target!r}: module {module_name!r} has no function {attr!r}")
    return decoder


def _sigmoid(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.asarray(x))))


@dataclass(frozen=True)
class Scene:
    """Head outputs with planted objects, their layout, and the detections a correct decoder returns."""

    outputs: dict[str, np.ndarray]
    specs: dict[str, OutputSpec]
    config: DecodeConfig
    expected: Detections
    strides: np.ndarray  # stride of the grid each expected detection was planted in
    layout: HeadLayout
    family: HeadFamily = HeadFamily.YOLOV8
    bbox_only: bool = False  # outputs: HailoRT's bbox-only buffer of ``layout``'s heads, not the heads

    def renamed(self, names: Mapping[str, str], order: list[str]) -> Scene:
        outputs = {names[k]: self.outputs[k] for k in order}
        specs = {names[k]: replace(self.specs[k], name=names[k]) for k in order}
        heads = (HeadOutput.of_spec(specs[names[o.name]], o.role) for o in self.layout.outputs)
        anchors = {names[o.name]: level.anchors for level in self.layout.levels for o in level.outputs}
        return replace(self, outputs=outputs, specs=specs, layout=layout_of(heads, self.config.input_hw, anchors))


@dataclass(frozen=True)
class SceneRecipe:
    family: HeadFamily = HeadFamily.YOLOV8  # whose reference decoder reproduces a mistake
    input_hw: tuple[int, int] = (256, 320)
    classes: int = 2
    reg_max: int = 16
    objects: int = 4
    logits: bool = False
    format_type: FormatType = FormatType.FLOAT32
    box_order: FormatOrder = FormatOrder.NHWC
    class_orders: tuple[FormatOrder, FormatOrder, FormatOrder] = (FormatOrder.NHWC,) * 3
    # Anchor-based families (YOLOv5/YOLOv7): each stride's anchored map's order; per seed, anchors drawn
    # at random (not square, not YOLOv5's defaults) instead of DEFAULT_ANCHORS; and decoys: entries whose
    # objectness x class stays below the threshold although their class score, or their objectness, does not.
    anchored_orders: tuple[FormatOrder, FormatOrder, FormatOrder] = (FormatOrder.NHWC,) * 3
    drawn_anchors: bool = False
    decoys: int = 0
    # SSD: drawn_anchors also draws the box coding (scale factors, ty/tx/th/tw order); the background class
    # the class maps' last channel instead of the first
    background_last: bool = False
    # YOLOv8, YOLOv5: the heads as HailoRT's bbox-only op writes them (one buffer; the host runs the NMS), each
    # planted object with a weaker duplicate of its box that the NMS must suppress
    bbox_only: bool = False


def _widened(quant: QuantInfo, format_type: FormatType) -> QuantInfo:
    """``quant``'s range over 16 bits where ``format_type`` is UINT16 (as the DFC's a16 layers keep it)."""
    if format_type is not FormatType.UINT16:
        return quant
    scale = (quant.limvals_max - quant.limvals_min) / 65535
    return QuantInfo(round(-quant.limvals_min / scale), scale, quant.limvals_min, quant.limvals_max)


def _box_quant(format_type: FormatType) -> QuantInfo:
    return _widened(QuantInfo(zero_point=128, scale=0.1, limvals_min=-12.8, limvals_max=12.7), format_type)


def _class_quant(logits: bool, format_type: FormatType) -> QuantInfo:
    if logits:
        return _widened(QuantInfo(zero_point=200, scale=0.06, limvals_min=-12.0, limvals_max=3.3), format_type)
    return _widened(QuantInfo(zero_point=0, scale=1 / 255, limvals_min=0.0, limvals_max=1.0), format_type)


def _as_output(
    name: str, value: np.ndarray, order: FormatOrder, quant: QuantInfo, format_type: FormatType
) -> tuple[np.ndarray, np.ndarray, OutputSpec]:
    """A planted map ``value`` (float32, ``(H, W, C)``) as the host receives it in ``format_type`` (quantized
    by ``quant`` unless FLOAT32), what a correct decoder reads of it (dequantized), and its spec."""
    if format_type is FormatType.FLOAT32:
        return value, value, OutputSpec(name, value.shape, order, format_type, ())
    q = quantize(value, (quant,), np.dtype(format_type.numpy_dtype))
    return q, dequantize(q, (quant,)), OutputSpec(name, value.shape, order, format_type, (quant,))


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def make_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """Plant ``recipe.objects`` non-overlapping objects in random cells of random grids."""
    if recipe.bbox_only:
        return _bbox_only_scene(recipe, seed)
    if recipe.family.anchor_based:
        return _anchored_scene(recipe, seed)
    if recipe.family is HeadFamily.YOLOX:
        return _yolox_scene(recipe, seed)
    if recipe.family is HeadFamily.SSD:
        return _ssd_scene(recipe, seed)
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    strides = (8, 16, 32)
    box_ch = 4 * recipe.reg_max
    boxes = [rng.normal(0, 1, (h // s, w // s, box_ch)).astype(np.float32) for s in strides]
    classes = [np.full((h // s, w // s, recipe.classes), BACKGROUND_LOGIT, np.float32) for s in strides]
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
        if any(_iou(box, other) > 0.05 for other in planted_boxes):
            continue
        cls = int(rng.integers(recipe.classes))
        if recipe.reg_max == 1:
            boxes[g][row, col] = sides
        else:
            boxes[g][row, col] = 0.0
            boxes[g][row, col, np.arange(4) * recipe.reg_max + sides] = DFL_PEAK
        p = rng.uniform(0.6, 0.98)
        classes[g][row, col, cls] = np.log(p / (1 - p))
        planted.append((g, row, col, cls))
        planted_boxes.append(box)
    if not recipe.logits:
        classes = [_sigmoid(c).astype(np.float32) for c in classes]

    outputs: dict[str, np.ndarray] = {}
    specs: dict[str, OutputSpec] = {}
    heads: list[HeadOutput] = []
    seen_boxes: list[np.ndarray] = []
    seen_classes: list[np.ndarray] = []
    for g in range(3):
        for role, value, order, quant in (
            (HeadRole.BOX, boxes[g], recipe.box_order, _box_quant(recipe.format_type)),
            (HeadRole.CLASS, classes[g], recipe.class_orders[g], _class_quant(recipe.logits, recipe.format_type)),
        ):
            name = f"{'box' if role is HeadRole.BOX else 'cls'}{g}"
            outputs[name], seen, specs[name] = _as_output(name, value, order, quant, recipe.format_type)
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
        scores.append(float(_sigmoid(class_value)) if recipe.logits else class_value)
        class_ids.append(cls)
        planted_strides.append(s)
    config = DecodeConfig(input_hw=recipe.input_hw, score_threshold=0.25, iou_threshold=0.7)
    expected = Detections(np.array(expected_boxes), np.array(scores), np.array(class_ids))
    strides_planted = np.array(planted_strides, dtype=np.float32)
    layout = layout_of(heads, recipe.input_hw)
    return Scene(outputs, specs, config, expected, strides_planted, layout, recipe.family)


def _logit(p: np.ndarray | float) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    return np.log(p / (1 - p))


def _drawn_anchors(rng: np.random.Generator, strides: tuple[int, ...]) -> Anchors:
    """Three anchors per stride, 1 to 6 strides a side, none within 20 % of square (so that a decoder taking
    them as (height, width) moves every box side by more than the box tolerance)."""
    groups = []
    for s in strides:
        group: list[tuple[float, float]] = []
        while len(group) < 3:
            w, h = (float(round(v)) for v in rng.uniform(1, 6, 2) * s)
            if abs(w - h) >= 0.2 * max(w, h):
                group.append((w, h))
        groups.append(tuple(group))
    return tuple(groups)


def _anchored_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """A YOLOv5/YOLOv7 scene: one anchored map per stride (per anchor tx, ty, tw, th, objectness, nc class
    scores; hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp, ``X_INDEX`` .. ``CLASSES_START_INDEX``),
    the objects planted on (cell, anchor) entries of each stride in turn, each with objectness and class
    score both below 1 (a score is their product); every other entry's objectness far below threshold,
    except ``recipe.decoys``: a high class score under a low objectness, or both above the threshold
    and their product below it."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    strides = (8, 16, 32)
    anchors = _drawn_anchors(rng, strides) if recipe.drawn_anchors else DEFAULT_ANCHORS
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
        if (g, row, col, a) in taken or any(_iou(box, other) > 0.05 for other in planted_boxes):
            continue
        cls = int(rng.integers(recipe.classes))
        # the first scores at least 0.81: the right scores never all lie where a second sigmoid squeezes them
        objectness, score = rng.uniform(0.9 if not planted else 0.7, 0.98, 2)
        maps[g][row, col, a, :OBJECTNESS] = _logit(t)
        maps[g][row, col, a, OBJECTNESS] = _logit(objectness)
        maps[g][row, col, a, ENTRY_HEAD + cls] = _logit(score)
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
        maps[g][row, col, a, :OBJECTNESS] = _logit(rng.uniform((0.2, 0.2, 0.3, 0.3), (0.8, 0.8, 0.6, 0.6)))
        maps[g][row, col, a, OBJECTNESS] = _logit(objectness)
        maps[g][row, col, a, ENTRY_HEAD + cls] = _logit(score)
        taken.add((g, row, col, a))

    quant = _class_quant(recipe.logits, recipe.format_type)
    outputs: dict[str, np.ndarray] = {}
    specs: dict[str, OutputSpec] = {}
    seen: list[np.ndarray] = []  # per stride, the map's values as a correct decoder reads them, (H, W, na, entry)
    for g, m in enumerate(maps):
        value = (m if recipe.logits else _sigmoid(m)).astype(np.float32).reshape(*m.shape[:2], na * entry)
        name = f"p{g + 3}"  # P3 .. P5: strides 8 .. 32
        outputs[name], read, specs[name] = _as_output(name, value, recipe.anchored_orders[g], quant, recipe.format_type)
        entries = read.astype(np.float64).reshape(m.shape)
        seen.append(_sigmoid(entries) if recipe.logits else entries)

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


def _scores(rng: np.random.Generator, first: bool, decoy: int | None = None) -> tuple[float, float]:
    """An (objectness, class score) pair: a planted object's, both below 1 (the first scoring at least 0.81:
    the right scores never all lie where a second sigmoid squeezes them), or decoy number ``decoy``'s: a high
    class score under a low objectness (odd: at most 0.2 x 0.99 < 0.25), or both at the threshold or above and
    their product below it (even: at most 0.5 x 0.45 < 0.25)."""
    if decoy is None:
        objectness, score = rng.uniform(0.9 if first else 0.7, 0.98, 2)
    elif decoy % 2:
        objectness, score = rng.uniform(0.02, 0.2), rng.uniform(0.9, 0.99)
    else:
        objectness, score = rng.uniform(0.3, 0.5), rng.uniform(0.3, 0.45)
    return float(objectness), float(score)


def _yolox_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """A YOLOX scene: per stride a box map of 4 (``tx, ty`` the centre's offset from the cell's corner in
    cells, ``tw, th`` the log of the size in strides), an objectness map of 1 and a class map of nc
    (hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp), the objects planted on cells of each
    stride in turn, each with objectness and class score below 1 (a score is their product); every other
    cell's objectness far below threshold, except ``recipe.decoys`` (see :func:`_scores`). The objectness
    maps are laid out as the class maps of their stride (``recipe.class_orders``)."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    strides = (8, 16, 32)
    boxes = [rng.normal(0, 1, (h // s, w // s, BOX_CHANNELS)) for s in strides]
    objectness = [np.full((h // s, w // s, 1), BACKGROUND_LOGIT) for s in strides]
    classes = [np.full((h // s, w // s, recipe.classes), BACKGROUND_LOGIT) for s in strides]
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
        overlaps = decoy is None and any(_iou(box, other) > 0.05 for other in planted_boxes)
        if (g, row, col) in taken or overlaps:
            continue
        cls = int(rng.integers(recipe.classes))
        o, score = _scores(rng, not planted, decoy)
        boxes[g][row, col], objectness[g][row, col, 0], classes[g][row, col, cls] = t, _logit(o), _logit(score)
        taken.add((g, row, col))
        if decoy is None:
            planted.append((g, row, col, cls))
            planted_boxes.append(box)
        else:
            decoys = decoy

    outputs: dict[str, np.ndarray] = {}
    specs: dict[str, OutputSpec] = {}
    heads: list[HeadOutput] = []
    seen: dict[tuple[int, HeadRole], np.ndarray] = {}  # the values a correct decoder reads (probabilities)
    score_quant = _class_quant(recipe.logits, recipe.format_type)
    for g in range(len(strides)):
        for role, value, order, quant in (
            (HeadRole.BOX, boxes[g], recipe.box_order, _box_quant(recipe.format_type)),
            (HeadRole.OBJECTNESS, objectness[g], recipe.class_orders[g], score_quant),
            (HeadRole.CLASS, classes[g], recipe.class_orders[g], score_quant),
        ):
            name = f"{role.value}{g}"
            scored = role is not HeadRole.BOX
            value = (value if recipe.logits or not scored else _sigmoid(value)).astype(np.float32)
            outputs[name], read, specs[name] = _as_output(name, value, order, quant, recipe.format_type)
            heads.append(HeadOutput.of_spec(specs[name], role))
            read = read.astype(np.float64)
            seen[g, role] = _sigmoid(read) if recipe.logits and scored else read

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


# An SSD scene's anchors per layer, largest grid first, (width, height) as fractions of the input: one square
# and two elongated per layer, as SSD's anchor generators make them.
SSD_ANCHORS: Anchors = (
    ((0.1, 0.1), (0.14, 0.07), (0.07, 0.14)),
    ((0.3, 0.3), (0.42, 0.21), (0.21, 0.42)),
    ((0.6, 0.6), (0.85, 0.42), (0.42, 0.85)),
)


def _ssd_coding(recipe: SceneRecipe, rng: np.random.Generator, classes: int) -> SsdConfig:
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


def _ssd_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """An SSD scene: per layer (grids of 8, 16 and 32 input pixels a cell, largest first) a regression map of 4
    codes per anchor and a class map of ``recipe.classes`` + 1 probabilities per anchor (the background class
    first, or last with ``recipe.background_last``), both anchor-major (hailort: libhailort/src/net_flow/ops/
    ssd_post_process.cpp, ``extract_detections``); the objects planted on (cell, anchor) entries of each layer in
    turn, their class probability below 1 and their background low; every other entry's background high and
    its classes far below threshold. HailoRT's SSD op applies no activation, so the class maps hold
    probabilities (the HEF's sigmoid)."""
    rng = np.random.default_rng(seed)
    h, w = recipe.input_hw
    cells_px = (8, 16, 32)
    nc = recipe.classes + 1
    ssd = _ssd_coding(recipe, rng, nc)
    background = ssd.background_class
    assert background is not None
    real = [c for c in range(nc) if c != background]
    codes = [
        rng.normal(0, 0.5, (h // s, w // s, len(a), SSD_BOX_CHANNELS))
        for s, a in zip(cells_px, ssd.anchors, strict=True)
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
        if (g, row, col, a) in taken or any(_iou(box, other) > 0.05 for other in planted_boxes):
            continue
        cls = int(rng.integers(recipe.classes))
        codes[g][row, col, a] = t[list(np.argsort(ssd.box_indices))]  # channel ssd.box_indices[k] holds t[k]
        scores[g][row, col, a, background] = 0.05
        scores[g][row, col, a, real[cls]] = rng.uniform(0.9 if not planted else 0.6, 0.98)
        taken.add((g, row, col, a))
        planted.append((g, row, col, a, cls))
        planted_boxes.append(box)

    outputs: dict[str, np.ndarray] = {}
    specs: dict[str, OutputSpec] = {}
    seen: dict[tuple[int, HeadRole], np.ndarray] = {}  # the values a correct decoder reads
    for g in range(len(cells_px)):
        for role, value, order, quant in (
            (HeadRole.ANCHOR_BOXES, codes[g], recipe.box_order, _box_quant(recipe.format_type)),
            (HeadRole.ANCHOR_CLASSES, scores[g], recipe.class_orders[g], _class_quant(False, recipe.format_type)),
        ):
            name = f"{'box' if role is HeadRole.ANCHOR_BOXES else 'cls'}{g}"
            flat = value.astype(np.float32).reshape(*value.shape[:2], -1)
            outputs[name], read, specs[name] = _as_output(name, flat, order, quant, recipe.format_type)
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


# The name of a bbox-only scene's one output, as the emulated HEF names it (the NMS op's output).
BBOX_ONLY_OUTPUT = {HeadFamily.YOLOV8: "yolov8_nms_postprocess", HeadFamily.YOLOV5: "yolov5_nms_postprocess"}
DUPLICATE_SCORE = 0.8  # a duplicate's class value, times its object's


def _bbox_only_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """A bbox-only scene: the planted heads of ``recipe.family`` (probabilities, as the HEF's sigmoid gives
    them) as HailoRT's bbox-only op writes them (:func:`~harness.decode.bbox_only.bbox_only_op`: one float32
    buffer of every proposal, y first and normalised, YOLOv5's classes not multiplied by the objectness), each
    planted object's row copied onto a background row with its box moved down and right by 3 % of its size
    and its class value lower: the host's NMS must suppress it. The detections expected are the heads' (the
    NMS op's)."""
    from harness.decode.bbox_only import bbox_only_op
    from harness.formats.bbox_only import LEADING_FIELDS, bbox_only_spec

    heads = make_scene(replace(recipe, bbox_only=False, logits=False, format_type=FormatType.FLOAT32), seed)
    family = recipe.family
    buffer = bbox_only_op(heads.outputs, heads.specs, heads.config, family)[0].copy()
    lead = len(LEADING_FIELDS[family])
    scores = buffer[:, lead:] * (buffer[:, 4:5] if lead == 5 else 1)
    planted = np.flatnonzero(scores.max(axis=1) >= heads.config.score_threshold)
    background = np.flatnonzero(scores.max(axis=1) < 0.01)
    rng = np.random.default_rng(seed)
    for row, spare in zip(planted, rng.choice(background, len(planted), replace=False), strict=True):
        buffer[spare] = buffer[row]
        y0, x0, y1, x1 = buffer[row, :4]
        buffer[spare, :4] += np.float32(0.03) * np.array([y1 - y0, x1 - x0] * 2, np.float32)  # IoU about 0.9
        buffer[spare, lead:] *= np.float32(DUPLICATE_SCORE)
    name = BBOX_ONLY_OUTPUT[family]
    spec = bbox_only_spec(name, len(buffer), buffer.shape[1] - lead, family)
    return replace(heads, outputs={name: buffer[None]}, specs={name: spec}, bbox_only=True)


def bbox_only_decoder(family: HeadFamily) -> Decoder:
    """The host's decoder of ``family``'s bbox-only buffer (:func:`~harness.decode.bbox_only.decode_bbox_only`)
    with the harness decoder's signature: the reference a bbox-only scene is held to."""
    from harness.decode.bbox_only import decode_bbox_only

    def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        ((name, spec),) = specs.items()
        return decode_bbox_only(outputs[name], spec, config, family)

    return decode


BBOX_X_FIRST = "the boxes read x first (HailoRT's bbox-only buffer writes y_min, x_min, y_max, x_max)"
BBOX_NOT_SCALED = "the boxes left as fractions of the input (the buffer is normalised; detections are in pixels)"
BBOX_OBJECTNESS_LEFT_OUT = "the classes scored without the objectness (YOLOv5's buffer does not multiply them)"
BBOX_NO_NMS = "no NMS run over the proposals (the bbox-only op leaves the NMS to the host)"


def _bbox_only_misreadings(
    scene: Scene,
) -> list[tuple[str, Mapping[str, np.ndarray], DecodeConfig]]:
    """Each known mistake of a host decoder of a bbox-only buffer, as the buffer and config under which the
    reference decoder makes it."""
    ((name, buffer),) = scene.outputs.items()
    swapped = buffer[..., [1, 0, 3, 2, *range(4, buffer.shape[-1])]]
    found: list[tuple[str, Mapping[str, np.ndarray], DecodeConfig]] = [
        (BBOX_X_FIRST, {name: swapped}, scene.config),
        (BBOX_NOT_SCALED, scene.outputs, replace(scene.config, input_hw=(1, 1))),
        (BBOX_NO_NMS, scene.outputs, replace(scene.config, iou_threshold=1.0)),
    ]
    if scene.family is HeadFamily.YOLOV5:
        ones = buffer.copy()
        ones[..., 4] = 1
        found.append((BBOX_OBJECTNESS_LEFT_OUT, {name: ones}, scene.config))
    return found


def _reproduce_bbox_only(got: Detections, scene: Scene) -> str | None:
    reference = bbox_only_decoder(scene.family)
    for words, outputs, config in _bbox_only_misreadings(scene):
        try:
            if matches(got, reference(outputs, scene.specs, config)):
                return words
        except Exception:  # a misreading the reference refuses is not the one
            continue
    return None


def name_mistake(got: object, scene: Scene) -> str | None:
    """``None`` when ``got`` equals the planted objects, else the mistake in plain words."""
    if not isinstance(got, Detections):
        return f"returned {type(got).__name__}, expected harness.core.detections.Detections"
    expected = scene.expected
    if matches(got, expected):  # before the symptoms: right scores may all lie in [0.5, 0.73]
        return None
    if len(got) and (got.scores.max() > 1 + 1e-6 or got.scores.min() < -1e-6):
        return f"{SIGMOID_MISSING} (scores {got.scores.min():.3g} .. {got.scores.max():.3g})"
    if len(got) and got.scores.min() >= 0.5 - 1e-3 and got.scores.max() <= _sigmoid(1.0) + 1e-3:
        return f"{SIGMOID_TWICE} ({len(got)} detections, scores {got.scores.min():.3f} .. {got.scores.max():.3f})"
    swapped = Detections(got.boxes[:, [1, 0, 3, 2]], got.scores, got.class_ids)
    if matches(swapped, expected):
        return XY_SWAPPED
    if len(got) == len(expected):
        # A decoder without the +0.5 puts every box half a cell (stride / 2) up and left, or the reverse.
        order = np.argsort(got.scores)
        delta = got.boxes[order] - expected.boxes[np.argsort(expected.scores)]
        half = (scene.strides[np.argsort(expected.scores)] / 2)[:, None]
        if np.allclose(np.abs(delta), half, atol=BOX_TOLERANCE_PX) and np.allclose(delta, delta[:, :1], atol=1.0):
            return f"{HALF_CELL} (boxes shifted by {delta[0, 0]:+.1f} px at stride {2 * half[0, 0]:.0f})"
    return (
        f"expected {len(expected)} planted detections, got {len(got)}; "
        f"first expected {_describe(expected)}, first got {_describe(got)}"
    )


def _describe(d: Detections) -> str:
    if not len(d):
        return "none"
    top = int(np.argmax(d.scores))
    return f"class {d.class_ids[top]} score {d.scores[top]:.3f} box {np.round(d.boxes[top], 1).tolist()}"


def _raised(error: BaseException) -> str:
    """The exception's type, message and where in the decoder's code it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__))
    theirs = [f for f in frames if os.path.dirname(os.path.abspath(f.filename)) != here] or frames
    where = f" at {theirs[-1].filename}:{theirs[-1].lineno} in {theirs[-1].name}" if theirs else ""
    return f"raised {type(error).__name__}: {str(error) or '(no message)'}{where}"


def _run(decoder: Decoder, scene: Scene) -> str | None:
    """None where ``decoder`` finds the planted objects, else its mistake: named by reproduction where
    a known misreading gives what it returned, else by the symptom, else said to be none of them."""
    try:
        got = decoder(scene.outputs, scene.specs, scene.config)
    except Exception as error:  # a user's decoder may raise anything: report it, don't crash the suite
        return _raised(error)
    failure = name_mistake(got, scene)
    if failure is None or not isinstance(got, Detections):
        return failure
    if scene.bbox_only:
        named = _reproduce_bbox_only(got, scene)
    else:
        found = reproduce([DecodedFrame(scene.outputs, got)], scene.specs, scene.config, scene.family, scene.layout)
        named = found.words if found is not None else None
    if named is not None:
        return f"{named}: {failure}" if failure.startswith("expected ") else f"{named} ({failure})"
    return f"{failure}; {NOT_REPRODUCED}" if failure.startswith("expected ") else failure


@dataclass(frozen=True)
class Property:
    sentence: str
    check: Callable[[Decoder, int], str | None]


def _plain(recipe: SceneRecipe) -> Callable[[Decoder, int], str | None]:
    return lambda decoder, seed: _run(decoder, make_scene(recipe, seed))


def _fcr_channel_last(base: SceneRecipe) -> Callable[[Decoder, int], str | None]:
    # The field report's mix: FCR box heads, NHWC class heads on two grids and FCR on the third
    # (an anchored head: FCR maps on the finest and the coarsest grid).
    nhwc, fcr = FormatOrder.NHWC, FormatOrder.FCR
    if base.family.anchor_based:
        mixed = replace(base, anchored_orders=(fcr, nhwc, fcr))
    else:
        mixed = replace(base, box_order=fcr, class_orders=(nhwc, nhwc, fcr))

    def check(decoder: Decoder, seed: int) -> str | None:
        failure = _run(decoder, make_scene(mixed, seed))
        if failure and _run(decoder, make_scene(base, seed)) is None:
            return f"{FCR_CHANNEL_FIRST}: {failure}"
        return failure

    return check


def _pairing(base: SceneRecipe) -> Callable[[Decoder, int], str | None]:
    def check(decoder: Decoder, seed: int) -> str | None:
        scene = make_scene(base, seed)
        rng = np.random.default_rng(seed)
        order = list(scene.outputs)
        rng.shuffle(order)
        names = {k: f"output_{j}" for k, j in zip(order, rng.permutation(len(order)), strict=True)}
        failure = _run(decoder, scene.renamed(names, order))
        if failure and _run(decoder, scene) is None:
            return f"{ANCHORS_BY_ORDER if base.family.anchor_based else PAIRED_ACROSS_GRIDS}: {failure}"
        return failure

    return check


# The head families the suite plants scenes for.
SCENE_FAMILIES = (
    HeadFamily.YOLOV8,
    HeadFamily.YOLO26_ONE2ONE,
    HeadFamily.YOLO26_ONE2MANY,
    HeadFamily.YOLOV5,
    HeadFamily.YOLOX,
    HeadFamily.SSD,
)
# The head families whose score is objectness x class.
OBJECTNESS_FAMILIES = (HeadFamily.YOLOV5, HeadFamily.YOLOX)


def properties(family: HeadFamily = HeadFamily.YOLOV8, bbox_only: bool = False) -> tuple[Property, ...]:
    """The properties a decoder of ``family``'s heads must hold: the same sentences for every family,
    the scenes planted with its box maps (DFL bins, YOLO26's 4 distances, YOLOv5's anchored maps or YOLOX's
    box, objectness and class maps, SSD's per-anchor regression and class maps), then an objectness family's own
    (score = objectness x class), an anchor-based family's (anchors from the config) and SSD's (its anchors and
    box coding from ``config.ssd``, the background class left out; the sentences about logit class outputs are
    not SSD's: HailoRT's SSD op is given probabilities). A family without scenes (:data:`SCENE_FAMILIES`) is a
    :class:`~harness.core.errors.HarnessError`."""
    if family not in SCENE_FAMILIES:
        raise HarnessError(
            f"head family {family.value!r}: the conformance suite plants no scenes of its heads yet; expected one "
            f"of {[f.value for f in SCENE_FAMILIES]}"
        )
    if bbox_only:
        return _bbox_only_properties(family)
    base = SceneRecipe(family=family, reg_max=16 if family is HeadFamily.YOLOV8 else 1)
    # HailoRT's SSD op applies no activation (ssd_post_process.hpp): an SSD decoder is given probabilities,
    # never logits, and the sentences about logits are not its
    logits = family is not HeadFamily.SSD
    common = (
        Property(
            "finds every planted object with its box, score and class", _plain(replace(base, input_hw=(640, 640)))
        ),
        Property("handles non-square inputs and 80 classes", _plain(replace(base, classes=80, objects=6))),
        *(
            (Property("applies the sigmoid to logit class outputs", _plain(replace(base, logits=True))),)
            if logits
            else ()
        ),
        Property("reads UINT8 outputs through their quant info", _plain(replace(base, format_type=FormatType.UINT8))),
        *(
            (
                Property(
                    "reads UINT8 logit outputs through their quant info",
                    _plain(replace(base, format_type=FormatType.UINT8, logits=True)),
                ),
            )
            * logits
        ),
        Property(
            "reads UINT16 outputs (16-bit output layers) through their quant info",
            _plain(replace(base, format_type=FormatType.UINT16, logits=logits)),
        ),
        Property("reads FCR heads channel-last, like NHWC", _fcr_channel_last(base)),
        Property("pairs heads by grid and channels, whatever the outputs' order or names", _pairing(base)),
    )
    if family is HeadFamily.SSD:
        return (
            *common,
            Property(
                "takes the anchors and box coding from config.ssd, per layer", _plain(replace(base, drawn_anchors=True))
            ),
            Property(
                "leaves out the background class where config.ssd puts it, first or last",
                _plain(replace(base, background_last=True)),
            ),
        )
    objectness = Property(
        "scores objectness x class: a high class score under a low objectness is no detection",
        _plain(replace(base, decoys=8)),
    )
    anchors = Property(
        "takes each anchor's (width, height) from config.anchors, per stride", _plain(replace(base, drawn_anchors=True))
    )
    return (
        *common,
        *((objectness,) if family in OBJECTNESS_FAMILIES else ()),
        *((anchors,) if family.anchor_based else ()),
    )


def _bbox_only_properties(family: HeadFamily) -> tuple[Property, ...]:
    """A host decoder of HailoRT's bbox-only buffer: YOLOv8's sentences that a buffer of float32 boxes and
    class values can hold (its boxes decoded by HailoRT: no DFL, no quantization, no layout of heads), and
    YOLOv5's objectness sentence; every scene holds a weaker duplicate of each object that only an NMS drops."""
    if family not in BBOX_ONLY_OUTPUT:
        raise HarnessError(
            f"head family {family.value!r}: HailoRT has no bbox-only op for it; expected one of "
            f"{[f.value for f in BBOX_ONLY_OUTPUT]}"
        )
    base = SceneRecipe(family=family, reg_max=16 if family is HeadFamily.YOLOV8 else 1, bbox_only=True)
    own = (
        Property(
            "finds every planted object with its box, score and class", _plain(replace(base, input_hw=(640, 640)))
        ),
        Property("handles non-square inputs and 80 classes", _plain(replace(base, classes=80, objects=6))),
        Property("runs the NMS over the proposals: a weaker duplicate of an object is no detection", _plain(base)),
    )
    if family is HeadFamily.YOLOV5:
        objectness = Property(
            "scores objectness x class: a high class score under a low objectness is no detection",
            _plain(replace(base, decoys=8)),
        )
        return (*own, objectness)
    return own


def conformance_head(text: str) -> tuple[HeadFamily, bool]:
    """``--decoder-head`` -> the head family and whether the decoder is given HailoRT's bbox-only buffer
    (``yolov8-bbox-only``, ``yolov5-bbox-only``) rather than the raw heads; a ValueError naming the words."""
    bbox_only = text.endswith(BBOX_ONLY_SUFFIX)
    return HeadFamily(text.removesuffix(BBOX_ONLY_SUFFIX)), bbox_only


BBOX_ONLY_SUFFIX = "-bbox-only"
SEEDS = (0, 1, 2, 3, 4)


def check_property(decoder: Decoder, prop: Property, seeds: tuple[int, ...] = SEEDS) -> str | None:
    """The first failure over ``seeds``, prefixed with the seed, or ``None``."""
    for seed in seeds:
        failure = prop.check(decoder, seed)
        if failure:
            return f"seed {seed}: {failure}"
    return None


def run_conformance(
    decoder: Decoder, seeds: tuple[int, ...] = SEEDS, family: HeadFamily = HeadFamily.YOLOV8, bbox_only: bool = False
) -> dict[str, str | None]:
    """Property sentence -> failure (``None`` when it holds), for a decoder of ``family``'s heads (with
    ``bbox_only``: of the buffer HailoRT's bbox-only op writes of them)."""
    return {prop.sentence: check_property(decoder, prop, seeds) for prop in properties(family, bbox_only)}
