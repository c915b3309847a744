"""Greedy per-class non-maximum suppression in the two conventions the harness reproduces.

Both modes take the decoded candidates of one image, ``boxes`` float32 ``(A, 4)`` xyxy and class
probabilities ``scores`` float32 ``(A, nc)``, and return :class:`~harness.core.detections.Detections`.

Shared by both modes, so that the fast code and the loop reference agree bit for bit:

- IoU is computed in float32 exactly as HailoRT's ``compute_iou`` and torchvision's CPU ``nms``
  do: no ``+1`` on widths, ``inter / (area_kept + area_other - inter)``, and 0 when the overlap
  width or height is not positive (hailort: hailort/libhailort/src/net_flow/ops/nms_post_process.cpp,
  ``NmsPostProcessOp::compute_iou``; torchvision: torchvision/csrc/ops/cpu/nms_kernel.cpp).
  HailoRT runs the same formula on coordinates normalised to the input size; the results can
  differ only where an IoU lies within float32 rounding of the threshold.
- Candidates are ranked by score, descending; equal scores keep candidate order, which is anchor
  order (stride ascending, then row-major) and then class id. That is HailoRT's extraction order
  (hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp, ``extract_detections``)
  and the order of ``torch.where`` over (anchor, class) in Ultralytics. Neither library sorts
  stably, so for exactly equal scores this is one valid order among theirs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig, NmsMode

# ultralytics: ultralytics/utils/nms.py, ``non_max_suppression(max_wh=7680)``: boxes are shifted by
# class id * max_wh so that one NMS over all boxes never suppresses across classes.
ULTRALYTICS_CLASS_OFFSET = np.float32(7680)

# Candidates of one class whose IoUs greedy_per_class settles together (a 512 x 512 matrix, 1 MiB).
NMS_BLOCK = 512


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of xyxy boxes ``a`` and ``b`` (float32, broadcast over all but the last axis)."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    width = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0])
    height = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1])
    inter = width * height
    area_a = (a[..., 3] - a[..., 1]) * (a[..., 2] - a[..., 0])
    area_b = (b[..., 3] - b[..., 1]) * (b[..., 2] - b[..., 0])
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_a + area_b - inter)
    return np.where((width > 0) & (height > 0), iou, np.float32(0))


def at_least(values: np.ndarray, threshold: float) -> np.ndarray:
    """``values >= threshold`` for float32 ``values`` against a double threshold, as C++ compares
    a ``float`` with a ``double`` (the smallest float32 not below the threshold stands in for it)."""
    t = np.float32(threshold)
    if float(t) < threshold:
        t = np.nextafter(t, np.float32(np.inf))
    return values >= t


def above(values: np.ndarray, threshold: float) -> np.ndarray:
    """``values > threshold`` for float32 ``values`` against a double threshold, as C++ compares."""
    t = np.float32(threshold)
    if float(t) <= threshold:
        t = np.nextafter(t, np.float32(np.inf))
    return values >= t


def greedy_per_class(
    boxes: np.ndarray,
    scores: np.ndarray,
    class_ids: np.ndarray,
    iou_threshold: float,
    max_per_class: int,
) -> np.ndarray:
    """Greedy NMS run separately per class; returns the kept indices, class ascending, then rank.

    In each class the best-ranked box still alive is kept and suppresses the alive boxes of its
    class whose IoU with it is ``>= iou_threshold`` (HailoRT's rule);
    suppressed boxes suppress nothing; the first ``max_per_class`` kept boxes of a class are the
    result. A class is taken in blocks of :data:`NMS_BLOCK` candidates by rank: those overlapping a
    box kept from an earlier block go, then the block's own greedy answer is found as the fixed
    point of "kept = alive and not suppressed by a kept box ranked above" (Cluster-NMS; the
    recursion has one solution, greedy's), so no Python loop runs per kept box.
    """
    if len(scores) == 0 or max_per_class <= 0:
        return np.zeros(0, dtype=np.int64)
    by_rank = np.argsort(-scores, kind="stable")
    order = by_rank[np.argsort(class_ids[by_rank], kind="stable")]
    _, starts, counts = np.unique(class_ids[order], return_index=True, return_counts=True)
    kept = [
        order[start : start + 1]  # a class's only candidate is kept
        if count == 1
        else _greedy_ranked(order[start : start + count], boxes, iou_threshold, at_least, max_per_class)
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True)
    ]
    return np.concatenate(kept)


def _greedy_ranked(
    ranked: np.ndarray,
    boxes: np.ndarray,
    iou_threshold: float,
    suppresses: Callable[[np.ndarray, float], np.ndarray],
    max_kept: int,
) -> np.ndarray:
    """Greedy NMS of candidates ``ranked`` best first (one class, or boxes shifted apart by class): the
    first ``max_kept`` kept, in rank order; it stops where they are found."""
    kept: list[np.ndarray] = []
    kept_boxes = np.zeros((0, 4), dtype=np.float32)
    n_kept = 0
    for start in range(0, len(ranked), NMS_BLOCK):
        block = ranked[start : start + NMS_BLOCK]
        candidates = boxes[block].astype(np.float32)
        if len(kept_boxes):
            earlier = suppresses(box_iou(kept_boxes[:, None, :], candidates[None, :, :]), iou_threshold)
            alive = np.asarray(~earlier.any(axis=0), dtype=bool)
        else:  # the first block: nothing kept before it
            alive = np.ones(len(block), dtype=bool)
        # outranks[i, j]: box i, ranked above j and alive, would suppress j
        outranks = np.triu(suppresses(box_iou(candidates[:, None, :], candidates[None, :, :]), iou_threshold), 1)
        outranks &= alive[:, None]  # a box gone to an earlier block suppresses nothing
        keep = alive
        while True:
            settled = alive & ~(outranks & keep[:, None]).any(axis=0)
            if np.array_equal(settled, keep):
                break
            keep = settled
        kept.append(block[keep][: max_kept - n_kept])
        n_kept += len(kept[-1])
        if n_kept >= max_kept:
            break
        kept_boxes = np.concatenate([kept_boxes, candidates[keep]])
    return np.concatenate(kept)


def nms_hailort(boxes: np.ndarray, scores: np.ndarray, config: DecodeConfig) -> Detections:
    """NMS as the HailoRT YOLOv8 post-process op runs it on the host.

    hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp (``extract_detections``)
    and nms_post_process.cpp (``remove_overlapping_boxes``, ``fill_nms_by_class_format_buffer``):

    - every (anchor, class) with ``score >= score_threshold`` is its own candidate (multi-label,
      no argmax), the score a float32 compared with the double threshold;
    - a score of exactly 0 is HailoRT's mark of a removed box (``REMOVED_CLASS_SCORE = 0``,
      hailort: src/net_flow/ops_metadata/nms_op_metadata.hpp), so it is never output, even at
      threshold 0;
    - candidates are sorted by score, descending; greedy suppression only within a class,
      suppressing ``IoU >= iou_threshold``;
    - then the first ``max_per_class`` survivors of each class are kept; ``max_total`` does not
      apply (the BY_CLASS buffer has no total cap).

    Detections come class ascending, score descending within a class: the BY_CLASS buffer order.
    """
    anchor, class_id = np.nonzero(at_least(scores, config.score_threshold) & (scores != 0))
    cand_boxes = boxes[anchor]
    cand_scores = scores[anchor, class_id]
    kept = greedy_per_class(
        cand_boxes,
        cand_scores,
        class_id,
        config.iou_threshold,
        max_per_class=config.max_per_class,
    )
    return Detections(cand_boxes[kept], cand_scores[kept], class_id[kept])


def nms_ultralytics(boxes: np.ndarray, scores: np.ndarray, config: DecodeConfig) -> Detections:
    """NMS as Ultralytics' ``non_max_suppression`` runs it (ultralytics: ultralytics/utils/nms.py;
    ultralytics/utils/ops.py in older releases), class-aware, with torchvision's ``nms``.

    - candidates: with ``multi_label`` (and more than one class) every (anchor, class) with
      ``score > score_threshold``; otherwise each anchor's best class (first maximum) when its
      score ``> score_threshold``. The comparison is in float32 (torch casts the Python threshold
      to the tensor's dtype);
    - if more than ``max_candidates`` (``max_nms``), only the best ``max_candidates`` by score go on;
    - boxes are shifted by ``class_id * 7680`` and one greedy NMS suppresses ``IoU > iou_threshold``
      (torchvision/csrc/ops/cpu/nms_kernel.cpp: ``ovr > iou_threshold``, float vs double); the
      shift keeps classes apart, so this is per-class NMS, but the IoU is computed on the shifted
      float32 coordinates, and so is it here;
    - the first ``max_total`` (``max_det``) kept boxes, by score, are the result.

    Ultralytics' own settings: predict uses conf 0.25, val conf 0.001 with ``multi_label=True``,
    both iou 0.7 and max_det 300 (ultralytics: ultralytics/cfg/default.yaml,
    ultralytics/models/yolo/detect/val.py). Detections come score descending.
    """
    threshold = np.float32(config.score_threshold)
    if config.multi_label and scores.shape[1] > 1:
        anchor, class_id = np.nonzero(scores > threshold)
        cand_scores = scores[anchor, class_id]
    else:
        best = scores.argmax(axis=1)
        best_scores = scores[np.arange(len(scores)), best]
        anchor = np.flatnonzero(best_scores > threshold)
        class_id, cand_scores = best[anchor], best_scores[anchor]
    if len(cand_scores) > config.max_candidates:
        best_first = np.sort(np.argsort(-cand_scores, kind="stable")[: config.max_candidates])
        anchor, class_id, cand_scores = anchor[best_first], class_id[best_first], cand_scores[best_first]
    cand_boxes = boxes[anchor]
    shifted = cand_boxes + (class_id.astype(np.float32) * ULTRALYTICS_CLASS_OFFSET)[:, None]
    if len(cand_scores) == 0 or config.max_total <= 0:
        return Detections(cand_boxes[:0], cand_scores[:0], class_id[:0])
    # One greedy pass over every class at once, best first, as torchvision's over the shifted boxes (no
    # IoU across classes): it stops at the max_total-th kept box, which is where the result ends.
    kept = _greedy_ranked(
        np.argsort(-cand_scores, kind="stable"), shifted, config.iou_threshold, above, config.max_total
    )
    return Detections(cand_boxes[kept], cand_scores[kept], class_id[kept])


_BY_MODE = {NmsMode.HAILORT: nms_hailort, NmsMode.ULTRALYTICS: nms_ultralytics}


def nms(boxes: np.ndarray, scores: np.ndarray, config: DecodeConfig) -> Detections:
    """The NMS of ``config.mode``: :func:`nms_hailort` or :func:`nms_ultralytics`."""
    return _BY_MODE[config.mode](boxes, scores, config)
