"""Device <-> host layouts, one element at a time: the offset formulas of HailoRT's transform loops.

hailort: hailort/libhailort/src/transform/transform.cpp (``transform__d2h_NHWC_to_NHWC``,
``transform__d2h_NHCW_to_NHWC``, ``transform__d2h_F8CR``, ``transform__d2h_NC_to_NC`` and their
h2d counterparts). ``padded`` is ``(Hp, Wp, Cp)``, or ``(Cp,)`` for NC; the device frame is a flat
sequence of elements whose byte size is rounded up to a multiple of 8 (hailort_common.hpp,
``get_periph_frame_size``). Slow on purpose: this is the readable statement of the layouts.
"""

from __future__ import annotations

import numpy as np

from harness.core.specs import FormatOrder


def device_offset(order: FormatOrder, padded: tuple[int, ...], row: int, col: int, feature: int) -> int:
    """Index in the device frame of host element ``[row, col, feature]`` (``[feature]`` for NC)."""
    if order == FormatOrder.NC:
        return feature
    _, wp, cp = padded
    row_start = row * wp * cp
    if order in (FormatOrder.NHWC, FormatOrder.FCR):
        return row_start + col * cp + feature
    if order == FormatOrder.NHCW:
        return row_start + feature * wp + col
    if order == FormatOrder.F8CR:
        block, lane = divmod(feature, 8)
        return row_start + block * 8 * wp + col * 8 + lane
    raise ValueError(f"no device layout for {order.name}")


def input_offset(
    order: FormatOrder, padded: tuple[int, ...], shape: tuple[int, ...], row: int, col: int, feature: int
) -> int:
    """Where HailoRT's input transform writes host element ``[row, col, feature]``: as the output side
    reads it, but for NHWC, whose rows it copies dense (``W x C``) and zero-pads at the row's end
    (``transform__h2d_NHWC_to_NHWC``)."""
    if order == FormatOrder.NHWC:
        _, wp, cp = padded
        return row * wp * cp + col * shape[2] + feature
    return device_offset(order, padded, row, col, feature)


def _host_indices(shape: tuple[int, ...]) -> list[tuple[int, int, int]]:
    if len(shape) == 1:
        return [(0, 0, f) for f in range(shape[0])]
    height, width, features = shape
    return [(r, c, f) for r in range(height) for c in range(width) for f in range(features)]


def device_to_host(
    device: np.ndarray, order: FormatOrder, shape: tuple[int, ...], padded: tuple[int, ...]
) -> np.ndarray:
    """Flat device frame (elements) -> host array of ``shape``; padding elements are never read."""
    flat = list(np.asarray(device).reshape(-1))
    host = np.zeros(shape, dtype=np.asarray(device).dtype)
    for r, c, f in _host_indices(shape):
        index = (f,) if len(shape) == 1 else (r, c, f)
        host[index] = flat[device_offset(order, padded, r, c, f)]
    return host


def host_to_device(host: np.ndarray, order: FormatOrder, padded: tuple[int, ...]) -> np.ndarray:
    """Host array -> flat device frame: zero padding, length rounded up to whole 8-byte words."""
    host = np.asarray(host)
    elements = 1
    for d in padded:
        elements *= d
    while (elements * host.dtype.itemsize) % 8 != 0:
        elements += 1
    device = np.zeros(elements, dtype=host.dtype)
    for r, c, f in _host_indices(host.shape):
        index = (f,) if host.ndim == 1 else (r, c, f)
        device[input_offset(order, padded, host.shape, r, c, f)] = host[index]
    return device
