"""Held-out decoders, one mistake each, written apart from the harness's decoders (their own reading of the
maps, DFL, anchor points, grids and box coding; the NMS or the top-k is the harness's, never the mistake), one
or more per head family. The conformance suite must catch each, and name it by reproducing it where it knows
the misreading (else say that none of the known misreadings reproduces it).

:data:`HELD_OUT` is their table: (decoder, head family, bbox-only, the name of the misreading that reproduces
it, the words the first failure names it with); :data:`WITHOUT_A_MISTAKE` the same readers without one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.conformance import decoder_misreadings as later
from harness.conformance import misreadings, words
from harness.conformance import suite as conformance
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatOrder, FormatType
from harness.decode.nms import nms_hailort
from harness.families.ssd import scenes as ssd_scenes
from harness.families.yolo26.one2one.decode import top_k
from harness.families.yolox import scenes as yolox_scenes
from harness.formats.quant import dequantize

from support import wrong_decoders


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _read(raw, spec, dequantized=True, bug=None):
    """One output as (H, W, C) float64, dequantized through its quant info (or its codes taken as they are);
    ``bug`` a mistake in reading its memory: an FCR output read (C, H, W), a 16-bit one's bytes taken for codes."""
    h, w, c = spec.shape
    if bug == "FCR channel-first" and spec.format_order is FormatOrder.FCR:
        a = np.asarray(raw).reshape(c, h, w).transpose(1, 2, 0)
    elif bug == "16-bit as 8-bit" and np.asarray(raw).dtype == np.uint16:
        a = np.frombuffer(np.ascontiguousarray(raw).tobytes(), np.uint8)[: h * w * c].reshape(h, w, c)
    else:
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
        raw = _read(outputs[box], specs[box], bug != "codes as values", bug).reshape(h * w, 4, -1)
        if bug == "bins interleaved":  # bin b of side s taken from channel b x 4 + s
            raw = raw.reshape(h * w, -1, 4).transpose(0, 2, 1)
        if raw.shape[2] == 1:
            sides = raw[:, :, 0]
        else:
            e = np.exp(raw - raw.max(axis=2, keepdims=True))
            sides = (e / e.sum(axis=2, keepdims=True)) @ np.arange(raw.shape[2])
        if bug == "top and left first":
            sides = sides[:, [1, 0, 3, 2]]  # read as top, left, bottom, right
        sx, sy = (in_h / w, in_w / h) if bug == "input as (width, height)" else (in_w / w, in_h / h)
        row, col = np.divmod(np.arange(h * w), w)
        offset = 0.0 if bug == "anchor points at the corners" else 0.5
        cx, cy = (col + offset) * sx, (row + offset) * sy
        all_boxes.append(
            np.stack([cx - sides[:, 0] * sx, cy - sides[:, 1] * sy, cx + sides[:, 2] * sx, cy + sides[:, 3] * sy], 1)
        )
        classes = _read(outputs[cls], specs[cls], bug != "codes as values", bug).reshape(h * w, -1)
        if bug == "logits as probabilities":
            all_scores.append(classes)
        else:
            all_scores.append(_sigmoid(classes) if bug == "a sigmoid always" else _probabilities(classes))
    boxes = np.ascontiguousarray(np.concatenate(all_boxes), dtype=np.float32)
    return boxes, np.ascontiguousarray(np.concatenate(all_scores), dtype=np.float32)


def _selected(boxes, scores, config):
    """HailoRT's NMS over the levels' boxes and scores, concatenated."""
    return nms_hailort(
        np.ascontiguousarray(np.concatenate(boxes), dtype=np.float32),
        np.ascontiguousarray(np.concatenate(scores), dtype=np.float32),
        config,
    )


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


def yolov8_dfl_bins_interleaved(outputs, specs, config):
    """YOLOv8: each box's 4 x 16 DFL bins read bin-major (bin b of side s at channel b x 4 + s)."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 64, "bins interleaved"), config)


def yolov8_fcr_read_channel_first(outputs, specs, config):
    """YOLOv8: an FCR output's memory read as (C, H, W) (FCR is channel-last on the host, as NHWC)."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 64, "FCR channel-first"), config)


def yolov8_sigmoid_always(outputs, specs, config):
    """YOLOv8: a sigmoid put on the class values whatever they hold (probabilities too: a second sigmoid)."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 64, "a sigmoid always"), config)


def yolo26_one2one_sixteen_bit_read_as_eight(outputs, specs, config):
    """YOLO26's one-to-one head: a 16-bit output's buffer read byte by byte, each byte taken for a code."""
    boxes, scores = _distance_heads(outputs, specs, config, 4, "16-bit as 8-bit")
    return top_k(boxes, scores, len(boxes), config)


def yolo26_one2many_sigmoid_always(outputs, specs, config):
    """YOLO26's one-to-many head: a sigmoid put on the class values whatever they hold."""
    return nms_hailort(*_distance_heads(outputs, specs, config, 4, "a sigmoid always"), config)


def yolov10_dfl_bins_interleaved(outputs, specs, config):
    """YOLOv10: each box's DFL bins read bin-major, then its top-k."""
    boxes, scores = _distance_heads(outputs, specs, config, 64, "bins interleaved")
    return top_k(boxes, scores, len(boxes), config)


def yolov10_input_taken_as_width_height(outputs, specs, config):
    """YOLOv10: config.input_hw taken as (width, height), so each grid's strides are the other side's over its
    columns and rows, then its top-k: right on a square input only."""
    boxes, scores = _distance_heads(outputs, specs, config, 64, "input as (width, height)")
    return top_k(boxes, scores, len(boxes), config)


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
    anchors = config.anchors
    if bug == "anchor groups reversed":
        anchors = anchors[::-1]
    elif bug == "COCO anchors":  # ultralytics/yolov5: models/yolov5s.yaml, P3/8 .. P5/32
        anchors = (((10, 13), (16, 30), (33, 23)), ((30, 61), (62, 45), (59, 119)), ((116, 90), (156, 198), (373, 326)))
    boxes, scores = [], []
    for name, group in zip(sorted(specs, key=lambda n: -specs[n].shape[0]), anchors, strict=True):
        h, w, c = specs[name].shape
        na = len(group)
        e = _read(outputs[name], specs[name])
        e = (e if bug == "logits as probabilities" else _probabilities(e)).reshape(h, w, na, c // na)
        t = e[..., [1, 0, 3, 2]] if bug == "ty tx th tw" else e[..., :4]
        row, col = np.mgrid[0:h, 0:w]
        cell = np.stack([col, row], -1)[:, :, None, :]
        centre = (2 * t[..., :2] - (0.0 if bug == "no half cell" else 0.5) + cell) * (in_w / w, in_h / h)
        if bug == "YOLOv3's sizes":  # exp(t) x anchor, t the map's sigmoid (YOLOv5's maps are all sigmoided)
            size = np.exp(t[..., 2:4]) * np.asarray(group, np.float64)
        else:
            size = (2 * t[..., 2:4]) ** 2 * np.asarray(group, np.float64)
        boxes.append(np.concatenate([centre - size / 2, centre + size / 2], -1).reshape(-1, 4))
        objectness = 1.0 if bug == "objectness left out" else e[..., 4:5]
        scores.append((e[..., 5:] * objectness).reshape(-1, c // na - 5))
    return _selected(boxes, scores, config)


def yolov5_box_entries_y_first(outputs, specs, config):
    """YOLOv5: each anchor's box entries read ty, tx, th, tw."""
    return _yolov5(outputs, specs, config, "ty tx th tw")


def yolov5_logits_as_probabilities(outputs, specs, config):
    """YOLOv5: the maps' logits taken for probabilities (no sigmoid)."""
    return _yolov5(outputs, specs, config, "logits as probabilities")


def yolov5_anchor_groups_reversed(outputs, specs, config):
    """YOLOv5: config.anchors taken coarsest grid first (they are stride ascending)."""
    return _yolov5(outputs, specs, config, "anchor groups reversed")


def yolov5_objectness_left_out(outputs, specs, config):
    """YOLOv5: each entry scored by its class alone (the objectness left out)."""
    return _yolov5(outputs, specs, config, "objectness left out")


def yolov5_coco_anchors(outputs, specs, config):
    """YOLOv5: the COCO anchors of yolov5s.yaml used whatever config.anchors holds (an autoanchored model's)."""
    return _yolov5(outputs, specs, config, "COCO anchors")


def yolov5_centre_without_the_half_cell(outputs, specs, config):
    """YOLOv5: each centre (2 t + cell) x stride, without its -0.5."""
    return _yolov5(outputs, specs, config, "no half cell")


def yolov5_sizes_coded_as_yolov3(outputs, specs, config):
    """YOLOv5: each box sized as YOLOv3's, exp(t) x anchor, from the sigmoided map (YOLOv5's is (2 t)^2 x
    anchor)."""
    return _yolov5(outputs, specs, config, "YOLOv3's sizes")


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
        centre = (t[..., :2] + np.stack([col, row], -1) + (0.5 if bug == "cell centres" else 0.0)) * stride
        size = (t[..., 2:4] if bug == "no exp" else np.exp(t[..., 2:4])) * stride
        boxes.append(np.concatenate([centre - size / 2, centre + size / 2], -1).reshape(-1, 4))
        objectness = 1.0 if bug == "objectness left out" else _probabilities(obj)
        scores.append((_probabilities(cls) * objectness).reshape(h * w, -1))
    return _selected(boxes, scores, config)


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


def yolox_sizes_without_the_exp(outputs, specs, config):
    """YOLOX: each box sized t_wh x stride (the map holds log sizes: exp(t_wh) x stride)."""
    return _yolox(outputs, specs, config, "no exp")


def yolox_objectness_left_out(outputs, specs, config):
    """YOLOX: each cell scored by its class alone (the objectness map left out)."""
    return _yolox(outputs, specs, config, "objectness left out")


def yolox_grid_at_the_cell_centres(outputs, specs, config):
    """YOLOX: each centre (t + cell + 0.5) x stride (YOLOX's grid is the cells' corners: (t + cell) x stride)."""
    return _yolox(outputs, specs, config, "cell centres")


# ------------------------------------------------------------------------ SSD and bbox-only buffers


def _ssd(outputs, specs, config, bug=None):
    """An SSD decoder of its own (TensorFlow's box coder as HailoRT's SSD op applies it: per layer, largest grid
    first with config.ssd's anchor layer, centre (t_yx / centers_scale_factor) x anchor + the cell's centre, size
    exp(t_hw / bbox_dimensions_scale_factor) x anchor, in fractions of the input; each anchor's class values the
    scores, the background's dropped), then HailoRT's NMS; ``bug`` the one mistake."""
    ssd = config.ssd
    in_h, in_w = config.input_hw
    centres = 1.0 if bug == "no scale factors" else ssd.centers_scale_factor
    dimensions = 1.0 if bug == "no scale factors" else ssd.bbox_dimensions_scale_factor
    by_grid = sorted({specs[n].shape[:2] for n in specs}, key=lambda g: g[0] * g[1], reverse=True)
    boxes, scores = [], []
    for (h, w), layer in zip(by_grid, ssd.anchors, strict=True):
        na = len(layer)
        names = [n for n in specs if specs[n].shape[:2] == (h, w)]
        (reg,) = [n for n in names if specs[n].shape[2] == 4 * na]
        (cls,) = [n for n in names if n != reg]
        t = _read(outputs[reg], specs[reg]).reshape(h, w, na, 4)
        ty, tx, th, tw = (t[..., i] for i in ssd.box_indices)
        anchor = np.asarray(layer, np.float64)
        wa, ha = (anchor[:, 1], anchor[:, 0]) if bug == "anchors (h, w)" else (anchor[:, 0], anchor[:, 1])
        row, col = np.mgrid[0:h, 0:w]
        xc = tx / centres * wa + ((col + 0.5) / w)[..., None]
        yc = ty / centres * ha + ((row + 0.5) / h)[..., None]
        if bug == "no exp":
            bw, bh = tw / dimensions * wa, th / dimensions * ha
        else:
            bw, bh = np.exp(tw / dimensions) * wa, np.exp(th / dimensions) * ha
        corners = [(xc - bw / 2) * in_w, (yc - bh / 2) * in_h, (xc + bw / 2) * in_w, (yc + bh / 2) * in_h]
        boxes.append(np.stack(corners, -1).reshape(-1, 4))
        p = _read(outputs[cls], specs[cls]).reshape(h * w * na, -1)
        if bug == "a sigmoid always":  # the class values taken for logits: they are the HEF's sigmoid's
            p = _sigmoid(p)
        keep = [k for k in range(p.shape[1]) if bug == "background kept" or k != ssd.background_class]
        scores.append(p[:, keep])
    return _selected(boxes, scores, config)


def ssd_sizes_without_the_exp(outputs, specs, config):
    """SSD: each box sized t_hw / bbox_dimensions_scale_factor x anchor, without the exp."""
    return _ssd(outputs, specs, config, "no exp")


def ssd_scale_factors_left_out(outputs, specs, config):
    """SSD: the codes taken without config.ssd's centre and size scale factors."""
    return _ssd(outputs, specs, config, "no scale factors")


def ssd_anchors_taken_as_height_width(outputs, specs, config):
    """SSD: each of config.ssd's anchors taken as (height, width) (they hold (width, height))."""
    return _ssd(outputs, specs, config, "anchors (h, w)")


def ssd_background_kept(outputs, specs, config):
    """SSD: the background class scored as a class (config.ssd's background_class not left out)."""
    return _ssd(outputs, specs, config, "background kept")


def ssd_sigmoid_always(outputs, specs, config):
    """SSD: a sigmoid put on the class values (HailoRT's SSD op is given the HEF's sigmoid: probabilities)."""
    return _ssd(outputs, specs, config, "a sigmoid always")


def _bbox_only(outputs, specs, config, objectness, bug=None):
    """A host decoder of its own of HailoRT's bbox-only buffer (rows y_min, x_min, y_max, x_max as fractions of
    the input, YOLOv5's objectness with ``objectness``, the class values), then HailoRT's NMS; ``bug`` the one
    mistake."""
    ((name, spec),) = specs.items()
    rows = np.asarray(outputs[name], np.float64).reshape(-1, spec.shape[-1])
    h, w = config.input_hw
    boxes = rows[:, [1, 0, 3, 2]] * (w, h, w, h)
    classes = rows[:, 5:] if objectness else rows[:, 4:]
    if objectness and bug != "objectness left out":
        classes = classes * rows[:, 4:5]
    boxes = np.ascontiguousarray(boxes, dtype=np.float32)
    classes = np.ascontiguousarray(classes, dtype=np.float32)
    if bug == "no NMS":
        kept, ids = np.nonzero(classes >= config.score_threshold)
        return Detections(boxes[kept], classes[kept, ids], ids)
    return nms_hailort(boxes, classes, config)


def bbox_only_yolov5_objectness_left_out(outputs, specs, config):
    """A YOLOv5 bbox-only buffer's rows scored by their class values alone (HailoRT leaves the objectness
    beside them, not multiplied in)."""
    return _bbox_only(outputs, specs, config, objectness=True, bug="objectness left out")


def bbox_only_yolov8_no_nms(outputs, specs, config):
    """A YOLOv8 bbox-only buffer's rows above the threshold all kept: the host's NMS left out."""
    return _bbox_only(outputs, specs, config, objectness=False, bug="no NMS")


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


def _nms_of(boxes_and_scores, config):
    return nms_hailort(*boxes_and_scores, config)


def _top_k_of(boxes_and_scores, config):
    boxes, scores = boxes_and_scores
    return top_k(boxes, scores, len(boxes), config)


Y8, V5, X, SSD = HeadFamily.YOLOV8, HeadFamily.YOLOV5, HeadFamily.YOLOX, HeadFamily.SSD
O2O, O2M, V10 = HeadFamily.YOLO26_ONE2ONE, HeadFamily.YOLO26_ONE2MANY, HeadFamily.YOLOV10

# (decoder, family, bbox-only, the misreading's name (None: a bbox-only buffer's, named by words alone, or on raw
# heads none of the known misreadings), words)
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
    # written later, each from its family's published decoding
    (yolov8_dfl_bins_interleaved, Y8, False, words.DFL_BINS_INTERLEAVED, misreadings.DFL_INTERLEAVED),
    (yolov8_fcr_read_channel_first, Y8, False, words.FCR_READ_CHANNEL_FIRST, misreadings.CHANNEL_FIRST),
    (yolov8_sigmoid_always, Y8, False, words.SIGMOID_APPLIED_TWICE, misreadings.SIGMOID_AGAIN),
    (yolo26_one2one_sixteen_bit_read_as_eight, O2O, False, words.SIXTEEN_BIT_READ_AS_EIGHT, words.SIXTEEN_AS_EIGHT),
    (yolo26_one2many_sigmoid_always, O2M, False, words.SIGMOID_APPLIED_TWICE, misreadings.SIGMOID_AGAIN),
    (yolov10_dfl_bins_interleaved, V10, False, words.DFL_BINS_INTERLEAVED, misreadings.DFL_INTERLEAVED),
    # no known misreading of raw heads scales the boxes by the input's other side (a bbox-only buffer's does):
    # caught on the non-square input, said to be none of the known misreadings
    (yolov10_input_taken_as_width_height, V10, False, None, misreadings.NOT_REPRODUCED),
    (yolov5_anchor_groups_reversed, V5, False, words.ANCHOR_GROUPS_REVERSED, misreadings.ANCHORS_REVERSED),
    (yolov5_objectness_left_out, V5, False, words.OBJECTNESS_MISSING, misreadings.OBJECTNESS_LEFT_OUT),
    (yolov5_coco_anchors, V5, False, words.DEFAULT_ANCHORS_TAKEN, misreadings.DEFAULT_ANCHORS_USED),
    (yolov5_centre_without_the_half_cell, V5, False, words.CENTRES_HALF_CELL_DOWN_RIGHT, later.HALF_CELL_DOWN_RIGHT),
    # no known misreading sizes an anchored box as YOLOv3 does (its centre coding is one): caught, said to be
    # none of the known misreadings
    (yolov5_sizes_coded_as_yolov3, V5, False, None, misreadings.NOT_REPRODUCED),
    (yolox_grid_at_the_cell_centres, X, False, words.CENTRES_HALF_CELL_DOWN_RIGHT, later.HALF_CELL_DOWN_RIGHT),
    (yolox_sizes_without_the_exp, X, False, words.SIZES_WITHOUT_THE_EXP, yolox_scenes.SIZES_LINEAR),
    (yolox_objectness_left_out, X, False, words.OBJECTNESS_MISSING, misreadings.OBJECTNESS_LEFT_OUT),
    (ssd_sizes_without_the_exp, SSD, False, words.SIZES_WITHOUT_THE_EXP, ssd_scenes.SIZES_LINEAR),
    (ssd_scale_factors_left_out, SSD, False, words.SSD_SCALE_FACTORS_LEFT_OUT, misreadings.SSD_SCALES_LEFT_OUT),
    (ssd_anchors_taken_as_height_width, SSD, False, words.SSD_ANCHORS_HEIGHT_WIDTH, misreadings.SSD_ANCHORS_WH_SWAPPED),
    (ssd_background_kept, SSD, False, words.SSD_BACKGROUND_AS_CLASS, misreadings.SSD_BACKGROUND_KEPT),
    (ssd_sigmoid_always, SSD, False, words.SIGMOID_APPLIED_TWICE, misreadings.SIGMOID_AGAIN),
    (bbox_only_yolov5_objectness_left_out, V5, True, None, conformance.BBOX_OBJECTNESS_LEFT_OUT),
    (bbox_only_yolov8_no_nms, Y8, True, None, conformance.BBOX_NO_NMS),
]


# The readers above without their mistake, (decoder, family, bbox-only): each holds every property, so that what
# catches a held-out decoder is its one mistake.
WITHOUT_A_MISTAKE = [
    (lambda o, s, c: _nms_of(_distance_heads(o, s, c, 64), c), Y8, False),
    (lambda o, s, c: _top_k_of(_distance_heads(o, s, c, 4), c), O2O, False),
    (lambda o, s, c: _nms_of(_distance_heads(o, s, c, 4), c), O2M, False),
    (lambda o, s, c: _top_k_of(_distance_heads(o, s, c, 64), c), V10, False),
    (_yolov5, V5, False),
    (_yolox, X, False),
    (_ssd, SSD, False),
    (lambda o, s, c: _bbox_only(o, s, c, objectness=True), V5, True),
    (lambda o, s, c: _bbox_only(o, s, c, objectness=False), Y8, True),
]
