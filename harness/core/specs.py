"""Typed descriptions of model outputs, as HailoRT reports them.

Every backend hands back ``{name: array}`` plus one :class:`OutputSpec` per output; nothing
downstream asks which backend produced them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FormatOrder(enum.IntEnum):
    """``hailo_format_order_t`` values (hailort: hailort/libhailort/include/hailo/hailort.h)."""

    AUTO = 0
    NHWC = 1
    NHCW = 2
    FCR = 3
    F8CR = 4
    NHW = 5
    NC = 6
    NCHW = 11
    NMS_ON_CHIP = 21
    NMS_BY_CLASS = 22
    NMS_BY_SCORE = 23

    @property
    def is_nms(self) -> bool:
        return self in (FormatOrder.NMS_BY_CLASS, FormatOrder.NMS_BY_SCORE, FormatOrder.NMS_ON_CHIP)


class FormatType(enum.IntEnum):
    """``hailo_format_type_t`` values (hailort: hailort/libhailort/include/hailo/hailort.h)."""

    AUTO = 0
    UINT8 = 1
    UINT16 = 2
    FLOAT32 = 3

    @property
    def numpy_dtype(self) -> str:
        if self is FormatType.AUTO:
            raise ValueError("format type AUTO has no fixed numpy dtype")
        return {FormatType.UINT8: "uint8", FormatType.UINT16: "uint16", FormatType.FLOAT32: "float32"}[self]


@dataclass(frozen=True)
class QuantInfo:
    """``hailo_quant_info_t`` (hailort: hailort/libhailort/include/hailo/hailort.h).

    Dequantize ``(q - zero_point) * scale``; values outside ``[limvals_min, limvals_max]`` cannot
    be represented (hailort: include/hailo/quantization.hpp).
    """

    zero_point: float
    scale: float
    limvals_min: float
    limvals_max: float

    @property
    def is_zero(self) -> bool:
        """HEFs with per-feature quantization report an all-zero per-tensor quant info."""
        return self.zero_point == 0 and self.scale == 0 and self.limvals_min == 0 and self.limvals_max == 0


@dataclass(frozen=True)
class NmsShape:
    """``hailo_nms_shape_t`` (hailort: hailort/libhailort/include/hailo/hailort.h)."""

    number_of_classes: int
    max_bboxes_per_class: int
    max_bboxes_total: int = 0

    @property
    def max_total(self) -> int:
        """The BY_SCORE capacity: a HEF's max total is per-class max x classes when unset."""
        return self.max_bboxes_total or self.number_of_classes * self.max_bboxes_per_class


@dataclass(frozen=True)
class OutputSpec:
    """One output as the host receives it.

    ``shape`` is the host shape of one frame: ``(H, W, C)`` for NHWC/FCR/F8CR/NHCW outputs (all
    arrive channel-last on the host), ``(C,)`` for NC, and ``(classes, 5, max_bboxes)`` for NMS
    outputs, as ``VStreamInfo.shape`` gives it. ``quant`` holds one entry per tensor, or one per
    feature (channel) when the HEF quantizes per feature.
    """

    name: str
    shape: tuple[int, ...]
    format_order: FormatOrder
    format_type: FormatType
    quant: tuple[QuantInfo, ...] = ()
    nms: NmsShape | None = None

    def __post_init__(self) -> None:
        if self.format_order.is_nms and self.nms is None:
            raise ValueError(f"output {self.name!r}: format order {self.format_order.name} needs an nms shape")
        if len(self.quant) > 1 and self.shape and len(self.quant) != self.shape[-1]:
            raise ValueError(
                f"output {self.name!r}: {len(self.quant)} per-feature quant infos for {self.shape[-1]} channels"
            )

    @property
    def is_nms(self) -> bool:
        return self.format_order.is_nms

    @property
    def is_quantized(self) -> bool:
        return self.format_type in (FormatType.UINT8, FormatType.UINT16)

    @property
    def grid(self) -> tuple[int, int]:
        """``(H, W)`` of an image-shaped output."""
        if len(self.shape) != 3 or self.is_nms:
            raise ValueError(f"output {self.name!r} with shape {self.shape} is not an image-shaped (H, W, C) output")
        return self.shape[0], self.shape[1]

    @property
    def channels(self) -> int:
        return self.shape[-1]


# The output types a host can ask HailoRT for, by name: dequantized by HailoRT, or the device's own.
OUTPUT_FORMATS = {"float32": FormatType.FLOAT32, "uint8": FormatType.UINT8}
