"""NMS encoders the fakes and the round-trip tests use: the inverse of each NMS form
harness.formats.nms_buffer decodes that the harness itself never writes (the emulator writes
NMS_BY_CLASS only)."""

from __future__ import annotations

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import SpecError
from harness.core.specs import OutputSpec
from harness.formats.nms_buffer import (  # the record layout is the decoders'
    BBOX_PARAMS,
    BY_SCORE_RECORD,
    RECORD_FIELDS,
    NmsDetection,
    _by_class_order,
    _nms_of,
    _records,
)


def _by_score_order(dets: Detections, spec: OutputSpec) -> Detections:
    nms = _nms_of(spec)
    ids = dets.class_ids
    if len(ids) and (ids.min() < 0 or ids.max() >= nms.number_of_classes):
        raise SpecError(
            f"output {spec.name!r}: class ids must lie in [0, {nms.number_of_classes}), found {ids.min()}..{ids.max()}"
        )
    if len(dets) > nms.max_total:
        raise SpecError(f"output {spec.name!r}: {len(dets)} detections, at most max_bboxes_total = {nms.max_total} fit")
    return dets.select(np.argsort(-dets.scores, kind="stable"))


def encode_nms_by_score(dets: Detections, spec: OutputSpec, input_hw: tuple[int, int]) -> bytes:
    """Detections -> HAILO_NMS_BY_SCORE frame: ``2 + 22 * max_bboxes_total`` bytes, zero after the last record."""
    nms = _nms_of(spec)
    ordered = _by_score_order(dets, spec)
    table = np.zeros(nms.max_total, dtype=BY_SCORE_RECORD)
    records = _records(ordered, input_hw)
    for i, field in enumerate(RECORD_FIELDS):
        table[field][: len(ordered)] = records[:, i]
    table["class_id"][: len(ordered)] = ordered.class_ids
    return np.array([len(ordered)], dtype="<u2").tobytes() + table.tobytes()


# ---------------------------------------------------------------------------------------------- TF form


def encode_tf_nms(dets: Detections, spec: OutputSpec, input_hw: tuple[int, int]) -> np.ndarray:
    """Detections -> float32 ``[classes, 5, max_bboxes_per_class]``, zero-padded after each class's detections."""
    nms = _nms_of(spec)
    if (dets.scores == 0).any():
        raise SpecError(f"output {spec.name!r}: a score of 0 marks padding in the tf_nms form and cannot be encoded")
    ordered, counts = _by_class_order(dets, spec)
    rank = np.arange(len(ordered)) - np.repeat(np.cumsum(counts) - counts, counts)
    slots = np.zeros((nms.number_of_classes, nms.max_bboxes_per_class, BBOX_PARAMS), dtype=np.float32)
    slots[ordered.class_ids, rank] = _records(ordered, input_hw)
    return np.ascontiguousarray(np.swapaxes(slots, 1, 2))


# ---------------------------------------------------------------------------------------------- list forms


def encode_class_list(dets: Detections, spec: OutputSpec, input_hw: tuple[int, int]) -> list[np.ndarray]:
    """Detections -> one float32 ``(n, 5)`` array per class, rows sorted by score descending."""
    ordered, counts = _by_class_order(dets, spec)
    return np.split(_records(ordered, input_hw), np.cumsum(counts)[:-1])


def encode_detection_list(dets: Detections, spec: OutputSpec, input_hw: tuple[int, int]) -> list[NmsDetection]:
    """Detections -> BY_SCORE list of :class:`NmsDetection`, sorted by score descending."""
    ordered = _by_score_order(dets, spec)
    records = _records(ordered, input_hw).tolist()
    return [
        NmsDetection(y0, x0, y1, x1, score, int(c))
        for (y0, x0, y1, x1, score), c in zip(records, ordered.class_ids, strict=True)
    ]


# ---------------------------------------------------------------------------------------------- dispatch
