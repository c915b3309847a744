"""The numpy re-implementation of OpenCV's 8-bit INTER_LINEAR resize the harness used before it
resized with OpenCV itself: the other side of the equality test (half-pixel centres, edge handling,
11-bit fixed-point weights and the rounding of OpenCV's vectorised x86 code)."""

from __future__ import annotations

import numpy as np

_COEF_BITS = 11  # OpenCV INTER_RESIZE_COEF_BITS
_COEF_SCALE = 1 << _COEF_BITS


def _linear_taps(n_out: int, n_in: int, zero_outside: bool) -> tuple[np.ndarray, ...]:
    """Source indices and fixed-point weights along one axis, as OpenCV's resize computes them.

    Positions before the first or after the last source sample read the edge sample. OpenCV sets
    their fraction to 0 along x, but along y keeps it and reads the edge row twice, which rounds
    differently in fixed point; ``zero_outside`` chooses the x rule.
    """
    f = ((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5).astype(np.float32)
    i0 = np.floor(f).astype(np.int64)
    f = f - i0.astype(np.float32)
    if zero_outside:
        outside = (i0 < 0) | (i0 >= n_in - 1)
        f[outside] = 0
        i0[outside] = np.clip(i0[outside], 0, n_in - 1)
    i1 = np.clip(i0 + 1, 0, n_in - 1)
    i0 = np.clip(i0, 0, n_in - 1)
    w0 = np.rint((np.float32(1) - f) * np.float32(_COEF_SCALE)).astype(np.int32)
    w1 = np.rint(f * np.float32(_COEF_SCALE)).astype(np.int32)
    return i0, i1, w0, w1


def reference_resize(image: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """uint8 ``(H, W, 3)`` -> uint8 ``input_hw + (3,)``, bilinear as ``cv2.resize(INTER_LINEAR)``
    (aspect ratio not kept)."""
    out_h, out_w = input_hw
    if image.shape[:2] == (out_h, out_w):
        return image.copy()
    y0, y1, b0, b1 = _linear_taps(out_h, image.shape[0], zero_outside=False)
    x0, x1, a0, a1 = _linear_taps(out_w, image.shape[1], zero_outside=True)
    rows0 = image[y0].astype(np.int32)
    rows1 = image[y1].astype(np.int32)
    a0, a1 = a0[None, :, None], a1[None, :, None]
    h0 = rows0[:, x0] * a0 + rows0[:, x1] * a1  # horizontal pass, scaled by 2**11
    h1 = rows1[:, x0] * a0 + rows1[:, x1] * a1
    # OpenCV's vectorised vertical pass: (((h0 >> 4) * b0) >> 16) + (((h1 >> 4) * b1) >> 16), then (s + 2) >> 2
    s = (((h0 >> 4) * b0[:, None, None]) >> 16) + (((h1 >> 4) * b1[:, None, None]) >> 16)
    return np.clip((s + 2) >> 2, 0, 255).astype(np.uint8)
