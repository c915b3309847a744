"""Images into model inputs the way Ultralytics prepares them: load as RGB, letterbox, scale to [0, 1].

Ultralytics' ``LetterBox`` (ultralytics/data/augment.py) resizes with ``cv2.resize(...,
INTER_LINEAR)`` to ``round(w * r), round(h * r)`` and pads with 114, ``top = round(dh - 0.1)``,
``left = round(dw - 0.1)`` for half-paddings ``dh``, ``dw``. The harness resizes and pads with
OpenCV too (opencv-python-headless), so its frames are Ultralytics' by construction. PIL's
bilinear filter is no substitute: it antialiases when shrinking and differs by up to 107 grey
levels at a 2x reduction.
"""

from __future__ import annotations

import os

import cv2
import numpy as np
from PIL import Image

from harness.core import defaults
from harness.core.detections import Letterbox
from harness.core.errors import HarnessError


def load_image(path: str | os.PathLike[str]) -> np.ndarray:
    """uint8 ``(H, W, 3)`` RGB decoded as Ultralytics decodes it (``cv2.imread``: EXIF orientation applied;
    grey, alpha, palette and CMYK images converted to colour, alpha dropped). The size is read from the
    header first: an image over :data:`~harness.core.defaults.MAX_IMAGE_PIXELS` is refused undecoded."""
    name = os.fspath(path)
    try:
        with Image.open(path) as header:  # reads the header, not the pixels
            width, height = header.size
        data = np.fromfile(path, dtype=np.uint8)
    except (OSError, ValueError, Image.DecompressionBombError) as error:
        raise HarnessError(f"image {name!r}: cannot be read as an image ({error})") from error
    if width * height > defaults.MAX_IMAGE_PIXELS:
        raise HarnessError(
            f"image {name!r}: {width}x{height} pixels, more than the limit of {defaults.MAX_IMAGE_PIXELS:,} pixels"
        )
    bgr = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if bgr is None:
        raise HarnessError(f"image {name!r}: its {width}x{height} pixels cannot be decoded (a damaged or cut file)")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _check_image(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise HarnessError(f"image: {image.dtype} array of shape {image.shape}, expected uint8 (H, W, 3)")
    return image


def resize(image: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """uint8 ``(H, W, 3)`` -> uint8 ``input_hw + (3,)``, ``cv2.resize(INTER_LINEAR)`` (aspect ratio not kept)."""
    image = _check_image(image)
    out_h, out_w = input_hw
    if out_h < 1 or out_w < 1:
        raise HarnessError(f"resize of a {image.shape[:2]} image: target size {(out_h, out_w)}, expected at least 1x1")
    if image.shape[:2] == (out_h, out_w):
        return image.copy()
    return cv2.resize(image, (out_w, out_h), interpolation=cv2.INTER_LINEAR)


def letterbox(image: np.ndarray, input_hw: tuple[int, int], pad_value: int = 114) -> tuple[np.ndarray, Letterbox]:
    """Keep the aspect ratio, resize, centre and pad (Ultralytics ``LetterBox``, ``auto=False``).

    Returns the uint8 ``input_hw + (3,)`` image and the :class:`Letterbox` geometry. Where the total
    padding is odd, Ultralytics places the image ``round(pad - 0.1)`` pixels in, i.e. half a pixel
    before ``Letterbox.pad_x``/``pad_y`` when those are half-integers.
    """
    image = _check_image(image)
    geometry = Letterbox.fit(image.shape[:2], input_hw)
    oh, ow = image.shape[:2]
    new_h, new_w = round(oh * geometry.scale_y), round(ow * geometry.scale_x)
    top, left = round(geometry.pad_y - 0.1), round(geometry.pad_x - 0.1)
    bottom, right = input_hw[0] - new_h - top, input_hw[1] - new_w - left
    fitted = resize(image, (new_h, new_w))
    value = (pad_value, pad_value, pad_value)
    return cv2.copyMakeBorder(fitted, top, bottom, left, right, cv2.BORDER_CONSTANT, value=value), geometry


def to_nchw_float(images: np.ndarray) -> np.ndarray:
    """uint8 ``(H, W, C)`` or ``(N, H, W, C)`` -> float32 ``(N, C, H, W)`` in ``[0, 1]``."""
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        raise HarnessError(f"images: {images.dtype} array of shape {images.shape}, expected uint8 HWC or NHWC")
    batch = images[None] if images.ndim == 3 else images
    return np.ascontiguousarray(batch.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255)
