"""One raw output map as the host holds it: its frame checked against its spec and dequantized, whether its
class values are probabilities or logits, and the float32 sigmoid. Every host decoder reads its maps through
these."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.core.errors import SpecError
from harness.core.specs import FormatType, OutputSpec
from harness.formats.quant import dequantize

FLOAT32_ONE_BITS = 0x3F800000  # 1.0f
_FLOAT32_MINUS_ZERO_BITS = 0x80000000  # -0.0f


def classes_are_probabilities(spec: OutputSpec, values: np.ndarray) -> bool:
    """Whether a class output already holds probabilities (sigmoid compiled in) rather than logits.

    Quantized outputs are judged by their quant limvals (hailort: include/hailo/quantization.hpp):
    a sigmoid-compiled class conv has limvals inside ``[0, 1]``. Without usable limvals (float
    outputs, or an empty range) the dequantized ``values`` decide: all in ``[0, 1]`` means
    probabilities. ``DecodeConfig.classes_are_probabilities`` overrides both.
    """
    by_limvals = limvals_verdict(spec)
    if by_limvals is not None:
        return by_limvals
    values = np.asarray(values)
    if values.size == 0:
        return True
    if values.dtype == np.float32:
        # One pass over the bit patterns, read as unsigned integers (IEEE 754 binary32): 0.0 .. 1.0 are
        # 0 .. 0x3F800000; a negative value other than -0.0 (0x80000000) lies above 0x80000000. Only
        # what lies between (above 1, infinities, NaN, -0.0) needs the float comparisons.
        top = int(values.view(np.uint32).max())
        if top <= FLOAT32_ONE_BITS or top > _FLOAT32_MINUS_ZERO_BITS:
            return top <= FLOAT32_ONE_BITS
    return bool(values.min() >= 0 and values.max() <= 1)


def limvals_verdict(spec: OutputSpec) -> bool | None:
    """:func:`classes_are_probabilities` of a quantized output with usable limvals; None for any other."""
    quant = [q for q in spec.quant if q.limvals_max > q.limvals_min]
    if spec.is_quantized and quant and len(quant) == len(spec.quant):
        return all(0.0 <= q.limvals_min and q.limvals_max <= 1.0 for q in quant)
    return None


def host_array(outputs: Mapping[str, np.ndarray], spec: OutputSpec) -> np.ndarray:
    """One output's frame as (H*W, C), checked against its spec; float32 or the quantized dtype."""
    if spec.name not in outputs:
        raise SpecError(f"output {spec.name!r}: missing from the outputs given ({sorted(outputs)})")
    array = np.asarray(outputs[spec.name])
    if array.ndim == 4 and array.shape[0] == 1:
        array = array[0]
    if array.shape != spec.shape:
        raise SpecError(
            f"output {spec.name!r}: array shape {np.shape(outputs[spec.name])} does not match the spec; "
            f"expected {spec.shape} or {(1, *spec.shape)}"
        )
    if spec.format_type is FormatType.FLOAT32:
        if array.dtype.kind != "f":
            raise SpecError(
                f"output {spec.name!r}: format type FLOAT32 but array dtype {array.dtype}; expected float32"
            )
        array = array.astype(np.float32, copy=False)
    elif spec.is_quantized:
        if array.dtype != np.dtype(spec.format_type.numpy_dtype):
            raise SpecError(
                f"output {spec.name!r}: format type {spec.format_type.name} but array dtype {array.dtype}; "
                f"expected {spec.format_type.numpy_dtype}"
            )
        if not spec.quant or (len(spec.quant) == 1 and spec.quant[0].is_zero):
            raise SpecError(
                f"output {spec.name!r}: quantized ({spec.format_type.name}) with quant infos {spec.quant}; "
                f"expected one non-zero per-tensor quant info or one per channel"
            )
    else:
        raise SpecError(f"output {spec.name!r}: format type {spec.format_type.name}; expected FLOAT32, UINT8 or UINT16")
    return array.reshape(-1, spec.channels)


def to_float(array: np.ndarray, spec: OutputSpec) -> np.ndarray:
    return dequantize(array, spec.quant) if spec.is_quantized else array


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32, copy=False)
