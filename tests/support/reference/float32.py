"""HailoRT's post-process ops on one value at a time, in float32 scalars, for the loop references
(hailort: include/hailo/quantization.hpp, ``dequantize_output``; libhailort/src/net_flow/ops/
nms_post_process.hpp, ``sigmoid``)."""

from __future__ import annotations

import numpy as np

from harness.core.specs import OutputSpec

F = np.float32


def value(raw: float, spec: OutputSpec, channel: int) -> np.float32:
    """One output value as the op reads it: dequantized with its channel's quant info, or as it is."""
    if not spec.is_quantized:
        return F(raw)
    q = spec.quant[channel] if len(spec.quant) > 1 else spec.quant[0]
    return (F(raw) - F(q.zero_point)) * F(q.scale)


def sigmoid(x: np.float32) -> np.float32:
    with np.errstate(over="ignore"):
        return F(1) / (F(1) + np.exp(-x))
