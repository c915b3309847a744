"""Misreadings past a single output's memory, reproduced where they happen in the output path: the heads paired
by the outputs' order (each head's buffer read on the grid of the head it was paired with), the class values
taken for probabilities (no sigmoid), a box centre computed half a cell off (the anchor points or the grid
offset of the family's box coding), and the detections' boxes written y first.

Each is a :class:`DecoderMisreading`: the family's reference decoding with that one step made otherwise, for
a frame laid out as a given layout (the reference decoder on what the mistaken step hands on, or the family's
own candidates (:meth:`~harness.decode.heads.FamilyDecode.candidates`) moved at the step, then the family's
selection). The family-free ones are :data:`DECODER_MISREADINGS`; a family's ``scenes`` part gives its own
box-coding ones (``coordinate_misreadings``), made with :func:`half_cells`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from harness.conformance.words import (
    ANCHOR_GROUPS_BY_OUTPUT_ORDER,
    BOXES_WRITTEN_Y_FIRST,
    CENTRES_HALF_CELL_DOWN_RIGHT,
    CENTRES_HALF_CELL_UP_LEFT,
    CLASSES_TAKEN_AS_PROBABILITIES,
    HEADS_PAIRED_BY_OUTPUT_ORDER,
)
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.heads import family_decode
from harness.decode.layout import HeadLayout
from harness.decode.nms import nms
from harness.families import descriptor

Decoder = Callable[[Mapping[str, np.ndarray], Mapping[str, OutputSpec], DecodeConfig], Detections]
Selection = Callable[[np.ndarray, np.ndarray, int, DecodeConfig], Detections]

# hailort: hailort/include/hailo/hailort.h (``hailo_bbox_float32_t``: y_min, x_min, y_max, x_max)
Y_FIRST = (
    "the detections' boxes written y first (y_min, x_min, y_max, x_max: HailoRT's NMS record order; "
    "detections are x first)"
)
PAIRED_BY_ORDER = (
    "the heads paired by the outputs' order (the k-th head of each role with the k-th box head, not by grid and "
    "channels), each head's buffer read on the grid of the box head it was paired with"
)
ANCHORS_BY_OUTPUT_ORDER = (
    "the anchor groups given to the maps in the outputs' order (config.anchors is stride ascending: they go by grid)"
)
NO_SIGMOID = "the class values taken for probabilities (they are logits: the sigmoid left out)"
HALF_CELL_UP_LEFT = (
    "every box centre half a cell (stride / 2) up and left of the family's: its anchor points or grid taken at "
    "the cells' corners where the family's box coding puts them half a cell further"
)
HALF_CELL_DOWN_RIGHT = (
    "every box centre half a cell (stride / 2) down and right of the family's: a half cell added to its anchor "
    "points or grid (YOLOX's cell corners, YOLOv5's centre without its -0.5)"
)


@dataclass(frozen=True)
class DecoderMisreading:
    """A mistake at a step of the output path past one output's memory: ``decoder`` is, for ``family``'s heads
    laid out as a layout, the family's reference decoding with that step made otherwise (None where the step is
    not the family's or the layout's); ``name`` is how a diagnosis names it."""

    name: str
    words: str
    decoder: Callable[[HeadFamily, HeadLayout, Decoder], Decoder | None]


def _y_first(family: HeadFamily, layout: HeadLayout, reference: Decoder) -> Decoder:
    def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        d = reference(outputs, specs, config)
        return Detections(d.boxes[:, [1, 0, 3, 2]], d.scores, d.class_ids)

    return decode


def _no_sigmoid(family: HeadFamily, layout: HeadLayout, reference: Decoder) -> Decoder:
    """The family's decoding with its logits taken for probabilities: an end-to-end head's top-k of them;
    else the NMS over every entry's candidates (an objectness that is a logit no longer bounds a score: two
    negative logits make a high product, so no entry is left out before the NMS)."""
    candidates = family_decode(family).candidates

    def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        taken = replace(config, classes_are_probabilities=True)
        if descriptor(family).end_to_end:
            return reference(outputs, specs, taken)
        return nms(*candidates(outputs, layout, taken), taken)

    return decode


def read_on_grid(buffer: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """A head's buffer read on another ``grid``, its channels kept: its first ``H x W x C`` values (a smaller
    buffer read again from its start, as a decoder reading past its end would find other memory there)."""
    a = np.asarray(buffer)
    return np.resize(a.reshape(-1), (*grid, a.shape[-1])).astype(a.dtype, copy=False)


def _one_map_per_stride(layout: HeadLayout) -> bool:
    return all(len(level.outputs) == 1 for level in layout.levels)


def _anchors_by_order(family: HeadFamily, layout: HeadLayout, reference: Decoder) -> Decoder | None:
    """An anchored layout of one map per stride: the k-th map in the outputs' order (the order of the specs a
    frame is decoded with) decoded with the k-th anchor group."""
    if len(layout.levels) < 2 or not _one_map_per_stride(layout) or not layout.levels[0].anchors:
        return None
    level_of = {level.box.name: level for level in layout.levels}

    def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        maps = [name for name in specs if name in level_of]
        groups = {level_of[name].stride: layout.levels[k].anchors for k, name in enumerate(maps)}
        return reference(outputs, specs, replace(config, anchors=tuple(groups[lv.stride] for lv in layout.levels)))

    return decode


def _paired_by_order(family: HeadFamily, layout: HeadLayout, reference: Decoder) -> Decoder | None:
    """Every head of a role paired with the box head of the same rank in the outputs' order (the order of the
    specs a frame is decoded with), its buffer read on that box head's grid."""
    if len(layout.levels) < 2 or _one_map_per_stride(layout):
        return None
    box_role = layout.levels[0].box.role
    role_of = {o.name: o.role for o in layout.outputs}

    def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
        boxes = [name for name in specs if role_of.get(name) is box_role]
        seen, seen_specs = dict(outputs), dict(specs)
        for role in {o.role for o in layout.outputs} - {box_role}:
            of_role = [name for name in specs if role_of.get(name) is role]
            for box, name in zip(boxes, of_role, strict=True):
                grid = specs[box].grid
                seen[name] = read_on_grid(outputs[name], grid)
                seen_specs[name] = replace(specs[name], shape=(*grid, specs[name].shape[2]))
        return reference(seen, seen_specs, config)

    return decode


def nms_selection(boxes: np.ndarray, scores: np.ndarray, cells: int, config: DecodeConfig) -> Detections:
    """The selection of a family decoded by an NMS: the NMS of ``config.mode``."""
    return nms(boxes, scores, config)


def _candidate_strides(layout: HeadLayout, input_hw: tuple[int, int]) -> np.ndarray:
    """Per candidate of a family's ``candidates`` (levels in layout order, then row-major, then anchor), its
    stride ``(x, y)`` in input pixels, float32 ``(N, 2)``."""
    in_h, in_w = input_hw
    per_level = []
    for level in layout.levels:
        rows, columns = level.grid
        count = rows * columns * max(1, len(level.anchors))
        per_level.append(np.tile(np.array([in_w / columns, in_h / rows], np.float32), (count, 1)))
    return np.concatenate(per_level)


def shifted_centres(sign: float, select: Selection) -> Callable[[HeadFamily, HeadLayout, Decoder], Decoder]:
    """The family's decoding with every candidate box moved by ``sign`` x half its stride on both axes (its
    centre computed off by half a cell), then ``select``."""

    def make(family: HeadFamily, layout: HeadLayout, reference: Decoder) -> Decoder:
        candidates = family_decode(family).candidates

        def decode(
            outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
        ) -> Detections:
            boxes, scores = candidates(outputs, layout, config)
            half = np.tile(_candidate_strides(layout, config.input_hw) * np.float32(sign / 2), 2)
            return select((boxes + half).astype(np.float32), scores, len(boxes), config)

        return decode

    return make


def half_cells(select: Selection = nms_selection) -> tuple[DecoderMisreading, ...]:
    """A family's centres half a cell off either way, then its ``select``."""
    return (
        DecoderMisreading(CENTRES_HALF_CELL_UP_LEFT, HALF_CELL_UP_LEFT, shifted_centres(-1.0, select)),
        DecoderMisreading(CENTRES_HALF_CELL_DOWN_RIGHT, HALF_CELL_DOWN_RIGHT, shifted_centres(1.0, select)),
    )


# The family-free ones, in the order they are tried (after a family's own config misreadings).
DECODER_MISREADINGS = (
    DecoderMisreading(CLASSES_TAKEN_AS_PROBABILITIES, NO_SIGMOID, _no_sigmoid),
    DecoderMisreading(HEADS_PAIRED_BY_OUTPUT_ORDER, PAIRED_BY_ORDER, _paired_by_order),
    DecoderMisreading(ANCHOR_GROUPS_BY_OUTPUT_ORDER, ANCHORS_BY_OUTPUT_ORDER, _anchors_by_order),
    DecoderMisreading(BOXES_WRITTEN_Y_FIRST, Y_FIRST, _y_first),
)
