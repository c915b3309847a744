"""Deliberately wrong decoders, each making one mistake seen in the field, built around the
harness' own decoder. The conformance suite must name each mistake."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.core.detections import Detections
from harness.core.specs import FormatOrder, FormatType
from harness.decode.nms import nms_hailort
from harness.decode.yolo import decode, decode_candidates, pair_heads
from harness.decode.yolo26 import decode_one2one
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
