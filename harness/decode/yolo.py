"""The YOLOv8/YOLO11 head family: its layout and its decoder.

Each stride has a box head of ``4 * reg_max`` channels (DFL bins, sides in the order left, top,
right, bottom) and a class head of ``nc`` channels, both on the same grid
(:mod:`harness.decode.layout`: paired by grid size and channel count alone).

hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp and .cpp (``get_bbox``,
``decode``); ultralytics: ultralytics/nn/modules/head.py (``Detect``), ultralytics/nn/modules/block.py
(``DFL``), ultralytics/utils/tal.py (``make_anchors``, ``dist2bbox``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import SpecError
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatType, OutputSpec
from harness.decode.layout import DEFAULT_BOX_CHANNELS as DEFAULT_BOX_CHANNELS
from harness.decode.layout import HeadLayout, Level, pair_by_grid
from harness.decode.nms import anchors_reaching, nms
from harness.formats.quant import dequantize

# Margin below the score threshold for the cheap pre-selection of anchors in :func:`decode`; the
# exact candidate rule is applied afterwards by the NMS, so the margin only has to exceed rounding.
_PRESELECT_MARGIN = 1e-6

_FLOAT32_ONE_BITS = 0x3F800000  # 1.0f
_FLOAT32_MINUS_ZERO_BITS = 0x80000000  # -0.0f


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int]) -> HeadLayout:
    """The YOLOv8/YOLO11 head layout: box maps of 4 x reg_max DFL bins and class maps, paired by grid
    and channels (:func:`~harness.decode.layout.pair_by_grid`)."""
    return pair_by_grid(specs, input_hw)


def pair_heads(
    specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], box_channels: int | None = None
) -> tuple[Level, ...]:
    """The levels of :func:`~harness.decode.layout.pair_by_grid`, stride ascending: for host decoders
    that walk the heads stride by stride."""
    return pair_by_grid(specs, input_hw, box_channels).levels


def classes_are_probabilities(spec: OutputSpec, values: np.ndarray) -> bool:
    """Whether a class output already holds probabilities (sigmoid compiled in) rather than logits.

    Quantized outputs are judged by their quant limvals (hailort: include/hailo/quantization.hpp):
    a sigmoid-compiled class conv has limvals inside ``[0, 1]``. Without usable limvals (float
    outputs, or an empty range) the dequantized ``values`` decide: all in ``[0, 1]`` means
    probabilities. ``DecodeConfig.classes_are_probabilities`` overrides both.
    """
    quant = [q for q in spec.quant if q.limvals_max > q.limvals_min]
    if spec.is_quantized and quant and len(quant) == len(spec.quant):
        return all(0.0 <= q.limvals_min and q.limvals_max <= 1.0 for q in quant)
    values = np.asarray(values)
    if values.size == 0:
        return True
    if values.dtype == np.float32:
        # One pass over the bit patterns, read as unsigned integers (IEEE 754 binary32): 0.0 .. 1.0 are
        # 0 .. 0x3F800000; a negative value other than -0.0 (0x80000000) lies above 0x80000000. Only
        # what lies between (above 1, infinities, NaN, -0.0) needs the float comparisons.
        top = int(values.view(np.uint32).max())
        if top <= _FLOAT32_ONE_BITS or top > _FLOAT32_MINUS_ZERO_BITS:
            return top <= _FLOAT32_ONE_BITS
    return bool(values.min() >= 0 and values.max() <= 1)


def _host_array(outputs: Mapping[str, np.ndarray], spec: OutputSpec) -> np.ndarray:
    """One output's frame as (H*W, C), checked against its spec; float32 or the quantized dtype."""
    if spec.name not in outputs:
        raise SpecError(f"output {spec.name!r}: missing from the outputs given ({sorted(outputs)})")
    array = np.asarray(outputs[spec.name])
    if array.ndim == 4 and array.shape[0] == 1:
        array = array[0]
    if array.shape != spec.shape:
        raise SpecError(
            f"output {spec.name!r}: array shape {np.shape(outputs[spec.name])} does not match the spec; "
            f"expected {spec.shape} or {(1, *spec.shape)}"
        )
    if spec.format_type is FormatType.FLOAT32:
        if array.dtype.kind != "f":
            raise SpecError(
                f"output {spec.name!r}: format type FLOAT32 but array dtype {array.dtype}; expected float32"
            )
        array = array.astype(np.float32, copy=False)
    elif spec.is_quantized:
        if array.dtype != np.dtype(spec.format_type.numpy_dtype):
            raise SpecError(
                f"output {spec.name!r}: format type {spec.format_type.name} but array dtype {array.dtype}; "
                f"expected {spec.format_type.numpy_dtype}"
            )
        if not spec.quant or (len(spec.quant) == 1 and spec.quant[0].is_zero):
            raise SpecError(
                f"output {spec.name!r}: quantized ({spec.format_type.name}) with quant infos {spec.quant}; "
                f"expected one non-zero per-tensor quant info or one per channel"
            )
    else:
        raise SpecError(f"output {spec.name!r}: format type {spec.format_type.name}; expected FLOAT32, UINT8 or UINT16")
    return array.reshape(-1, spec.channels)


def _to_float(array: np.ndarray, spec: OutputSpec) -> np.ndarray:
    return dequantize(array, spec.quant) if spec.is_quantized else array


def _class_value_floor(probability: float, probabilities: bool) -> float:
    """The class value (probability, or logit) below which no score reaches ``probability``."""
    if probabilities:
        return probability
    if probability <= 0:
        return -math.inf
    if probability >= 1:
        return math.inf
    return math.log(probability) - math.log1p(-probability)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32, copy=False)


@dataclass(frozen=True)
class _Heads:
    """The heads of one frame: raw box maps and class values (dequantized) per stride, ``(cells, C)``."""

    levels: tuple[Level, ...]
    box_maps: tuple[np.ndarray, ...]
    box_specs: tuple[OutputSpec, ...]
    class_maps: tuple[np.ndarray, ...]
    probabilities: bool


def _read_heads(outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig) -> _Heads:
    class_specs = [level.classes.host_spec for level in heads.levels]
    class_values = [_to_float(_host_array(outputs, s), s) for s in class_specs]
    probabilities = config.classes_are_probabilities
    if probabilities is None:
        verdicts = {s.name: classes_are_probabilities(s, v) for s, v in zip(class_specs, class_values, strict=True)}
        if len(set(verdicts.values())) != 1:
            found = ", ".join(f"{name!r}: {'probabilities' if p else 'logits'}" for name, p in verdicts.items())
            raise SpecError(
                f"class outputs disagree on whether they hold probabilities or logits ({found}); "
                f"expected all alike, or set DecodeConfig.classes_are_probabilities"
            )
        probabilities = next(iter(verdicts.values()))
    box_specs = tuple(level.box.host_spec for level in heads.levels)
    return _Heads(
        levels=heads.levels,
        box_maps=tuple(_host_array(outputs, s) for s in box_specs),
        box_specs=box_specs,
        class_maps=tuple(class_values),
        probabilities=probabilities,
    )


def _dfl_boxes(
    box_values: np.ndarray, cells: np.ndarray, reg_max: int, stride: np.ndarray, grid_width: np.ndarray
) -> np.ndarray:
    """DFL (softmax over each side's bins, then the integral; with one bin, as YOLO26 has, the value
    itself) and anchor centres at half cells; ``stride`` (float32) and ``grid_width`` per cell."""
    bins = box_values.reshape(len(cells), 4, reg_max)
    if reg_max == 1:
        distance = bins[:, :, 0]
    else:
        # each side's largest bin, taken over a copy with the bins first (numpy's max along a short last
        # axis costs a call per side); the same values, so the same softmax
        peak = np.ascontiguousarray(np.moveaxis(bins, 2, 0)).max(axis=0)
        e = np.exp(bins - peak[:, :, None])
        distance = (e * np.arange(reg_max, dtype=np.float32)).sum(axis=2) / e.sum(axis=2)
    row, col = np.divmod(cells, grid_width)
    cx = (col.astype(np.float32) + np.float32(0.5)) * stride
    cy = (row.astype(np.float32) + np.float32(0.5)) * stride
    d = distance * stride[:, None]
    return np.stack([cx - d[:, 0], cy - d[:, 1], cx + d[:, 2], cy + d[:, 3]], axis=1)


def _decode_cells(heads: _Heads, cells: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and class probabilities of the given cells of each stride (sorted), in anchor order: one DFL
    over them all (every level has one reg_max)."""
    counts = [len(mine) for mine in cells]
    levels = zip(heads.box_maps, heads.box_specs, cells, strict=True)
    box_values = np.concatenate([_to_float(box_map[mine], spec) for box_map, spec, mine in levels])
    stride = np.repeat(np.array([level.stride for level in heads.levels], dtype=np.float32), counts)
    grid_width = np.repeat([level.grid[1] for level in heads.levels], counts)
    boxes = _dfl_boxes(box_values, np.concatenate(cells), heads.levels[0].reg_max, stride, grid_width)
    values = np.concatenate([class_map[mine] for class_map, mine in zip(heads.class_maps, cells, strict=True)])
    scores = values if heads.probabilities else _sigmoid(values)
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
    return _decode_cells(read, [np.arange(level.cells) for level in read.levels])


def passing(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidates` of only the anchors with a class value that can pass the score threshold
    (the rest can yield no detection): their boxes and class probabilities, in anchor order."""
    read = _read_heads(outputs, heads, config)
    floor = _class_value_floor(config.score_threshold - _PRESELECT_MARGIN, read.probabilities)
    return _decode_cells(read, [anchors_reaching(class_map, floor) for class_map in read.class_maps])


def decode_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    box_channels: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidates` of the outputs paired by :func:`~harness.decode.layout.pair_by_grid`
    (with ``box_channels``)."""
    return candidates(outputs, pair_by_grid(specs, config.input_hw, box_channels), config)


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """Decode one frame of raw YOLOv8/YOLO11 head outputs into detections.

    This is the decoder signature of the harness; a user's own decoder must follow it::

        decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec],
               config: DecodeConfig) -> Detections

    - ``outputs``: one frame, ``{output name: host array}`` as the backend returns it; channel-last
      ``(H, W, C)`` or ``(1, H, W, C)``, FLOAT32 or quantized UINT8/UINT16.
    - ``specs``: ``{output name: OutputSpec}`` for the same outputs (shape, format, quant infos).
    - ``config``: input size, thresholds, limits and NMS mode; part of every result.
    - returns :class:`~harness.core.detections.Detections` with boxes in model-input pixels (xyxy),
      scores in ``[0, 1]`` and class ids ``0 .. nc-1``.

    Heads are laid out by :func:`layout`; class logits get a sigmoid unless the outputs hold
    probabilities (:func:`classes_are_probabilities`, or ``config.classes_are_probabilities``); NMS
    follows ``config.mode`` (:func:`~harness.decode.nms.nms`) over :func:`passing`'s anchors; the
    result equals the NMS of :func:`candidates`.
    """
    boxes, scores = passing(outputs, layout(specs, config.input_hw), config)
    return nms(boxes, scores, config)
