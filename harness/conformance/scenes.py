"""Planted scenes: synthetic head outputs of a head family with objects planted in them, so that the
detections a correct decoder returns are known exactly (:class:`Scene`, made from a :class:`SceneRecipe`).

Each family plants its own scenes in its ``scenes`` part (``harness/families/<family>/scenes.py``, typed by
:class:`FamilyScenes`): its planted maps, its own sentences, its reference decoder and its reference for
``verify-decode``. What the parts share (quantization, the objects' scores, the anchors drawn) is here, and
the scenes of HailoRT's bbox-only buffer, which any family with a bbox-only op makes of its planted heads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from harness.conformance.agreement import ImageAgreement, VerifyFrame
from harness.conformance.words import PAIRED_ACROSS_GRIDS
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily, HeadTensor
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.decode.layout import HeadLayout, HeadOutput, layout_of
from harness.families import descriptor, part
from harness.formats.quant import dequantize, quantize

if TYPE_CHECKING:
    from onnx import ModelProto

    from harness.conformance.decoder_misreadings import DecoderMisreading
    from harness.conformance.misreadings import ConfigMisreading

Decoder = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]
Anchors = tuple[tuple[tuple[float, float], ...], ...]

BACKGROUND_LOGIT = -8.0
DFL_PEAK = 12.0
DUPLICATE_SCORE = 0.8  # a bbox-only scene's duplicate's class value, times its object's
OBJECTNESS_SENTENCE = "scores objectness x class: a high class score under a low objectness is no detection"


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


class FamilyScenes(Protocol):
    """A head family's ``scenes`` part: the same functions in every family's module."""

    def recipe(self) -> SceneRecipe:
        """The recipe the family's properties start from (its family and box channels)."""
        ...

    def plant(self, recipe: SceneRecipe, seed: int) -> Scene:
        """``recipe.objects`` objects planted in the family's heads, drawn with ``seed``."""
        ...

    def logit_classes(self) -> bool:
        """Whether the family's class maps may hold logits (the sentences about logit outputs are its)."""
        ...

    def sentences(self, base: SceneRecipe) -> tuple[tuple[str, SceneRecipe], ...]:
        """The family's own properties, after every family's: each sentence and the recipe of its scenes."""
        ...

    def fcr_mixed(self, base: SceneRecipe) -> SceneRecipe:
        """``base`` with the field report's mix of FCR and NHWC heads."""
        ...

    def misordered(self) -> str:
        """The mistake of a decoder that finds the objects only where the outputs keep their order and names."""
        ...

    def config_misreadings(self) -> tuple[ConfigMisreading, ...]:
        """The known misreadings of what the family's config gives its decoder (its anchors, its box coding),
        in the order they are tried."""
        ...

    def coordinate_misreadings(self) -> tuple[DecoderMisreading, ...]:
        """The known mistakes in computing the family's box centres (half a cell off; YOLOv3's coding of a
        YOLOv5 centre), each its reference decoding with that step made otherwise, in the order they are tried."""
        ...

    def reference_decoder(self) -> Decoder:
        """The harness's decoder of the family's heads: the reference a mistake is reproduced with."""
        ...

    def export_reference(
        self, model: ModelProto, heads: Sequence[HeadTensor], config: DecodeConfig
    ) -> tuple[ModelProto, DecodeConfig]:
        """``verify-decode``: the model whose decode tail is the reference, and the config decoded under."""
        ...

    def agreement(self, frame: VerifyFrame) -> ImageAgreement:
        """``verify-decode``: one image's decoded cut outputs against the reference."""
        ...


def family_scenes(family: HeadFamily) -> FamilyScenes:
    """``family``'s ``scenes`` part."""
    return cast(FamilyScenes, part(family, "scenes"))


def make_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """Plant ``recipe.objects`` non-overlapping objects in random cells of random grids."""
    if recipe.bbox_only:
        return _bbox_only_scene(recipe, seed)
    return family_scenes(recipe.family).plant(recipe, seed)


# ------------------------------------------------------------------------ what the families' scenes share


def logit_class_maps() -> bool:
    """A family's class maps may hold logits."""
    return True


def paired_across_grids() -> str:
    """The misordering of a family of box and class maps per grid: the maps paired across grids."""
    return PAIRED_ACROSS_GRIDS


def no_sentences(base: SceneRecipe) -> tuple[tuple[str, SceneRecipe], ...]:
    """A family's sentences where it has none of its own."""
    return ()


def fcr_mixed_grids(base: SceneRecipe) -> SceneRecipe:
    """The field report's mix of a family of box and class maps: FCR box (regression) maps, NHWC class (and
    objectness) maps on two grids and FCR on the third."""
    nhwc, fcr = FormatOrder.NHWC, FormatOrder.FCR
    return replace(base, box_order=fcr, class_orders=(nhwc, nhwc, fcr))


def no_config_misreadings() -> tuple[ConfigMisreading, ...]:
    """A family's config misreadings where its decode reads no config of its own."""
    return ()


def half_cell_misreadings() -> tuple[DecoderMisreading, ...]:
    """A family decoded by an NMS: its centres half a cell off either way
    (:func:`~harness.conformance.decoder_misreadings.half_cells`)."""
    from harness.conformance.decoder_misreadings import half_cells

    return half_cells()


def export_as_reference(
    model: ModelProto, heads: Sequence[HeadTensor], config: DecodeConfig
) -> tuple[ModelProto, DecodeConfig]:
    """The export as it is, at the run's config, as ``verify-decode``'s reference."""
    return model, config


def widened(quant: QuantInfo, format_type: FormatType) -> QuantInfo:
    """``quant``'s range over 16 bits where ``format_type`` is UINT16 (as the DFC's a16 layers keep it)."""
    if format_type is not FormatType.UINT16:
        return quant
    scale = (quant.limvals_max - quant.limvals_min) / 65535
    return QuantInfo(round(-quant.limvals_min / scale), scale, quant.limvals_min, quant.limvals_max)


def box_quant(format_type: FormatType) -> QuantInfo:
    return widened(QuantInfo(zero_point=128, scale=0.1, limvals_min=-12.8, limvals_max=12.7), format_type)


def class_quant(logits: bool, format_type: FormatType) -> QuantInfo:
    if logits:
        return widened(QuantInfo(zero_point=200, scale=0.06, limvals_min=-12.0, limvals_max=3.3), format_type)
    return widened(QuantInfo(zero_point=0, scale=1 / 255, limvals_min=0.0, limvals_max=1.0), format_type)


def as_output(
    name: str, value: np.ndarray, order: FormatOrder, quant: QuantInfo, format_type: FormatType
) -> tuple[np.ndarray, np.ndarray, OutputSpec]:
    """A planted map ``value`` (float32, ``(H, W, C)``) as the host receives it in ``format_type`` (quantized
    by ``quant`` unless FLOAT32), what a correct decoder reads of it (dequantized), and its spec."""
    if format_type is FormatType.FLOAT32:
        return value, value, OutputSpec(name, value.shape, order, format_type, ())
    q = quantize(value, (quant,), np.dtype(format_type.numpy_dtype))
    return q, dequantize(q, (quant,)), OutputSpec(name, value.shape, order, format_type, (quant,))


def iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def sigmoid(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.asarray(x))))


def logit(p: np.ndarray | float) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    return np.log(p / (1 - p))


def drawn_anchors(rng: np.random.Generator, strides: tuple[int, ...]) -> Anchors:
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


def drawn_scores(rng: np.random.Generator, first: bool, decoy: int | None = None) -> tuple[float, float]:
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


# ------------------------------------------------------------------------ HailoRT's bbox-only buffer


def bbox_only_families() -> tuple[HeadFamily, ...]:
    """The families HailoRT has a bbox-only op for, in the registry's order."""
    from harness.families import REGISTERED

    return tuple(d.family for d in REGISTERED if d.bbox_only_op)


def _bbox_only_scene(recipe: SceneRecipe, seed: int) -> Scene:
    """A bbox-only scene: the planted heads of ``recipe.family`` (probabilities, as the HEF's sigmoid gives
    them) as HailoRT's bbox-only op writes them (:func:`~harness.decode.bbox_only.bbox_only_op`: one float32
    buffer of every proposal, y first and normalised, YOLOv5's classes not multiplied by the objectness), each
    planted object's row copied onto a background row with its box moved down and right by 3 % of its size
    and its class value lower: the host's NMS must suppress it. The detections expected are the heads' (the
    NMS op's). The buffer is named as the emulated HEF names it (the NMS op's output)."""
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
    name = descriptor(family).nms_output
    spec = bbox_only_spec(name, len(buffer), buffer.shape[1] - lead, family)
    return replace(heads, outputs={name: buffer[None]}, specs={name: spec}, bbox_only=True)
