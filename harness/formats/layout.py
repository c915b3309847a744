"""One frame's device-side stream buffer <-> its host-side array, as HailoRT's transform does it.

Device dims (``padded``) are ``(padded_height, padded_width, padded_features)`` for image orders
and ``(padded_features,)`` for NC, the ``ProtoHEFEdgeLayerBase`` fields a HEF stores (hailort:
hailort/libhailort/src/hef/hef.cpp, ``hw_shape``); pass them when the HEF is at hand. Every host
array is dense and channel-last: ``(H, W, C)``, or ``(C,)`` for NC (hailort:
hailort/libhailort/include/hailo/hailort.h, ``hailo_format_order_t``). Device memory, per order
(hailort: hailort/libhailort/src/transform/transform.cpp, ``reorder_output_stream``):

- NHWC, FCR: ``[Hp, Wp, Cp]``; the host copy drops padded width and features, no permutation
  (``transform__d2h_NHWC_to_NHWC`` serves both; FCR's default host order is FCR, hailort:
  hailort/libhailort/src/hailort_defaults.cpp, ``DEFAULT_FORMAT_ORDER_MAP``).
- NHCW: ``[Hp, Cp, Wp]``; the host array is its transpose (``transform__d2h_NHCW_to_NHWC``).
- F8CR: per row, ``Cp / 8`` blocks of ``Wp x 8`` channels (``transform__d2h_F8CR``).
- NC: ``[Cp]`` (``transform__d2h_NC_to_NC``).

A device frame is the dense ``prod(padded) * itemsize`` bytes, rounded up to whole 8-byte words
(hailort: hailort/libhailort/include/hailo/hailort_common.hpp, ``get_periph_frame_size``, which
``FrameOutputTransformContext::transform`` requires); buffers of either size are read.
"""

from __future__ import annotations

from math import gcd, prod

import numpy as np

from harness.core.errors import MalformedBufferError, SpecError
from harness.core.specs import FormatOrder

HW_DATA_ALIGNMENT = 8  # bytes (hailort: hailort/libhailort/include/hailo/hailort_common.hpp)
F8CR_BLOCK = 8  # channels per F8CR block (hailort: transform.cpp, transform__d2h_F8CR)
IMAGE_ORDERS = (FormatOrder.NHWC, FormatOrder.FCR, FormatOrder.NHCW, FormatOrder.F8CR)
SUPPORTED_ORDERS = (*IMAGE_ORDERS, FormatOrder.NC)
DEVICE_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16))


def _align(n: int, step: int) -> int:
    return -(-n // step) * step


def _device_dtype(dtype: np.dtype | str | type, name: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in DEVICE_DTYPES:
        raise SpecError(f"{name}: device type {dt} is not uint8 or uint16")
    return dt


def _check_dims(order: FormatOrder, dims: tuple[int, ...], field: str, name: str) -> tuple[int, ...]:
    if order not in SUPPORTED_ORDERS:
        raise SpecError(
            f"{name}: format order {order.name} has no device layout here: expected one of "
            f"{', '.join(o.name for o in SUPPORTED_ORDERS)}"
        )
    rank = 1 if order is FormatOrder.NC else 3
    dims = tuple(int(d) for d in dims)
    if len(dims) != rank or min(dims) < 1:
        raise SpecError(f"{name}: {order.name} {field} {dims} must be {rank} positive dims")
    return dims


def padded_shape(order: FormatOrder, shape: tuple[int, ...], dtype: np.dtype | str | type) -> tuple[int, ...]:
    """Device dims for a host shape when no HEF says otherwise (a HEF's padded dims always win).

    NHWC/FCR outputs: width padded until a row of ``W x C`` elements fills whole 8-byte words;
    NHCW: width padded to a multiple of 8 bytes; F8CR: channels padded to a multiple of 8; NC:
    channels padded to a multiple of 8 bytes (hailort: hailort.h, ``hailo_format_order_t``). Real
    HEFs agree: a Hailo-8L yolov8s stores NHCW 20x20x64 as padded width 24, 80x80x3 unpadded; a
    Hailo-8 FCR 4x4x16 keeps width 4 (its rows are already 64 bytes).
    """
    itemsize = _device_dtype(dtype, "padded_shape").itemsize
    dims = _check_dims(order, shape, "shape", "padded_shape")
    words = HW_DATA_ALIGNMENT // itemsize  # elements per 8-byte word
    if order is FormatOrder.NC:
        return (_align(dims[0], words),)
    h, w, c = dims
    if order is FormatOrder.NHCW:
        return (h, _align(w, words), c)
    if order is FormatOrder.F8CR:
        return (h, w, _align(c, F8CR_BLOCK))
    return (h, _align(w, HW_DATA_ALIGNMENT // gcd(HW_DATA_ALIGNMENT, c * itemsize)), c)


def _device_geometry(
    order: FormatOrder, shape: tuple[int, ...], dtype: np.dtype, padded: tuple[int, ...] | None, name: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Checked ``(shape, padded)``."""
    shape = _check_dims(order, shape, "shape", name)
    padded = padded_shape(order, shape, dtype) if padded is None else _check_dims(order, padded, "padded dims", name)
    if any(p < s for p, s in zip(padded, shape, strict=True)):
        raise SpecError(f"{name}: {order.name} padded dims {padded} are smaller than the shape {shape}")
    if order is FormatOrder.F8CR and padded[2] % F8CR_BLOCK:
        raise SpecError(f"{name}: F8CR padded features {padded[2]} must be a multiple of {F8CR_BLOCK}")
    return shape, padded


def _memory_dims(order: FormatOrder, padded: tuple[int, ...]) -> tuple[int, ...]:
    """Axes of the device frame in memory order."""
    if order is FormatOrder.NC:
        return padded
    hp, wp, cp = padded
    if order is FormatOrder.NHCW:
        return (hp, cp, wp)
    if order is FormatOrder.F8CR:
        return (hp, cp // F8CR_BLOCK, wp, F8CR_BLOCK)
    return (hp, wp, cp)


def frame_bytes(order: FormatOrder, padded: tuple[int, ...], dtype: np.dtype | str | type) -> tuple[int, int]:
    """``(dense, aligned)`` byte sizes of one device frame; HailoRT transfers the aligned one."""
    dense = prod(padded) * np.dtype(dtype).itemsize
    return dense, _align(dense, HW_DATA_ALIGNMENT)


def _as_bytes(buffer: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    if isinstance(buffer, np.ndarray):
        return np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
    return np.frombuffer(buffer, dtype=np.uint8)


def device_to_host(
    buffer: bytes | bytearray | memoryview | np.ndarray,
    order: FormatOrder,
    shape: tuple[int, ...],
    dtype: np.dtype | str | type,
    padded: tuple[int, ...] | None = None,
    *,
    name: str = "device buffer",
) -> np.ndarray:
    """One device frame (raw bytes, or an array of its elements) -> the dense host array of ``dtype``."""
    dt = _device_dtype(dtype, name)
    shape, padded = _device_geometry(order, shape, dt, padded, name)
    raw = _as_bytes(buffer)
    dense, aligned = frame_bytes(order, padded, dt)
    if raw.size not in (dense, aligned):
        sizes = f"{dense}" if dense == aligned else f"{dense} (or {aligned} with 8-byte frame alignment)"
        raise MalformedBufferError(
            f"{name}: {order.name} {dt} frame of host shape {shape}, device dims {padded}: "
            f"expected {sizes} bytes, found {raw.size}"
        )
    device = raw[:dense].view(dt).reshape(_memory_dims(order, padded))
    if order is FormatOrder.NC:
        return device[: shape[0]].copy()
    h, w, c = shape
    if order is FormatOrder.NHCW:
        return device[:h, :c, :w].transpose(0, 2, 1).copy()
    if order is FormatOrder.F8CR:
        rows = device[:h, :, :w, :].transpose(0, 2, 1, 3).reshape(h, w, padded[2])
        return rows[:, :, :c].copy()
    return device[:h, :w, :c].copy()


def host_to_device(
    array: np.ndarray, order: FormatOrder, padded: tuple[int, ...] | None = None, *, name: str = "host array"
) -> np.ndarray:
    """Dense host array (uint8/uint16) -> one device frame as a 1-D array of its elements.

    Padding is zero and the frame is 8-byte aligned, as HailoRT's input transform writes it: the
    inverse of :func:`device_to_host`, but for NHWC with padded features, whose rows HailoRT copies
    dense (``W x C`` elements) and zero-pads at the row's end (hailort: transform.cpp,
    ``transform__h2d_NHWC_to_NHWC``; held to it by tests/backends/test_hailort_oracle.py).
    """
    array = np.asarray(array)
    dt = _device_dtype(array.dtype, name)
    shape, padded = _device_geometry(order, array.shape, dt, padded, name)
    dense, aligned = frame_bytes(order, padded, dt)
    frame = np.zeros(aligned // dt.itemsize, dtype=dt)
    device = frame[: dense // dt.itemsize].reshape(_memory_dims(order, padded))
    if order is FormatOrder.NC:
        device[: shape[0]] = array
        return frame
    h, w, c = shape
    if order is FormatOrder.NHCW:
        device[:h, :c, :w] = array.transpose(0, 2, 1)
    elif order is FormatOrder.F8CR:
        rows = np.zeros((h, w, padded[2]), dtype=dt)
        rows[:, :, :c] = array
        device[:h, :, :w, :] = rows.reshape(h, w, -1, F8CR_BLOCK).transpose(0, 2, 1, 3)
    elif order is FormatOrder.FCR:
        device[:h, :w, :c] = array
    else:
        device.reshape(padded[0], -1)[:h, : w * c] = array.reshape(h, w * c)
    return frame
