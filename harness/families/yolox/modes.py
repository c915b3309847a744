"""The doctor modes a user of YOLOX's heads meets beyond every family's (:mod:`harness.doctor.modes`): a host
decoder that sizes its boxes without the exp, and one that leaves the objectness out of the score. Each runs
over the raw-output HEF (the ONNX cut at its heads where the emulator refuses the model) and is named by
reproducing its mistake on its own frames (:func:`harness.conformance.misreadings.reproduce_path`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from harness.conformance.words import OBJECTNESS_MISSING, SIZES_WITHOUT_THE_EXP
from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatType, OutputSpec
from harness.decode.maps import classes_are_probabilities, host_array, sigmoid, to_float
from harness.decode.nms import nms
from harness.doctor.mode import Mode, host_decoder
from harness.families.yolox.decode import decode, layout


def shared_gaps() -> Mapping[str, str]:
    return {}


def _values(outputs: Mapping[str, np.ndarray], spec: OutputSpec) -> np.ndarray:
    """A map's values, ``(cells, C)``, float32."""
    return to_float(host_array(outputs, spec), spec).astype(np.float32)


def _probabilities(outputs: Mapping[str, np.ndarray], spec: OutputSpec) -> np.ndarray:
    """A score map's values as probabilities (a sigmoid over logits)."""
    values = _values(outputs, spec)
    return values if classes_are_probabilities(spec, values) else sigmoid(values)


def sizes_without_the_exp(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder of YOLOX's heads that sizes each box ``t_wh x stride``, as the centre is (YOLOX's box map
    holds log sizes: Megvii-BaseDetection/YOLOX: yolox/models/yolo_head.py, ``decode_outputs``,
    ``exp(wh) * stride``): per stride every cell's centre ``(t_xy + cell) x stride``, its scores objectness x
    class, then the harness's NMS of ``config.mode``."""
    all_boxes, all_scores = [], []
    for level in layout(specs, config.input_hw).levels:
        assert level.objectness is not None  # the layout has one per stride
        box = level.box.host_spec
        t = _values(outputs, box)
        row, col = np.divmod(np.arange(len(t)), level.grid[1])
        cell = np.stack([col, row], axis=1).astype(np.float32)
        stride = np.float32(level.stride)
        centre, size = (t[:, :2] + cell) * stride, t[:, 2:4] * stride
        all_boxes.append(np.concatenate([centre - size / 2, centre + size / 2], axis=1))
        objectness = _probabilities(outputs, level.objectness.host_spec)
        all_scores.append(_probabilities(outputs, level.classes.host_spec) * objectness)
    return nms(np.concatenate(all_boxes), np.concatenate(all_scores).astype(np.float32), config)


def objectness_left_out(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that scores each cell by its class alone: the family's decoder given an objectness of 1
    everywhere (YOLOX scores objectness x class: hailort: libhailort/src/net_flow/ops/yolox_post_process.hpp)."""
    levels = layout(specs, config.input_hw).levels
    seen, seen_specs = dict(outputs), dict(specs)
    for level in levels:
        assert level.objectness is not None
        spec = level.objectness.host_spec
        seen[spec.name] = np.ones(spec.shape, np.float32)
        seen_specs[spec.name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
    # the class maps alone say whether the scores are logits (an objectness of 1 reads as a probability)
    held = all(classes_are_probabilities(lv.classes.host_spec, _values(outputs, lv.classes.host_spec)) for lv in levels)
    return decode(seen, seen_specs, replace(config, classes_are_probabilities=held))


YOLOX_MODES: tuple[Mode, ...] = (
    Mode(
        "yolox_sizes_without_the_exp",
        "YOLOX's box sizes decoded as t_wh x stride (the box map holds log sizes: exp(t_wh) x stride)",
        "host decoder over the raw-output HEF sizing each box t_wh x stride, its centres and scores as YOLOX's",
        SIZES_WITHOUT_THE_EXP,
        host_decoder(sizes_without_the_exp),
    ),
    Mode(
        "yolox_objectness_left_out",
        "YOLOX's cells scored by their class alone (the head scores objectness x class)",
        "host decoder over the raw-output HEF given an objectness of 1 in every cell",
        OBJECTNESS_MISSING,
        host_decoder(objectness_left_out),
    ),
)


def own_modes() -> tuple[Mode, ...]:
    return YOLOX_MODES
