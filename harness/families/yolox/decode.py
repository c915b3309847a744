"""The YOLOX head family's decoding (anchor-free, with objectness): its layout and its decoder.

Each stride has three maps on one grid, told apart by their channels alone: a box map of 4 (``tx, ty,
tw, th``), an objectness map of 1 and a class map of ``nc``. A cell's box is

    centre = (t_xy + cell) * stride,    size = exp(t_wh) * stride

(no sigmoid on the box map), a (cell, class) scores ``objectness x class``, and a cell whose objectness is
below the threshold yields nothing. Then the NMS of ``config.mode``. The objectness and class maps hold
probabilities where the HEF compiled the sigmoid in, logits in an ONNX export cut at its convolutions.

hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp (``extract_detections``: per stride the
``reg``, ``obj`` and ``cls`` layers of one grid, row by row and column by column; a cell whose objectness
is ``< nms_score_th`` is skipped; score = class x objectness, kept at ``>= nms_score_th``; every value only
dequantized, no sigmoid) and yolox_post_process.cpp (``decode``: ``exp(tw) / W``, ``(tx + col) / W``, boxes
normalised by the grid). Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py (``forward``: ``cat([reg,
obj.sigmoid(), cls.sigmoid()])``; ``decode_outputs``: ``(xy + grid) * stride``, ``exp(wh) * stride``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.errors import HeadPairingError
from harness.core.head_family import HeadRole
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.layout import Anchors, HeadLayout, HeadOutput, Level, layout_of, maps_by_grid
from harness.decode.maps import classes_are_probabilities, host_array, sigmoid, to_float
from harness.decode.nms import at_least, nms

BOX_CHANNELS = 4  # tx, ty, tw, th (hailort: yolox_post_process.hpp, X_INDEX .. H_INDEX, reg_entry_size 4)
OBJECTNESS_CHANNELS = 1  # hailort: yolox_post_process.hpp, obj_entry_size 1


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors = ()) -> HeadLayout:
    """The YOLOX head layout: per grid a box map of 4 channels, an objectness map of 1 and a class map of
    nc, told apart by their channel counts, never by name or order; stride ascending. Anchor-free:
    ``anchors`` are not read.

    With nc = 1 the objectness and class maps both have one channel and cannot be told apart; they need
    not be: a score is their product, and a product of two probabilities reaches the threshold only where
    each factor does, so HailoRT's op keeps the same detections whichever it reads as the objectness. The
    first of the two in ``specs`` is taken for it. With nc = 4 the class map cannot be told from the box
    map, and the outputs are refused. Raises :class:`~harness.core.errors.HeadPairingError` otherwise. A
    decoder asks once per frame: the layouts of recent specs are kept."""
    return _laid_out(tuple(specs.items()), tuple(input_hw))


def anchors(config: DecodeConfig) -> Anchors:
    """The anchors the head decodes against: none (anchor-free)."""
    return ()


def export_rows(rows: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, np.ndarray]:
    """An export's own decoded head output, one frame ``(rows, 5 + nc)`` (xywh, objectness, classes:
    Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py, ``decode_outputs``) -> boxes ``(rows, 4)`` xyxy in
    model-input pixels and scores ``objectness x class`` ``(rows, nc)``."""
    rows = rows.astype(np.float32, copy=False)
    return xywh_to_xyxy(rows[:, :4]), rows[:, 5:] * rows[:, 4:5]


def _describe(specs: list[OutputSpec]) -> str:
    return ", ".join(f"{s.name!r} {s.shape}" for s in specs)


@functools.lru_cache(maxsize=64)
def _laid_out(specs: tuple[tuple[str, OutputSpec], ...], input_hw: tuple[int, int]) -> HeadLayout:
    grids = maps_by_grid(specs)
    outputs = []
    for (h, w), found in grids.items():
        boxes = [s for s in found if s.channels == BOX_CHANNELS]
        ones = [s for s in found if s.channels == OBJECTNESS_CHANNELS]
        if len(found) == 3 and len(boxes) == 2 and len(ones) == 1:
            raise HeadPairingError(
                f"grid {h}x{w}: outputs {_describe(found)}: two maps of 4 channels, so the box map and a class map "
                f"of nc = 4 cannot be told apart by their channels; nc == 4 is not supported"
            )
        if len(found) != 3 or len(boxes) != 1 or not ones:
            raise HeadPairingError(
                f"grid {h}x{w}: found {len(found)} output(s) ({_describe(found)}); expected exactly 3: a box map "
                f"of 4 channels, an objectness map of 1 and a class map of nc"
            )
        (box,), objectness = boxes, ones[0]
        (classes,) = (s for s in found if s is not box and s is not objectness)
        outputs += [
            HeadOutput.of_spec(box, HeadRole.BOX),
            HeadOutput.of_spec(objectness, HeadRole.OBJECTNESS),
            HeadOutput.of_spec(classes, HeadRole.CLASS),
        ]
    return layout_of(outputs, input_hw)


@functools.lru_cache(maxsize=16)
def _cell_offsets(rows: int, columns: int) -> np.ndarray:
    """Per cell, row-major, its ``(column, row)`` float32; read-only (cached)."""
    row, col = np.divmod(np.arange(rows * columns), columns)
    table = np.stack([col, row], axis=1).astype(np.float32)
    table.flags.writeable = False
    return table


def _holds_probabilities(array: np.ndarray, spec: OutputSpec) -> bool:
    """:func:`~harness.decode.maps.classes_are_probabilities` of one score map as it came (``(cells, C)``):
    a quantized map judged by its limvals, else by the dequantized lowest and highest code of each channel
    (dequantization is monotonic in the code, so those hold the map's extremes), never dequantized whole."""
    if spec.is_quantized and len(array):
        array = to_float(np.stack([array.min(axis=0), array.max(axis=0)]), spec)
    return classes_are_probabilities(spec, array)


def _objectness(level: Level) -> OutputSpec:
    if level.objectness is None:
        raise HeadPairingError(
            f"stride {level.stride}: outputs {level.box.name!r} and {level.classes.name!r} but no objectness map; "
            f"expected a YOLOX head: a box map of 4 channels, an objectness map of 1 and a class map of nc per grid"
        )
    return level.objectness.host_spec


def candidates(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig, floor: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The cells of one frame laid out as ``heads``: boxes float32 ``(N, 4)`` xyxy in model-input pixels and
    scores ``objectness x class`` float32 ``(N, nc)``; stride ascending, then row-major (HailoRT's order).
    With ``floor``, only the cells whose objectness is ``>= floor`` (as HailoRT compares a float32 with its
    double threshold): the others can yield no detection, and their box and class values are never read.

    The objectness and class maps hold probabilities where ``config.classes_are_probabilities`` says so,
    else where every one of them does (quant limvals, or values in [0, 1]); otherwise logits, sigmoided."""
    specs = [(level.box.host_spec, _objectness(level), level.classes.host_spec) for level in heads.levels]
    maps = [tuple(host_array(outputs, spec) for spec in level) for level in specs]
    probabilities = config.classes_are_probabilities
    if probabilities is None:
        probabilities = all(
            _holds_probabilities(array, spec)
            for level_specs, level_maps in zip(specs, maps, strict=True)
            for array, spec in zip(level_maps[1:], level_specs[1:], strict=True)
        )
    all_boxes, all_scores = [], []
    for level, (box_spec, objectness_spec, class_spec), (box_map, objectness_map, class_map) in zip(
        heads.levels, specs, maps, strict=True
    ):
        objectness = to_float(objectness_map, objectness_spec)[:, 0]
        if not probabilities:
            objectness = sigmoid(objectness)
        keep = slice(None) if floor is None else np.flatnonzero(at_least(objectness, floor))
        t = to_float(box_map[keep], box_spec)
        scores = to_float(class_map[keep], class_spec)
        if not probabilities:
            scores = sigmoid(scores)
        stride = np.float32(level.stride)
        centre = (t[:, 0:2] + _cell_offsets(*level.grid)[keep]) * stride
        with np.errstate(over="ignore"):
            size = np.exp(t[:, 2:4]) * stride
        corner = centre - size / np.float32(2)
        all_boxes.append(np.concatenate([corner, corner + size], axis=1))
        all_scores.append(scores * objectness[keep][:, None])
    boxes = np.concatenate(all_boxes).astype(np.float32, copy=False)
    return boxes, np.ascontiguousarray(np.concatenate(all_scores), dtype=np.float32)


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """Decode one frame of raw YOLOX head outputs into detections (the harness's decoder signature,
    :func:`harness.families.yolov8.decode.decode`): the cells whose objectness reaches the score threshold, then the
    NMS of ``config.mode``; it equals the NMS of every cell's :func:`candidates`."""
    heads = layout(specs, config.input_hw)
    boxes, scores = candidates(outputs, heads, config, floor=config.score_threshold)
    return nms(boxes, scores, config)
