"""Decoder conformance: a property suite any raw-head YOLO decoder can be run against.

A decoder under test has the documented signature of :func:`harness.decode.yolo.decode`::

    decoder(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections

Each property plants objects in synthetic head outputs (one confident cell per object, a sharp DFL
distribution per side, background far below threshold), so the expected detections are known
exactly. When a decoder misses them, the failure names the mistake in plain words:

- by reproduction first: each known misreading of an output's memory (channel-first, DFL bins
  interleaved) is applied to the reference decoder's input on every head, on each role's heads, on
  the FCR heads and on each head alone, and the one whose detections are the decoder's is named
  ("the box heads of all 3 strides read channel-first ..."); where none reproduces them it says so;
- else by its signature: x/y swapped boxes, half-cell anchor offsets, scores outside [0, 1] or
  squeezed into [0.5, 0.73], FCR heads read channel-first, heads paired across grids.

The properties are stated per head family (:func:`properties`): YOLOv8/YOLO11 heads carry 4 x 16 DFL
bins per box; YOLO26 heads (either head: the planted objects neither overlap nor exceed the top-k,
so the one-to-one and the one-to-many decode find the same) carry the 4 distances themselves.
"""

from __future__ import annotations

import importlib
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.heads import decoder
from harness.decode.layout import HeadLayout, HeadOutput, layout_of
from harness.formats.quant import dequantize, quantize, read_as_uint8

Decoder = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]

BOX_TOLERANCE_PX = 0.5
SCORE_TOLERANCE = 0.01
BACKGROUND_LOGIT = -8.0
DFL_PEAK = 12.0

SIGMOID_MISSING = "scores outside [0,1]: sigmoid missing"
SIGMOID_TWICE = "scores squeezed into [0.5, 0.73]: sigmoid applied twice"
XY_SWAPPED = "boxes come back x/y swapped"
HALF_CELL = "anchor centres off by half a cell"
FCR_CHANNEL_FIRST = "FCR head read as channel-first (FCR is channel-last on the host)"
DFL_INTERLEAVED = (
    "read with the DFL bins interleaved (the bins of one box side are contiguous: side-major, 4 x reg_max)"
)
CHANNEL_FIRST = "read channel-first (host outputs are channel-last: (H, W, C))"
SIXTEEN_AS_EIGHT = "read as 8-bit (a 16-bit output's buffer taken byte by byte for its codes)"
NOT_REPRODUCED = (
    "none of the known misreadings (channel-first, DFL bins interleaved, 16-bit read as 8-bit), on any head, "
    "reproduces it"
)
PAIRED_ACROSS_GRIDS = (
    "box and class heads paired across grids (paired by output order or name, not by grid and channels)"
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

    def renamed(self, names: Mapping[str, str], order: list[str]) -> Scene:
        outputs = {names[k]: self.outputs[k] for k in order}
        specs = {names[k]: replace(self.specs[k], name=names[k]) for k in order}
        heads = (HeadOutput.of_spec(specs[names[o.name]], o.role) for o in self.layout.outputs)
        return replace(self, outputs=outputs, specs=specs, layout=layout_of(heads, self.config.input_hw))


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


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def make_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """Plant ``recipe.objects`` non-overlapping objects in random cells of random grids."""
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
            if recipe.format_type is FormatType.FLOAT32:
                outputs[name], seen = value, value
                spec_quant: tuple[QuantInfo, ...] = ()
            else:
                q = quantize(value, (quant,), np.dtype(recipe.format_type.numpy_dtype))
                outputs[name], seen, spec_quant = q, dequantize(q, (quant,)), (quant,)
            specs[name] = OutputSpec(name, value.shape, order, recipe.format_type, spec_quant)
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


def _matches(got: Detections, expected: Detections, shift: np.ndarray | None = None) -> bool:
    """Every expected detection has exactly one counterpart (same class, box and score within tolerance)."""
    if len(got) != len(expected):
        return False
    boxes = got.boxes if shift is None else got.boxes + shift
    used = np.zeros(len(got), bool)
    for i in range(len(expected)):
        err = np.abs(boxes - expected.boxes[i]).max(axis=1)
        ok = (
            ~used
            & (got.class_ids == expected.class_ids[i])
            & (err <= BOX_TOLERANCE_PX)
            & (np.abs(got.scores - expected.scores[i]) <= SCORE_TOLERANCE)
        )
        if not ok.any():
            return False
        used[int(np.argmax(ok))] = True
    return True


def name_mistake(got: object, scene: Scene) -> str | None:
    """``None`` when ``got`` equals the planted objects, else the mistake in plain words."""
    if not isinstance(got, Detections):
        return f"returned {type(got).__name__}, expected harness.core.detections.Detections"
    expected = scene.expected
    if len(got) and (got.scores.max() > 1 + 1e-6 or got.scores.min() < -1e-6):
        return f"{SIGMOID_MISSING} (scores {got.scores.min():.3g} .. {got.scores.max():.3g})"
    if len(got) and got.scores.min() >= 0.5 - 1e-3 and got.scores.max() <= _sigmoid(1.0) + 1e-3:
        return f"{SIGMOID_TWICE} ({len(got)} detections, scores {got.scores.min():.3f} .. {got.scores.max():.3f})"
    if _matches(got, expected):
        return None
    swapped = Detections(got.boxes[:, [1, 0, 3, 2]], got.scores, got.class_ids)
    if _matches(swapped, expected):
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


def _channel_first(a: np.ndarray, spec: OutputSpec) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads an (H, W, C) output as (C, H, W) memory sees, laid out (H, W, C)."""
    h, w, c = a.shape
    return a.reshape(c, h, w).transpose(1, 2, 0), spec


def _low_bytes(a: np.ndarray, spec: OutputSpec) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads a 16-bit output's buffer as 8-bit codes sees: its first H x W x C
    bytes, each taken for a code of the output's quant info."""
    return dequantize(read_as_uint8(a), spec.quant), replace(spec, format_type=FormatType.FLOAT32, quant=())


def _bins_interleaved(a: np.ndarray, spec: OutputSpec) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads a box map's DFL bins bin-major (channel ``bin * 4 + side``) sees."""
    h, w, c = a.shape
    return a.reshape(h, w, c // 4, 4).transpose(0, 1, 3, 2).reshape(h, w, c), spec


@dataclass(frozen=True)
class Misreading:
    """A mistake in how a decoder reads one output's memory: ``view`` is what it then sees, for the
    outputs it ``applies`` to."""

    words: str
    applies: Callable[[HeadOutput], bool]
    view: Callable[[np.ndarray, OutputSpec], tuple[np.ndarray, OutputSpec]]


MISREADINGS = (
    Misreading(CHANNEL_FIRST, lambda output: True, _channel_first),
    Misreading(DFL_INTERLEAVED, lambda output: output.role is HeadRole.BOX and output.channels > 4, _bins_interleaved),
    Misreading(SIXTEEN_AS_EIGHT, lambda output: output.host_spec.format_type is FormatType.UINT16, _low_bytes),
)


def _head_sets(scene: Scene) -> list[tuple[str, tuple[HeadOutput, ...]]]:
    """The sets of heads a misreading is tried on, the broadest first (so the simplest story wins):
    every head, each role's heads, the FCR heads, then each head alone."""
    layout = scene.layout
    n = len(layout.levels)
    sets: list[tuple[str, tuple[HeadOutput, ...]]] = [("every head", layout.outputs)]
    for role in (HeadRole.BOX, HeadRole.CLASS):
        sets.append((f"the {role.value} heads of all {n} strides", layout.of_role(role)))
    fcr = tuple(o for o in layout.outputs if scene.specs[o.name].format_order is FormatOrder.FCR)
    if 0 < len(fcr) < len(layout.outputs):
        sets.append(("the FCR heads (" + ", ".join(o.name for o in fcr) + ")", fcr))
    for level in layout.levels:
        for output in level.outputs:
            sets.append((f"the {output.role.value} head of stride {level.stride} ({output.name})", (output,)))
    return sets


def reproduce(got: Detections, scene: Scene) -> str | None:
    """The known misreading, and the heads it was made on, under which the family's reference decoder
    returns ``got``; None where none does."""
    reference = decoder(scene.family)
    for mistake in MISREADINGS:
        for where, heads in _head_sets(scene):
            if not all(mistake.applies(o) for o in heads):
                continue
            outputs, specs = dict(scene.outputs), dict(scene.specs)
            for output in heads:
                outputs[output.name], specs[output.name] = mistake.view(
                    np.asarray(outputs[output.name]), specs[output.name]
                )
            try:
                seen = reference(outputs, specs, scene.config)
            except Exception:
                continue
            if _matches(got, seen):
                return f"{where} {mistake.words}"
    return None


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
    named = reproduce(got, scene)
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
    # The field report's mix: FCR box heads, NHWC class heads on two grids and FCR on the third.
    orders = (FormatOrder.NHWC, FormatOrder.NHWC, FormatOrder.FCR)
    mixed = replace(base, box_order=FormatOrder.FCR, class_orders=orders)

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
            return f"{PAIRED_ACROSS_GRIDS}: {failure}"
        return failure

    return check


def properties(family: HeadFamily = HeadFamily.YOLOV8) -> tuple[Property, ...]:
    """The properties a decoder of ``family``'s heads must hold: the same sentences for every family,
    the scenes planted with its box maps (DFL bins, or YOLO26's 4 distances)."""
    base = SceneRecipe(family=family, reg_max=16 if family is HeadFamily.YOLOV8 else 1)
    return (
        Property(
            "finds every planted object with its box, score and class", _plain(replace(base, input_hw=(640, 640)))
        ),
        Property("handles non-square inputs and 80 classes", _plain(replace(base, classes=80, objects=6))),
        Property("applies the sigmoid to logit class outputs", _plain(replace(base, logits=True))),
        Property("reads UINT8 outputs through their quant info", _plain(replace(base, format_type=FormatType.UINT8))),
        Property(
            "reads UINT8 logit outputs through their quant info",
            _plain(replace(base, format_type=FormatType.UINT8, logits=True)),
        ),
        Property(
            "reads UINT16 outputs (16-bit output layers) through their quant info",
            _plain(replace(base, format_type=FormatType.UINT16, logits=True)),
        ),
        Property("reads FCR heads channel-last, like NHWC", _fcr_channel_last(base)),
        Property("pairs heads by grid and channels, whatever the outputs' order or names", _pairing(base)),
    )


SEEDS = (0, 1, 2, 3, 4)


def check_property(decoder: Decoder, prop: Property, seeds: tuple[int, ...] = SEEDS) -> str | None:
    """The first failure over ``seeds``, prefixed with the seed, or ``None``."""
    for seed in seeds:
        failure = prop.check(decoder, seed)
        if failure:
            return f"seed {seed}: {failure}"
    return None


def run_conformance(
    decoder: Decoder, seeds: tuple[int, ...] = SEEDS, family: HeadFamily = HeadFamily.YOLOV8
) -> dict[str, str | None]:
    """Property sentence -> failure (``None`` when it holds), for a decoder of ``family``'s heads."""
    return {prop.sentence: check_property(decoder, prop, seeds) for prop in properties(family)}
