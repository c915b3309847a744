"""The same host output description, built by HailoRT's own Python API (``hailo_platform``), to cross-check
the pure-Python reader where HailoRT is installed.

``HEF(path).get_output_vstream_infos()`` gives per output: name, shape, format.type, format.order,
quant_info and nms_shape
(hailort: hailort/libhailort/bindings/python/platform/hailo_platform/pyhailort/pyhailort.py).
A VStreamInfo carries the per-tensor quant info only, so per-feature scales are not reproduced here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.core.errors import HefError
from harness.core.specs import FormatOrder, FormatType, NmsShape, OutputSpec, QuantInfo


def hailort_output_specs(path: str | Path, format_type: FormatType = FormatType.FLOAT32) -> tuple[OutputSpec, ...]:
    """Output specs of the default network group as HailoRT reports them (FLOAT32, or the device type)."""
    try:
        from hailo_platform import HEF
    except ImportError as error:
        raise HefError(f"{path}: hailo_platform (HailoRT's Python package) is not installed ({error})") from None
    return tuple(_spec(info, format_type) for info in HEF(str(path)).get_output_vstream_infos())


def _spec(info: Any, format_type: FormatType) -> OutputSpec:
    order = FormatOrder(int(info.format.order))
    device_type = FormatType(int(info.format.type))
    if order.is_nms:
        nms = NmsShape(int(info.nms_shape.number_of_classes), int(info.nms_shape.max_bboxes_per_class))
        return OutputSpec(info.name, tuple(info.shape), order, FormatType.FLOAT32, nms=nms)
    q = info.quant_info
    quant = QuantInfo(float(q.qp_zp), float(q.qp_scale), float(q.limvals_min), float(q.limvals_max))
    chosen = FormatType.FLOAT32 if format_type is FormatType.FLOAT32 else device_type
    return OutputSpec(info.name, tuple(info.shape), order, chosen, quant=() if quant.is_zero else (quant,))
