"""The one detections type every decoder and NMS codec produces, and its coordinate conversions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Detections:
    """Detections of one image.

    ``boxes`` is float32 ``(N, 4)`` x_min, y_min, x_max, y_max in pixels of the space named by the
    producer (model input pixels unless converted with :func:`unletterbox`); ``scores`` float32
    ``(N,)``; ``class_ids`` int64 ``(N,)``. Order is not meaningful; :meth:`sorted` gives a
    canonical one.
    """

    boxes: np.ndarray
    scores: np.ndarray
    class_ids: np.ndarray

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, dtype=np.float32).reshape(-1, 4)
        scores = np.asarray(self.scores, dtype=np.float32).reshape(-1)
        class_ids = np.asarray(self.class_ids, dtype=np.int64).reshape(-1)
        if not len(boxes) == len(scores) == len(class_ids):
            raise ValueError(
                f"detections: {len(boxes)} boxes, {len(scores)} scores and {len(class_ids)} class ids must match"
            )
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "class_ids", class_ids)

    @classmethod
    def empty(cls) -> Detections:
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))

    @classmethod
    def concatenate(cls, parts: list[Detections]) -> Detections:
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.boxes for p in parts]),
            np.concatenate([p.scores for p in parts]),
            np.concatenate([p.class_ids for p in parts]),
        )

    def __len__(self) -> int:
        return len(self.scores)

    def select(self, index: np.ndarray) -> Detections:
        return Detections(self.boxes[index], self.scores[index], self.class_ids[index])

    def sorted(self) -> Detections:
        """Canonical order: class id ascending, then score descending, then box coordinates."""
        b = self.boxes
        order = np.lexsort((b[:, 3], b[:, 2], b[:, 1], b[:, 0], -self.scores, self.class_ids))
        return self.select(order)


def yxyx_normalized_to_xyxy_pixels(yxyx: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """HailoRT NMS records (y_min, x_min, y_max, x_max, normalised to the model input;
    hailort: hailort/libhailort/include/hailo/hailort.h, ``hailo_bbox_float32_t``) -> pixel xyxy."""
    h, w = input_hw
    yxyx = np.asarray(yxyx, dtype=np.float32).reshape(-1, 4)
    scale = np.array([w, h, w, h], dtype=np.float32)
    return yxyx[:, [1, 0, 3, 2]] * scale


def xyxy_pixels_to_yxyx_normalized(xyxy: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """Inverse of :func:`yxyx_normalized_to_xyxy_pixels`."""
    h, w = input_hw
    xyxy = np.asarray(xyxy, dtype=np.float32).reshape(-1, 4)
    scale = np.array([w, h, w, h], dtype=np.float32)
    return (xyxy / scale)[:, [1, 0, 3, 2]]


@dataclass(frozen=True)
class Letterbox:
    """How an original image was placed into the model input: scaled by ``scale`` then offset by
    ``pad_x``/``pad_y`` pixels (Ultralytics' and the Model Zoo's letterbox; a plain resize has
    different x and y scales and no padding)."""

    original_hw: tuple[int, int]
    input_hw: tuple[int, int]
    scale_x: float
    scale_y: float
    pad_x: float
    pad_y: float
    # boxes mapped back are clipped to the original image; yolo val's metric matches its boxes as
    # predicted, past the image's edges (ultralytics: ultralytics/models/yolo/detect/val.py
    # update_metrics matches NMS's boxes in the letterboxed frame; only scale_boxes for saved results clips)
    clip: bool = True

    @classmethod
    def fit(cls, original_hw: tuple[int, int], input_hw: tuple[int, int]) -> Letterbox:
        """Keep the aspect ratio, centre the image, pad the rest (Ultralytics ``LetterBox``).

        ``pad_x``/``pad_y`` are the whole left/top border Ultralytics actually adds, ``round(dw - 0.1)`` of
        the half padding ``dw``; each axis scales by the size it was resized to over its original size,
        ``round(w * r) / w`` and ``round(h * r) / h``, so the resized image's edges map back onto the
        original's (ultralytics: ultralytics/data/augment.py ``LetterBox.__call__``; ultralytics/utils/ops.py
        ``scale_boxes``, per-axis gains since 8.4).
        """
        oh, ow = original_hw
        ih, iw = input_hw
        r = min(ih / oh, iw / ow)
        new_w, new_h = round(ow * r), round(oh * r)
        left, top = round((iw - new_w) / 2 - 0.1), round((ih - new_h) / 2 - 0.1)
        return cls(original_hw, input_hw, new_w / ow, new_h / oh, float(left), float(top))

    @classmethod
    def resize(cls, original_hw: tuple[int, int], input_hw: tuple[int, int]) -> Letterbox:
        """Plain resize to the input size, aspect ratio not kept."""
        oh, ow = original_hw
        ih, iw = input_hw
        return cls(original_hw, input_hw, iw / ow, ih / oh, 0.0, 0.0)


def unletterbox(detections: Detections, letterbox: Letterbox, clip: bool = True) -> Detections:
    """Model-input pixel boxes -> original-image pixel boxes, clipped to the image where both ``clip``
    and the geometry's :attr:`Letterbox.clip` ask for it."""
    lb = letterbox
    offset = np.array([lb.pad_x, lb.pad_y, lb.pad_x, lb.pad_y], dtype=np.float32)
    scale = np.array([lb.scale_x, lb.scale_y, lb.scale_x, lb.scale_y], dtype=np.float32)
    boxes = (detections.boxes - offset) / scale
    if clip and lb.clip:
        oh, ow = lb.original_hw
        boxes = np.clip(boxes, 0, np.array([ow, oh, ow, oh], dtype=np.float32))
    return Detections(boxes, detections.scores, detections.class_ids)


def letterbox_boxes(boxes_xyxy: np.ndarray, letterbox: Letterbox) -> np.ndarray:
    """Original-image pixel boxes -> model-input pixel boxes (inverse of :func:`unletterbox`)."""
    lb = letterbox
    offset = np.array([lb.pad_x, lb.pad_y, lb.pad_x, lb.pad_y], dtype=np.float32)
    scale = np.array([lb.scale_x, lb.scale_y, lb.scale_x, lb.scale_y], dtype=np.float32)
    return np.asarray(boxes_xyxy, dtype=np.float32).reshape(-1, 4) * scale + offset


def xywh_to_xyxy(xywh: np.ndarray) -> np.ndarray:
    """Ultralytics' centre/size boxes ``(A, 4)`` -> corner boxes."""
    xy, wh = xywh[:, :2], xywh[:, 2:]
    return np.concatenate([xy - wh / 2, xy + wh / 2], axis=1).astype(np.float32)
