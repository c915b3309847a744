"""Images into model inputs the way Ultralytics prepares them: load as RGB, letterbox, scale to [0, 1].

Ultralytics' ``LetterBox`` (ultralytics/data/augment.py) resizes with ``cv2.resize(...,
INTER_LINEAR)`` to ``round(w * r), round(h * r)`` and pads with 114, ``top = round(dh - 0.1)``,
``left = round(dw - 0.1)`` for half-paddings ``dh``, ``dw``. The harness resizes and pads with
OpenCV too (opencv-python-headless), so its frames are Ultralytics' by construction. PIL's
bilinear filter is no substitute: it antialiases when shrinking and differs by up to 107 grey
levels at a 2x reduction.

``yolo val`` prepares its frames otherwise (:func:`ultralytics_val`, ``Preprocess.ULTRALYTICS_VAL``): its
loader first resizes the long side to the input's with ``ceil``, then letterboxes without scaling up.
"""

from __future__ import annotations

import io
import math
import os
import stat

import numpy as np
from PIL import Image

from harness.core import defaults
from harness.core.detections import Letterbox
from harness.core.errors import HarnessError
from harness.core.settings import Preprocess

MAX_IMAGE_BYTES = 1 << 30  # the longest image file read


def load_image(path: str | os.PathLike[str]) -> np.ndarray:
    """uint8 ``(H, W, 3)`` RGB decoded as Ultralytics decodes it (``cv2.imread``: EXIF orientation applied;
    grey, alpha, palette and CMYK images converted to colour, alpha dropped). The size is read from the
    header first: an image over :data:`~harness.core.defaults.MAX_IMAGE_PIXELS` is refused undecoded."""
    import cv2  # imported on first use (0.015 s): a rerun from the prediction cache reads no image

    name = os.fspath(path)
    try:
        raw = _regular_file_bytes(path)
        with Image.open(io.BytesIO(raw)) as header:  # reads the header, not the pixels
            width, height = header.size
        data = np.frombuffer(raw, dtype=np.uint8)
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


def _regular_file_bytes(path: str | os.PathLike[str]) -> bytes:
    """A regular file's bytes; a device, a pipe or a socket (a link to ``/dev/zero``, a FIFO) is
    refused unread (an :class:`OSError`), as is a file over :data:`MAX_IMAGE_BYTES`: no read that
    never ends or never returns."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe without a writer: no wait
    with open(fd, "rb") as file:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError("not a regular file (a folder, a device, a pipe or a socket)")
        if status.st_size > MAX_IMAGE_BYTES:
            raise OSError(f"{status.st_size} bytes, more than the {MAX_IMAGE_BYTES} an image file is read up to")
        return file.read(status.st_size + 1)


def _check_image(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise HarnessError(f"image: {image.dtype} array of shape {image.shape}, expected uint8 (H, W, 3)")
    return image


def resize(image: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """uint8 ``(H, W, 3)`` -> uint8 ``input_hw + (3,)``, ``cv2.resize(INTER_LINEAR)`` (aspect ratio not kept)."""
    import cv2

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
    import cv2

    image = _check_image(image)
    geometry = Letterbox.fit(image.shape[:2], input_hw)
    oh, ow = image.shape[:2]
    new_h, new_w = round(oh * geometry.scale_y), round(ow * geometry.scale_x)
    top, left = round(geometry.pad_y - 0.1), round(geometry.pad_x - 0.1)
    bottom, right = input_hw[0] - new_h - top, input_hw[1] - new_w - left
    fitted = resize(image, (new_h, new_w))
    value = (pad_value, pad_value, pad_value)
    return cv2.copyMakeBorder(fitted, top, bottom, left, right, cv2.BORDER_CONSTANT, value=value), geometry


def ultralytics_val(image: np.ndarray, input_hw: tuple[int, int], pad_value: int = 114) -> tuple[np.ndarray, Letterbox]:
    """The frame ``yolo val`` feeds its model, and where the original sits in it (boxes not clipped).

    ultralytics 8.4.190: ultralytics/data/base.py ``BaseDataset.load_image`` (``rect_mode``): the long side
    to ``max(imgsz)``, each side ``min(ceil(side * r), imgsz)``, ``cv2.resize(INTER_LINEAR)``, unless
    ``r == 1``; then ultralytics/data/dataset.py ``build_transforms`` (not augmenting):
    ``LetterBox(new_shape=imgsz, scaleup=False)``, centred, ``auto`` off (ultralytics/engine/validator.py
    turns ``rect`` off for a fixed-size export), which for a square input only pads.
    """
    import cv2

    image = _check_image(image)
    geometry = ultralytics_val_geometry(image.shape[:2], input_hw)
    loaded = resize(image, _loaded_hw(image.shape[:2], input_hw))
    new_h, new_w = _val_fitted_hw(loaded.shape[:2], input_hw)
    top, left = int(geometry.pad_y), int(geometry.pad_x)
    bottom, right = input_hw[0] - new_h - top, input_hw[1] - new_w - left
    value = (pad_value, pad_value, pad_value)
    fitted = resize(loaded, (new_h, new_w))
    return cv2.copyMakeBorder(fitted, top, bottom, left, right, cv2.BORDER_CONSTANT, value=value), geometry


def ultralytics_val_geometry(original_hw: tuple[int, int], input_hw: tuple[int, int]) -> Letterbox:
    """Where :func:`ultralytics_val` places an image of ``original_hw``. Each axis scales as ``yolo val``
    places its labels (``LetterBox._update_labels``: the loaded size times the letterbox's ratio), so a
    box mapped back meets the ground truth at the IoU ``yolo val`` measures in its frame."""
    loaded_h, loaded_w = _loaded_hw(original_hw, input_hw)
    ratio = _val_ratio((loaded_h, loaded_w), input_hw)
    new_h, new_w = _val_fitted_hw((loaded_h, loaded_w), input_hw)
    # LetterBox.get_params: half paddings, top = round(dh - 0.1), left = round(dw - 0.1)
    top, left = round((input_hw[0] - new_h) / 2 - 0.1), round((input_hw[1] - new_w) / 2 - 0.1)
    scale_x, scale_y = loaded_w * ratio / original_hw[1], loaded_h * ratio / original_hw[0]
    return Letterbox(original_hw, input_hw, scale_x, scale_y, float(left), float(top), clip=False)


def _loaded_hw(original_hw: tuple[int, int], input_hw: tuple[int, int]) -> tuple[int, int]:
    """``load_image``'s size: the long side to ``max(input_hw)``, ``ceil`` and at most that."""
    size = max(input_hw)
    r = size / max(original_hw)
    if r == 1:
        return original_hw
    return min(math.ceil(original_hw[0] * r), size), min(math.ceil(original_hw[1] * r), size)


def _val_ratio(loaded_hw: tuple[int, int], input_hw: tuple[int, int]) -> float:
    """``LetterBox``'s ratio, at most 1 as ``scaleup=False`` wants: the loaded long side is the input's longest."""
    return min(input_hw[0] / loaded_hw[0], input_hw[1] / loaded_hw[1])


def _val_fitted_hw(loaded_hw: tuple[int, int], input_hw: tuple[int, int]) -> tuple[int, int]:
    """``LetterBox``'s ``new_unpad``: each side ``round(side * r)``, at least 1."""
    r = _val_ratio(loaded_hw, input_hw)
    return max(round(loaded_hw[0] * r), 1), max(round(loaded_hw[1] * r), 1)


def geometry(preprocess: Preprocess, original_hw: tuple[int, int], input_hw: tuple[int, int]) -> Letterbox:
    """Where :func:`fit` places an image of ``original_hw`` under ``preprocess``, without the image."""
    if preprocess is Preprocess.RESIZE:
        return Letterbox.resize(original_hw, input_hw)
    if preprocess is Preprocess.ULTRALYTICS_VAL:
        return ultralytics_val_geometry(original_hw, input_hw)
    return Letterbox.fit(original_hw, input_hw)


def fit(image: np.ndarray, preprocess: Preprocess, input_hw: tuple[int, int]) -> tuple[np.ndarray, Letterbox]:
    """uint8 ``(H, W, 3)`` -> the uint8 model-input image under ``preprocess`` and where the original sits in it."""
    if preprocess is Preprocess.RESIZE:
        return resize(image, input_hw), Letterbox.resize(np.shape(image)[:2], input_hw)
    if preprocess is Preprocess.ULTRALYTICS_VAL:
        return ultralytics_val(image, input_hw)
    return letterbox(image, input_hw)


def to_nchw_float(images: np.ndarray) -> np.ndarray:
    """uint8 ``(H, W, C)`` or ``(N, H, W, C)`` -> float32 ``(N, C, H, W)`` in ``[0, 1]``."""
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        raise HarnessError(f"images: {images.dtype} array of shape {images.shape}, expected uint8 HWC or NHWC")
    batch = images[None] if images.ndim == 3 else images
    # planes gathered as bytes, then converted and divided in place: the same float32 values (each byte's
    # float32 over 255) at a third of the cost of a strided float copy and a second array for the quotient
    planar = np.ascontiguousarray(batch.transpose(0, 3, 1, 2)).astype(np.float32)
    planar /= np.float32(255)
    return planar
