"""Decoding the six raw head outputs of a YOLOv8/YOLO11 detector (box and class conv per stride).

Each stride has a box head of ``4 * reg_max`` channels (DFL bins, sides in the order left, top,
right, bottom) and a class head of ``nc`` channels, both on the same grid. They are paired by grid
size and channel count alone: output names and list order differ between exports and compilers.

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
from harness.core.errors import HeadPairingError, SpecError
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatOrder, FormatType, OutputSpec
from harness.decode.nms import nms
from harness.formats.quant import dequantize

# The Ultralytics default (YOLOv8/YOLO11 ``Detect(reg_max=16)``): 4 x 16 = 64 box channels. It
# settles which head is which when both channel counts are multiples of 4 (e.g. nc = 80).
DEFAULT_BOX_CHANNELS = 64

# Margin below the score threshold for the cheap pre-selection of anchors in :func:`decode`; the
# exact candidate rule is applied afterwards by the NMS, so the margin only has to exceed rounding.
_PRESELECT_MARGIN = 1e-6


@dataclass(frozen=True)
class HeadPair:
    """The box and class head of one stride."""

    stride: int
    grid: tuple[int, int]
    box_name: str
    class_name: str
    reg_max: int


def _describe(specs: list[OutputSpec]) -> str:
    return ", ".join(f"{s.name!r} {s.shape}" for s in specs)


def _could_be_box(channels: int) -> bool:
    return channels % 4 == 0 and channels >= 8


def _box_and_class(
    grid_specs: list[OutputSpec], grid: tuple[int, int], box_channels: int | None
) -> tuple[OutputSpec, OutputSpec]:
    a, b = grid_specs
    if a.channels == b.channels:
        raise HeadPairingError(
            f"grid {grid[0]}x{grid[1]}: outputs {_describe(grid_specs)} have the same channel count, so box head "
            f"(4 * reg_max channels) and class head (nc channels) are ambiguous; nc == 4 * reg_max is not supported"
        )
    if box_channels is not None:  # a head without DFL (YOLO26: 4 distances)
        plausible = [s for s in (a, b) if s.channels == box_channels]
        expected = f"exactly one with {box_channels} channels"
    else:
        plausible = [s for s in (a, b) if _could_be_box(s.channels)]
        if len(plausible) == 2:
            plausible = [s for s in plausible if s.channels == DEFAULT_BOX_CHANNELS]
        expected = f"exactly one with 4 * reg_max channels (a multiple of 4, or {DEFAULT_BOX_CHANNELS} when both are)"
    if len(plausible) != 1:
        raise HeadPairingError(
            f"grid {grid[0]}x{grid[1]}: cannot tell the box head from the class head among {_describe(grid_specs)}: "
            f"expected {expected}"
        )
    box = plausible[0]
    return box, (b if box is a else a)


def pair_heads(
    specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], box_channels: int | None = None
) -> tuple[HeadPair, ...]:
    """Pair box and class heads by grid size and channel count, never by name or order.

    Every output must be a channel-last ``(H, W, C)`` map; each grid must hold exactly two of
    them; ``input_hw`` divided by the grid must give one integral stride. Within a grid the box
    head is the one whose channel count is a multiple of 4 (``4 * reg_max``); when both are, the
    one with 64 channels (reg_max 16); with ``box_channels`` (4 for YOLO26, reg_max 1) the one with
    exactly that many. All box heads share one reg_max and all class heads one nc.
    Raises :class:`~harness.core.errors.HeadPairingError` otherwise. Result: stride ascending.
    """
    if not specs:
        raise HeadPairingError("no outputs given: expected a box head and a class head per stride")
    grids: dict[tuple[int, int], list[OutputSpec]] = {}
    for name, spec in specs.items():
        if name != spec.name:
            raise SpecError(
                f"specs[{name!r}] is the spec of output {spec.name!r}; expected each key to be its output's name"
            )
        if spec.is_nms or len(spec.shape) != 3 or min(spec.shape) < 1 or spec.format_order is FormatOrder.NCHW:
            raise HeadPairingError(
                f"output {name!r}: shape {spec.shape}, order {spec.format_order.name} is not a raw head map; "
                f"expected a channel-last (H, W, C) output"
            )
        grids.setdefault(spec.grid, []).append(spec)
    in_h, in_w = input_hw
    pairs = []
    for grid, grid_specs in grids.items():
        if len(grid_specs) != 2:
            raise HeadPairingError(
                f"grid {grid[0]}x{grid[1]}: found {len(grid_specs)} output(s) ({_describe(grid_specs)}); "
                f"expected exactly 2, a box head and a class head"
            )
        h, w = grid
        if in_h % h or in_w % w or in_h // h != in_w // w:
            raise HeadPairingError(
                f"grid {h}x{w} ({_describe(grid_specs)}): input {in_h}x{in_w} does not give one integral stride "
                f"(height / grid = {in_h / h:g}, width / grid = {in_w / w:g})"
            )
        box, cls = _box_and_class(grid_specs, grid, box_channels)
        pairs.append(HeadPair(in_h // h, grid, box.name, cls.name, box.channels // 4))
    pairs.sort(key=lambda p: p.stride)
    for field, channels in (
        ("box heads (4 * reg_max)", [specs[p.box_name].channels for p in pairs]),
        ("class heads (nc)", [specs[p.class_name].channels for p in pairs]),
    ):
        if len(set(channels)) != 1:
            found = ", ".join(f"stride {p.stride}: {c}" for p, c in zip(pairs, channels, strict=True))
            raise HeadPairingError(f"{field} have different channel counts ({found}); expected one for all strides")
    return tuple(pairs)


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
    return bool(values.size == 0 or (values.min() >= 0 and values.max() <= 1))


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
    """The paired heads of one frame: raw box maps per stride and all class values, dequantized."""

    pairs: tuple[HeadPair, ...]
    box_maps: tuple[np.ndarray, ...]
    box_specs: tuple[OutputSpec, ...]
    class_values: np.ndarray
    probabilities: bool

    @property
    def level_starts(self) -> np.ndarray:
        return np.cumsum([0] + [p.grid[0] * p.grid[1] for p in self.pairs])


def _read_heads(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    box_channels: int | None = None,
) -> _Heads:
    pairs = pair_heads(specs, config.input_hw, box_channels)
    class_specs = [specs[p.class_name] for p in pairs]
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
    box_specs = tuple(specs[p.box_name] for p in pairs)
    return _Heads(
        pairs=pairs,
        box_maps=tuple(_host_array(outputs, s) for s in box_specs),
        box_specs=box_specs,
        class_values=np.concatenate(class_values),
        probabilities=probabilities,
    )


def _dfl_boxes(box_values: np.ndarray, cells: np.ndarray, pair: HeadPair) -> np.ndarray:
    """DFL (softmax over each side's bins, then the integral; with one bin, as YOLO26 has, the value
    itself) and anchor centres at half cells."""
    bins = box_values.reshape(len(cells), 4, pair.reg_max)
    if pair.reg_max == 1:
        distance = bins[:, :, 0]
    else:
        e = np.exp(bins - bins.max(axis=2, keepdims=True))
        distance = (e * np.arange(pair.reg_max, dtype=np.float32)).sum(axis=2) / e.sum(axis=2)
    stride = np.float32(pair.stride)
    row, col = np.divmod(cells, pair.grid[1])
    cx = (col.astype(np.float32) + np.float32(0.5)) * stride
    cy = (row.astype(np.float32) + np.float32(0.5)) * stride
    d = distance * stride
    return np.stack([cx - d[:, 0], cy - d[:, 1], cx + d[:, 2], cy + d[:, 3]], axis=1)


def _decode_anchors(heads: _Heads, anchors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and class probabilities of the given anchors (sorted global anchor indices)."""
    starts = heads.level_starts
    cuts = np.searchsorted(anchors, starts)
    boxes = []
    for level, (pair, box_map, spec) in enumerate(zip(heads.pairs, heads.box_maps, heads.box_specs, strict=True)):
        cells = anchors[cuts[level] : cuts[level + 1]] - starts[level]
        boxes.append(_dfl_boxes(_to_float(box_map[cells], spec), cells, pair))
    values = heads.class_values[anchors]
    scores = values if heads.probabilities else _sigmoid(values)
    return np.concatenate(boxes).astype(np.float32, copy=False), scores


def decode_candidates(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    box_channels: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """All anchors of one frame, before any threshold.

    Returns boxes float32 ``(A, 4)`` xyxy in model-input pixels and class probabilities float32
    ``(A, nc)``; anchors stride ascending, then row-major, which is the anchor order of the full
    Ultralytics head output ``[1, 4 + nc, A]``. Arrays are host-side channel-last ``(H, W, C)`` or
    ``(1, H, W, C)``, FLOAT32, or UINT8/UINT16 dequantized with the spec's quant infos.
    ``box_channels``: see :func:`pair_heads`.
    """
    heads = _read_heads(outputs, specs, config, box_channels)
    return _decode_anchors(heads, np.arange(len(heads.class_values)))


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

    Heads are paired with :func:`pair_heads`; class logits get a sigmoid unless the outputs hold
    probabilities (:func:`classes_are_probabilities`, or ``config.classes_are_probabilities``); NMS
    follows ``config.mode`` (:func:`~harness.decode.nms.nms`) over :func:`decode_passing`'s anchors; the result
    equals the NMS of :func:`decode_candidates`.
    """
    boxes, scores = decode_passing(outputs, specs, config)
    return nms(boxes, scores, config)


def decode_passing(
    outputs: Mapping[str, np.ndarray],
    specs: Mapping[str, OutputSpec],
    config: DecodeConfig,
    box_channels: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode_candidates` of only the anchors with a class value that can pass the score
    threshold (the rest can yield no detection): their boxes and class probabilities, in anchor order."""
    heads = _read_heads(outputs, specs, config, box_channels)
    floor = _class_value_floor(config.score_threshold - _PRESELECT_MARGIN, heads.probabilities)
    hits = np.flatnonzero(heads.class_values >= floor) // heads.class_values.shape[1]
    anchors = hits[np.concatenate([[True], hits[1:] != hits[:-1]])] if hits.size else hits
    return _decode_anchors(heads, anchors)
