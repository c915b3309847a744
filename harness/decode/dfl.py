"""Box maps of DFL bins and class maps, per stride on one grid, decoded on the host: every anchor's box and
class probabilities (YOLOv8/YOLO11: reg_max 16; YOLO26: reg_max 1, the distances themselves).

Each stride has a box map of ``4 * reg_max`` channels (DFL bins, sides in the order left, top, right,
bottom) and a class map of ``nc`` channels, both on the same grid (:mod:`harness.decode.layout`: paired by
grid size and channel count alone).

hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp and .cpp (``get_bbox``,
``decode``); ultralytics: ultralytics/nn/modules/head.py (``Detect``), ultralytics/nn/modules/block.py
(``DFL``), ultralytics/utils/tal.py (``make_anchors``, ``dist2bbox``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.core.errors import SpecError
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.layout import HeadLayout, Level, pair_by_grid
from harness.decode.maps import (
    FLOAT32_ONE_BITS,
    classes_are_probabilities,
    host_array,
    limvals_verdict,
    sigmoid,
    to_float,
)
from harness.decode.nms import rows_holding
from harness.formats.quant import lowest_codes_reaching

# Margin below the score threshold for the cheap pre-selection of anchors in :func:`passing`; the
# exact candidate rule is applied afterwards by the NMS, so the margin only has to exceed rounding.
_PRESELECT_MARGIN = 1e-6


def pair_heads(
    specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], box_channels: int | None = None
) -> tuple[Level, ...]:
    """The levels of :func:`~harness.decode.layout.pair_by_grid`, stride ascending: for host decoders
    that walk the heads stride by stride."""
    return pair_by_grid(specs, input_hw, box_channels).levels


def _class_value_floor(probability: float, probabilities: bool) -> float:
    """The class value (probability, or logit) below which no score reaches ``probability``."""
    if probabilities:
        return probability
    if probability <= 0:
        return -math.inf
    if probability >= 1:
        return math.inf
    return math.log(probability) - math.log1p(-probability)


@dataclass(frozen=True)
class _Heads:
    """The heads of one frame: box and class maps per stride as they came, ``(cells, C)``, where each
    stride's anchors start in anchor order, and whether the class maps hold probabilities (None: not
    decided yet)."""

    levels: tuple[Level, ...]
    starts: tuple[int, ...]
    box_maps: tuple[np.ndarray, ...]
    box_specs: tuple[OutputSpec, ...]
    class_maps: tuple[np.ndarray, ...]
    class_specs: tuple[OutputSpec, ...]
    probabilities: bool | None

    @property
    def anchors(self) -> int:
        return self.starts[-1] + self.levels[-1].cells


def _read_heads(outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig) -> _Heads:
    class_specs = tuple(level.classes.host_spec for level in heads.levels)
    box_specs = tuple(level.box.host_spec for level in heads.levels)
    return _Heads(
        levels=heads.levels,
        starts=tuple(itertools.accumulate((level.cells for level in heads.levels[:-1]), initial=0)),
        box_maps=tuple(host_array(outputs, s) for s in box_specs),
        box_specs=box_specs,
        class_maps=tuple(host_array(outputs, s) for s in class_specs),
        class_specs=class_specs,
        probabilities=config.classes_are_probabilities,
    )


def _agreed(heads: _Heads, verdicts: Sequence[bool]) -> bool:
    """The class outputs' one verdict on holding probabilities, or a SpecError naming where they differ."""
    if len(set(verdicts)) != 1:
        found = ", ".join(
            f"{s.name!r}: {'probabilities' if p else 'logits'}"
            for s, p in zip(heads.class_specs, verdicts, strict=True)
        )
        raise SpecError(
            f"class outputs disagree on whether they hold probabilities or logits ({found}); "
            f"expected all alike, or set DecodeConfig.classes_are_probabilities"
        )
    return verdicts[0]


def _in_unit_bits(values: np.ndarray) -> bool:
    """Whether every value of a float32 array lies in [0, 1] by its bit pattern (IEEE 754 binary32, read
    as an unsigned integer: 0.0 .. 1.0 are 0 .. 0x3F800000; above 1, infinities, NaN and every negative,
    -0.0 included, lie above). False for -0.0, which the float comparisons take for 0."""
    return not values.size or int(values.view(np.uint32).max()) <= FLOAT32_ONE_BITS


def _verdict(class_map: np.ndarray, spec: OutputSpec) -> bool:
    """:func:`classes_are_probabilities` of one class map as it came: a float map's first cell holding a
    value outside [0, 1] (logits: most are negative) settles it without a pass over the map; a quantized
    map's limvals settle it without dequantizing it."""
    if class_map.dtype == np.float32 and len(class_map):
        first = class_map[0]
        if not (first.min() >= 0 and first.max() <= 1):
            return False
    by_limvals = limvals_verdict(spec)
    return by_limvals if by_limvals is not None else classes_are_probabilities(spec, to_float(class_map, spec))


def _reach(class_map: np.ndarray, spec: OutputSpec, floor: np.float32, out: np.ndarray) -> None:
    """``out = class value >= floor`` per cell and class, on the map as it came: a quantized map by its
    codes (:func:`~harness.formats.quant.lowest_codes_reaching`), never dequantized."""
    if not spec.is_quantized:
        np.greater_equal(class_map, floor, out=out)
        return
    codes = lowest_codes_reaching(spec.quant, float(floor), class_map.dtype, spec.channels)
    if codes is None:
        np.greater_equal(to_float(class_map, spec), floor, out=out)
    elif (codes > np.iinfo(class_map.dtype).max).any():  # a code past the dtype: compared in a wider type
        np.greater_equal(class_map, codes, out=out)
    else:
        np.greater_equal(class_map, codes.astype(class_map.dtype), out=out)


@dataclass(frozen=True)
class _Cells:
    """The anchors (sorted) whose class values are read, each stride's among them (``cells``: its own
    cell indices), and their class values, dequantized, in anchor order."""

    anchors: np.ndarray
    cells: tuple[np.ndarray, ...]
    values: np.ndarray


def _cells_of(heads: _Heads, anchors: np.ndarray) -> _Cells:
    ends = np.searchsorted(anchors, [*heads.starts[1:], heads.anchors]).tolist()
    cells = tuple(
        anchors[begin:end] - start for begin, end, start in zip([0, *ends[:-1]], ends, heads.starts, strict=True)
    )
    values = np.concatenate(
        [
            to_float(class_map[mine], spec)
            for class_map, spec, mine in zip(heads.class_maps, heads.class_specs, cells, strict=True)
        ]
    )
    return _Cells(anchors, cells, values)


def _reaching(heads: _Heads, floor: float, probability_bits: bool) -> _Cells:
    """The anchors with a class value ``>= floor`` (float32 compare), every stride's in one mask: compared
    as bit patterns where ``probability_bits`` (float32 maps, ``floor`` a probability above 0: there the
    order of the patterns is that of the values, and every value outside [0, 1] reaches too)."""
    mask = np.empty((heads.anchors, heads.levels[0].classes.channels), dtype=bool)
    f = np.float32(floor)
    for class_map, spec, start in zip(heads.class_maps, heads.class_specs, heads.starts, strict=True):
        out = mask[start : start + len(class_map)]
        if probability_bits:
            np.greater_equal(class_map.view(np.uint32), f.view(np.uint32), out=out)
        else:
            _reach(class_map, spec, f, out)
    return _cells_of(heads, rows_holding(mask))


def _passing_cells(heads: _Heads, threshold: float) -> tuple[_Cells, bool]:
    """The anchors with a class value that can reach ``threshold``, and whether the class maps hold
    probabilities (decided as :func:`classes_are_probabilities` decides).

    Float32 maps are first read as probabilities, by their bit patterns (:func:`_reaching`): if every value
    of the anchors found lies in [0, 1], so does every value of the maps, and the one pass both decided
    and found them. Only where it does not are the maps judged apart (:func:`_verdict`) and read again."""
    floor = threshold - _PRESELECT_MARGIN
    probabilities = heads.probabilities
    if probabilities is None:
        if 0 < np.float32(floor) and all(m.dtype == np.float32 and _in_unit_bits(m[:1]) for m in heads.class_maps):
            found = _reaching(heads, floor, probability_bits=True)
            if _in_unit_bits(found.values):
                return found, True
        probabilities = _agreed(
            heads, [_verdict(m, s) for m, s in zip(heads.class_maps, heads.class_specs, strict=True)]
        )
    return _reaching(heads, _class_value_floor(floor, probabilities), probability_bits=False), probabilities


@functools.lru_cache(maxsize=16)
def _anchor_points(geometry: tuple[tuple[int, int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per anchor of the levels ``(stride, rows, columns)``, in anchor order: its centre at half cells
    ``(cx, cy, cx, cy)``, and its stride signed as each box side goes from it ``(-s, -s, s, s)``; float32,
    read-only (cached). ``cx + d * -s`` is ``cx - d * s`` to the bit."""
    centres, signed = [], []
    for stride, rows, columns in geometry:
        row, col = np.divmod(np.arange(rows * columns), columns)
        s = np.float32(stride)
        cx = (col.astype(np.float32) + np.float32(0.5)) * s
        cy = (row.astype(np.float32) + np.float32(0.5)) * s
        centres.append(np.stack([cx, cy, cx, cy], axis=1))
        signed.append(np.tile(np.array([-s, -s, s, s], dtype=np.float32), (rows * columns, 1)))
    tables = np.concatenate(centres), np.concatenate(signed)
    for table in tables:
        table.flags.writeable = False
    return tables


def _side_distances(box_values: np.ndarray, reg_max: int) -> np.ndarray:
    """DFL: each side's distance in strides ``(n, 4)``, the softmax over its bins, then the integral; with
    one bin (YOLO26) the value itself.

    The bins are laid out first ``(reg_max, n, 4)``, so that each side's largest bin, the exponentials and
    the two sums are operations across cells, not reductions over 16 values per cell and side. The sums
    add in numpy's pairwise order (numpy: numpy/_core/src/umath/loops_utils.h.src, ``pairwise_sum``: for
    8 to 128 values, eight running sums over strides of 8, then added as a tree), so they are the sums
    numpy's ``.sum`` over the bins of each side gives, to the bit; other bin counts take numpy's own."""
    n = len(box_values)
    if reg_max == 1:
        return box_values.reshape(n, 4)
    bins = np.ascontiguousarray(box_values.reshape(n, 4, reg_max).transpose(2, 0, 1))
    both = np.empty((reg_max, 2, n, 4), dtype=np.float32)  # the weighted and the plain exponentials
    np.exp(bins - bins.max(axis=0), out=both[:, 1])
    np.multiply(both[:, 1], np.arange(reg_max, dtype=np.float32)[:, None, None], out=both[:, 0])
    if reg_max % 8 or reg_max > 128:
        sums = np.ascontiguousarray(np.moveaxis(both, 0, -1)).sum(axis=-1)
    else:
        r = both[:8].copy()
        for start in range(8, reg_max, 8):
            r += both[start : start + 8]
        r = r[0::2] + r[1::2]  # (r0 + r1), (r2 + r3), (r4 + r5), (r6 + r7)
        r = r[0::2] + r[1::2]
        sums = r[0] + r[1]
    return sums[0] / sums[1]


def _decode_cells(heads: _Heads, found: _Cells, probabilities: bool) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and class probabilities of the anchors ``found``, in anchor order: one DFL over every stride's
    (every level has one reg_max); only their box values are dequantized."""
    box_values = np.concatenate(
        [
            to_float(box_map[mine], spec)
            for box_map, spec, mine in zip(heads.box_maps, heads.box_specs, found.cells, strict=True)
        ]
    )
    centres, signed_strides = _anchor_points(tuple((level.stride, *level.grid) for level in heads.levels))
    distance = _side_distances(box_values, heads.levels[0].reg_max)
    boxes = centres[found.anchors] + distance * signed_strides[found.anchors]
    scores = found.values if probabilities else sigmoid(found.values)
    return boxes.astype(np.float32, copy=False), scores


def candidates(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig
) -> tuple[np.ndarray, np.ndarray]:
    """All anchors of one frame laid out as ``heads``, before any threshold.

    Returns boxes float32 ``(A, 4)`` xyxy in model-input pixels and class probabilities float32
    ``(A, nc)``; anchors stride ascending, then row-major, which is the anchor order of the full
    Ultralytics head output ``[1, 4 + nc, A]``. Arrays are host-side channel-last ``(H, W, C)`` or
    ``(1, H, W, C)``, FLOAT32, or UINT8/UINT16 dequantized with the spec's quant infos.
    """
    read = _read_heads(outputs, heads, config)
    probabilities = read.probabilities
    if probabilities is None:
        probabilities = _agreed(read, [_verdict(m, s) for m, s in zip(read.class_maps, read.class_specs, strict=True)])
    return _decode_cells(read, _cells_of(read, np.arange(read.anchors)), probabilities)


def passing(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidates` of only the anchors with a class value that can pass the score threshold
    (the rest can yield no detection): their boxes and class probabilities, in anchor order. The class
    maps are read as they came (quantized codes, float bit patterns) to find those anchors; only theirs
    are dequantized, soft-maxed and sigmoided."""
    read = _read_heads(outputs, heads, config)
    found, probabilities = _passing_cells(read, config.score_threshold)
    return _decode_cells(read, found, probabilities)


def decode_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    box_channels: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidates` of the outputs paired by :func:`~harness.decode.layout.pair_by_grid`
    (with ``box_channels``)."""
    return candidates(outputs, pair_by_grid(specs, config.input_hw, box_channels), config)
