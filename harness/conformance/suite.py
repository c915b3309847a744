"""Decoder conformance: a property suite any raw-head YOLO decoder can be run against.

A decoder under test has the documented signature of :func:`harness.families.yolov8.decode.decode`::

    decoder(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections

Each property plants objects in synthetic head outputs (one confident cell per object, a sharp DFL
distribution per side, background far below threshold), so the expected detections are known
exactly. When a decoder misses them, the failure names the mistake in plain words:

- by reproduction (:mod:`harness.conformance.misreadings`): each known misreading at a step of HailoRT's output
  path (an output's memory, its quant info and layout, the activation, the pairing of heads, the family's
  anchors or box coding, its box centres, the boxes' order) is made in the reference decoding, and the one whose
  detections are the decoder's is named ("the box heads of all 3 strides read channel-first ..."), its symptom
  after it; a host decoder of a bbox-only buffer by the mistakes of reading that buffer;
- where none reproduces them, by its signature (x/y swapped boxes, half-cell anchor offsets, scores outside
  [0, 1] or squeezed into [0.5, 0.73], FCR heads read channel-first, heads paired across grids), said to be
  none of the known misreadings, with what differed: the counts, the classes, the boxes and the scores.

The properties are stated per head family (:func:`properties`): YOLOv8/YOLO11 heads carry 4 x 16 DFL
bins per box; YOLO26 heads (either head: the planted objects neither overlap nor exceed the top-k,
so the one-to-one and the one-to-many decode find the same) carry the 4 distances themselves;
YOLOv5/YOLOv7 heads one anchored map per stride (per anchor the box offsets, objectness and class
scores), the objects planted on chosen (cell, anchor) entries, with two properties of their own:
the score is objectness x class, and each anchor's (width, height) is the config's; YOLOX heads a
box map of 4 (``tx, ty, tw, th``), an objectness map of 1 and a class map of nc per stride, with the
property that the score is objectness x class. Each family's scenes, its own sentences and its reference
decoder are its ``scenes`` part (:class:`~harness.conformance.scenes.FamilyScenes`).
"""

from __future__ import annotations

import importlib
import os
import traceback
from collections.abc import Callable, Collection, Mapping
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
    difference,
    matches,
    reproduce,
)
from harness.conformance.scenes import (
    OBJECTNESS_SENTENCE,
    Decoder,
    Scene,
    SceneRecipe,
    bbox_only_families,
    family_scenes,
    make_scene,
    sigmoid,
)
from harness.conformance.words import (
    ANCHOR_GROUPS_BY_OUTPUT_ORDER,
    ANCHORS_BY_ORDER,  # noqa: F401
    FCR_CHANNEL_FIRST,
    HEADS_PAIRED_BY_OUTPUT_ORDER,
    PAIRED_ACROSS_GRIDS,  # noqa: F401
)
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatType, OutputSpec
from harness.families import REGISTERED, descriptor
from harness.formats.bbox_only import leading_fields

NOTHING_FOUND = "every misreading that finds nothing reproduces that, and this one is tried first"
SIGMOID_MISSING = "scores outside [0,1]: sigmoid missing"
SIGMOID_TWICE = "scores squeezed into [0.5, 0.73]: sigmoid applied twice"
XY_SWAPPED = "boxes come back x/y swapped"
HALF_CELL = "anchor centres off by half a cell"


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
BBOX_SIGMOID = "the class values put through a sigmoid (the buffer holds them as the HEF's sigmoid gave them)"
BBOX_SCALED_HEIGHT_WIDTH = (
    "the boxes scaled by the input's (height, width) where x goes by its width (the buffer is normalised: "
    "x_min / width, y_min / height)"
)


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
    lead = len(leading_fields(scene.family))  # the box (and objectness) fields before the class values
    sigmoided = buffer.copy()
    sigmoided[..., lead:] = sigmoid(buffer[..., lead:])
    found.append((BBOX_SIGMOID, {name: sigmoided}, scene.config))
    h, w = scene.config.input_hw
    if h != w:
        found.append((BBOX_SCALED_HEIGHT_WIDTH, scene.outputs, replace(scene.config, input_hw=(w, h))))
    if descriptor(scene.family).objectness:  # YOLOv5's buffer: the objectness beside the classes
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
    if len(got) and got.scores.min() >= 0.5 - 1e-3 and got.scores.max() <= sigmoid(1.0) + 1e-3:
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


def _run(decoder: Decoder, scene: Scene, among: Collection[str] | None = None) -> str | None:
    """None where ``decoder`` finds the planted objects, else its mistake: named by reproduction where
    a known misreading (of those named ``among``, where given) gives what it returned (its symptom after it),
    else by the symptom and said to be none of the known misreadings, with what differed on the scene."""
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
        frame = DecodedFrame(scene.outputs, got)
        found = reproduce([frame], scene.specs, scene.config, scene.family, scene.layout, among)
        named = found.words if found is not None else None
    if named is not None and not len(got):
        named += f" (it returned no detection: {NOTHING_FOUND})"
    if named is not None:
        return f"{named}: {failure}" if failure.startswith("expected ") else f"{named} ({failure})"
    return f"{failure}; {NOT_REPRODUCED}; on this scene, {difference(got, scene.expected, 'the scene holds')}"


@dataclass(frozen=True)
class Property:
    sentence: str
    check: Callable[[Decoder, int], str | None]


def _plain(recipe: SceneRecipe) -> Callable[[Decoder, int], str | None]:
    return lambda decoder, seed: _run(decoder, make_scene(recipe, seed))


def _fcr_channel_last(base: SceneRecipe) -> Callable[[Decoder, int], str | None]:
    mixed = family_scenes(base.family).fcr_mixed(base)  # the field report's mix of FCR and NHWC heads

    def check(decoder: Decoder, seed: int) -> str | None:
        failure = _run(decoder, make_scene(mixed, seed))
        if failure and _run(decoder, make_scene(base, seed)) is None:
            return f"{FCR_CHANNEL_FIRST}: {failure}"
        return failure

    return check


# The misreadings that depend on the outputs' order or names alone: a decoder that finds the objects where the
# outputs keep their order and names, and not otherwise, makes one of them (or none the suite knows).
ORDER_DEPENDENT = (HEADS_PAIRED_BY_OUTPUT_ORDER, ANCHOR_GROUPS_BY_OUTPUT_ORDER)


def _pairing(base: SceneRecipe) -> Callable[[Decoder, int], str | None]:
    def check(decoder: Decoder, seed: int) -> str | None:
        scene = make_scene(base, seed)
        rng = np.random.default_rng(seed)
        order = list(scene.outputs)
        rng.shuffle(order)
        names = {k: f"output_{j}" for k, j in zip(order, rng.permutation(len(order)), strict=True)}
        ordered = _run(decoder, scene) is None
        failure = _run(decoder, scene.renamed(names, order), ORDER_DEPENDENT if ordered else None)
        if failure and ordered:
            return f"{family_scenes(base.family).misordered()}: {failure}"
        return failure

    return check


# The head families the suite plants scenes for (each family's ``scenes`` part).
SCENE_FAMILIES = tuple(d.family for d in REGISTERED)


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
    scenes = family_scenes(family)
    base = scenes.recipe()
    # HailoRT's SSD op applies no activation (ssd_post_process.hpp): an SSD decoder is given probabilities,
    # never logits, and the sentences about logits are not its
    logits = scenes.logit_classes()
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
    objectness = Property(OBJECTNESS_SENTENCE, _plain(replace(base, decoys=8)))
    return (
        *common,
        *((objectness,) if descriptor(family).objectness else ()),
        *(Property(sentence, _plain(recipe)) for sentence, recipe in scenes.sentences(base)),
    )


def _bbox_only_properties(family: HeadFamily) -> tuple[Property, ...]:
    """A host decoder of HailoRT's bbox-only buffer: YOLOv8's sentences that a buffer of float32 boxes and
    class values can hold (its boxes decoded by HailoRT: no DFL, no quantization, no layout of heads), and
    YOLOv5's objectness sentence; every scene holds a weaker duplicate of each object that only an NMS drops."""
    if not descriptor(family).bbox_only_op:
        raise HarnessError(
            f"head family {family.value!r}: HailoRT has no bbox-only op for it; expected one of "
            f"{[f.value for f in bbox_only_families()]}"
        )
    base = replace(family_scenes(family).recipe(), bbox_only=True)
    own = (
        Property(
            "finds every planted object with its box, score and class", _plain(replace(base, input_hw=(640, 640)))
        ),
        Property("handles non-square inputs and 80 classes", _plain(replace(base, classes=80, objects=6))),
        Property("runs the NMS over the proposals: a weaker duplicate of an object is no detection", _plain(base)),
    )
    if descriptor(family).objectness:
        return (*own, Property(OBJECTNESS_SENTENCE, _plain(replace(base, decoys=8))))
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
