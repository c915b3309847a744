"""The YOLOv5/YOLOv7 head family's decoding (anchor-based): its layout and its decoder.

Each stride has one map of ``na x (5 + nc)`` channels, anchor-major: per anchor the box offsets
``tx, ty, tw, th``, the objectness, then the ``nc`` class scores, all sigmoided (the HEF compiles the
sigmoid into the last convolutions; an ONNX export cut at those convolutions holds logits). A box is

    centre = (2 * t_xy - 0.5 + cell) * stride,    size = (2 * t_wh) ** 2 * anchor

and a (cell, anchor, class) scores ``objectness x class``; a cell's anchor whose objectness is below the
threshold yields nothing. Then the NMS of ``config.mode``.

hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp (``extract_detections``: the entry
``row * W * C + col + (anchor * (5 + nc) + k) * W`` of the NHCW frame, objectness first;
``decode_classes_scores``: score = class x objectness, kept at ``>= nms_score_th``) and
yolov5_post_process.cpp (``decode``: boxes normalised by the grid and the image, anchors in pixels;
``should_sigmoid`` is false: the op reads probabilities). ultralytics/yolov5: models/yolo.py
(``Detect.forward``: ``xy = (xy * 2 + grid) * stride`` with the grid at ``cell - 0.5``,
``wh = (wh * 2) ** 2 * anchor_grid``), utils/general.py (``non_max_suppression``: ``conf = obj * cls``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections, xywh_to_xyxy
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.layout import Anchors, HeadLayout, anchored_by_grid
from harness.decode.maps import classes_are_probabilities, host_array, sigmoid, to_float
from harness.decode.nms import at_least, nms

# The box and objectness channels that lead each anchor's entry (hailort: yolov5_post_process.hpp,
# X_INDEX .. OBJECTNESS_INDEX, CLASSES_START_INDEX = 5).
ENTRY_HEAD = 5
OBJECTNESS = 4

# YOLOv5's default anchors, (width, height) in input pixels per stride 8, 16, 32
# (ultralytics/yolov5: models/yolov5s.yaml, ``anchors``); the Hailo Model Zoo's YOLOv5 configs use them.
DEFAULT_ANCHORS: Anchors = (
    ((10, 13), (16, 30), (33, 23)),
    ((30, 61), (62, 45), (59, 119)),
    ((116, 90), (156, 198), (373, 326)),
)


def layout(specs: Mapping[str, OutputSpec], input_hw: tuple[int, int], anchors: Anchors) -> HeadLayout:
    """The YOLOv5 head layout: one anchored map per stride, its anchors ``anchors`` (stride ascending)."""
    return anchored_by_grid(specs, input_hw, anchors)


def anchors(config: DecodeConfig) -> Anchors:
    """The anchors the head decodes against: ``config.anchors``, per stride ascending, in input pixels."""
    return config.anchors


def export_rows(rows: np.ndarray, config: DecodeConfig) -> tuple[np.ndarray, np.ndarray]:
    """An export's own decoded head output, one frame ``(rows, 5 + nc)`` (xywh, objectness, classes:
    ultralytics/yolov5: models/yolo.py) -> boxes ``(rows, 4)`` xyxy in model-input pixels and scores
    ``objectness x class`` ``(rows, nc)`` (ultralytics/yolov5: utils/general.py, ``non_max_suppression``:
    ``conf = obj * cls``)."""
    rows = rows.astype(np.float32, copy=False)
    return xywh_to_xyxy(rows[:, :4]), rows[:, 5:] * rows[:, 4:5]


@functools.lru_cache(maxsize=16)
def _cell_offsets(rows: int, columns: int, na: int) -> np.ndarray:
    """Per (cell, anchor), cell-major, its cell's ``(column, row)`` float32; read-only (cached)."""
    row, col = np.divmod(np.arange(rows * columns), columns)
    table = np.repeat(np.stack([col, row], axis=1).astype(np.float32), na, axis=0)
    table.flags.writeable = False
    return table


def _probabilities(values: np.ndarray, spec: OutputSpec, config: DecodeConfig) -> bool:
    if config.classes_are_probabilities is not None:
        return config.classes_are_probabilities
    return classes_are_probabilities(spec, values)


def candidates(
    outputs: Mapping[str, np.ndarray], heads: HeadLayout, config: DecodeConfig, floor: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The (cell, anchor) entries of one frame laid out as ``heads``: boxes float32 ``(N, 4)`` xyxy in
    model-input pixels and scores ``objectness x class`` float32 ``(N, nc)``; stride ascending, then
    row-major, then anchor. With ``floor``, only the entries whose objectness is ``>= floor`` (as HailoRT
    compares a float32 with its double threshold): the others can yield no detection."""
    in_h, in_w = config.input_hw
    all_boxes, all_scores = [], []
    for level in heads.levels:
        spec = level.box.host_spec
        values = to_float(host_array(outputs, spec), spec)
        if not _probabilities(values, spec, config):
            values = sigmoid(values)
        na = len(level.anchors)
        entries = values.reshape(-1, spec.channels // na)  # (cells * na, 5 + nc), cell-major
        keep = slice(None) if floor is None else np.flatnonzero(at_least(entries[:, OBJECTNESS], floor))
        chosen = entries[keep]
        anchor = np.tile(np.asarray(level.anchors, dtype=np.float32), (level.cells, 1))[keep]
        cell = _cell_offsets(*level.grid, na)[keep]
        stride_xy = np.array([in_w / level.grid[1], in_h / level.grid[0]], dtype=np.float32)
        two = np.float32(2)
        centre = (chosen[:, 0:2] * two - np.float32(0.5) + cell) * stride_xy
        size = np.square(chosen[:, 2:4] * two) * anchor
        corner = centre - size / two
        all_boxes.append(np.concatenate([corner, corner + size], axis=1))
        all_scores.append(chosen[:, ENTRY_HEAD:] * chosen[:, OBJECTNESS : OBJECTNESS + 1])
    boxes = np.concatenate(all_boxes).astype(np.float32, copy=False)
    return boxes, np.ascontiguousarray(np.concatenate(all_scores), dtype=np.float32)


def bbox_only_proposals(
    raw: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> tuple[np.ndarray, np.ndarray]:
    """What HailoRT's bbox-only op writes of each proposal of one frame of raw heads: its box xyxy in
    model-input pixels, then its objectness and class values, dequantized as :func:`candidates` reads them
    and not multiplied. The proposals come per anchored map in the order of its name, as HailoRT's
    ``execute`` walks its ``std::map`` of inputs (byte order), each map's cells row-major, then anchors.
    The anchors are ``config.anchors``."""
    heads = layout(specs, config.input_hw, anchors(config))
    boxes, _ = candidates(raw, heads, config)
    levels = heads.levels
    fields = []  # per map, (cells x anchors, objectness + classes), dequantized as candidates reads them
    for level in levels:
        spec = level.box.host_spec
        entries = to_float(host_array(raw, spec), spec).reshape(level.cells * len(level.anchors), -1)
        fields.append(entries[:, OBJECTNESS:])
    box_blocks = np.split(boxes, np.cumsum([len(f) for f in fields])[:-1])
    by_name = sorted(range(len(levels)), key=lambda i: levels[i].box.name.encode())
    return np.concatenate([box_blocks[i] for i in by_name]), np.concatenate([fields[i] for i in by_name])


def decode(outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig) -> Detections:
    """Decode one frame of raw YOLOv5/YOLOv7 head outputs into detections (the harness's decoder
    signature, :func:`harness.families.yolov8.decode.decode`); the anchors are ``config.anchors``. The
    entries whose objectness reaches the score threshold, then the NMS of ``config.mode``: it equals the NMS
    of every entry's :func:`candidates`."""
    heads = layout(specs, config.input_hw, anchors(config))
    boxes, scores = candidates(outputs, heads, config, floor=config.score_threshold)
    return nms(boxes, scores, config)
