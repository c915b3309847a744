"""The doctor modes a user of YOLOv5/YOLOv7 heads meets beyond the shared ones (:mod:`harness.doctor.modes`): its
anchors wrong in the NMS config the HEF is compiled with (a template's default COCO anchors for a model with
anchors of its own, the groups given to the wrong strides) or in a host decoder (groups reversed), and a host
decoder that leaves out the objectness."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import replace

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig
from harness.core.specs import FormatType, OutputSpec
from harness.decode.layout import Anchors
from harness.decode.maps import host_array, to_float
from harness.doctor.bench import Bench
from harness.doctor.description import with_decoders
from harness.doctor.mode import Injected, Mode, Subject, host_decoder
from harness.families.yolov5.decode import DEFAULT_ANCHORS, OBJECTNESS, decode, layout

# YOLOv7's default anchors, (width, height) in input pixels per stride 8, 16, 32 (WongKinYiu/yolov7:
# cfg/training/yolov7.yaml, ``anchors``): the other template a YOLOv5/YOLOv7 NMS config is copied from.
YOLOV7_DEFAULT_ANCHORS: Anchors = (
    ((12, 16), (19, 36), (40, 28)),
    ((36, 75), (76, 55), (72, 146)),
    ((142, 110), (192, 243), (459, 401)),
)


def shared_gaps() -> Mapping[str, str]:
    # hailort: libhailort/src/net_flow/ops/yolov5_post_process.hpp (each anchor's 5 + nc values read from one
    # anchored map, one quant info per map)
    return {
        "calibration_off_domain": "a YOLOv5 anchored map holds each anchor's box sigmoids beside its objectness and "
        "classes, near 1 on some anchor of any image, so calibrating on frames without the classes still spans the "
        "scores: nothing is capped and the detections barely move",
    }


def _whole(anchors: Anchors) -> tuple[tuple[tuple[float, float], ...], ...]:
    """Anchors as a YOLOv5 NMS op holds them: whole pixels (hailort: hailort/libhailort/hef.proto,
    ``ProtoHEFYoloBboxDecoder`` ``h``/``w`` uint32)."""
    return tuple(tuple((float(round(w)), float(round(h))) for w, h in group) for group in anchors)


def template_anchors(model: Anchors) -> Anchors:
    """The default COCO anchors a template NMS config holds: YOLOv5's, or YOLOv7's where the model's own are
    YOLOv5's (autoanchor keeps a model's anchors where they fit its data, and changes them where not)."""
    return YOLOV7_DEFAULT_ANCHORS if _whole(model) == _whole(DEFAULT_ANCHORS) else DEFAULT_ANCHORS


def _nms_buffer(subject: Subject) -> bool:
    """The HEF holds the YOLOv5 NMS op in full (its static checks read its anchors), not its bbox-only form."""
    return subject.nms_buffer


def _model_anchors(bench: Bench) -> Anchors:
    return bench.hef.anchors if bench.hef is not None else bench.run.facts.anchors


def _nms_template_anchors(bench: Bench, stack: ExitStack) -> Injected:
    anchors = _whole(template_anchors(_model_anchors(bench)))
    return Injected(description=with_decoders(bench.description, anchors))


def _nms_anchor_groups_reversed(bench: Bench, stack: ExitStack) -> Injected:
    return Injected(description=with_decoders(bench.description, _whole(_model_anchors(bench))[::-1]))


def anchor_groups_reversed(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that gives the anchor groups to the strides in reverse order (the stride-32 anchors to
    the stride-8 map: config.anchors is stride ascending)."""
    return decode(outputs, specs, replace(config, anchors=config.anchors[::-1]))


def objectness_left_out(
    outputs: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
) -> Detections:
    """A host decoder that scores each (cell, anchor) entry by its class value alone: as if every objectness
    were 1 (the head scores objectness x class)."""
    fixed, fixed_specs = dict(outputs), dict(specs)
    for level in layout(specs, config.input_hw, config.anchors).levels:
        spec = level.box.host_spec
        entries = to_float(host_array(outputs, spec), spec).reshape(level.cells * len(level.anchors), -1).copy()
        entries[:, OBJECTNESS] = 1
        fixed[spec.name] = entries.reshape(spec.shape).astype(np.float32)
        fixed_specs[spec.name] = replace(spec, format_type=FormatType.FLOAT32, quant=())
    return decode(fixed, fixed_specs, config)


YOLOV5_MODES: tuple[Mode, ...] = (
    Mode(
        "nms_default_anchors",
        "a template's default COCO anchors compiled into the NMS op of a model with anchors of its own (autoanchor)",
        "HEF description with the NMS op's anchors a template's: YOLOv5's defaults, or YOLOv7's where the "
        "model's own are YOLOv5's",
        "anchors",
        _nms_template_anchors,
        offered=_nms_buffer,
    ),
    Mode(
        "nms_anchor_groups_reversed",
        "the NMS config's anchor groups given to the wrong strides (the largest anchors to the finest grid)",
        "HEF description with the NMS op's anchor groups in reverse stride order",
        "anchors",
        _nms_anchor_groups_reversed,
        offered=_nms_buffer,
    ),
    Mode(
        "host_anchor_groups_reversed",
        "a host decoder giving the anchor groups to the strides in reverse order",
        "host decoder over the raw-output HEF's anchored maps with config.anchors reversed",
        "anchor_groups_reversed",
        host_decoder(anchor_groups_reversed),
    ),
    Mode(
        "host_objectness_left_out",
        "a host decoder scoring each entry by its class alone, the objectness left out",
        "host decoder over the raw-output HEF's anchored maps with every objectness taken as 1",
        "objectness_left_out",
        host_decoder(objectness_left_out),
    ),
)


def own_modes() -> tuple[Mode, ...]:
    return YOLOV5_MODES
