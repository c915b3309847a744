"""HailoRT's bbox-only ops of YOLOv8 and YOLOv5 on raw heads, and the host's NMS over what they write.

The op decodes every proposal's box and writes it with its class values (and YOLOv5's objectness), no
threshold and no NMS (the buffer: :mod:`harness.formats.bbox_only`); the host runs the NMS. Here the op is
the family decoder's ``candidates`` (hailort: libhailort/src/net_flow/ops/yolov8_bbox_only_post_process.hpp
and yolov5_bbox_only_post_process.hpp, ``add_bboxes``: the boxes of the YOLOv8 and YOLOv5 ops' ``get_bbox``
and ``decode_bbox``), held to HailoRT's ops by tests/backends/test_hailort_oracle_bbox_only.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import SpecError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode import yolo, yolov5
from harness.decode.nms import at_least, nms
from harness.formats.bbox_only import encode_bbox_only, leading_fields, read_bbox_only


def bbox_only_op(
    raw: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig, family: HeadFamily
) -> np.ndarray:
    """What HailoRT's bbox-only op of ``family`` writes for one frame of raw heads ``specs``: float32
    ``(1, proposals, fields)`` (:mod:`harness.formats.bbox_only`).

    The class values (and objectness) are taken as the heads hold them: the op dequantizes and applies no
    sigmoid (hailort: nms_post_process.hpp, ``should_sigmoid`` false), whatever
    ``config.classes_are_probabilities`` says. YOLOv8's proposals come stride ascending, the order of the
    bbox decoders the harness's DFC scripts write (harness/backends/dfc/scripts.py, ``nms_config``; HailoRT
    follows the HEF's order, ``reg_to_cls_inputs``); YOLOv5's per anchored map in the order of its name,
    as HailoRT's ``execute`` walks its ``std::map`` of inputs (byte order), each map's cells row-major, then
    anchors. YOLOv5 needs ``config.anchors``.
    """
    leading_fields(family)  # refuses a family without a bbox-only op
    config = dataclasses.replace(config, classes_are_probabilities=True)
    if family is HeadFamily.YOLOV8:
        boxes, classes = yolo.candidates(raw, yolo.layout(specs, config.input_hw), config)
        return encode_bbox_only(boxes, classes, config.input_hw)
    heads = yolov5.layout(specs, config.input_hw, config.anchors)
    boxes, _ = yolov5.candidates(raw, heads, config)
    levels = heads.levels
    fields = []  # per map, (cells x anchors, objectness + classes), dequantized as candidates reads them
    for level in levels:
        spec = level.box.host_spec
        entries = yolo.to_float(yolo.host_array(raw, spec), spec).reshape(level.cells * len(level.anchors), -1)
        fields.append(entries[:, yolov5.OBJECTNESS :])
    box_blocks = np.split(boxes, np.cumsum([len(f) for f in fields])[:-1])
    by_name = sorted(range(len(levels)), key=lambda i: levels[i].box.name.encode())
    return encode_bbox_only(
        np.concatenate([box_blocks[i] for i in by_name]),
        np.concatenate([fields[i] for i in by_name]),
        config.input_hw,
    )


def decode_bbox_only(
    buffer: object, spec_or_shape: OutputSpec | tuple[int, ...], config: DecodeConfig, family: HeadFamily
) -> Detections:
    """The host's side of a bbox-only output: one frame of ``family``'s buffer (an ndarray float32
    ``(1, P, F)``, ``(P, F)`` or flat, or its bytes; shape from ``spec_or_shape``) -> detections in input
    pixels, by the NMS of ``config.mode`` (:func:`~harness.decode.nms.nms`).

    Scores are the family decoder's: YOLOv8's the class values; YOLOv5's objectness x class, and only the
    proposals whose objectness reaches the score threshold (hailort: yolov5_post_process.hpp,
    ``extract_detections``, ``decode_classes_scores``), as :func:`harness.decode.yolov5.decode` scores them.
    The values are probabilities, as the op reads them: ``config.classes_are_probabilities`` False is refused.
    """
    if config.classes_are_probabilities is False:
        raise SpecError(
            "DecodeConfig.classes_are_probabilities: False; expected True or None: HailoRT's bbox-only op "
            "decodes boxes from post-sigmoid heads and writes class values as they are (no sigmoid)"
        )
    frame = read_bbox_only(buffer, spec_or_shape, config.input_hw, family)
    if frame.objectness is None:
        return nms(frame.boxes, frame.classes, config)
    keep = np.flatnonzero(at_least(frame.objectness, config.score_threshold))
    return nms(frame.boxes[keep], frame.classes[keep] * frame.objectness[keep, None], config)
