"""``yolo val``'s frame as Ultralytics' sources write it, step by step: ultralytics 8.4.190
ultralytics/data/base.py ``BaseDataset.load_image`` (``rect_mode``, not ``resize_short``) and
ultralytics/data/augment.py ``LetterBox.get_params`` / ``apply_image`` with the settings
ultralytics/data/dataset.py ``build_transforms`` gives it when not augmenting (``scaleup=False``,
``auto`` off, centred, padding 114). The image is RGB here, BGR there: both resize per channel."""

from __future__ import annotations

import math

import cv2
import numpy as np


def load_image(im: np.ndarray, imgsz: tuple[int, int]) -> np.ndarray:
    h0, w0 = im.shape[:2]
    size = max(imgsz)
    r = size / max(h0, w0)
    if r != 1:
        w, h = (min(math.ceil(w0 * r), size), min(math.ceil(h0 * r), size))
        im = cv2.resize(im, (w, h), interpolation=cv2.INTER_LINEAR)
    return im


def letterbox(img: np.ndarray, new_shape: tuple[int, int]) -> tuple[np.ndarray, float, int, int]:
    """The padded frame, the ratio and the left and top padding."""
    shape = img.shape[:2]
    r = min(new_shape[0] / shape[0], new_shape[1] / shape[1])
    r = min(r, 1.0)  # scaleup=False
    new_unpad = max(round(shape[1] * r), 1), max(round(shape[0] * r), 1)
    dw, dh = new_shape[1] - new_unpad[0], new_shape[0] - new_unpad[1]
    dw /= 2
    dh /= 2
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    if shape[::-1] != new_unpad:
        img = cv2.resize(img, new_unpad, interpolation=cv2.INTER_LINEAR)
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    return img, r, left, top


def val_frame(image: np.ndarray, input_hw: tuple[int, int]) -> tuple[np.ndarray, tuple[float, float], int, int]:
    """The frame, the (x, y) scale at which ``LetterBox._update_labels`` places an original pixel's
    coordinates, and the left and top padding."""
    loaded = load_image(image, input_hw)
    frame, r, left, top = letterbox(loaded, input_hw)
    scale = (loaded.shape[1] * r / image.shape[1], loaded.shape[0] * r / image.shape[0])
    return frame, scale, left, top
