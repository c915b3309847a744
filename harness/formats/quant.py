"""HailoRT's quantization rule (hailort: hailort/libhailort/include/hailo/quantization.hpp).

dequantize: ``(q - zp) * scale`` in float32. quantize: clip to ``[limvals_min, limvals_max]``, then
``bankers_round(x / scale + zp)`` (``rintf`` under ``FE_TONEAREST``: halves go to the even neighbour),
all in float32; an identity quant info (``scale == 1``, ``zp == 0``) only rounds, with no clipping.

Per-tensor (one QuantInfo) or per-feature (one per channel). HailoRT's output transform gives
element ``i`` of a channel-last host buffer (NHWC, FCR, F8CR, NC) quant info ``i % C``, i.e. the
last axis (hailort: hailort/libhailort/src/transform/transform.cpp, ``FrameOutputTransformContext``
with ``m_quant_infos_rep_count = 1``, and ``transform_internal.hpp``, ``dequantize_output_by_feature``).
HailoRT quantizes inputs with the first quant info only; :func:`quantize` broadcasts per feature
the same way as :func:`dequantize`, so that it is its inverse.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from harness.core.errors import SpecError
from harness.core.specs import QuantInfo

QUANTIZED_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16))


def _params(quant: Sequence[QuantInfo], channels: int) -> tuple[np.ndarray, ...]:
    if not quant:
        raise SpecError("quantized output has no quant info")
    if len(quant) not in (1, channels):
        raise SpecError(f"{len(quant)} per-feature quant infos for {channels} channels")
    if len(quant) == 1 and quant[0].is_zero:
        # hailort: hailort/libhailort/src/transform/transform.cpp, OutputTransformContext::create
        # (an all-zero INVALID_QUANT_INFO means the HEF quantizes per feature)
        raise SpecError("quant info is all zero (the per-feature placeholder): expected the per-feature quant infos")
    fields = ("zero_point", "scale", "limvals_min", "limvals_max")
    return tuple(np.array([getattr(q, f) for q in quant], dtype=np.float32) for f in fields)


def dequantize(q: np.ndarray, quant: Sequence[QuantInfo]) -> np.ndarray:
    """Quantized host array (channel-last) -> float32."""
    q = np.asarray(q)
    zp, scale, _, _ = _params(quant, q.shape[-1] if q.ndim else 1)
    return ((q.astype(np.float32) - zp) * scale).astype(np.float32)


def read_as_uint8(codes: np.ndarray) -> np.ndarray:
    """What a host that reads a 16-bit output's buffer as 8-bit codes sees: its first ``codes.size``
    bytes (little-endian, two a code: hailort: hailort/libhailort/include/hailo/hailort.h,
    HAILO_FORMAT_TYPE_UINT16), in ``codes``' shape."""
    return np.ascontiguousarray(codes).view(np.uint8).reshape(-1)[: codes.size].reshape(codes.shape)


def quantize(x: np.ndarray, quant: Sequence[QuantInfo], dtype: np.dtype | str | type = np.uint8) -> np.ndarray:
    """float array (channel-last) -> uint8/uint16: clipped to limvals, rounded half to even.

    Values outside the integer type's range (possible only with limvals beyond it) saturate, where
    HailoRT's C cast is undefined.
    """
    out_dtype = np.dtype(dtype)
    if out_dtype not in QUANTIZED_DTYPES:
        raise SpecError(f"quantize: dtype {out_dtype} is not a device type: expected uint8 or uint16")
    x = np.asarray(x, dtype=np.float32)
    zp, scale, lo, hi = _params(quant, x.shape[-1] if x.ndim else 1)
    identity = (scale == 1) & (zp == 0)  # hailort: quantization.hpp, Quantization::is_identity_qp
    lo = np.where(identity, np.float32(-np.inf), lo)
    hi = np.where(identity, np.float32(np.inf), hi)
    q = np.rint(np.clip(x, lo, hi) / scale + zp)
    info = np.iinfo(out_dtype)
    return np.clip(q, info.min, info.max).astype(out_dtype)


def lowest_codes_reaching(
    quant: Sequence[QuantInfo], floor: float, dtype: np.dtype, channels: int
) -> np.ndarray | None:
    """Per channel (one entry per quant info given), the smallest code of ``dtype`` whose dequantized value
    is ``>= floor`` (float32 compare); ``iinfo(dtype).max + 1`` where no code reaches it. None where a scale
    is not positive and finite (dequantization then is not increasing in the code).

    A quantized value reaches ``floor`` exactly when its code reaches the channel's code:
    :func:`dequantize` is ``(q - zp) * scale`` in float32, and float32 rounding keeps that non-decreasing
    in ``q`` for a positive scale. HailoRT's YOLOv8 op dequantizes each class value before comparing it
    with the score threshold (hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp,
    ``extract_detections``; include/hailo/quantization.hpp, ``dequantize_output``): the same values pass.
    """
    _params(quant, channels)  # the same refusals as dequantize
    return _lowest_codes(tuple(quant), float(np.float32(floor)), np.dtype(dtype).str)


@functools.lru_cache(maxsize=64)
def _lowest_codes(quant: tuple[QuantInfo, ...], floor: float, dtype: str) -> np.ndarray | None:
    scales = np.array([q.scale for q in quant], dtype=np.float32)
    if not (np.isfinite(scales).all() and (scales > 0).all()):
        return None
    codes = np.arange(np.iinfo(np.dtype(dtype)).max + 1)[:, None]
    found: dict[QuantInfo, int] = {}  # each distinct quant info's code, its table of every value made once
    for q in quant:
        if q not in found:
            found[q] = int(np.searchsorted(dequantize(codes, [q])[:, 0], np.float32(floor), side="left"))
    lowest = np.array([found[q] for q in quant])
    lowest.flags.writeable = False  # cached: shared by every caller
    return lowest
