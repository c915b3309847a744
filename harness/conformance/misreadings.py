"""Known misreadings of raw head outputs, and a decoder's mistake named by reproducing it.

A misreading is a mistake a decoder makes at one step of HailoRT's output path: in how it reads one output's
memory (16-bit read as 8-bit, the codes taken without their quant info, channel-first, DFL bins interleaved,
an anchored map read class-major, the box channels read y first, a second sigmoid, the objectness left out:
:data:`MISREADINGS`), in how it takes what the family's config gives it (the anchors: groups reversed,
(height, width), YOLOv5's defaults; an SSD head's box coding: x first, without its scale factors, anchors as
(height, width), the background kept; or in the family's own arithmetic: box sizes without the exp, an SSD
head's sigmoid scores read as softmax: the family's :class:`ConfigMisreading`, of its ``scenes`` part), or at a
later step (the sigmoid left out, the heads or anchors paired by the outputs' order, the boxes written y first:
:mod:`harness.conformance.decoder_misreadings`; a centre computed half a cell off or with YOLOv3's coding: the
family's ``coordinate_misreadings``).
:func:`reproductions` applies each output misreading to the family's reference decoder's input, on every head, on
the FCR heads, on each role's heads, on the class and objectness heads together and on each head alone
(:func:`head_sets`), then each of the others, and gives those under which the reference decoding returns what
the decoder under test returned, on every frame given. The conformance suite names the first of them on one
planted scene (:func:`reproduce`); the doctor gives a host decoder's path's frames, its runner's outputs as the
decoder saw them, and names one only where no other known misreading reproduces them alike
(:func:`reproduce_path`: several that do are rivals, none named). Where none does, :func:`difference` says what
differed on the first frame that differs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.conformance.decoder_misreadings import DECODER_MISREADINGS, Decoder, DecoderMisreading
from harness.conformance.scenes import family_scenes
from harness.conformance.words import (
    ANCHORED_READ_CLASS_MAJOR,
    BOX_CHANNELS_READ_Y_FIRST,
    DFL_BINS_INTERLEAVED,
    FCR_READ_CHANNEL_FIRST,
    OBJECTNESS_MISSING,
    QUANT_INFO_LEFT_OUT,
    READ_CHANNEL_FIRST,
    SIGMOID_APPLIED_TWICE,
    SIXTEEN_AS_EIGHT,
    SIXTEEN_BIT_READ_AS_EIGHT,
)
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily, HeadRole
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.heads import family_anchors, head_layout
from harness.decode.layout import HeadLayout, HeadOutput, Level
from harness.decode.maps import classes_are_probabilities, sigmoid
from harness.families.yolov5.decode import OBJECTNESS
from harness.formats.quant import dequantize, quantize, read_as_uint8

BOX_TOLERANCE_PX = 0.5
RELATIVE_ROUNDING = 1e-5
SCORE_TOLERANCE = 0.01

DFL_INTERLEAVED = (
    "read with the DFL bins interleaved (the bins of one box side are contiguous: side-major, 4 x reg_max)"
)
CHANNEL_FIRST = "read channel-first (host outputs are channel-last: (H, W, C))"
CLASS_MAJOR = (
    "read class-major (channel value x na + anchor; a map of anchors is anchor-major: each anchor's values (5 + nc "
    "of an anchored map, 4 or nc of an SSD map) are contiguous)"
)
SIGMOID_AGAIN = "put through a second sigmoid (one makes them probabilities: the HEF's, or the decoder's for logits)"
OBJECTNESS_LEFT_OUT = "read without its objectness (score = class alone; the head scores objectness x class)"
ANCHORS_REVERSED = "the anchor groups taken in reverse stride order (config.anchors is stride ascending)"
ANCHORS_WH_SWAPPED = "each anchor taken as (height, width) (config.anchors holds (width, height))"
DEFAULT_ANCHORS_USED = "YOLOv5's default anchors used instead of config.anchors"
SSD_X_FIRST = "the box coding read x first (tx, ty, tw, th; config.ssd gives the order of ty, tx, th, tw)"
SSD_SCALES_LEFT_OUT = (
    "the box coding's scale factors left out (config.ssd's centers_scale_factor and bbox_dimensions_scale_factor "
    "divide the codes)"
)
SSD_ANCHORS_WH_SWAPPED = "each SSD anchor taken as (height, width) (config.ssd's anchors hold (width, height))"
SSD_BACKGROUND_KEPT = "the background class read as a class (config.ssd's background_class is left out)"
# hailort: hailort/include/hailo/quantization.hpp (``dequantize_output``: (code - zero_point) x scale)
CODES_AS_VALUES = "read without its quant info (its codes taken for values: (code - zero_point) x scale)"
# ultralytics: ultralytics/utils/tal.py (``dist2bbox``: left, top, right, bottom); ultralytics/yolov5:
# models/yolo.py (tx, ty, tw, th); YOLOX: yolox/models/yolo_head.py (``decode_outputs``: x, y, w, h)
BOX_Y_FIRST = (
    "read y first (the box channels taken as top, left, bottom, right or ty, tx, th, tw: the maps hold x first)"
)
NOT_REPRODUCED = (
    "none of the known misreadings (16-bit read as 8-bit, codes without their quant info, channel-first, DFL bins "
    "interleaved, class-major anchor entries, box channels y first, a second sigmoid, objectness left out, on any "
    "head; anchors reversed, (height, width) or YOLOv5's defaults; an SSD box coding read x first or without its "
    "scale factors, the background kept or read as the first class, its sigmoid scores read as softmax; box sizes "
    "without the exp; the sigmoid left out, heads or anchors paired by the outputs' order, boxes "
    "written y first; centres half a cell off or coded as YOLOv3's) reproduces it"
)


def _box_error(boxes: np.ndarray, box: np.ndarray) -> np.ndarray:
    """Per box of ``boxes``, its largest coordinate's difference from ``box`` beyond float32's rounding of
    them (:data:`RELATIVE_ROUNDING` of the coordinate: a box far outside the input, as a misread size makes
    it, is computed alike by a float32 and a float64 decoder only to that); equal coordinates (infinities
    too) differ by nothing."""
    with np.errstate(invalid="ignore"):
        err = np.where(boxes == box, 0.0, np.abs(boxes - box) - RELATIVE_ROUNDING * np.abs(box))
    return np.nan_to_num(err, nan=np.inf).max(axis=1)


def matches(got: Detections, expected: Detections) -> bool:
    """Every expected detection has exactly one counterpart (same class, box within
    :data:`BOX_TOLERANCE_PX` and score within :data:`SCORE_TOLERANCE`).

    Refused at once where the classes or the sorted scores already differ (no pairing can then hold:
    the sorted pairing is the closest in score); else each expected detection, in order, takes the first
    free counterpart of its class."""
    if len(got) != len(expected) or not np.array_equal(np.sort(got.class_ids), np.sort(expected.class_ids)):
        return False
    if len(got) and np.abs(np.sort(got.scores) - np.sort(expected.scores)).max() > SCORE_TOLERANCE:
        return False
    for cls in np.unique(expected.class_ids):
        mine, theirs = np.flatnonzero(got.class_ids == cls), np.flatnonzero(expected.class_ids == cls)
        boxes, scores = got.boxes[mine], got.scores[mine]
        used = np.zeros(len(mine), bool)
        for i in theirs:
            err = _box_error(boxes, expected.boxes[i])
            ok = ~used & (err <= BOX_TOLERANCE_PX) & (np.abs(scores - expected.scores[i]) <= SCORE_TOLERANCE)
            if not ok.any():
                return False
            used[int(np.argmax(ok))] = True
    return True


def _channel_first(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads an (H, W, C) output as (C, H, W) memory sees, laid out (H, W, C)."""
    h, w, c = spec.shape
    return np.asarray(a).reshape(c, h, w).transpose(1, 2, 0), spec


def sixteen_bit(spec: OutputSpec) -> bool:
    """UINT16 on the host, or FLOAT32 that HailoRT dequantized from a 16-bit quant info (65535 steps)."""
    if spec.format_type is FormatType.UINT16:
        return True
    q = spec.quant[0] if spec.quant else None
    return q is not None and q.scale > 0 and (q.limvals_max - q.limvals_min) / q.scale > 256


def _low_bytes(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads a 16-bit output's buffer as 8-bit codes sees: its first H x W x C
    bytes, each taken for a code of the output's quant info (the codes of a FLOAT32 output are those it
    was dequantized from)."""
    a = np.asarray(a).reshape(spec.shape)
    codes = a if spec.format_type is FormatType.UINT16 else quantize(a, spec.quant, np.uint16)
    return dequantize(read_as_uint8(codes), spec.quant), replace(spec, format_type=FormatType.FLOAT32, quant=())


def _codes_as_values(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that takes a quantized output's codes for its values sees."""
    return np.asarray(a).astype(np.float32), replace(spec, format_type=FormatType.FLOAT32, quant=())


def _box_y_first(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads the box channels y first sees: the 4 groups of a box map (DFL bins or values
    per side) or each anchor's first 4 values of an anchored map with x and y exchanged."""
    h, w, c = spec.shape
    a = np.asarray(a)
    if level.anchored:
        entries = a.reshape(h, w, len(level.anchors), -1).copy()
        entries[..., :4] = entries[..., [1, 0, 3, 2]]
        return entries.reshape(h, w, c), spec
    return a.reshape(h, w, 4, c // 4)[:, :, [1, 0, 3, 2]].reshape(h, w, c), spec


def _interleaved(a: np.ndarray, spec: OutputSpec, groups: int) -> np.ndarray:
    """Channel ``g * n + i`` of ``groups`` groups of ``n`` read from channel ``i * groups + g``."""
    h, w, c = spec.shape
    return np.asarray(a).reshape(h, w, c // groups, groups).transpose(0, 1, 3, 2).reshape(h, w, c)


def _bins_interleaved(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads a box map's DFL bins bin-major (channel ``bin * 4 + side``) sees."""
    return _interleaved(a, spec, 4), spec


def _class_major(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that reads an anchored map class-major (value ``k`` of anchor ``a`` at channel
    ``k * na + a``, not ``a * (5 + nc) + k``) sees."""
    return _interleaved(a, spec, len(level.anchors)), spec


def _values(a: np.ndarray, spec: OutputSpec) -> np.ndarray:
    """The output's values, float32, in its shape (de-quantised where it is quantized)."""
    a = np.asarray(a).reshape(spec.shape)
    return dequantize(a, spec.quant) if spec.is_quantized else a.astype(np.float32)


def probabilities(a: np.ndarray, spec: OutputSpec) -> np.ndarray:
    """The output's values as probabilities, float32: as the family's decoder reads them (its sigmoid
    where they are logits)."""
    values = _values(a, spec)
    return values if classes_are_probabilities(spec, values) else sigmoid(values)


def _sigmoid_again(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that puts an output's probabilities through one more sigmoid sees."""
    return sigmoid(probabilities(a, spec)), replace(spec, format_type=FormatType.FLOAT32, quant=())


# A logit whose sigmoid is 1 in float32 (exp(-100) is below half of float32's epsilon).
CERTAIN_LOGIT = 100.0


def _objectness_left_out(a: np.ndarray, spec: OutputSpec, level: Level) -> tuple[np.ndarray, OutputSpec]:
    """What a decoder that scores entries by their class alone sees: every objectness 1 (an objectness map's
    every value, an anchored map's objectness channel). An objectness map of logits is given a logit whose
    sigmoid is 1: the reference decoder reads a family's score maps all as logits or all as probabilities."""
    if any(o.name == spec.name and o.role is HeadRole.OBJECTNESS for o in level.outputs):
        certain = 1.0 if classes_are_probabilities(spec, _values(a, spec)) else CERTAIN_LOGIT
        return np.full(spec.shape, certain, np.float32), replace(spec, format_type=FormatType.FLOAT32, quant=())
    h, w, c = spec.shape
    entries = probabilities(a, spec).reshape(h, w, len(level.anchors), -1).copy()
    entries[..., OBJECTNESS] = 1
    return entries.reshape(h, w, c), replace(spec, format_type=FormatType.FLOAT32, quant=())


# the outputs holding scores (an SSD layer's class map holds the HEF's sigmoid: a second one is a user's mistake)
SCORED = (HeadRole.CLASS, HeadRole.OBJECTNESS, HeadRole.ANCHORED, HeadRole.ANCHOR_CLASSES)
PER_ANCHOR = (HeadRole.ANCHORED, HeadRole.ANCHOR_BOXES, HeadRole.ANCHOR_CLASSES)  # maps of na groups of values
OBJECTNESS_HELD = (HeadRole.OBJECTNESS, HeadRole.ANCHORED)  # the outputs holding an objectness


@dataclass(frozen=True)
class Misreading:
    """A mistake in how a decoder reads one output's memory: ``view`` is what it then sees of an output
    (of that stride's level), for the outputs it ``applies`` to; ``name`` is how a diagnosis names it."""

    name: str
    words: str
    applies: Callable[[HeadOutput], bool]
    view: Callable[[np.ndarray, OutputSpec, Level], tuple[np.ndarray, OutputSpec]]


# The misreadings in the order they are tried: one that only a 16-bit output allows first (where a decoder
# finds nothing in a UINT16 scene, reading its bytes as 8-bit codes and reading it channel-first may both
# find nothing; the width is then the likelier story, and channel-first shows on every other scene).
MISREADINGS = (
    Misreading(
        SIXTEEN_BIT_READ_AS_EIGHT,
        SIXTEEN_AS_EIGHT,
        lambda output: sixteen_bit(output.host_spec),
        _low_bytes,
    ),
    Misreading(QUANT_INFO_LEFT_OUT, CODES_AS_VALUES, lambda output: output.host_spec.is_quantized, _codes_as_values),
    Misreading(READ_CHANNEL_FIRST, CHANNEL_FIRST, lambda output: True, _channel_first),
    Misreading(
        DFL_BINS_INTERLEAVED,
        DFL_INTERLEAVED,
        lambda output: output.role is HeadRole.BOX and output.channels > 4,
        _bins_interleaved,
    ),
    Misreading(ANCHORED_READ_CLASS_MAJOR, CLASS_MAJOR, lambda output: output.role in PER_ANCHOR, _class_major),
    Misreading(
        BOX_CHANNELS_READ_Y_FIRST,
        BOX_Y_FIRST,
        lambda output: output.role is HeadRole.ANCHORED or (output.role is HeadRole.BOX and output.channels % 4 == 0),
        _box_y_first,
    ),
    Misreading(SIGMOID_APPLIED_TWICE, SIGMOID_AGAIN, lambda output: output.role in SCORED, _sigmoid_again),
    Misreading(
        OBJECTNESS_MISSING, OBJECTNESS_LEFT_OUT, lambda output: output.role in OBJECTNESS_HELD, _objectness_left_out
    ),
)


@dataclass(frozen=True)
class ConfigMisreading:
    """A mistake in how a decoder takes what its config gives it (a family's ``scenes`` part names its own:
    the anchors of ``config.anchors``, an SSD head's box coding of ``config.ssd``): ``view`` is the config it
    then decodes with instead (``config`` itself where the mistake changes nothing of it). A family's mistake
    in the decoding's own arithmetic (box sizes without the exp, an activation other than the model's) gives
    ``decoder``: the family's reference decoder as a decoder making that mistake decodes (None: the reference
    decoder itself)."""

    name: str
    words: str
    view: Callable[[DecodeConfig], DecodeConfig]
    decoder: Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections] | None = None


@dataclass(frozen=True)
class HeadSet:
    """Heads a misreading is tried on, and how a finding names them."""

    words: str
    heads: tuple[HeadOutput, ...]
    fcr: bool  # every one of them FCR, and not every head of the layout


def head_sets(layout: HeadLayout, specs: Mapping[str, OutputSpec]) -> list[HeadSet]:
    """The sets of heads a misreading is tried on, the broadest first (so the simplest story wins):
    every head, the FCR heads (a decoder that reads by format order misreads them all, whatever a frame's
    objects leave unseen of it), each role's heads (the class and objectness heads together too), then
    each head alone."""
    n = len(layout.levels)
    fcr = tuple(o for o in layout.outputs if specs[o.name].format_order is FormatOrder.FCR)
    some_fcr = 0 < len(fcr) < len(layout.outputs)

    def of(words: str, heads: tuple[HeadOutput, ...]) -> HeadSet:
        return HeadSet(words, heads, some_fcr and all(o in fcr for o in heads))

    sets = [of("every head", layout.outputs)]
    if some_fcr:
        sets.append(of("the FCR heads (" + ", ".join(o.name for o in fcr) + ")", fcr))
    for role in (HeadRole.BOX, HeadRole.CLASS, HeadRole.OBJECTNESS, HeadRole.ANCHOR_BOXES, HeadRole.ANCHOR_CLASSES):
        if layout.of_role(role):
            sets.append(of(f"the {role.value} heads of all {n} strides", layout.of_role(role)))
    if layout.of_role(HeadRole.OBJECTNESS):  # the maps holding scores, where a score is their product
        scored = layout.of_role(HeadRole.CLASS) + layout.of_role(HeadRole.OBJECTNESS)
        sets.append(of(f"the class and objectness heads of all {n} strides", scored))
    for level in layout.levels:
        for output in level.outputs:
            sets.append(of(f"the {output.role.value} head of stride {level.stride} ({output.name})", (output,)))
    return sets


@dataclass(frozen=True)
class DecodedFrame:
    """One frame a decoder under test was given (``outputs``, as its runner returned them) and what it
    returned (``got``, in model-input pixels)."""

    outputs: Mapping[str, np.ndarray]
    got: Detections


@dataclass(frozen=True)
class Reproduction:
    """The misreading (``name``, one of :data:`REPRODUCED_NAMES`) and the heads it was made on (``words``)
    under which the family's reference decoder returns what the decoder returned on every one of ``frames``."""

    name: str
    words: str
    frames: int


def _reproduces(frames: Sequence[DecodedFrame], decode: Callable[[Mapping[str, np.ndarray]], Detections]) -> bool:
    """Whether ``decode`` (the reference decoding with one step made otherwise) returns each frame's ``got``
    from its outputs (the first frame tried first: most candidates fail there)."""
    for frame in frames:
        try:
            returned = decode(frame.outputs)
        except Exception:  # a misreading may give the reference what it refuses: then it is not that one
            return False
        if not matches(frame.got, returned):
            return False
    return True


def _decoding(
    decode: Decoder, specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Callable[[Mapping[str, np.ndarray]], Detections]:
    """``decode`` of a frame's outputs of ``specs`` under ``config``."""
    return lambda outputs: decode(outputs, specs, config)


def reproductions(
    frames: Sequence[DecodedFrame],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    family: HeadFamily,
    layout: HeadLayout,
    among: Collection[str] | None = None,
) -> Iterator[Reproduction]:
    """Every known misreading (of those named ``among``, where given), each once with the broadest heads it was
    made on, under which ``family``'s reference decoder returns each frame's ``got`` from its ``outputs`` (of
    ``specs`` and ``layout``, decoded under ``config``), in the order they are tried: a misreading of an
    output's memory (:data:`MISREADINGS`, on each of :func:`head_sets`), the family's known misreading of its
    config (its anchors, an SSD head's box coding) or of its arithmetic (box sizes without the exp), then a later
    step's (:data:`~harness.conformance.decoder_misreadings.DECODER_MISREADINGS`, then the family's
    ``coordinate_misreadings``). None where the reference decoder itself returns each frame's ``got`` (a
    misreading that changes nothing of these frames would be named by nothing they show)."""
    scenes = family_scenes(family)
    reference = scenes.reference_decoder()
    if _reproduces(frames, _decoding(reference, specs, config)):
        return
    level_of = {output.name: level for level in layout.levels for output in level.outputs}

    def tried(name: str) -> bool:
        return among is None or name in among

    for mistake in (m for m in MISREADINGS if tried(m.name) or tried(FCR_READ_CHANNEL_FIRST)):
        for head_set in head_sets(layout, specs):
            if not all(mistake.applies(o) for o in head_set.heads):
                continue

            def seen(
                outputs: Mapping[str, np.ndarray], mistake: Misreading = mistake, heads: HeadSet = head_set
            ) -> Detections:
                misread, misread_specs = dict(outputs), dict(specs)
                for output in heads.heads:
                    name = output.name
                    misread[name], misread_specs[name] = mistake.view(misread[name], specs[name], level_of[name])
                return reference(misread, misread_specs, config)

            if _reproduces(frames, seen):
                fcr = mistake.name == READ_CHANNEL_FIRST and head_set.fcr
                name = FCR_READ_CHANNEL_FIRST if fcr else mistake.name
                if tried(name):
                    yield Reproduction(name, f"{head_set.words} {mistake.words}", len(frames))
                    break  # the broadest heads it reproduces on: the same misreading on fewer is no other story
    for config_mistake in (m for m in scenes.config_misreadings() if tried(m.name)):
        as_given, mistaken = config_mistake.view(config), config_mistake.decoder
        changed = as_given != config or mistaken is not None
        if changed and _reproduces(frames, _decoding(mistaken or reference, specs, as_given)):
            yield Reproduction(config_mistake.name, config_mistake.words, len(frames))
    later: tuple[DecoderMisreading, ...] = (*DECODER_MISREADINGS, *scenes.coordinate_misreadings())
    for step in (m for m in later if tried(m.name)):
        made = step.decoder(family, layout, reference)
        if made is not None and _reproduces(frames, _decoding(made, specs, config)):
            yield Reproduction(step.name, step.words, len(frames))


def reproduce(
    frames: Sequence[DecodedFrame],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    family: HeadFamily,
    layout: HeadLayout,
    among: Collection[str] | None = None,
) -> Reproduction | None:
    """The first known misreading (of those named ``among``, where given), and the heads it was made on, under
    which ``family``'s reference decoder returns each frame's ``got`` (:func:`reproductions`, in the order they are
    tried: the simplest story first, as one planted scene of the conformance suite is read); None where none
    does, or where the reference decoder itself returns each frame's ``got``."""
    return next(reproductions(frames, specs, config, family, layout, among), None)


def _largest(a: np.ndarray, b: np.ndarray) -> float:
    """The largest difference of ``a`` from ``b``: none where they are equal (infinities too), infinite where
    either is not a number."""
    with np.errstate(invalid="ignore"):
        return float(np.nan_to_num(np.where(a == b, 0.0, np.abs(a - b)), nan=np.inf).max())


def _paired(got: Detections, expected: Detections) -> tuple[float, float]:
    """The largest box and score difference between detections of the same class paired in score order (the
    fewer of each class's counts), 0 where none pair."""
    box, score = 0.0, 0.0
    for cls in np.intersect1d(got.class_ids, expected.class_ids):
        mine = np.flatnonzero(got.class_ids == cls)[np.argsort(-got.scores[got.class_ids == cls], kind="stable")]
        theirs = np.flatnonzero(expected.class_ids == cls)
        theirs = theirs[np.argsort(-expected.scores[theirs], kind="stable")]
        n = min(len(mine), len(theirs))
        if n:
            box = max(box, _largest(got.boxes[mine[:n]], expected.boxes[theirs[:n]]))
            score = max(score, _largest(got.scores[mine[:n]], expected.scores[theirs[:n]]))
    return box, score


def _class_counts(d: Detections) -> dict[int, int]:
    ids, counts = np.unique(d.class_ids, return_counts=True)
    return {int(i): int(n) for i, n in zip(ids, counts, strict=True)}


def difference(got: Detections, expected: Detections, source: str = "the reference decoder returns") -> str:
    """What differs between a decoder's detections ``got`` and the ``expected`` (what ``source`` gives), in
    words: the counts, the classes, then the largest box and score difference of detections of a class paired
    in score order."""
    counts = f"{len(got)} detections where {source} {len(expected)}"
    mine, theirs = _class_counts(got), _class_counts(expected)
    classes = "the same classes" if mine == theirs else f"per class {mine} where {theirs}"
    box, score = _paired(got, expected)
    paired = (
        f"paired by class and score, boxes differ by up to {box:.1f} px and scores by up to {score:.3f}"
        if len(np.intersect1d(got.class_ids, expected.class_ids))
        else "no detection of a class the reference returns"
    )
    return f"{counts}, {classes}; {paired}"


@dataclass(frozen=True)
class PathReproduction:
    """What a few frames of a host decoder's path say: on how many of ``frames`` its detections differ
    from the family's reference decoder's on the same outputs (``differing``), how many it returned over
    them all (``returned``), where some differ what differed on the first of them (``first_difference``), and
    the misreading that reproduces them on every frame (``reproduction``), where it is the only known one that
    does; where several do, none is named and ``rivals`` are they (nothing these frames show separates them)."""

    frames: int
    differing: int
    returned: int
    reproduction: Reproduction | None
    first_difference: str = ""
    rivals: tuple[Reproduction, ...] = ()

    @property
    def unreproduced(self) -> str:
        """That no known misreading alone reproduces it (none does, or several do alike, each named), with the
        first differing frame's evidence."""
        if self.rivals:
            each = "; ".join(f"{r.name}: {r.words}" for r in self.rivals)
            said = (
                f"{len(self.rivals)} known misreadings reproduce it alike on every frame ({each}), and nothing these "
                f"frames show separates them: none is named over the others"
            )
        else:
            said = NOT_REPRODUCED
        return f"{said}; {self.first_difference}" if self.first_difference else said


def reproduce_path(
    frames: Sequence[DecodedFrame], specs: Mapping[str, OutputSpec], config: DecodeConfig, family: HeadFamily
) -> PathReproduction | None:
    """``frames`` of a path whose decoder was given outputs of ``specs`` and ``config``, held to
    ``family``'s reference decoder: where it differs on one of them, what differed on the first such frame
    and the misreading that reproduces it on all, where no other known one does (:func:`reproductions`, tried on
    the differing frames first; several that reproduce it alike are its ``rivals``, none named). None where the
    outputs are not ``family``'s heads (its layout refuses them: there is no reference decoding to reproduce)."""
    try:
        layout = head_layout(family, specs, config.input_hw, family_anchors(family, config))
    except HarnessError:
        return None
    decode = family_scenes(family).reference_decoder()
    references = [decode(frame.outputs, specs, config) for frame in frames]
    differs = [i for i, (frame, ref) in enumerate(zip(frames, references, strict=True)) if not matches(frame.got, ref)]
    found: list[Reproduction] = []
    if differs:
        # the frames that differ refute most candidates at once; those that agree refute a misreading that
        # would have changed them
        agree = [i for i in range(len(frames)) if i not in set(differs)]
        ordered = [frames[i] for i in (*differs, *agree)]
        found = list(reproductions(ordered, specs, config, family, layout))
    returned = sum(len(frame.got) for frame in frames)
    first = ""
    if differs:
        i = differs[0]
        first = f"on frame {i + 1} of {len(frames)}: {difference(frames[i].got, references[i])}"
    alone = found[0] if len(found) == 1 else None
    rivals = tuple(found) if len(found) > 1 else ()
    return PathReproduction(len(frames), len(differs), returned, alone, first, rivals)
