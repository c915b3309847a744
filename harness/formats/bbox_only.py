"""HailoRT's bbox-only outputs (YOLOv5, YOLOv8) <-> boxes and each proposal's fields.

A HEF whose NMS op is compiled "bbox decoding only" (``ProtoHEFNmsOp.bbox_decoding_only``, hailort:
hailort/libhailort/hef.proto; read as ``NmsOpConfig.bbox_decoding_only`` by harness.inputs.hef.reader) runs
HailoRT's bbox-only op in place of its NMS: HailoRT decodes every proposal's box and the host runs the NMS.
The op's one output (hailort: libhailort/src/hef/hef.cpp, ``create_yolov8_bbox_only_op_metadata`` and
``create_yolov5_bbox_only_op_metadata``; src/net_flow/ops/yolov8_bbox_only_post_process.cpp and
yolov5_bbox_only_post_process.cpp, ``validate_format_info`` and ``get_output_vstream_info``; alike in 4.23.0
and 5.2.0):

- FLOAT32 in order NHWC, the only format the op takes; shape ``(1, proposals, fields)`` (its
  ``hailo_3d_image_shape_t`` height 1, width the proposals, features the fields), quant info of scale 1
  (NmsOpMetadata::get_output_vstream_info, nms_post_process.cpp);
- YOLOv8 fields: ``y_min, x_min, y_max, x_max``, then each class's value as the class map holds it,
  dequantized, no sigmoid (yolov8_bbox_only_post_process.hpp, ``add_bboxes``); proposals: the cells of
  each bbox decoder in the HEF's order, row-major; ``4 + classes`` fields;
- YOLOv5 fields: ``y_min, x_min, y_max, x_max, objectness``, then each class's value, dequantized and NOT
  multiplied by the objectness (yolov5_bbox_only_post_process.hpp, ``add_bboxes``, ``add_classes_scores``;
  ``should_sigmoid`` is false); proposals: per anchored input in the order of its name (``execute`` walks
  a ``std::map<std::string, MemoryView>``), row-major, then anchor; ``5 + classes`` fields;
- boxes normalised to the input (``x / image_width``), y first, not clipped; every proposal is written:
  no score threshold, no NMS.

This module is the buffer's format; the op itself (the family decoders' candidates) and the host's NMS
over it are :mod:`harness.decode.bbox_only`. Every function handles one frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.detections import xyxy_pixels_to_yxyx_normalized, yxyx_normalized_to_xyxy_pixels
from harness.core.errors import MalformedBufferError, SpecError
from harness.core.head_family import HeadFamily
from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
from harness.families import REGISTERED

BOX_FIELDS = ("y_min", "x_min", "y_max", "x_max")
# The fields before the classes of each family with a bbox-only op: the box, then the objectness of a family
# that has one (hailort: yolov8_bbox_only_post_process.hpp, the file comment
# "(y_min, x_min, y_max, x_max, score_per_class)"; yolov5_bbox_only_post_process.hpp,
# "(y_min, x_min, y_max, x_max, objectness, score_per_class)", YOLOV5_BBOX_NUM_OF_VALUES = 5).
LEADING_FIELDS: dict[HeadFamily, tuple[str, ...]] = {
    d.family: (*BOX_FIELDS, "objectness") if d.objectness else BOX_FIELDS for d in REGISTERED if d.bbox_only_op
}
# The output's quant info: scale 1, the rest 0 (hailort: nms_post_process.cpp, get_output_vstream_info,
# "In order to pass is_qp_valid check in pyhailort").
QUANT = QuantInfo(0.0, 1.0, 0.0, 0.0)
# The name the errors give an output known by its shape alone.
UNNAMED = "bbox-only output"


def leading_fields(family: HeadFamily) -> tuple[str, ...]:
    """The fields of ``family``'s proposals before the class values; a SpecError for a family HailoRT
    has no bbox-only op for (its YOLOX, SSD and YOLOv5-seg ops refuse ``bbox_only``: hailort:
    yolox_post_process.cpp, ssd_post_process.cpp, yolov5_seg_post_process.cpp)."""
    if family not in LEADING_FIELDS:
        raise SpecError(
            f"head family {family.value!r}: HailoRT has no bbox-only op for it; expected "
            f"{' or '.join(repr(f.value) for f in LEADING_FIELDS)}"
        )
    return LEADING_FIELDS[family]


def bbox_only_spec(name: str, proposals: int, classes: int, family: HeadFamily) -> OutputSpec:
    """The output HailoRT's bbox-only op of ``family`` gives for ``proposals`` proposals of ``classes``
    classes: FLOAT32 NHWC ``(1, proposals, fields)``."""
    if proposals < 1 or classes < 1:
        raise SpecError(f"output {name!r}: {proposals} proposals of {classes} classes; expected at least one of each")
    return OutputSpec(
        name, (1, proposals, len(leading_fields(family)) + classes), FormatOrder.NHWC, FormatType.FLOAT32, (QUANT,)
    )


def encode_bbox_only(boxes: np.ndarray, fields: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """Proposals -> the op's buffer, float32 ``(1, P, 4 + k)``: ``boxes`` ``(P, 4)`` xyxy in input pixels,
    normalised and written y first; then ``fields`` ``(P, k)`` (YOLOv5's objectness, the class values)."""
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    fields = np.asarray(fields, dtype=np.float32)
    if fields.ndim != 2 or len(fields) != len(boxes):
        raise SpecError(f"fields of shape {fields.shape} for {len(boxes)} boxes; expected ({len(boxes)}, k)")
    return np.ascontiguousarray(np.concatenate([xyxy_pixels_to_yxyx_normalized(boxes, input_hw), fields], axis=1)[None])


@dataclass(frozen=True)
class BboxOnlyFrame:
    """One frame's proposals read from a bbox-only buffer: ``boxes`` float32 ``(P, 4)`` xyxy in input
    pixels, ``objectness`` float32 ``(P,)`` (YOLOv5; None for YOLOv8) and ``classes`` float32 ``(P, nc)``,
    each value as the op wrote it, in the op's proposal order."""

    boxes: np.ndarray
    objectness: np.ndarray | None
    classes: np.ndarray


def _malformed(name: str, field: str, expected: object, found: object) -> MalformedBufferError:
    return MalformedBufferError(f"output {name!r}: {field}: expected {expected}, found {found}")


def frame_shape(spec_or_shape: OutputSpec | tuple[int, ...], family: HeadFamily) -> tuple[str, int, int]:
    """The output's name (:data:`UNNAMED` for a bare shape), proposals and fields, checked: an OutputSpec
    FLOAT32 NHWC, either of shape ``(1, P, F)`` with ``F`` more than the family's leading fields."""
    lead = len(leading_fields(family))
    if isinstance(spec_or_shape, OutputSpec):
        spec = spec_or_shape
        name, shape = spec.name, spec.shape
        if spec.format_order is not FormatOrder.NHWC:
            raise SpecError(f"output {name!r}: format order {spec.format_order.name}; expected NHWC (bbox-only)")
        if spec.format_type is not FormatType.FLOAT32:
            raise SpecError(f"output {name!r}: format type {spec.format_type.name}; expected FLOAT32 (bbox-only)")
    else:
        name, shape = UNNAMED, tuple(spec_or_shape)
    if len(shape) != 3 or shape[0] != 1 or shape[1] < 1 or shape[2] <= lead:
        raise SpecError(
            f"output {name!r}: shape {shape}; expected (1, proposals, {lead} + classes) of a {family.value} "
            f"bbox-only output ({', '.join(LEADING_FIELDS[family])}, then at least one class)"
        )
    return name, int(shape[1]), int(shape[2])


def _flat_floats(buffer: object, name: str, proposals: int, fields: int) -> np.ndarray:
    """The buffer as float32 ``(P, F)``: an ndarray ``(1, P, F)``, ``(P, F)`` or flat, or bytes."""
    size = proposals * fields
    if isinstance(buffer, (bytes, bytearray, memoryview)):
        view = memoryview(buffer)
        raw = (view if view.c_contiguous else memoryview(view.tobytes())).cast("B")  # tobytes: in logical order
        if len(raw) != 4 * size:
            raise _malformed(
                name, "buffer size", f"{4 * size} bytes ({proposals} proposals x {fields} float32)", f"{len(raw)} bytes"
            )
        return np.frombuffer(raw, dtype="<f4").reshape(proposals, fields)
    if isinstance(buffer, np.ndarray):
        if buffer.dtype != np.float32:
            found = buffer.dtype.name if buffer.dtype.isnative else f"{buffer.dtype.str} (byte-swapped)"
            raise _malformed(name, "buffer dtype", "float32", found)
        if buffer.shape not in ((1, proposals, fields), (proposals, fields), (size,)):
            raise _malformed(
                name, "buffer shape", f"(1, {proposals}, {fields}), ({proposals}, {fields}) or ({size},)", buffer.shape
            )
        return buffer.reshape(proposals, fields)
    raise _malformed(name, "buffer type", "bytes or a numpy array", type(buffer).__name__)


def read_bbox_only(
    buffer: object, spec_or_shape: OutputSpec | tuple[int, ...], input_hw: tuple[int, int], family: HeadFamily
) -> BboxOnlyFrame:
    """One frame of ``family``'s bbox-only output (an ndarray float32 ``(1, P, F)``, ``(P, F)`` or flat, or
    its bytes) -> its proposals. Values are taken as written, NaN included: HailoRT writes a NaN box where its
    DFL softmax overflows (tests/backends/test_hailort_oracle.py)."""
    name, proposals, fields = frame_shape(spec_or_shape, family)
    values = _flat_floats(buffer, name, proposals, fields)
    lead = len(LEADING_FIELDS[family])
    return BboxOnlyFrame(
        boxes=yxyx_normalized_to_xyxy_pixels(values[:, :4], input_hw),
        objectness=values[:, 4].copy() if lead == 5 else None,
        classes=np.ascontiguousarray(values[:, lead:]),
    )
