"""HailoRT's quantization rule (hailort: hailort/libhailort/include/hailo/quantization.hpp).

dequantize: ``(q - zp) * scale``; quantize: clip to ``[limvals_min, limvals_max]``, then
``bankers_round(x / scale + zp)``. Per-tensor (one QuantInfo) or per-feature (one per channel,
broadcast along the last, channel axis of a host-side array).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.errors import SpecError
from harness.specs import QuantInfo


def _params(quant: Sequence[QuantInfo], channels: int) -> tuple[np.ndarray, ...]:
    if not quant:
        raise SpecError("quantized output has no quant info")
    if len(quant) not in (1, channels):
        raise SpecError(f"{len(quant)} per-feature quant infos for {channels} channels")
    fields = ("zero_point", "scale", "limvals_min", "limvals_max")
    return tuple(np.array([getattr(q, f) for q in quant], dtype=np.float32) for f in fields)


def dequantize(q: np.ndarray, quant: Sequence[QuantInfo]) -> np.ndarray:
    """Quantized host array (channel-last) -> float32."""
    q = np.asarray(q)
    zp, scale, _, _ = _params(quant, q.shape[-1] if q.ndim else 1)
    return ((q.astype(np.float32) - zp) * scale).astype(np.float32)


def quantize(x: np.ndarray, quant: Sequence[QuantInfo], dtype: np.dtype | str = np.uint8) -> np.ndarray:
    """float array (channel-last) -> quantized, clipped to limvals, rounded half to even."""
    x = np.asarray(x, dtype=np.float32)
    zp, scale, lo, hi = _params(quant, x.shape[-1] if x.ndim else 1)
    info = np.iinfo(np.dtype(dtype))
    q = np.rint(np.clip(x, lo, hi) / scale + zp)
    return np.clip(q, info.min, info.max).astype(dtype)
