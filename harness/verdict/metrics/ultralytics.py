"""Ultralytics' box metric, the numbers ``yolo val`` prints (mAP50 and mAP50-95), on the harness's predictions.

ultralytics 8.4.190 (ultralytics/models/yolo/detect/val.py ``DetectionValidator``; ultralytics/engine/
validator.py ``match_predictions``; ultralytics/utils/metrics.py ``box_iou``, ``ap_per_class``,
``compute_ap``), what differs from COCO's (:mod:`harness.verdict.metrics.coco`):

- matching per image, detections in descending confidence: each takes, at each of the ten IoU
  thresholds ``torch.linspace(0.5, 0.95, 10)`` (float32), the unclaimed ground truth of its class
  with the highest IoU (the first on a tie) if that IoU reaches the threshold. IoU is float32 with
  ``eps`` 1e-7 in the union. Every detection counts (no cap of 100 per class, no area range) and no
  ground truth is a crowd region: Ultralytics' COCO converter drops ``iscrowd`` annotations
  (ultralytics/data/converter.py ``convert_coco``), so they are dropped here too;
- AP per class: the detections of all images sorted by ``np.argsort(-conf)`` (the same call on the
  same float32 scores in the same order: the same order on ties), cumulative TP and FP, recall
  ``tp / (n + 1e-16)``, precision ``tp / (tp + fp)``, sentinels ``(0, 1)`` before and
  ``(recall[-1], 0), (1, 0)`` after, the precision envelope, then the trapezoid integral of its linear
  interpolation (``np.interp``) at 101 recall points. COCO takes the envelope's step value at each point;
- mAP: the mean AP of the classes with ground truth (a class without detections counts 0). Without
  ground truth the harness says NaN where Ultralytics says 0: a gate never passes on nothing.

``yolo val`` matches in its letterboxed frame, the harness in original-image pixels: the same IoU up
to float rounding where the boxes were mapped back as ``yolo val`` places its labels and not clipped,
as the preprocessing ``--metric ultralytics`` chooses does (harness.inputs.preprocess.ultralytics_val).
Resampled image sets (the paired bootstrap) are scored by :func:`set_scores`.

The matching is vectorised over every (image, class) group at once, one numpy step per detection rank
within a group; the AP over every (class, threshold) curve at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.core import defaults
from harness.core.detections import Detections
from harness.inputs.dataset import GroundTruth
from harness.verdict.metrics.coco import ClassMetrics, CocoMetrics, MetricsError, check_inputs

# DetectionValidator.__init__: self.iouv = torch.linspace(0.5, 0.95, 10), compared as float32
IOU_THRESHOLDS: np.ndarray = np.linspace(0.5, 0.95, 10).astype(np.float32)
RECALL_POINTS: np.ndarray = np.linspace(0, 1, 101)  # metrics.py _AP_X
IOU_EPS = np.float32(1e-7)  # box_iou
RECALL_EPS = 1e-16  # ap_per_class


@dataclass(frozen=True)
class Matches:
    """Every detection, images in order, within an image by descending score (stable): its image,
    class, float32 score, and ``correct`` ``(D, T)`` at each of :data:`IOU_THRESHOLDS`;
    ``n_ground_truth`` per class (crowd regions dropped)."""

    image: np.ndarray
    class_id: np.ndarray
    score: np.ndarray
    correct: np.ndarray
    n_ground_truth: np.ndarray


def evaluate(
    ground_truth: Sequence[GroundTruth],
    predictions: Sequence[Detections],
    names: Sequence[str],
    score_threshold: float = defaults.SCORE_THRESHOLD,
) -> CocoMetrics:
    """Ultralytics' mAP overall and per class of ``predictions`` (one :class:`Detections` per image,
    pixel boxes in the same frame as the ground truth, class ids indexing ``names``); per class also
    precision and recall at IoU 0.5 of the predictions scoring at least ``score_threshold``."""
    matches = match(ground_truth, predictions, len(names))
    ap = average_precision(matches, len(names))  # (K, T), NaN without ground truth
    has_truth = matches.n_ground_truth > 0
    map50, map50_95 = _means(ap)
    kept = matches.score >= score_threshold
    n_kept = np.bincount(matches.class_id[kept], minlength=len(names))
    n_correct = np.bincount(matches.class_id[kept], weights=matches.correct[kept, 0], minlength=len(names))
    n_predictions = np.bincount(matches.class_id, minlength=len(names))
    per_class = tuple(
        ClassMetrics(
            name=name,
            n_ground_truth=int(matches.n_ground_truth[k]),
            n_predictions=int(n_predictions[k]),
            ap50=float(ap[k, 0]),
            ap50_95=float(ap[k].mean()),
            precision=float(n_correct[k] / n_kept[k]) if n_kept[k] else 0.0,
            recall=float(n_correct[k] / matches.n_ground_truth[k]) if has_truth[k] else 0.0,
        )
        for k, name in enumerate(names)
    )
    return CocoMetrics(map50, map50_95, score_threshold, len(ground_truth), per_class)


def set_scores(
    ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int, image_sets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(mAP50, mAP50-95), each ``(B,)``, over the image sets ``(B, M)`` of image indices (repeats
    allowed), each as :func:`evaluate` measures a dataset listing those images in that order (the
    matching is per image, so each image is matched once). NaN for a set without ground truth."""
    sets = np.asarray(image_sets, dtype=np.int64)
    if sets.ndim != 2 or (sets.size and (sets.min() < 0 or sets.max() >= len(ground_truth))):
        raise MetricsError(f"image sets: shape {sets.shape}, expected (B, M) indices in 0..{len(ground_truth) - 1}")
    matches = match(ground_truth, predictions, n_classes)
    truth = np.zeros((len(ground_truth), n_classes), np.int64)  # counted ground truth per image and class
    for i, t in enumerate(ground_truth):
        truth[i] = np.bincount(t.class_ids[~t.crowd], minlength=n_classes)
    per_image = np.bincount(matches.image, minlength=len(ground_truth))
    first = np.cumsum(per_image) - per_image  # matches hold the images in order
    scores = np.full((2, len(sets)), np.nan)
    for b, images in enumerate(sets):
        lengths = per_image[images]
        index = np.arange(int(lengths.sum())) + np.repeat(first[images] - (np.cumsum(lengths) - lengths), lengths)
        subset = Matches(
            image=matches.image[index],
            class_id=matches.class_id[index],
            score=matches.score[index],
            correct=matches.correct[index],
            n_ground_truth=truth[images].sum(0),
        )
        scores[:, b] = _means(average_precision(subset, n_classes))
    return scores[0], scores[1]


def _means(ap: np.ndarray) -> tuple[float, float]:
    """(mAP50, mAP50-95) of ``(K, T)`` APs: the mean over the classes with ground truth (not NaN)."""
    has_truth = ~np.isnan(ap[:, 0])
    if not has_truth.any():
        return float("nan"), float("nan")
    return float(ap[has_truth, 0].mean()), float(ap[has_truth].mean())


def match(ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int) -> Matches:
    """``match_predictions`` on every image: which detections are correct at each IoU threshold."""
    check_inputs(ground_truth, predictions, n_classes)
    n_images = len(ground_truth)
    counted = [~t.crowd for t in ground_truth]
    truth_boxes = np.concatenate([t.boxes[c] for t, c in zip(ground_truth, counted, strict=True)])
    truth_group = np.concatenate(
        [t.class_ids[c] * n_images + i for i, (t, c) in enumerate(zip(ground_truth, counted, strict=True))]
    )
    n_ground_truth = np.bincount(truth_group // n_images, minlength=n_classes)
    image = np.repeat(np.arange(n_images), [len(p) for p in predictions])
    score = np.concatenate([p.scores for p in predictions]).astype(np.float32)
    by_score = np.argsort(-score, kind="stable")
    order = by_score[np.argsort(image[by_score], kind="stable")]  # images in order, scores descending
    image, score = image[order], score[order]
    class_id = np.concatenate([p.class_ids for p in predictions])[order]
    boxes = np.concatenate([p.boxes for p in predictions]).astype(np.float32)[order]
    correct = _greedy(boxes, class_id * n_images + image, truth_boxes, truth_group, n_classes * n_images)
    return Matches(image, class_id, score, correct, n_ground_truth)


def average_precision(matches: Matches, n_classes: int) -> np.ndarray:
    """``(K, T)`` AP per class and IoU threshold as ``ap_per_class`` computes it; NaN for a class
    without ground truth, 0 for one with ground truth and no detection."""
    order = np.argsort(-matches.score)  # ap_per_class: np.argsort(-conf), its default kind
    by_class = order[np.argsort(matches.class_id[order], kind="stable")]  # each class's, in that order
    counts = np.bincount(matches.class_id, minlength=n_classes)
    start = np.cumsum(counts) - counts
    ap = np.zeros((n_classes, len(IOU_THRESHOLDS)))
    ap[matches.n_ground_truth == 0] = np.nan
    for k in np.flatnonzero((counts > 0) & (matches.n_ground_truth > 0)):
        correct = matches.correct[by_class[start[k] : start[k] + counts[k]]]  # (n, T)
        tp = np.cumsum(correct, axis=0)
        fp = np.arange(1, len(correct) + 1)[:, None] - tp
        ap[k] = compute_ap(tp.T / (matches.n_ground_truth[k] + RECALL_EPS), tp.T / (tp.T + fp.T))
    return ap


def compute_ap(recall: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """``compute_ap`` of ``(T, n)`` curves at once, ``(T,)``: sentinels ``(0, 1)`` before and
    ``(recall[-1], 0), (1, 0)`` after, the precision envelope, ``np.interp`` at 101 recall points,
    the trapezoid rule over them."""
    n_t = len(recall)
    mrec = np.concatenate([np.zeros((n_t, 1)), recall, recall[:, -1:], np.ones((n_t, 1))], axis=1)
    mpre = np.concatenate([np.ones((n_t, 1)), precision, np.zeros((n_t, 2))], axis=1)
    envelope = np.maximum.accumulate(mpre[:, ::-1], axis=1)[:, ::-1]
    return _trapezoid(_interp(mrec, envelope))


def _interp(xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``np.interp(RECALL_POINTS, xp[t], fp[t])`` for every row ``t``, ``(T, R)``, as numpy computes
    it (numpy/_core/src/multiarray/compiled_base.c ``arr_interp``): ``j`` the last point with
    ``xp[j] <= x``; at the last point or where ``xp[j] == x`` the value ``fp[j]``, else
    ``slope * (x - xp[j]) + fp[j]``. Rows start at 0 and end at 1, so no query falls outside them.
    The rows are searched at once as one sorted array of complex numbers ``t + 1j * xp``."""
    n_t, length = xp.shape
    rows = np.arange(n_t)[:, None]
    keys = (rows + 1j * xp).ravel()
    j = np.searchsorted(keys, (rows + 1j * RECALL_POINTS[None, :]).ravel(), side="right").reshape(n_t, -1) - 1
    j -= rows * length
    after = np.minimum(j + 1, length - 1)
    x0, y0 = np.take_along_axis(xp, j, 1), np.take_along_axis(fp, j, 1)
    x1, y1 = np.take_along_axis(xp, after, 1), np.take_along_axis(fp, after, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (y1 - y0) / (x1 - x0) * (RECALL_POINTS[None, :] - x0) + y0
    return np.where((j == length - 1) | (x0 == RECALL_POINTS[None, :]), y0, value)


def _trapezoid(y: np.ndarray) -> np.ndarray:
    """``np.trapezoid(y, RECALL_POINTS)`` of each row, as numpy computes it (numpy/lib/_function_base_impl.py)."""
    return np.add.reduce(np.diff(RECALL_POINTS) * (y[:, 1:] + y[:, :-1]) / 2.0, axis=-1)


def _greedy(
    boxes: np.ndarray, group: np.ndarray, truth_boxes: np.ndarray, truth_group: np.ndarray, n_groups: int
) -> np.ndarray:
    """``(D, T)`` correct flags: ``match_predictions``' scan, per (image, class) group (a detection
    meets only its class's ground truth: the others' IoU is zeroed), one rank at a time. Pairs under
    the lowest threshold can neither match nor be the best that does, and are dropped."""
    n_t = len(IOU_THRESHOLDS)
    correct = np.zeros((len(group), n_t), bool)
    truth_order = np.argsort(truth_group, kind="stable")  # within a group: the ground truth's own order
    truth_boxes, truth_group = truth_boxes[truth_order], truth_group[truth_order]
    n_truth = np.bincount(truth_group, minlength=n_groups)
    first_truth = np.cumsum(n_truth) - n_truth
    count = n_truth[group]
    pair_det = np.repeat(np.arange(len(group)), count)
    pair_truth = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count - first_truth[group], count)
    iou = _iou(boxes[pair_det], truth_boxes[pair_truth])
    near = iou >= IOU_THRESHOLDS[0]
    pair_det, pair_truth, iou = pair_det[near], pair_truth[near], iou[near]
    if not len(pair_det):
        return correct
    # rank of each detection within its group (detections are grouped by image, by score within it)
    by_group = np.argsort(group, kind="stable")
    rank = np.empty(len(group), np.int64)
    sorted_group = group[by_group]
    rank[by_group] = np.arange(len(group)) - np.searchsorted(sorted_group, sorted_group, side="left")
    pair_rank = rank[pair_det]
    by_rank = np.lexsort((pair_truth, pair_det, pair_rank))
    pair_det, pair_truth, iou, pair_rank = pair_det[by_rank], pair_truth[by_rank], iou[by_rank], pair_rank[by_rank]
    taken = np.zeros((n_t, len(truth_group)), bool)
    bounds = np.searchsorted(pair_rank, np.arange(int(pair_rank[-1]) + 2))
    for lo, hi in itertools.pairwise(bounds):
        if lo < hi:
            _assign(pair_det[lo:hi], pair_truth[lo:hi], iou[lo:hi], taken, correct)
    return correct


def _assign(det: np.ndarray, truth: np.ndarray, iou: np.ndarray, taken: np.ndarray, correct: np.ndarray) -> None:
    """One rank: at most one detection per group, its pairs contiguous and in ground-truth order. Per
    threshold, the unclaimed pair with the highest IoU, the first on a tie, matches if it reaches the
    threshold (``available.argmax(0)``)."""
    starts = np.flatnonzero(np.diff(det, prepend=-1))
    segment = np.cumsum(np.diff(det, prepend=-1) != 0) - 1
    candidate = ~taken[:, truth] & (iou[None, :] >= IOU_THRESHOLDS[:, None])  # (T, P)
    value = np.where(candidate, iou[None, :], -1.0)
    best = np.maximum.reduceat(value, starts, axis=1)  # (T, S)
    first = np.where(candidate & (value == best[:, segment]), np.arange(len(iou))[None, :], len(iou))
    chosen = np.minimum.reduceat(first, starts, axis=1)
    threshold, matched = np.nonzero(chosen < len(iou))
    correct[det[starts[matched]], threshold] = True
    taken[threshold, truth[chosen[threshold, matched]]] = True


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of float32 xyxy pairs, operation for operation as ``box_iou`` (float32, eps in the union)."""
    w = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    h = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = w * h
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / (area_a + area_b - inter + IOU_EPS)
