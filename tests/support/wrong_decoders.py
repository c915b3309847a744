"""Deliberately wrong decoders, each making one mistake seen in the field, built around the
harness' own decoder. The conformance suite must name each mistake."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.core.detections import Detections
from harness.core.specs import FormatOrder, FormatType
from harness.decode.dfl import decode_candidates, pair_heads
from harness.decode.nms import nms_hailort
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolov5.decode import DEFAULT_ANCHORS
from harness.families.yolov8.decode import decode
from harness.formats.quant import dequantize


def xy_swapped(outputs, specs, config):
    d = decode(outputs, specs, config)
    return Detections(d.boxes[:, [1, 0, 3, 2]], d.scores, d.class_ids)


def no_sigmoid(outputs, specs, config):
    """Trusts every class output to hold probabilities."""
    return decode(outputs, specs, replace(config, classes_are_probabilities=True))


def _as_float(outputs, specs):
    floats = {k: dequantize(v, specs[k].quant) if specs[k].is_quantized else v for k, v in outputs.items()}
    return floats, {k: replace(s, format_type=FormatType.FLOAT32, quant=()) for k, s in specs.items()}


def sigmoid_twice(outputs, specs, config):
    """Applies a host sigmoid to class outputs that already went through one."""
    floats, float_specs = _as_float(outputs, specs)
    for pair in pair_heads(specs, config.input_hw):
        floats[pair.class_name] = 1 / (1 + np.exp(-floats[pair.class_name]))
    return decode(floats, float_specs, replace(config, classes_are_probabilities=True))


def no_half_cell(outputs, specs, config):
    """Anchor centres at the cell corner instead of its centre."""
    boxes, scores = decode_candidates(outputs, specs, config)
    shifts = [np.full(p.grid[0] * p.grid[1], p.stride / 2) for p in pair_heads(specs, config.input_hw)]
    return nms_hailort(boxes - np.concatenate(shifts)[:, None], scores, config)


def fcr_channel_first(outputs, specs, config):
    """Reads FCR outputs as if they were [C, H, W] in memory."""
    fixed = dict(outputs)
    for name, spec in specs.items():
        if spec.format_order is FormatOrder.FCR:
            h, w, c = spec.shape
            fixed[name] = np.asarray(outputs[name]).reshape(c, h, w).transpose(1, 2, 0)
    return decode(fixed, specs, config)


def paired_by_order(outputs, specs, config):
    """Takes outputs as (box, class) pairs in list order, largest grid first, whatever they are."""
    names = list(outputs)
    boxes = [n for n in names if specs[n].channels == 64]
    classes = [n for n in names if n not in boxes]
    grids = sorted({specs[n].grid for n in names}, reverse=True)
    fixed, fixed_specs = {}, {}
    for i, (box, cls) in enumerate(zip(boxes, classes, strict=True)):
        h, w = grids[i]
        for name in (box, cls):
            a = np.asarray(outputs[name])
            sh, sw = a.shape[0], a.shape[1]
            a = a[np.arange(h) * sh // h][:, np.arange(w) * sw // w]  # nearest resize to the grid it was paired to
            fixed[name], fixed_specs[name] = a, replace(specs[name], shape=(h, w, a.shape[2]))
    return decode(fixed, fixed_specs, config)


def dfl_interleaved(outputs, specs, config):
    """Reads the box heads' 4 x 16 DFL bins bin-major (channel bin * 4 + side) instead of side-major."""
    fixed = dict(outputs)
    for pair in pair_heads(specs, config.input_hw):
        h, w, c = specs[pair.box_name].shape
        a = np.asarray(outputs[pair.box_name])
        fixed[pair.box_name] = a.reshape(h, w, c // 4, 4).transpose(0, 1, 3, 2).reshape(h, w, c)
    return decode(fixed, specs, config)


def every_head_channel_first(outputs, specs, config):
    """Reads every head as if it were [C, H, W] in memory."""
    fixed = {}
    for name, spec in specs.items():
        h, w, c = spec.shape
        fixed[name] = np.asarray(outputs[name]).reshape(c, h, w).transpose(1, 2, 0)
    return decode(fixed, specs, config)


def raises_without_a_message(outputs, specs, config):
    """Gives up on the first output, the way a generator run dry does."""
    raise StopIteration


def yolo26_paired_by_position(outputs, specs, config):
    """Ultralytics' rule for a YOLO26 HEF: the i-th box map with the i-th class map in output order,
    each class map's buffer read on its box map's grid (nothing checks the grids)."""
    boxes = [n for n in outputs if specs[n].channels == 4]
    classes = [n for n in outputs if specs[n].channels != 4]
    read, read_specs = {}, {}
    for box, cls in zip(boxes, classes, strict=True):
        shape = (*specs[box].shape[:2], specs[cls].channels)
        read[box], read_specs[box] = outputs[box], specs[box]
        read[cls], read_specs[cls] = np.resize(outputs[cls], shape), replace(specs[cls], shape=shape)
    return decode_one2one(read, read_specs, config)


def box_heads_channel_first(outputs, specs, config):
    """Reads the box heads (and only them) as if they were [C, H, W] in memory."""
    fixed = dict(outputs)
    for pair in pair_heads(specs, config.input_hw):
        h, w, c = specs[pair.box_name].shape
        fixed[pair.box_name] = np.asarray(outputs[pair.box_name]).reshape(c, h, w).transpose(1, 2, 0)
    return decode(fixed, specs, config)


def coarsest_class_head_channel_first(outputs, specs, config):
    """Reads the class head of the coarsest grid (stride 32) as if it were [C, H, W] in memory."""
    fixed = dict(outputs)
    pair = pair_heads(specs, config.input_hw)[-1]
    h, w, c = specs[pair.class_name].shape
    fixed[pair.class_name] = np.asarray(outputs[pair.class_name]).reshape(c, h, w).transpose(1, 2, 0)
    return decode(fixed, specs, config)


def drops_the_weakest(outputs, specs, config):
    """A mistake no misreading explains: the lowest-scoring detection left out."""
    d = decode(outputs, specs, config)
    keep = np.argsort(d.scores)[1:]
    return Detections(d.boxes[keep], d.scores[keep], d.class_ids[keep])


def sixteen_bit_read_as_eight(outputs, specs, config):
    """Reads each 16-bit output buffer as uint8 codes (its first H x W x C bytes)."""
    from harness.doctor.mistakes import sixteen_bit_read_as_eight as mistake

    return mistake(decode)(outputs, specs, config)


# ------------------------------------------------------------------------ YOLOv5/YOLOv7 (anchored maps)


def _read_by_hand(raw, spec, bug, flipped=False):
    """One output as a hand-written decoder reads it, making ``bug`` where it is about the memory: a 16-bit
    buffer taken byte by byte ("16-bit as 8-bit"), laid out channel-first ("channel-first" everywhere, "FCR
    channel-first" on FCR outputs, or where ``flipped``); then dequantized."""
    raw = np.asarray(raw)
    h, w, c = spec.shape
    if bug == "16-bit as 8-bit" and raw.dtype == np.uint16:
        raw = np.frombuffer(raw.tobytes(), np.uint8)[: raw.size].reshape(raw.shape)
    if flipped or bug == "channel-first" or (bug == "FCR channel-first" and spec.format_order is FormatOrder.FCR):
        raw = raw.reshape(c, h, w).transpose(1, 2, 0)
    return dequantize(raw, spec.quant) if spec.is_quantized else raw.astype(np.float32)


def _yolov5_by_hand(outputs, specs, config, bug=None):
    """A YOLOv5 decoder written as a user would, apart from the harness's (one map per stride, finest grid
    first, with its group of config.anchors; per anchor tx, ty, tw, th, objectness, classes), making the
    one mistake ``bug``; None: no mistake."""
    names = list(specs) if bug == "anchors by order" else sorted(specs, key=lambda n: -specs[n].shape[0])
    anchors = {
        "anchors reversed": config.anchors[::-1],
        "default anchors": DEFAULT_ANCHORS,
    }.get(bug, config.anchors)
    boxes, scores = [], []
    for name, group in zip(names, anchors, strict=True):
        spec = specs[name]
        h, w, c = spec.shape
        x = _read_by_hand(outputs[name], spec, bug)
        if bug != "no sigmoid" and (x.min() < 0 or x.max() > 1):
            x = 1 / (1 + np.exp(-x))
        if bug == "sigmoid twice":
            x = 1 / (1 + np.exp(-x))
        na = len(group)
        if bug == "class-major":
            e = x.reshape(h, w, c // na, na).transpose(0, 1, 3, 2)
        else:
            e = x.reshape(h, w, na, c // na)
        stride = config.input_hw[0] / h
        gy, gx = np.mgrid[0:h, 0:w]
        grid = np.stack([gx, gy], axis=-1)[:, :, None, :]  # (h, w, 1, 2): x, y
        if bug == "grid without -0.5":
            centre = (e[..., 0:2] * 2 + grid) * stride
        elif bug == "YOLOv3 centre":
            centre = (e[..., 0:2] + grid) * stride
        else:
            centre = (e[..., 0:2] * 2 - 0.5 + grid) * stride
        anchor = np.asarray(group, np.float32)
        if bug == "anchor w/h swapped":
            anchor = anchor[:, ::-1]
        size = (e[..., 2:4] * 2) ** 2 * anchor
        boxes.append(np.concatenate([centre - size / 2, centre + size / 2], axis=-1).reshape(-1, 4))
        objectness = 1 if bug == "objectness ignored" else e[..., 4:5]
        scores.append((e[..., 5:] * objectness).reshape(-1, c // na - 5))
    return nms_hailort(np.concatenate(boxes), np.concatenate(scores), config)


def yolov5_by_hand(outputs, specs, config):
    """The hand-written YOLOv5 decoder without a mistake: it holds every property."""
    return _yolov5_by_hand(outputs, specs, config)


def yolov5_objectness_ignored(outputs, specs, config):
    """Scores each entry by its class alone, not objectness x class."""
    return _yolov5_by_hand(outputs, specs, config, "objectness ignored")


def yolov5_anchors_reversed(outputs, specs, config):
    """Takes the anchor groups coarsest stride first (stride 8 gets stride 32's anchors)."""
    return _yolov5_by_hand(outputs, specs, config, "anchors reversed")


def yolov5_anchor_wh_swapped(outputs, specs, config):
    """Takes each anchor as (height, width)."""
    return _yolov5_by_hand(outputs, specs, config, "anchor w/h swapped")


def yolov5_default_anchors(outputs, specs, config):
    """Uses YOLOv5's default anchors, whatever config.anchors holds."""
    return _yolov5_by_hand(outputs, specs, config, "default anchors")


def yolov5_anchors_by_order(outputs, specs, config):
    """Gives the anchor groups to the outputs in the order they come, not finest grid first."""
    return _yolov5_by_hand(outputs, specs, config, "anchors by order")


def yolov5_channel_first(outputs, specs, config):
    """Reads every anchored map as if it were [C, H, W] in memory."""
    return _yolov5_by_hand(outputs, specs, config, "channel-first")


def yolov5_fcr_channel_first(outputs, specs, config):
    """Reads the FCR anchored maps as if they were [C, H, W] in memory."""
    return _yolov5_by_hand(outputs, specs, config, "FCR channel-first")


def yolov5_class_major(outputs, specs, config):
    """Reads each anchored map class-major (value k of anchor a at channel k * na + a)."""
    return _yolov5_by_hand(outputs, specs, config, "class-major")


def yolov5_sigmoid_twice(outputs, specs, config):
    """Puts the maps through a sigmoid after deciding whether they hold logits."""
    return _yolov5_by_hand(outputs, specs, config, "sigmoid twice")


def yolov5_no_sigmoid(outputs, specs, config):
    """Trusts every map to hold probabilities."""
    return _yolov5_by_hand(outputs, specs, config, "no sigmoid")


def yolov5_grid_without_half(outputs, specs, config):
    """Centres at (2 t + cell) * stride, without YOLOv5's -0.5."""
    return _yolov5_by_hand(outputs, specs, config, "grid without -0.5")


def yolov5_yolov3_centre(outputs, specs, config):
    """Centres at (t + cell) * stride, YOLOv3's formula: a mistake no known misreading reproduces."""
    return _yolov5_by_hand(outputs, specs, config, "YOLOv3 centre")


def yolov5_sixteen_bit_read_as_eight(outputs, specs, config):
    """Reads each 16-bit map's buffer as uint8 codes (its first H x W x C bytes)."""
    return _yolov5_by_hand(outputs, specs, config, "16-bit as 8-bit")


# ------------------------------------------------------------------------ YOLOX (box, objectness, class maps)


def _yolox_by_hand(outputs, specs, config, bug=None):
    """A YOLOX decoder written as a user would, apart from the harness's (per grid, finest first, the map of 4
    channels is the box, of 1 the objectness, the other the classes; centre (t + cell) x stride, size exp(t) x
    stride, score objectness x class), making the one mistake ``bug``; None: no mistake."""

    def grid_first(names):
        return names if bug == "paired by order" else sorted(names, key=lambda n: -specs[n].shape[0])

    def read(name, role):
        x = _read_by_hand(outputs[name], specs[name], bug, flipped=bug == "box channel-first" and role == "box")
        if role != "box" and bug != "no sigmoid" and (x.min() < 0 or x.max() > 1):
            x = 1 / (1 + np.exp(-x))
        if role != "box" and bug == "sigmoid twice":
            x = 1 / (1 + np.exp(-x))
        return x

    channels = {n: specs[n].shape[2] for n in specs}
    box_names = grid_first([n for n in specs if channels[n] == 4])
    objectness_names = grid_first([n for n in specs if channels[n] == 1])
    class_names = grid_first([n for n in specs if channels[n] not in (1, 4)])
    boxes, scores = [], []
    for box_name, objectness_name, class_name in zip(box_names, objectness_names, class_names, strict=True):
        t, objectness, classes = read(box_name, "box"), read(objectness_name, "obj"), read(class_name, "cls")
        h, w, _ = t.shape
        stride = config.input_hw[0] / h
        gy, gx = np.mgrid[0:h, 0:w]
        cell = np.stack([gx, gy], axis=-1) + (0.5 if bug == "half-cell centre" else 0.0)
        centre = (t[..., 0:2] + cell) * stride
        size = (t[..., 2:4] if bug == "no exp" else np.exp(t[..., 2:4])) * stride
        boxes.append(np.concatenate([centre - size / 2, centre + size / 2], axis=-1).reshape(-1, 4))
        factor = 1 if bug == "objectness ignored" else objectness
        scores.append((classes * factor).reshape(-1, classes.shape[-1]))
    return nms_hailort(np.concatenate(boxes), np.concatenate(scores), config)


def yolox_by_hand(outputs, specs, config):
    """The hand-written YOLOX decoder without a mistake: it holds every property."""
    return _yolox_by_hand(outputs, specs, config)


def yolox_objectness_ignored(outputs, specs, config):
    """Scores each cell by its class alone, not objectness x class."""
    return _yolox_by_hand(outputs, specs, config, "objectness ignored")


def yolox_paired_by_order(outputs, specs, config):
    """Pairs the box, objectness and class maps in the order they come, not by grid."""
    return _yolox_by_hand(outputs, specs, config, "paired by order")


def yolox_channel_first(outputs, specs, config):
    """Reads every map as if it were [C, H, W] in memory."""
    return _yolox_by_hand(outputs, specs, config, "channel-first")


def yolox_box_channel_first(outputs, specs, config):
    """Reads the box maps alone as if they were [C, H, W] in memory."""
    return _yolox_by_hand(outputs, specs, config, "box channel-first")


def yolox_fcr_channel_first(outputs, specs, config):
    """Reads the FCR maps as if they were [C, H, W] in memory."""
    return _yolox_by_hand(outputs, specs, config, "FCR channel-first")


def yolox_sigmoid_twice(outputs, specs, config):
    """Puts the objectness and class maps through a sigmoid after deciding whether they hold logits."""
    return _yolox_by_hand(outputs, specs, config, "sigmoid twice")


def yolox_no_sigmoid(outputs, specs, config):
    """Trusts the objectness and class maps to hold probabilities."""
    return _yolox_by_hand(outputs, specs, config, "no sigmoid")


def yolox_half_cell_centre(outputs, specs, config):
    """Centres at (t + cell + 0.5) x stride: YOLOv8's anchor points, not YOLOX's cell corners."""
    return _yolox_by_hand(outputs, specs, config, "half-cell centre")


def yolox_no_exp(outputs, specs, config):
    """Sizes of t x stride, without the exp."""
    return _yolox_by_hand(outputs, specs, config, "no exp")


def yolox_sixteen_bit_read_as_eight(outputs, specs, config):
    """Reads each 16-bit map's buffer as uint8 codes (its first H x W x C bytes)."""
    return _yolox_by_hand(outputs, specs, config, "16-bit as 8-bit")


# ------------------------------------------------------------------------ SSD (per-anchor regression and class maps)


def _ssd_by_hand(outputs, specs, config, bug=None):
    """An SSD decoder written as a user would, apart from the harness's (per layer, largest grid first, the map
    of 4 x anchors channels is the regression, the other the classes; HailoRT's box formula with config.ssd;
    the background class left out), making the one mistake ``bug``; None: no mistake."""
    ssd = config.ssd
    anchors_per_layer = ssd.anchors
    if bug == "anchors (h, w)":
        anchors_per_layer = tuple(tuple((h, w) for w, h in layer) for layer in anchors_per_layer)
    grids = sorted({specs[n].shape[:2] for n in specs}, key=lambda g: -g[0] * g[1])
    in_h, in_w = config.input_hw
    boxes, scores = [], []
    for grid, anchors in zip(grids, anchors_per_layer, strict=True):
        na = len(anchors)
        (reg,) = [n for n in specs if specs[n].shape[:2] == grid and specs[n].shape[2] == 4 * na]
        (cls,) = [n for n in specs if specs[n].shape[:2] == grid and n != reg]

        def read(name, na=na):
            h, w, c = specs[name].shape
            x = _read_by_hand(outputs[name], specs[name], bug)
            if bug == "class-major":
                return x.reshape(h, w, c // na, na).transpose(0, 1, 3, 2)
            return x.reshape(h, w, na, c // na)

        t, p = read(reg), read(cls)
        h, w = grid
        order = (1, 0, 3, 2) if bug == "x first" else (0, 1, 2, 3)
        ty, tx, th, tw = (t[..., ssd.box_indices[order[k]]] for k in range(4))
        centres, dimensions = (
            (1, 1) if bug == "no scales" else (ssd.centers_scale_factor, ssd.bbox_dimensions_scale_factor)
        )
        gy, gx = np.mgrid[0:h, 0:w]
        half = 0.0 if bug == "centre at the corner" else 0.5
        cx, cy = ((gx + half) / w)[..., None], ((gy + half) / h)[..., None]
        wa, ha = np.asarray(anchors, np.float32)[:, 0], np.asarray(anchors, np.float32)[:, 1]
        xc, yc = tx / centres * wa + cx, ty / centres * ha + cy
        if bug == "no exp":
            bw, bh = tw / dimensions * wa, th / dimensions * ha
        else:
            bw, bh = np.exp(tw / dimensions) * wa, np.exp(th / dimensions) * ha
        xyxy = np.stack([(xc - bw / 2) * in_w, (yc - bh / 2) * in_h, (xc + bw / 2) * in_w, (yc + bh / 2) * in_h], -1)
        boxes.append(xyxy.reshape(-1, 4))
        classes = p.reshape(-1, p.shape[-1])
        if bug == "softmax":  # torchvision's SSD: a softmax over each anchor's classes and the background
            classes = np.exp(classes - classes.max(axis=1, keepdims=True))
            classes = classes / classes.sum(axis=1, keepdims=True)
        if bug == "background as the first class":  # the first nc values, whichever is the background
            classes = classes[:, : classes.shape[1] - 1]
        elif bug != "background kept" and ssd.background_class is not None:
            classes = np.delete(classes, ssd.background_class, axis=1)
        scores.append(classes)
    return nms_hailort(np.concatenate(boxes).astype(np.float32), np.concatenate(scores).astype(np.float32), config)


def ssd_by_hand(outputs, specs, config):
    """The hand-written SSD decoder without a mistake: it holds every property."""
    return _ssd_by_hand(outputs, specs, config)


def ssd_x_first(outputs, specs, config):
    """Reads each anchor's regression values as tx, ty, tw, th (x first), whatever config.ssd says."""
    return _ssd_by_hand(outputs, specs, config, "x first")


def ssd_no_scales(outputs, specs, config):
    """Leaves out the box coding's scale factors (10 and 5 in TensorFlow's box coder)."""
    return _ssd_by_hand(outputs, specs, config, "no scales")


def ssd_anchors_height_width(outputs, specs, config):
    """Takes each anchor as (height, width)."""
    return _ssd_by_hand(outputs, specs, config, "anchors (h, w)")


def ssd_background_kept(outputs, specs, config):
    """Reads the background class as a class."""
    return _ssd_by_hand(outputs, specs, config, "background kept")


def ssd_channel_first(outputs, specs, config):
    """Reads every map as if it were [C, H, W] in memory."""
    return _ssd_by_hand(outputs, specs, config, "channel-first")


def ssd_fcr_channel_first(outputs, specs, config):
    """Reads the FCR maps as if they were [C, H, W] in memory."""
    return _ssd_by_hand(outputs, specs, config, "FCR channel-first")


def ssd_class_major(outputs, specs, config):
    """Reads each map value-major (value k of anchor a at channel k * na + a)."""
    return _ssd_by_hand(outputs, specs, config, "class-major")


def ssd_sixteen_bit_read_as_eight(outputs, specs, config):
    """Reads each 16-bit map's buffer as uint8 codes (its first H x W x C bytes)."""
    return _ssd_by_hand(outputs, specs, config, "16-bit as 8-bit")


def ssd_centre_at_the_corner(outputs, specs, config):
    """Puts each anchor's centre at its cell's corner, not its centre."""
    return _ssd_by_hand(outputs, specs, config, "centre at the corner")


def ssd_no_exp(outputs, specs, config):
    """Sizes of t / scale x anchor, without the exp."""
    return _ssd_by_hand(outputs, specs, config, "no exp")


def ssd_background_as_the_first_class(outputs, specs, config):
    """Takes each anchor's first nc class values for the nc classes: the background's too, where it is the first."""
    return _ssd_by_hand(outputs, specs, config, "background as the first class")


def ssd_softmax(outputs, specs, config):
    """Puts each anchor's class values (the background's included) through a softmax, as for a softmax SSD."""
    return _ssd_by_hand(outputs, specs, config, "softmax")


# ------------------------------------------------------------------------ bbox-only buffers (the host's NMS)


def _bbox_only_by_hand(outputs, specs, config, bug=None):
    """A host decoder of HailoRT's bbox-only buffer written as a user would, apart from the harness's (rows
    y_min, x_min, y_max, x_max normalised, YOLOv5's objectness, the class values; scores objectness x class;
    HailoRT's NMS), making the one mistake ``bug``; None: no mistake."""
    ((name, spec),) = specs.items()
    rows = np.asarray(outputs[name], np.float32).reshape(spec.shape[1], spec.shape[2])
    v5 = name.startswith("yolov5")
    lead = 5 if v5 else 4
    y0, x0, y1, x1 = (rows[:, i] for i in ((1, 0, 3, 2) if bug == "x first" else (0, 1, 2, 3)))
    h, w = (1, 1) if bug == "not scaled" else config.input_hw
    boxes = np.stack([x0 * w, y0 * h, x1 * w, y1 * h], axis=1)
    scores = rows[:, lead:]
    if v5 and bug != "objectness left out":
        keep = rows[:, 4] >= config.score_threshold
        boxes, scores = boxes[keep], scores[keep] * rows[keep, 4:5]
    if bug == "sigmoid":
        scores = 1 / (1 + np.exp(-scores))
    if bug == "no nms":
        cells, classes = np.nonzero(scores >= config.score_threshold)
        return Detections(boxes[cells], scores[cells, classes], classes)
    return nms_hailort(np.ascontiguousarray(boxes), np.ascontiguousarray(scores, dtype=np.float32), config)


def bbox_only_by_hand(outputs, specs, config):
    """The hand-written bbox-only decoder without a mistake: it holds every property."""
    return _bbox_only_by_hand(outputs, specs, config)


def bbox_only_x_first(outputs, specs, config):
    """Reads each row's box as x_min, y_min, x_max, y_max."""
    return _bbox_only_by_hand(outputs, specs, config, "x first")


def bbox_only_not_scaled(outputs, specs, config):
    """Leaves the boxes normalised."""
    return _bbox_only_by_hand(outputs, specs, config, "not scaled")


def bbox_only_objectness_left_out(outputs, specs, config):
    """Scores YOLOv5's rows by their class values alone."""
    return _bbox_only_by_hand(outputs, specs, config, "objectness left out")


def bbox_only_sigmoid(outputs, specs, config):
    """Puts the class values through a sigmoid (they are probabilities already)."""
    return _bbox_only_by_hand(outputs, specs, config, "sigmoid")


def bbox_only_no_nms(outputs, specs, config):
    """Keeps every row above the threshold: no NMS."""
    return _bbox_only_by_hand(outputs, specs, config, "no nms")
