"""HailoRT's bbox-only ops of YOLOv8 and YOLOv5 on raw heads, and the host's NMS over what they write.

The op decodes every proposal's box and writes it with its class values (and YOLOv5's objectness), no
threshold and no NMS (the buffer: :mod:`harness.formats.bbox_only`); the host runs the NMS. Here the op is
the family decode part's ``bbox_only_proposals``, its ``candidates`` (hailort:
libhailort/src/net_flow/ops/yolov8_bbox_only_post_process.hpp and yolov5_bbox_only_post_process.hpp,
``add_bboxes``: the boxes of the YOLOv8 and YOLOv5 ops' ``get_bbox`` and ``decode_bbox``), held to HailoRT's
ops by tests/backends/test_hailort_oracle_bbox_only.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol, cast

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import SpecError
from harness.core.head_family import HeadFamily
from harness.core.settings import DecodeConfig
from harness.core.specs import OutputSpec
from harness.decode.nms import at_least, nms
from harness.families import part
from harness.formats.bbox_only import encode_bbox_only, leading_fields, read_bbox_only


class BboxOnlyDecode(Protocol):
    """The decode part of a family with a bbox-only op (``FamilyDescriptor.bbox_only_op``)."""

    def bbox_only_proposals(
        self, raw: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig
    ) -> tuple[np.ndarray, np.ndarray]: ...


def bbox_only_op(
    raw: Mapping[str, np.ndarray], specs: Mapping[str, OutputSpec], config: DecodeConfig, family: HeadFamily
) -> np.ndarray:
    """What HailoRT's bbox-only op of ``family`` writes for one frame of raw heads ``specs``: float32
    ``(1, proposals, fields)`` (:mod:`harness.formats.bbox_only`), the proposals and their order those of the
    family decode part's ``bbox_only_proposals``.

    The class values (and objectness) are taken as the heads hold them: the op dequantizes and applies no
    sigmoid (hailort: nms_post_process.hpp, ``should_sigmoid`` false), whatever
    ``config.classes_are_probabilities`` says. An anchored family needs its anchors in ``config``.
    """
    leading_fields(family)  # refuses a family without a bbox-only op
    config = dataclasses.replace(config, classes_are_probabilities=True)
    proposals = cast(BboxOnlyDecode, part(family, "decode"))
    boxes, fields = proposals.bbox_only_proposals(raw, specs, config)
    return encode_bbox_only(boxes, fields, config.input_hw)


def decode_bbox_only(
    buffer: object, spec_or_shape: OutputSpec | tuple[int, ...], config: DecodeConfig, family: HeadFamily
) -> Detections:
    """The host's side of a bbox-only output: one frame of ``family``'s buffer (an ndarray float32
    ``(1, P, F)``, ``(P, F)`` or flat, or its bytes; shape from ``spec_or_shape``) -> detections in input
    pixels, by the NMS of ``config.mode`` (:func:`~harness.decode.nms.nms`).

    Scores are the family decoder's: YOLOv8's the class values; YOLOv5's objectness x class, and only the
    proposals whose objectness reaches the score threshold (hailort: yolov5_post_process.hpp,
    ``extract_detections``, ``decode_classes_scores``), as :func:`harness.families.yolov5.decode.decode` scores
    them.
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
