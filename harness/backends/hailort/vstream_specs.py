"""HailoRT's vstream infos as the harness's input and output specs: format orders and types, quant infos and
NMS shapes, read as hailo_platform 4.18, 4.23 and 5.x hand them out (hailort: hailort/libhailort/bindings/
python/src/pyhailort.cpp, bindings/python/platform/hailo_platform/pyhailort/pyhailort.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.backends.base import InputSpec
from harness.core.errors import SpecError
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo
from harness.formats.nms_buffer import BBOX_PARAMS

# HAILO_FORMAT_ORDER_HAILO_NMS = 9, the BY_CLASS layout under its pre-4.20 name: 4.18's pyhailort parses
# FormatOrder.HAILO_NMS outputs with output_raw_buffer_to_nms_format (hailort: hailort/libhailort/include/
# hailo/hailort.h, "Deprecated. Should use HAILO_FORMAT_ORDER_HAILO_NMS_BY_CLASS"; pyhailort.py 4.18).
_LEGACY_NMS_ORDER = 9


def _order(value: object, name: str) -> FormatOrder:
    number = int(value)  # type: ignore[call-overload]  # hailo_platform enums are pybind11 enums: int() works
    if number == _LEGACY_NMS_ORDER:
        return FormatOrder.NMS_BY_CLASS
    try:
        return FormatOrder(number)
    except ValueError:
        raise SpecError(
            f"vstream {name!r}: HailoRT format order {value} ({number}), expected one of "
            f"{[o.name for o in FormatOrder]} or the legacy HAILO_NMS (9)"
        ) from None


def _type(value: object, name: str) -> FormatType:
    number = int(value)  # type: ignore[call-overload]
    try:
        return FormatType(number)
    except ValueError:
        raise SpecError(
            f"vstream {name!r}: HailoRT format type {value} ({number}), expected UINT8, UINT16 or FLOAT32"
        ) from None


def _quant(q: Any) -> QuantInfo:
    """``hailo_quant_info_t`` {qp_zp, qp_scale, limvals_min, limvals_max} (hailort: bindings/python/src/pyhailort.cpp,
    ``QuantInfo``)."""
    return QuantInfo(float(q.qp_zp), float(q.qp_scale), float(q.limvals_min), float(q.limvals_max))


def _nms_shape(info: Any) -> NmsShape:
    """``VStreamInfo.nms_shape``: number_of_classes, max_bboxes_per_class; max_bboxes_total where the binding
    has it (hailort: nms_post_process.cpp, NmsOpMetadata::get_output_vstream_info sets it; pybind NmsShape of
    5.1 does not expose it, and NmsShape.max_total then falls back to classes x per-class max)."""
    nms = info.nms_shape
    total = int(getattr(nms, "max_bboxes_total", 0) or 0)
    return NmsShape(int(nms.number_of_classes), int(nms.max_bboxes_per_class), total)


def input_spec(info: Any) -> InputSpec:
    """An input vstream info -> the uint8 input the runner feeds (the /255 normalization is inside the HEF)."""
    return InputSpec(
        info.name, tuple(int(d) for d in info.shape), _order(info.format.order, info.name), FormatType.UINT8
    )


def output_spec(
    info: Any,
    format_type: FormatType,
    nms_order: FormatOrder,
    quant_infos: Sequence[Any] = (),
) -> OutputSpec:
    """An output vstream info -> what the host receives.

    NMS outputs: ``(classes, 5, max_bboxes_per_class)`` in the order asked for (the HEF's default is BY_CLASS;
    hailort: nms_post_process.cpp, ``expand_output_format_autos_by_op_type``), the type HailoRT reports.
    Others: ``info.shape``, FLOAT32 or the device type, with the quant info: ``quant_infos`` (InferModel's
    list, one per tensor or per feature) where given, else the vstream's per-tensor ``quant_info``, which is
    all zero when the HEF quantizes per feature.
    """
    name = info.name
    order = _order(info.format.order, name)
    if order.is_nms:
        nms = _nms_shape(info)
        shape = (nms.number_of_classes, BBOX_PARAMS, nms.max_bboxes_per_class)
        return OutputSpec(name, shape, nms_order, _type(info.format.type, name), nms=nms)
    device_type = _type(info.format.type, name)
    chosen = FormatType.FLOAT32 if format_type is FormatType.FLOAT32 else device_type
    if chosen is FormatType.AUTO:
        raise SpecError(f"output {name!r}: the HEF reports format type AUTO, expected UINT8, UINT16 or FLOAT32")
    listed = tuple(dict.fromkeys(_quant(q) for q in quant_infos))
    quant = listed if len(listed) > 1 else listed or (_quant(info.quant_info),)
    if len(quant) == 1 and quant[0].is_zero:
        if chosen is not FormatType.FLOAT32:
            raise SpecError(
                f"output {name!r}: the HEF quantizes per feature and the vstream info holds no per-tensor quant "
                "info (all zero): use format_type FLOAT32 (HailoRT dequantizes) or api 'infer_model' "
                "(its quant_infos list the per-feature ones)"
            )
        quant = ()
    try:
        return OutputSpec(name, tuple(int(d) for d in info.shape), order, chosen, quant)
    except ValueError as error:
        raise SpecError(str(error)) from None


def numpy_dtype(format_type: FormatType, name: str) -> np.dtype:
    try:
        return np.dtype(format_type.numpy_dtype)
    except ValueError:
        raise SpecError(f"output {name!r}: format type {format_type.name} has no buffer dtype") from None
