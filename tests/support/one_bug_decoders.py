"""Held-out decoders, one mistake each, written apart from the harness's decoders (their own reading of the
maps, DFL, anchor points, grids and box coding; the NMS or the top-k is the harness's, never the mistake), one
or more per head family. The conformance suite must catch each and name it by reproducing it.

:data:`HELD_OUT` is their table: (decoder, head family, bbox-only, the name of the misreading that reproduces
it, the words the first failure names it with)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.conformance import decoder_misreadings as later
from harness.conformance import misreadings, words
from harness.conformance import suite as conformance
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatType
from harness.decode.nms import nms_hailort
from harness.families.yolo26.one2one.decode import top_k
from harness.formats.quant import dequantize

from support import wrong_decoders


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _read(raw, spec, dequantized=True):
    """One output as (H, W, C) float64, dequantized through its quant info (or its codes taken as they are)."""
    a = np.asarray(raw).reshape(spec.shape)
    if spec.quant and dequantized:
        return dequantize(a, spec.quant).astype(np.float64)
    return a.astype(np.float64)


def _probabilities(x):
    """A user's test: values outside [0, 1] are logits."""
    return _sigmoid(x) if x.min() < 0 or x.max() > 1 else x


# ------------------------------------------------------------------------ box and class maps (YOLOv8, YOLO26, YOLOv10)


def _distance_heads(outputs, specs, config, box_channels, bug=None):
    """Every anchor's box (xyxy) and class scores of box maps of ``box_channels`` (4 x reg_max DFL bins, or the 4
    distances) and class maps, paired by grid; ``bug`` the one mistake."""
    in_h, in_w = config.input_hw
    box_names = [n for n in specs if specs[n].shape[2] == box_channels]
    all_boxes, all_scores = [], []
    for box in sorted(box_names, key=lambda n: -specs[n].shape[0]):
        h, w, _ = specs[box].shape
        (cls,) = [n for n in specs if n != box and specs[n].shape[:2] == (h, w)]
        raw = _read(outputs[box], specs[box], dequantized=bug != "codes as values").reshape(h * w, 4, -1)
        if raw.shape[2] == 1:
            sides = raw[:, :, 0]
        else:
            e = np.exp(raw - raw.max(axis=2, keepdims=True))
            sides = (e / e.sum(axis=2, keepdims=True)) @ np.arange(raw.shape[2])
        if bug == "top and left first":
            sides = sides[:, [1, 0, 3, 2]]  # read as top, left, bottom, right
        sx, sy = in_w / w, in_h / h
        row, col = np.divmod(np.arange(h * w), w)
        offset = 0.0 if bug == "anchor points at the corners" else 0.5
        cx, cy = (col + offset) * sx, (row + offset) * sy
        all_boxes.append(
            np.stack([cx - sides[:, 0] * sx, cy - sides[:, 1] * sy, cx + sides[:, 2] * sx, cy + sides[:, 3] * sy], 1)
        )
        classes = _read(outputs[cls], specs[cls], dequantized=bug != "codes as values").reshape(h * w, -1)
        all_scores.append(classes if bug == "logits as probabilities" else _probabilities(classes))
    boxes = np.ascontiguousarray(np.concatenate(all_boxes), dtype=np.float32)
    return boxes, np.ascontiguousarray(np.concatenate(all_scores), dtype=np.float32)


def _written_y_first(d):
    return Detections(d.boxes[:, [1, 0, 3, 2]], d.scores, d.class_ids)


def yolov8_anchor_points_at_the_corners(outputs, specs, config):
    """YOLOv8: each anchor point at its cell's corner (col, row) x stride, not its centre."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 64, "anchor points at the corners"), config)


def yolov8_codes_as_values(outputs, specs, config):
    """YOLOv8: a quantized output's codes taken for its values (no quant info)."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 64, "codes as values"), config)


def yolov8_sides_top_left_first(outputs, specs, config):
    """YOLOv8: each box's 4 x 16 DFL bins read as top, left, bottom, right."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 64, "top and left first"), config)


def yolo26_one2one_boxes_written_y_first(outputs, specs, config):
    """YOLO26's one-to-one head: the top-k's boxes returned y first (y_min, x_min, y_max, x_max)."""
    boxes, scores = _distance_heads(outputs, specs, config, 4)
    return _written_y_first(top_k(boxes, scores, len(boxes), config))


def yolo26_one2many_anchor_points_at_the_corners(outputs, specs, config):
    """YOLO26's one-to-many head: each anchor point at its cell's corner."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 4, "anchor points at the corners"), config)


def yolov10_logits_as_probabilities(outputs, specs, config):
    """YOLOv10: the class logits taken for probabilities (no sigmoid), then its top-k."""
    boxes, scores = _distance_heads(outputs, specs, config, 64, "logits as probabilities")
    return top_k(boxes, scores, len(boxes), config)


def yolov10_anchor_points_at_the_corners(outputs, specs, config):
    """YOLOv10: each anchor point at its cell's corner, then its top-k."""
    boxes, scores = _distance_heads(outputs, specs, config, 64, "anchor points at the corners")
    return top_k(boxes, scores, len(boxes), config)


# ------------------------------------------------------------------------ YOLOv5/YOLOv7 (anchored maps)


def _yolov5(outputs, specs, config, bug=None):
    """Per anchored map (finest grid first, with its group of config.anchors): per anchor tx, ty, tw, th,
    objectness, classes; centre (2 t - 0.5 + cell) x stride, size (2 t) ** 2 x anchor; score objectness x class."""
    in_h, in_w = config.input_hw
    boxes, scores = [], []
    for name, group in zip(sorted(specs, key=lambda n: -specs[n].shape[0]), config.anchors, strict=True):
        h, w, c = specs[name].shape
        na = len(group)
        e = _read(outputs[name], specs[name])
        e = (e if bug == "logits as probabilities" else _probabilities(e)).reshape(h, w, na, c // na)
        t = e[..., [1, 0, 3, 2]] if bug == "ty tx th tw" else e[..., :4]
        row, col = np.mgrid[0:h, 0:w]
        cell = np.stack([col, row], -1)[:, :, None, :]
        centre = (2 * t[..., :2] - 0.5 + cell) * (in_w / w, in_h / h)
        size = (2 * t[..., 2:4]) ** 2 * np.asarray(group, np.float64)
        boxes.append(np.concatenate([centre - size / 2, centre + size / 2], -1).reshape(-1, 4))
        scores.append((e[..., 5:] * e[..., 4:5]).reshape(-1, c // na - 5))
    return nms_hailort(
        np.ascontiguousarray(np.concatenate(boxes), dtype=np.float32),
        np.ascontiguousarray(np.concatenate(scores), dtype=np.float32),
        config,
    )


def yolov5_box_entries_y_first(outputs, specs, config):
    """YOLOv5: each anchor's box entries read ty, tx, th, tw."""
    return _yolov5(outputs, specs, config, "ty tx th tw")


def yolov5_logits_as_probabilities(outputs, specs, config):
    """YOLOv5: the maps' logits taken for probabilities (no sigmoid)."""
    return _yolov5(outputs, specs, config, "logits as probabilities")


# ------------------------------------------------------------------------ YOLOX (box, objectness, class maps)


def _yolox(outputs, specs, config, bug=None):
    """Per grid the map of 4 channels is the box (tx, ty, tw, th), of 1 the objectness, the other the classes;
    centre (t + cell) x stride, size exp(t) x stride; score objectness x class."""
    in_h, in_w = config.input_hw
    channels = {n: specs[n].shape[2] for n in specs}
    box_names = [n for n in specs if channels[n] == 4]
    others = {"obj": [n for n in specs if channels[n] == 1], "cls": [n for n in specs if channels[n] not in (1, 4)]}
    boxes, scores = [], []
    for k, box in enumerate(box_names):
        h, w, _ = specs[box].shape
        if bug == "paired by order":  # the k-th maps of each role, read on the box map's grid
            obj, cls = (_read_on_grid(outputs[others[r][k]], specs[others[r][k]], (h, w)) for r in ("obj", "cls"))
        else:
            obj, cls = (
                _read(outputs[n], specs[n]) for r in ("obj", "cls") for n in others[r] if specs[n].shape[:2] == (h, w)
            )
        t = _read(outputs[box], specs[box])
        if bug == "ty tx th tw":
            t = t[..., [1, 0, 3, 2]]
        row, col = np.mgrid[0:h, 0:w]
        stride = np.array([in_w / w, in_h / h])
        centre = (t[..., :2] + np.stack([col, row], -1)) * stride
        size = np.exp(t[..., 2:4]) * stride
        boxes.append(np.concatenate([centre - size / 2, centre + size / 2], -1).reshape(-1, 4))
        scores.append((_probabilities(cls) * _probabilities(obj)).reshape(h * w, -1))
    return nms_hailort(
        np.ascontiguousarray(np.concatenate(boxes), dtype=np.float32),
        np.ascontiguousarray(np.concatenate(scores), dtype=np.float32),
        config,
    )


def _read_on_grid(raw, spec, grid):
    """A map's buffer read on another grid: its first H x W x C values, from its start again past its end."""
    return np.resize(_read(raw, spec).reshape(-1), (*grid, spec.shape[2]))


def yolox_box_channels_y_first(outputs, specs, config):
    """YOLOX: each cell's box channels read ty, tx, th, tw."""
    return _yolox(outputs, specs, config, "ty tx th tw")


def yolox_maps_paired_by_order(outputs, specs, config):
    """YOLOX: the k-th objectness and class maps (in the outputs' order) taken with the k-th box map, their
    buffers read on its grid."""
    return _yolox(outputs, specs, config, "paired by order")


# ------------------------------------------------------------------------ SSD and bbox-only buffers


def ssd_boxes_written_y_first(outputs, specs, config):
    """SSD: the hand-written decoder's boxes returned y first."""
    return _written_y_first(wrong_decoders.ssd_by_hand(outputs, specs, config))


def ssd_codes_as_values(outputs, specs, config):
    """SSD: a quantized output's codes taken for its values (no quant info)."""
    floats = {n: _read(outputs[n], s, dequantized=False).astype(np.float32) for n, s in specs.items()}
    plain = {n: replace(s, format_type=FormatType.FLOAT32, quant=()) for n, s in specs.items()}
    return wrong_decoders.ssd_by_hand(floats, plain, config)


def bbox_only_scaled_height_width(outputs, specs, config):
    """A bbox-only buffer's normalised boxes scaled by the input's (height, width): x by the height."""
    h, w = config.input_hw
    return wrong_decoders.bbox_only_by_hand(outputs, specs, replace(config, input_hw=(w, h)))


def bbox_only_class_values_sigmoided(outputs, specs, config):
    """A YOLOv8 bbox-only buffer's class values put through a sigmoid (they are probabilities)."""
    (name,) = specs
    rows = np.array(outputs[name], np.float32)
    rows[..., 4:] = _sigmoid(rows[..., 4:])
    return wrong_decoders.bbox_only_by_hand({name: rows}, specs, config)


Y8, V5, X, SSD = HeadFamily.YOLOV8, HeadFamily.YOLOV5, HeadFamily.YOLOX, HeadFamily.SSD
O2O, O2M, V10 = HeadFamily.YOLO26_ONE2ONE, HeadFamily.YOLO26_ONE2MANY, HeadFamily.YOLOV10

# (decoder, family, bbox-only, the misreading's name (None: a bbox-only buffer's, named by words alone), words)
HELD_OUT = [
    (yolov8_anchor_points_at_the_corners, Y8, False, words.CENTRES_HALF_CELL_UP_LEFT, later.HALF_CELL_UP_LEFT),
    (yolov8_codes_as_values, Y8, False, words.QUANT_INFO_LEFT_OUT, misreadings.CODES_AS_VALUES),
    (yolov8_sides_top_left_first, Y8, False, words.BOX_CHANNELS_READ_Y_FIRST, misreadings.BOX_Y_FIRST),
    (yolo26_one2one_boxes_written_y_first, O2O, False, words.BOXES_WRITTEN_Y_FIRST, later.Y_FIRST),
    (
        yolo26_one2many_anchor_points_at_the_corners,
        O2M,
        False,
        words.CENTRES_HALF_CELL_UP_LEFT,
        later.HALF_CELL_UP_LEFT,
    ),
    (yolov10_logits_as_probabilities, V10, False, words.CLASSES_TAKEN_AS_PROBABILITIES, later.NO_SIGMOID),
    (yolov10_anchor_points_at_the_corners, V10, False, words.CENTRES_HALF_CELL_UP_LEFT, later.HALF_CELL_UP_LEFT),
    (yolov5_box_entries_y_first, V5, False, words.BOX_CHANNELS_READ_Y_FIRST, misreadings.BOX_Y_FIRST),
    (yolov5_logits_as_probabilities, V5, False, words.CLASSES_TAKEN_AS_PROBABILITIES, later.NO_SIGMOID),
    (yolox_box_channels_y_first, X, False, words.BOX_CHANNELS_READ_Y_FIRST, misreadings.BOX_Y_FIRST),
    (yolox_maps_paired_by_order, X, False, words.HEADS_PAIRED_BY_OUTPUT_ORDER, later.PAIRED_BY_ORDER),
    (ssd_boxes_written_y_first, SSD, False, words.BOXES_WRITTEN_Y_FIRST, later.Y_FIRST),
    (ssd_codes_as_values, SSD, False, words.QUANT_INFO_LEFT_OUT, misreadings.CODES_AS_VALUES),
    (bbox_only_scaled_height_width, Y8, True, None, conformance.BBOX_SCALED_HEIGHT_WIDTH),
    (bbox_only_class_values_sigmoided, Y8, True, None, conformance.BBOX_SIGMOID),
]
