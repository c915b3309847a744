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

Only the anchors whose best class reaches the threshold are read past one pass over the score matrix
(in the layout it comes in: anchor-major, or a class-major head seen transposed, never copied), and
the greedy step runs compiled: onnxruntime's ``NonMaxSuppression`` kernel, one class per batch, fed
each class's candidates in the harness's rank order (ranks as its scores, so that its heap never sees
a tie), with the IoU threshold turned into the float32 one its ``IoU > threshold`` compares with
(onnxruntime: onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc and
non_max_suppression_helper.h, ``SuppressByIOU``: the same float32 operations as :func:`box_iou`, in
the same order, with the kept box first). Boxes it would read otherwise (not finite, or with a corner
past the other) and thresholds outside its range go to the numpy greedy (:func:`_greedy_ranked`). A few
candidates (:data:`GREEDY_MATRIX_MAX`, every class together) are settled from their IoU matrix, a bit mask
per candidate, in one Python pass (:func:`_greedy_matrix`): onnxruntime is then neither called nor imported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from harness.core.detections import Detections
from harness.core.settings import DecodeConfig, NmsMode

# ultralytics: ultralytics/utils/nms.py, ``non_max_suppression(max_wh=7680)``: boxes are shifted by
# class id * max_wh so that one NMS over all boxes never suppresses across classes.
ULTRALYTICS_CLASS_OFFSET = np.float32(7680)

# Candidates of one class whose IoUs the numpy greedy settles together (a 512 x 512 matrix, 1 MiB).
NMS_BLOCK = 512

# Candidates (of one NMS, every class together) up to which the greedy step is one IoU matrix and one
# Python pass over its rows as bit masks (:func:`_greedy_matrix`): there, onnxruntime's call alone costs
# more than the whole step (tools/bench_nms: about 30 us a call, and the first one imports onnxruntime and
# builds its session), and a frame at a score threshold such as 0.25 stays below it.
GREEDY_MATRIX_MAX = 48

# One ONNX NonMaxSuppression node (opset 11; inputs boxes [classes, candidates, 4], scores
# [classes, 1, candidates], max_per_class, iou_threshold, score_threshold; output selected [n, 3]), as
# onnx.helper serialises it (tests/decode/test_decode_nms.py rebuilds it): kept as bytes, so that the
# NMS never imports onnx.
_NMS_MODEL = (
    b"\x08\x07:\xbc\x02\n[\n\x05boxes\n\x06scores\n\rmax_per_class\n\riou_threshold\n\x0fscore_thresho"
    b'ld\x12\x08selected"\x11NonMaxSuppression\x12\x03nmsZ,\n\x05boxes\x12#\n!\x08\x01\x12\x1d\n\t\x12'
    b"\x07classes\n\x0c\x12\ncandidates\n\x02\x08\x04Z-\n\x06scores\x12#\n!\x08\x01\x12\x1d\n\t\x12"
    b"\x07classes\n\x02\x08\x01\n\x0c\x12\ncandidatesZ\x1b\n\rmax_per_class\x12\n\n\x08\x08\x07\x12"
    b"\x04\n\x02\x08\x01Z\x1b\n\riou_threshold\x12\n\n\x08\x08\x01\x12\x04\n\x02\x08\x01Z\x1d\n\x0fsco"
    b're_threshold\x12\n\n\x08\x08\x01\x12\x04\n\x02\x08\x01b"\n\x08selected\x12\x16\n\x14\x08\x07\x12'
    b"\x10\n\n\x12\x08selected\n\x02\x08\x03B\x04\n\x00\x10\x0b"
)


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


def float32_at_least(threshold: float) -> np.float32:
    """The smallest float32 not below the double ``threshold``: ``value >= threshold`` for a float32
    ``value`` is ``value >= float32_at_least(threshold)``, as C++ compares a ``float`` with a ``double``."""
    t = np.float32(threshold)
    return np.nextafter(t, np.float32(np.inf)) if float(t) < threshold else t


def float32_above(threshold: float) -> np.float32:
    """The smallest float32 above the double ``threshold``: ``value > threshold`` for a float32 ``value``
    is ``value >= float32_above(threshold)``."""
    t = np.float32(threshold)
    return np.nextafter(t, np.float32(np.inf)) if float(t) <= threshold else t


def at_least(values: np.ndarray, threshold: float) -> np.ndarray:
    """``values >= threshold`` for float32 ``values`` against a double threshold, as C++ compares
    a ``float`` with a ``double`` (the smallest float32 not below the threshold stands in for it)."""
    return values >= float32_at_least(threshold)


def above(values: np.ndarray, threshold: float) -> np.ndarray:
    """``values > threshold`` for float32 ``values`` against a double threshold, as C++ compares."""
    return values >= float32_above(threshold)


def anchors_reaching(scores: np.ndarray, floor: float | np.floating[Any]) -> np.ndarray:
    """The anchors (rows of ``scores``, ascending) with a score ``>= floor``: the only ones that can hold a
    candidate. One pass over the matrix in its own layout: an anchor-major matrix by its flat indices,
    any other (a class-major head seen transposed) by each row's any."""
    if scores.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    if scores.flags.c_contiguous:
        return rows_holding(scores >= floor)
    return np.flatnonzero((scores >= floor).any(axis=1))


def rows_holding(mask: np.ndarray) -> np.ndarray:
    """The rows (ascending) of a C-contiguous boolean matrix holding a True, through its flat indices;
    with a multiple of 8 columns, through those of its non-zero 64-bit words (8 flags each, a row's words
    its own): an eighth of the elements to look through."""
    columns = mask.shape[1]
    if columns % 8 == 0 and mask.size:
        rows = np.flatnonzero(mask.view(np.uint64) != 0) // (columns // 8)
    else:
        rows = np.flatnonzero(mask) // max(columns, 1)
    return rows[_run_starts(rows)]


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal ``values`` starts (``values`` sorted)."""
    starts = np.ones(len(values), dtype=bool)
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return np.flatnonzero(starts)


def _cells(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a small 2-D mask (row-major order), through its flat indices."""
    return np.divmod(np.flatnonzero(mask), mask.shape[1])


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
    result.
    """
    if len(scores) == 0 or max_per_class <= 0:
        return np.zeros(0, dtype=np.int64)
    ranked = np.argsort(-scores, kind="stable")
    return _greedy_classes(ranked, boxes, class_ids, iou_threshold, at_least, max_per_class)


def _greedy_classes(
    ranked: np.ndarray,
    boxes: np.ndarray,
    class_ids: np.ndarray,
    iou_threshold: float,
    suppresses: Callable[[np.ndarray, float], np.ndarray],
    max_kept: int,
) -> np.ndarray:
    """Greedy NMS of candidates ``ranked`` best first, each class apart: the first ``max_kept`` kept of
    each class, class ascending, then rank. A few candidates (:data:`GREEDY_MATRIX_MAX`) by their IoU
    matrix; more compiled, where onnxruntime reads the boxes and the threshold as the harness does, else
    numpy's, class by class."""
    matrix = len(ranked) <= GREEDY_MATRIX_MAX
    if matrix:  # every class's greedy in one pass: what remains is what each class keeps, by rank
        ranked = _greedy_matrix(ranked, boxes, class_ids, iou_threshold, suppresses, len(ranked))
    order = ranked[np.argsort(class_ids[ranked], kind="stable")]
    starts = _run_starts(class_ids[order])
    counts = np.subtract(np.append(starts[1:], len(order)), starts)
    if matrix:
        return order[np.arange(len(order)) - np.repeat(starts, counts) < max_kept]
    compiled_threshold = _onnxruntime_threshold(iou_threshold, suppresses)
    if compiled_threshold is not None:
        ordered = boxes[order]
        if _plain_boxes(ordered):
            return _greedy_onnxruntime(order, starts, counts, ordered, compiled_threshold, max_kept)
    kept = [
        order[start : start + 1]  # a class's only candidate is kept
        if count == 1
        else _greedy_ranked(order[start : start + count], boxes, iou_threshold, suppresses, max_kept)
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True)
    ]
    return np.concatenate(kept)


def _greedy_matrix(
    ranked: np.ndarray,
    boxes: np.ndarray,
    class_ids: np.ndarray | None,
    iou_threshold: float,
    suppresses: Callable[[np.ndarray, float], np.ndarray],
    max_kept: int,
) -> np.ndarray:
    """Greedy NMS of a few candidates ``ranked`` best first (``max_kept`` at least 1): one IoU matrix
    (:func:`box_iou`, the same float32 operations as every other path), each row the bit mask of the
    candidates below it that it suppresses (of its class, where ``class_ids`` is given; boxes shifted apart
    by class otherwise), then one pass in rank order: a candidate none of the kept suppresses is kept and
    adds its mask. Returns the first ``max_kept`` kept, in rank order."""
    candidates = boxes[ranked]
    overlaps = suppresses(box_iou(candidates[:, None, :], candidates[None, :, :]), iou_threshold)
    if class_ids is not None:
        mine = class_ids[ranked]
        overlaps &= mine[:, None] == mine[None, :]
    rows = np.packbits(np.triu(overlaps, 1), axis=1, bitorder="little")
    width, masks = rows.shape[1], rows.tobytes()
    suppressed, kept = 0, []
    for i in range(len(ranked)):
        if not suppressed >> i & 1:
            kept.append(i)
            if len(kept) == max_kept:
                break
            suppressed |= int.from_bytes(masks[i * width : (i + 1) * width], "little")
    return ranked[kept]


@functools.lru_cache(maxsize=64)
def _onnxruntime_threshold(
    iou_threshold: float, suppresses: Callable[[np.ndarray, float], np.ndarray]
) -> np.float32 | None:
    """The float32 ``t`` in [0, 1] for which onnxruntime's ``IoU > t`` is ``suppresses(IoU, iou_threshold)``
    on float32 IoUs (the largest float32 below the smallest one that suppresses), or None where there is
    none: an IoU of 0 suppressing (onnxruntime never suppresses boxes that do not overlap), or a threshold
    past 1."""
    smallest = float32_at_least(iou_threshold) if suppresses is at_least else float32_above(iou_threshold)
    if not 0 < smallest <= np.nextafter(np.float32(1), np.float32(2)):
        return None
    return np.nextafter(smallest, np.float32(0))


def _plain_boxes(boxes: np.ndarray) -> bool:
    """Whether every box is finite with its corners in order (x1 <= x2, y1 <= y2): onnxruntime orders
    each box's corners before its IoU, :func:`box_iou` does not."""
    return bool(np.isfinite(boxes).all() and (boxes[:, 2:] >= boxes[:, :2]).all())


@functools.cache
def _nms_session() -> Any:
    """onnxruntime's NonMaxSuppression kernel in a one-node session, one thread (imported on first use)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(_NMS_MODEL, options, providers=["CPUExecutionProvider"])


def _greedy_onnxruntime(
    order: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    ordered: np.ndarray,
    iou_threshold: np.float32,
    max_kept: int,
) -> np.ndarray:
    """onnxruntime's greedy over candidates ``order`` (class after class from ``starts``, ``counts`` long,
    each best first; ``ordered``: their boxes, in that order): one class per batch, padded to the longest; a
    candidate's score is how many of its class follow it, plus one (a pad's is 0, under the score
    threshold), so that it pops in rank order."""
    width = int(counts.max())
    batch = np.repeat(np.arange(len(starts)), counts)
    place = np.arange(len(order)) - np.repeat(starts, counts)
    batch_boxes = np.zeros((len(starts), width, 4), dtype=np.float32)
    batch_boxes[batch, place] = ordered
    priority = np.zeros((len(starts), 1, width), dtype=np.float32)
    priority[batch, 0, place] = width - place
    (selected,) = _nms_session().run(
        None,
        {
            "boxes": batch_boxes,
            "scores": priority,
            "max_per_class": np.array([max_kept], dtype=np.int64),
            "iou_threshold": np.array([iou_threshold], dtype=np.float32),
            "score_threshold": np.array([0.5], dtype=np.float32),
        },
    )
    return order[starts[selected[:, 0]] + selected[:, 2]]


def _greedy_ranked(
    ranked: np.ndarray,
    boxes: np.ndarray,
    iou_threshold: float,
    suppresses: Callable[[np.ndarray, float], np.ndarray],
    max_kept: int,
) -> np.ndarray:
    """Greedy NMS of candidates ``ranked`` best first (one class, or boxes shifted apart by class) in
    numpy: the first ``max_kept`` kept, in rank order; it stops where they are found. Taken in blocks of
    :data:`NMS_BLOCK` candidates by rank: those overlapping a box kept from an earlier block go, then
    the block's own greedy answer is found as the fixed point of "kept = alive and not suppressed by a
    kept box ranked above" (Cluster-NMS; the recursion has one solution, greedy's), so no Python loop
    runs per kept box."""
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
    ``scores`` may be any view of the matrix (a class-major head transposed is read as it lies).
    """
    anchors = anchors_reaching(scores, float32_at_least(config.score_threshold))
    reaching = scores[anchors]
    row, class_id = _cells(at_least(reaching, config.score_threshold) & (reaching != 0))
    cand_boxes = boxes[anchors[row]]
    cand_scores = reaching[row, class_id]
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
    # a score above the threshold is at least the next float32
    anchors = anchors_reaching(scores, np.nextafter(threshold, np.float32(np.inf)))
    reaching = scores[anchors]
    if config.multi_label and scores.shape[1] > 1:
        row, class_id = _cells(reaching > threshold)
        cand_scores = reaching[row, class_id]
    else:
        best = reaching.argmax(axis=1)
        best_scores = reaching[np.arange(len(reaching)), best]
        row = np.flatnonzero(best_scores > threshold)
        class_id, cand_scores = best[row], best_scores[row]
    anchor = anchors[row]
    if len(cand_scores) > config.max_candidates:
        best_first = np.sort(np.argsort(-cand_scores, kind="stable")[: config.max_candidates])
        anchor, class_id, cand_scores = anchor[best_first], class_id[best_first], cand_scores[best_first]
    cand_boxes = boxes[anchor]
    if len(cand_scores) == 0 or config.max_total <= 0:
        return Detections(cand_boxes[:0], cand_scores[:0], class_id[:0])
    shifted = cand_boxes + (class_id.astype(np.float32) * ULTRALYTICS_CLASS_OFFSET)[:, None]
    ranked = np.argsort(-cand_scores, kind="stable")
    if len(ranked) <= GREEDY_MATRIX_MAX:
        # torchvision's one pass over the shifted boxes, as it runs it
        kept = _greedy_matrix(ranked, shifted, None, config.iou_threshold, above, config.max_total)
    elif _classes_apart(cand_boxes):
        # No shifted box overlaps one of another class: one greedy pass over every class at once, as
        # torchvision's, keeps what each class's own greedy keeps, merged by rank.
        kept = _greedy_classes(ranked, shifted, class_id, config.iou_threshold, above, config.max_total)
        rank = np.empty(len(ranked), dtype=np.int64)
        rank[ranked] = np.arange(len(ranked))
        kept = kept[np.argsort(rank[kept], kind="stable")][: config.max_total]
    else:
        # One greedy pass over every class at once, best first, as torchvision's over the shifted boxes:
        # it stops at the max_total-th kept box, which is where the result ends.
        kept = _greedy_ranked(ranked, shifted, config.iou_threshold, above, config.max_total)
    return Detections(cand_boxes[kept], cand_scores[kept], class_id[kept])


def _classes_apart(boxes: np.ndarray) -> bool:
    """Whether every coordinate lies within one span narrower than the class offset (by a pixel, so that
    rounding cannot close it): shifted by class, a class's boxes then lie wholly below the next's
    (float32 rounding keeps that order), so no IoU across classes is above 0."""
    if len(boxes) == 0:
        return True
    low, high = float(np.min(boxes)), float(np.max(boxes))  # NaN: not apart
    return high - low < float(ULTRALYTICS_CLASS_OFFSET) - 1


_BY_MODE = {NmsMode.HAILORT: nms_hailort, NmsMode.ULTRALYTICS: nms_ultralytics}


def nms(boxes: np.ndarray, scores: np.ndarray, config: DecodeConfig) -> Detections:
    """The NMS of ``config.mode``: :func:`nms_hailort` or :func:`nms_ultralytics`."""
    return _BY_MODE[config.mode](boxes, scores, config)
