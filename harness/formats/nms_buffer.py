"""HailoRT NMS outputs <-> :class:`~harness.core.detections.Detections`.

Four host-side forms carry the same detections of one frame:

- HAILO_NMS_BY_CLASS raw buffer: float32, per class (in class order) one ``bbox_count`` then that many
  ``hailo_bbox_float32_t`` records {y_min, x_min, y_max, x_max, score}, sorted by score descending;
  classes are packed one after another, sized for the maximum, unused space at the end
  (hailort: hailort/libhailort/src/net_flow/ops/nms_post_process.cpp, ``fill_nms_by_class_format_buffer``).
- HAILO_NMS_BY_SCORE raw buffer: uint16 count, then packed 22-byte ``hailo_detection_t`` records
  {5 x float32, uint16 class_id}, sorted by score descending
  (hailort: nms_post_process.cpp, ``fill_nms_by_score_format_buffer``; include/hailo/hailort.h).
- The TF form hailo_platform builds from a BY_CLASS buffer: ``[classes, 5, max_bboxes_per_class]``,
  zero-padded (hailort: hailort/libhailort/bindings/python/platform/hailo_platform/pyhailort/pyhailort.py,
  ``output_raw_buffer_to_nms_tf_format``).
- The per-class list hailo_platform builds from a BY_CLASS buffer: one ``(n, 5)`` array per class
  (pyhailort.py, ``output_raw_buffer_to_nms_format_single_frame``); for BY_SCORE it builds a list of
  ``Detection`` objects instead (pyhailort.py, ``_output_raw_buffer_to_nms_by_score_format_single_frame``).

Records are normalised to the model input, y first, not clipped. Class ids are the 0-based class
index: the YOLOv8 op emits ``curr_class_idx`` with no offset (hailort: src/net_flow/ops/
yolov8_post_process.hpp, ``extract_detections``). Every function handles one frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.detections import Detections, xyxy_pixels_to_yxyx_normalized, yxyx_normalized_to_xyxy_pixels
from harness.core.errors import MalformedBufferError, SpecError
from harness.core.specs import FormatOrder, NmsShape, OutputSpec

# hailort: hailort/libhailort/include/hailo/hailort_common.hpp, BBOX_PARAMS / DETECTION_COUNT_SIZE /
# DETECTION_BY_SCORE_SIZE (= sizeof(hailo_detection_t), packed with #pragma pack(1) in hailort.h)
BBOX_PARAMS = 5
RECORD_FIELDS = ("y_min", "x_min", "y_max", "x_max", "score")
DETECTION_COUNT_SIZE = 2
BY_SCORE_RECORD = np.dtype(
    [("y_min", "<f4"), ("x_min", "<f4"), ("y_max", "<f4"), ("x_max", "<f4"), ("score", "<f4"), ("class_id", "<u2")]
)
DETECTION_BY_SCORE_SIZE = BY_SCORE_RECORD.itemsize  # 22


@dataclass(frozen=True)
class NmsDetection:
    """One BY_SCORE detection with the attributes of hailo_platform's ``Detection``
    (hailort: pyhailort.py, ``class Detection``)."""

    y_min: float
    x_min: float
    y_max: float
    x_max: float
    score: float
    class_id: int


def by_class_size(nms: NmsShape) -> int:
    """Floats in a BY_CLASS frame: ``classes * (1 + 5 * max_bboxes_per_class)``
    (hailort: include/hailo/hailort_common.hpp, ``get_nms_by_class_host_shape_size``)."""
    return nms.number_of_classes * (1 + BBOX_PARAMS * nms.max_bboxes_per_class)


def by_score_size(nms: NmsShape) -> int:
    """Bytes in a BY_SCORE frame: ``2 + 22 * max_bboxes_total``
    (hailort: include/hailo/hailort_common.hpp, ``get_nms_by_score_host_frame_size``)."""
    return DETECTION_COUNT_SIZE + DETECTION_BY_SCORE_SIZE * nms.max_total


# ---------------------------------------------------------------------------------------------- helpers


def _nms_of(spec: OutputSpec) -> NmsShape:
    if spec.nms is None:
        raise SpecError(f"output {spec.name!r}: format order {spec.format_order.name} has no nms shape")
    return spec.nms


def _malformed(spec: OutputSpec, field: str, expected: object, found: object) -> MalformedBufferError:
    return MalformedBufferError(f"output {spec.name!r}: {field}: expected {expected}, found {found}")


def _raw_bytes(buffer: object, spec: OutputSpec, dtype: np.dtype) -> np.ndarray:
    """A bytes-like object or an ndarray of ``dtype`` -> flat ndarray of ``dtype`` (no copy where possible)."""
    if isinstance(buffer, (bytes, bytearray, memoryview)):
        raw = memoryview(buffer).cast("B")
        if len(raw) % dtype.itemsize:
            raise _malformed(spec, "buffer size", f"a multiple of {dtype.itemsize} bytes", f"{len(raw)} bytes")
        return np.frombuffer(raw, dtype=dtype)
    if isinstance(buffer, np.ndarray):
        if buffer.dtype != dtype:
            raise _malformed(spec, "buffer dtype", dtype.name, buffer.dtype.name)
        if buffer.ndim != 1:
            raise _malformed(spec, "buffer shape", "a flat buffer of one frame", buffer.shape)
        return np.ascontiguousarray(buffer)
    raise _malformed(spec, "buffer type", "bytes or a numpy array", type(buffer).__name__)


def _check_finite(records: np.ndarray, spec: OutputSpec, label: Callable[[int], str]) -> None:
    """``records`` (N, 5) float32; ``label(row)`` names a record's position for the message."""
    bad = ~np.isfinite(records)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise _malformed(spec, f"{label(int(row))} field {RECORD_FIELDS[col]}", "a finite float", records[row, col])


def _detections(records: np.ndarray, class_ids: np.ndarray, input_hw: tuple[int, int]) -> Detections:
    records = np.asarray(records, dtype=np.float32).reshape(-1, BBOX_PARAMS)
    return Detections(yxyx_normalized_to_xyxy_pixels(records[:, :4], input_hw), records[:, 4], class_ids)


def _records(dets: Detections, input_hw: tuple[int, int]) -> np.ndarray:
    """(N, 5) float32 y_min, x_min, y_max, x_max, score."""
    yxyx = xyxy_pixels_to_yxyx_normalized(dets.boxes, input_hw)
    return np.concatenate([yxyx, dets.scores[:, None]], axis=1).astype(np.float32)


def _by_class_order(dets: Detections, spec: OutputSpec) -> tuple[Detections, np.ndarray]:
    """Detections sorted by class, then score descending, and the per-class counts; checks they fit."""
    nms = _nms_of(spec)
    ids = dets.class_ids
    if len(ids) and (ids.min() < 0 or ids.max() >= nms.number_of_classes):
        raise SpecError(
            f"output {spec.name!r}: class ids must lie in [0, {nms.number_of_classes}), found {ids.min()}..{ids.max()}"
        )
    counts = np.bincount(ids, minlength=nms.number_of_classes)
    if len(ids) and counts.max() > nms.max_bboxes_per_class:
        worst = int(counts.argmax())
        raise SpecError(
            f"output {spec.name!r}: class {worst} has {counts[worst]} detections, "
            f"at most max_bboxes_per_class = {nms.max_bboxes_per_class} fit"
        )
    return dets.select(np.lexsort((-dets.scores, ids))), counts


# ---------------------------------------------------------------------------------------------- BY_CLASS


def decode_nms_by_class(buffer: object, spec: OutputSpec, input_hw: tuple[int, int]) -> Detections:
    """HAILO_NMS_BY_CLASS frame (float32 ndarray or bytes) -> Detections in model-input pixels.

    Space after the last class is not read: HailoRT writes only counts and records into the user's buffer.
    """
    nms = _nms_of(spec)
    flat = _raw_bytes(buffer, spec, np.dtype("<f4"))
    if flat.size != by_class_size(nms):
        raise _malformed(
            spec,
            "buffer size",
            f"{by_class_size(nms)} float32 ({nms.number_of_classes} classes x (1 + 5 x {nms.max_bboxes_per_class}))",
            f"{flat.size} float32",
        )
    counts = np.zeros(nms.number_of_classes, dtype=np.int64)
    starts = np.zeros(nms.number_of_classes, dtype=np.int64)
    pos = 0
    # The counts sit at offsets that depend on every earlier count: a walk over classes, not cells.
    # Each count <= max_bboxes_per_class keeps every class inside the buffer by construction of its size.
    for k in range(nms.number_of_classes):
        value = float(flat[pos])
        if not (np.isfinite(value) and value == int(value) and 0 <= value <= nms.max_bboxes_per_class):
            raise _malformed(
                spec,
                f"bbox_count of class {k} (float {pos})",
                f"an integer in [0, max_bboxes_per_class = {nms.max_bboxes_per_class}]",
                value,
            )
        counts[k] = int(value)
        starts[k] = pos + 1
        pos += 1 + BBOX_PARAMS * counts[k]
    class_ids = np.repeat(np.arange(nms.number_of_classes, dtype=np.int64), counts)
    rank = np.arange(len(class_ids)) - np.repeat(np.cumsum(counts) - counts, counts)
    first = np.repeat(starts, counts) + BBOX_PARAMS * rank
    records = flat[first[:, None] + np.arange(BBOX_PARAMS)]
    _check_finite(records, spec, lambda i: f"record {rank[i]} of class {class_ids[i]}")
    return _detections(records, class_ids, input_hw)


def encode_nms_by_class(dets: Detections, spec: OutputSpec, input_hw: tuple[int, int]) -> np.ndarray:
    """Detections -> HAILO_NMS_BY_CLASS frame: float32 ``(classes * (1 + 5 * max),)``, zero after the last class."""
    nms = _nms_of(spec)
    ordered, counts = _by_class_order(dets, spec)
    before = np.cumsum(counts) - counts
    out = np.zeros(by_class_size(nms), dtype=np.float32)
    out[np.arange(nms.number_of_classes) + BBOX_PARAMS * before] = counts
    first = ordered.class_ids + 1 + BBOX_PARAMS * np.arange(len(ordered))
    out[first[:, None] + np.arange(BBOX_PARAMS)] = _records(ordered, input_hw)
    return out


# ---------------------------------------------------------------------------------------------- BY_SCORE


def decode_nms_by_score(buffer: object, spec: OutputSpec, input_hw: tuple[int, int]) -> Detections:
    """HAILO_NMS_BY_SCORE frame (bytes or uint8 ndarray) -> Detections.

    hailo_platform allocates this output as uint8 of the frame's byte size (hailort: hailort/libhailort/
    bindings/python/src/bindings_common.hpp, ``get_pybind_shape``); pass other buffers as bytes.
    """
    nms = _nms_of(spec)
    raw = _raw_bytes(buffer, spec, np.dtype("u1"))
    if raw.size != by_score_size(nms):
        raise _malformed(
            spec, "buffer size", f"{by_score_size(nms)} bytes (2 + 22 x max_bboxes_total {nms.max_total})", raw.size
        )
    count = int(raw[:DETECTION_COUNT_SIZE].view("<u2")[0])
    if count > nms.max_total:
        raise _malformed(spec, "count", f"at most max_bboxes_total = {nms.max_total}", count)
    table = np.frombuffer(raw.data, dtype=BY_SCORE_RECORD, count=count, offset=DETECTION_COUNT_SIZE)
    records = np.stack([table[f] for f in RECORD_FIELDS], axis=1)
    _check_finite(records, spec, lambda i: f"detection {i}")
    class_ids = table["class_id"].astype(np.int64)
    if count and class_ids.max() >= nms.number_of_classes:
        i = int(class_ids.argmax())
        raise _malformed(spec, f"detection {i} class_id", f"a class id below {nms.number_of_classes}", class_ids[i])
    return _detections(records, class_ids, input_hw)


def decode_tf_nms(array: np.ndarray, spec: OutputSpec, input_hw: tuple[int, int]) -> Detections:
    """``[classes, 5, max_bboxes_per_class]`` of one frame -> Detections.

    A slot holds a detection when its score is non-zero: HailoRT never emits score 0 (its removed-box
    marker, ``REMOVED_CLASS_SCORE``; hailort: src/net_flow/ops/nms_post_process.hpp) and pads with all-zero
    records. Padding must follow a class's detections and be all zero.
    """
    nms = _nms_of(spec)
    array = np.asarray(array)
    expected = (nms.number_of_classes, BBOX_PARAMS, nms.max_bboxes_per_class)
    if array.shape != expected:
        raise _malformed(
            spec, "tf_nms shape", f"{expected} (classes, 5, max_bboxes_per_class) of one frame", array.shape
        )
    slots = np.swapaxes(array, 1, 2).astype(np.float32)  # [classes, max_bboxes, 5]
    used = slots[:, :, 4] != 0
    counts = used.sum(axis=1)
    prefix = np.arange(nms.max_bboxes_per_class)[None, :] < counts[:, None]
    if (used != prefix).any():
        k = int(np.argwhere((used != prefix).any(axis=1))[0, 0])
        raise _malformed(spec, f"class {k} slots", "detections first, then zero padding", used[k].astype(int).tolist())
    if (slots[~used] != 0).any():
        k, j = np.argwhere((slots != 0).any(axis=2) & ~used)[0]
        raise _malformed(spec, f"class {k} padding slot {j}", "all-zero record", slots[k, j].tolist())
    class_ids, rank = np.nonzero(used)
    records = slots[class_ids, rank]
    _check_finite(records, spec, lambda i: f"class {class_ids[i]} slot {rank[i]}")
    return _detections(records, class_ids.astype(np.int64), input_hw)


def decode_class_list(per_class: list[np.ndarray], spec: OutputSpec, input_hw: tuple[int, int]) -> Detections:
    """hailo_platform's BY_CLASS list (one ``(n, 5)`` array per class, in class order) -> Detections."""
    nms = _nms_of(spec)
    if len(per_class) != nms.number_of_classes:
        raise _malformed(spec, "class list length", nms.number_of_classes, len(per_class))
    arrays = [np.asarray(a) for a in per_class]
    for k, a in enumerate(arrays):
        if a.ndim != 2 or a.shape[1] != BBOX_PARAMS:
            raise _malformed(spec, f"class {k} array shape", "(n, 5)", a.shape)
        if a.shape[0] > nms.max_bboxes_per_class:
            raise _malformed(
                spec, f"class {k} detections", f"at most max_bboxes_per_class = {nms.max_bboxes_per_class}", a.shape[0]
            )
    counts = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    records = (
        np.concatenate([a.astype(np.float32) for a in arrays]) if arrays else np.zeros((0, BBOX_PARAMS), np.float32)
    )
    class_ids = np.repeat(np.arange(nms.number_of_classes, dtype=np.int64), counts)
    rank = np.arange(len(class_ids)) - np.repeat(np.cumsum(counts) - counts, counts)
    _check_finite(records, spec, lambda i: f"row {rank[i]} of class {class_ids[i]}")
    return _detections(records, class_ids, input_hw)


def decode_detection_list(detections: list[Any], spec: OutputSpec, input_hw: tuple[int, int]) -> Detections:
    """hailo_platform's BY_SCORE list of ``Detection`` objects (attributes y_min, x_min, y_max, x_max,
    score, class_id) -> Detections."""
    nms = _nms_of(spec)
    if len(detections) > nms.max_total:
        raise _malformed(spec, "detection count", f"at most max_bboxes_total = {nms.max_total}", len(detections))
    records = np.array([[getattr(d, f) for f in RECORD_FIELDS] for d in detections], dtype=np.float32)
    records = records.reshape(-1, BBOX_PARAMS)
    class_ids = np.array([d.class_id for d in detections], dtype=np.int64)
    _check_finite(records, spec, lambda i: f"detection {i}")
    if len(class_ids) and (class_ids.min() < 0 or class_ids.max() >= nms.number_of_classes):
        i = int(np.argmax((class_ids < 0) | (class_ids >= nms.number_of_classes)))
        raise _malformed(spec, f"detection {i} class_id", f"a class id in [0, {nms.number_of_classes})", class_ids[i])
    return _detections(records, class_ids, input_hw)


def decode_nms(output: object, spec: OutputSpec, input_hw: tuple[int, int]) -> Detections:
    """One frame of an NMS output, in whichever host form a backend handed over, -> Detections.

    BY_CLASS: a flat float32 buffer or bytes, a ``[classes, 5, max]`` tf array, or a per-class list.
    BY_SCORE: bytes or a uint8 buffer, or a list of Detection objects.
    """
    if spec.format_order is FormatOrder.NMS_BY_CLASS:
        if isinstance(output, (list, tuple)):
            return decode_class_list(list(output), spec, input_hw)
        if isinstance(output, np.ndarray) and output.ndim == 3:
            return decode_tf_nms(output, spec, input_hw)
        return decode_nms_by_class(output, spec, input_hw)
    if spec.format_order is FormatOrder.NMS_BY_SCORE:
        if isinstance(output, (list, tuple)):
            return decode_detection_list(list(output), spec, input_hw)
        return decode_nms_by_score(output, spec, input_hw)
    raise SpecError(
        f"output {spec.name!r}: format order {spec.format_order.name} is not a host NMS order "
        "(expected NMS_BY_CLASS or NMS_BY_SCORE)"
    )
