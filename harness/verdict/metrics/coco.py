"""COCO box metrics, and a paired bootstrap of the mAP difference between two paths.

Matching and accumulation are this module's own and reproduce pycocotools' ``COCOeval`` for boxes
(IoU 0.50:0.05:0.95, at most 100 detections per image and class, area range "all", crowd regions as
COCO has them; cocodataset/cocoapi: PythonAPI/pycocotools/cocoeval.py, common/maskApi.c): the same
matches, and :func:`evaluate`'s mAPs equal ``COCOeval.stats`` bit for bit.

Matching (:func:`per_image_matches`) is vectorised over every (image, class) group at once: the
(detection, ground truth) pairs of a group meet in float64 IoU exactly as ``bbIou`` computes it,
pairs below the lowest threshold are dropped, and COCOeval's greedy assignment runs as one loop over
the detection rank (at most 100 steps) with numpy over pairs x thresholds. Pairs are formed in chunks
of about :data:`CHUNK_PAIRS`, so memory grows with the detections, not with their pairs. The result
is a compact record: per kept detection its score and true/false positive flags per IoU threshold,
per image and class the ground truth that counts.

Accumulation (``COCOeval.accumulate``: 101 recall points) is vectorised over image sets:
:func:`evaluate` accumulates the dataset once, the bootstrap repeats it over resampled image sets,
with the same matches. An image drawn twice counts twice, exactly as if it were listed twice. The
bootstrap averages each class's AP before the classes, so its mAPs agree with ``COCOeval`` to
rounding (1e-16), not to the bit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.core import defaults
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.inputs.dataset import GroundTruth

# Params.setDetParams (pycocotools/cocoeval.py): built the same way, so the values are the same floats
IOU_THRESHOLDS: np.ndarray = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
RECALL_POINTS: np.ndarray = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
MAX_DETECTIONS = 100
AREA_ALL = (0.0, 1e5**2)  # Params.areaRng "all": boxes of an area outside it are ignored
CHUNK_PAIRS = 1 << 18  # (detection, ground truth) pairs whose IoU is computed at once: ~40 MiB at peak
_ACCUMULATION_CELLS = 1 << 18  # (image set, detection) cells accumulated at once: 2 MiB per float array
RESAMPLES, SEED = 200, 0  # the paired bootstrap's image sets, and the seed that draws them


class MetricsError(HarnessError):
    """Predictions and ground truth that cannot be scored together."""


@dataclass(frozen=True)
class ClassMetrics:
    """One class: AP at IoU 0.5 and 0.5:0.95 (NaN when the class has no ground truth), and precision
    and recall at IoU 0.5 of the predictions scoring at least the operating threshold."""

    name: str
    n_ground_truth: int
    n_predictions: int
    ap50: float
    ap50_95: float
    precision: float
    recall: float


@dataclass(frozen=True)
class CocoMetrics:
    """mAP means the APs of the classes that have ground truth (NaN if none has)."""

    map50: float
    map50_95: float
    score_threshold: float
    n_images: int
    per_class: tuple[ClassMetrics, ...]


@dataclass(frozen=True)
class ClassMatches:
    """The matches of one class: one entry per kept detection, grouped by image in image
    order, within an image by descending score. ``true_positive``/``false_positive`` are ``(T, D)``
    over :data:`IOU_THRESHOLDS` (a detection matched to a crowd region is neither);
    ``n_positive`` counts the non-crowd ground truth of every image."""

    image: np.ndarray
    score: np.ndarray
    true_positive: np.ndarray
    false_positive: np.ndarray
    n_positive: np.ndarray


@dataclass(frozen=True)
class ImageMatches:
    n_images: int
    classes: tuple[ClassMatches, ...]


@dataclass(frozen=True)
class DifferenceInterval:
    """``point``: metric of path b minus metric of path a on all images; ``low``/``high``: the 2.5 %
    and 97.5 % quantiles of that difference over the resampled image sets."""

    point: float
    low: float
    high: float


@dataclass(frozen=True)
class PairedBootstrap:
    map50: DifferenceInterval
    map50_95: DifferenceInterval
    resamples: int
    seed: int


def evaluate(
    ground_truth: Sequence[GroundTruth],
    predictions: Sequence[Detections],
    names: Sequence[str],
    score_threshold: float = defaults.SCORE_THRESHOLD,
) -> CocoMetrics:
    """COCO mAP overall and per class of ``predictions`` (one :class:`Detections` per image, pixel
    boxes in the same frame as the ground truth, class ids indexing ``names``)."""
    matches = per_image_matches(ground_truth, predictions, len(names))
    everything = np.arange(len(ground_truth))[None]
    # (K, T, R): interpolated precision at each recall point, NaN without ground truth
    precision = np.stack([_class_precision(m, everything, matches.n_images)[:, 0] for m in matches.classes])
    map50, map50_95 = _summary(precision[~np.isnan(precision[:, 0, 0])])
    n_predictions = np.bincount(np.concatenate([p.class_ids for p in predictions]), minlength=len(names))
    per_class = []
    for k, (name, m) in enumerate(zip(names, matches.classes, strict=True)):
        kept = m.score >= score_threshold
        tp, fp = int(m.true_positive[0, kept].sum()), int(m.false_positive[0, kept].sum())
        n_pos = int(m.n_positive.sum())
        per_class.append(
            ClassMetrics(
                name=name,
                n_ground_truth=n_pos,
                n_predictions=int(n_predictions[k]),
                ap50=float(precision[k, 0].mean()),
                ap50_95=float(precision[k].mean()),
                precision=tp / (tp + fp) if tp + fp else 0.0,
                recall=tp / n_pos if n_pos else 0.0,
            )
        )
    return CocoMetrics(
        map50=map50,
        map50_95=map50_95,
        score_threshold=score_threshold,
        n_images=len(ground_truth),
        per_class=tuple(per_class),
    )


def per_image_matches(
    ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int
) -> ImageMatches:
    """COCOeval's per-image, per-class matching of ``predictions`` against ``ground_truth``."""
    check_inputs(ground_truth, predictions, n_classes)
    n_images = len(ground_truth)
    truths = _truth_table(ground_truth, n_images)
    kept = _kept_detections(predictions, n_images)
    hit, on_ignored = _greedy_matches(kept, truths, n_classes * n_images)
    true_positive = hit & ~on_ignored
    false_positive = ~hit & ~kept.ignored[None, :]
    n_positive = np.bincount(truths.group[~truths.ignored], minlength=n_classes * n_images).reshape(n_classes, -1)
    bounds = np.searchsorted(kept.group, np.arange(n_classes + 1) * n_images)
    classes = tuple(
        ClassMatches(
            image=kept.group[a:b] - k * n_images,
            score=kept.score[a:b],
            true_positive=true_positive[:, a:b],
            false_positive=false_positive[:, a:b],
            n_positive=n_positive[k],
        )
        for k, (a, b) in enumerate(itertools.pairwise(bounds))
    )
    return ImageMatches(n_images, classes)


def mean_average_precision(matches: ImageMatches, image_sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mAP@0.5, mAP@0.5:0.95), each ``(B,)``, over the image sets ``(B, M)`` of image indices
    (repeats allowed), accumulated as ``COCOeval.accumulate`` does for a dataset listing those
    images in that order. NaN for a set in which no class has ground truth."""
    sets = np.asarray(image_sets, dtype=np.int64)
    if sets.ndim != 2 or (sets.size and (sets.min() < 0 or sets.max() >= matches.n_images)):
        raise MetricsError(f"image sets: shape {sets.shape}, expected (B, M) indices in 0..{matches.n_images - 1}")
    return _class_means(_average_precision(matches, sets))


# (ground truth, predictions, number of classes, image sets (B, M)) -> (mAP@0.5, mAP@0.5:0.95), each (B,)
SetScores = Callable[[Sequence[GroundTruth], Sequence[Detections], int, np.ndarray], tuple[np.ndarray, np.ndarray]]


def set_scores(
    ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int, image_sets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """COCO's (mAP@0.5, mAP@0.5:0.95) of ``predictions`` over each image set (:func:`mean_average_precision`)."""
    return mean_average_precision(per_image_matches(ground_truth, predictions, n_classes), image_sets)


def paired_bootstrap(
    ground_truth: Sequence[GroundTruth],
    predictions_a: Sequence[Detections],
    predictions_b: Sequence[Detections],
    names: Sequence[str],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    *,
    scores: SetScores = set_scores,
) -> PairedBootstrap:
    """Paired bootstrap over images of mAP(b) - mAP(a): the same ``resamples`` image sets, drawn
    with replacement, score both paths; the interval is their 2.5 %-97.5 % quantile range. The mAPs
    are ``scores``' (COCO's; a run's own metric's: ``harness.verdict.metrics.SET_SCORES``)."""
    if resamples < 1:
        raise MetricsError(f"bootstrap: resamples {resamples}, expected at least 1")
    n = len(ground_truth)
    sets = np.concatenate([np.arange(n)[None], np.random.default_rng(seed).integers(0, n, size=(resamples, n))])
    a50, a50_95 = scores(ground_truth, predictions_a, len(names), sets)
    b50, b50_95 = scores(ground_truth, predictions_b, len(names), sets)
    return PairedBootstrap(_interval(b50 - a50), _interval(b50_95 - a50_95), resamples, seed)


def _interval(difference: np.ndarray) -> DifferenceInterval:
    resampled = difference[1:][np.isfinite(difference[1:])]
    if not len(resampled):
        return DifferenceInterval(float(difference[0]), float("nan"), float("nan"))
    low, high = np.quantile(resampled, [0.025, 0.975])
    return DifferenceInterval(float(difference[0]), float(low), float(high))


def _average_precision(matches: ImageMatches, sets: np.ndarray) -> np.ndarray:
    """``(K, T, B)`` AP of every class over each image set; NaN where the set has no ground truth of it."""
    ap = np.full((len(matches.classes), len(IOU_THRESHOLDS), len(sets)), np.nan)
    for k, m in enumerate(matches.classes):
        ap[k] = _class_precision(m, sets, matches.n_images).mean(-1)
    return ap


def _summary(precision: np.ndarray) -> tuple[float, float]:
    """(mAP@0.5, mAP@0.5:0.95) from the ``(K, T, R)`` precision of the classes with ground truth as
    ``COCOeval.summarize`` takes them: the mean of all cells in its ``(T, R, K)`` order, so that the
    sum rounds exactly as its does. NaN without classes."""
    if not len(precision):
        return float("nan"), float("nan")
    return float(np.mean(precision[:, 0].T.ravel())), float(np.mean(precision.transpose(1, 2, 0).ravel()))


def _class_means(ap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mAP@0.5, mAP@0.5:0.95) ``(B,)`` from ``(K, T, B)`` APs: the mean over the classes with ground truth."""
    valid = ~np.isnan(ap[:, 0])  # (K, B): a class counts where the set holds some of its ground truth
    count = valid.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        map50 = np.where(valid, ap[:, 0], 0).sum(0) / count
        map50_95 = np.where(valid, ap.mean(1), 0).sum(0) / count
    return map50, map50_95


def _class_precision(m: ClassMatches, sets: np.ndarray, n_images: int) -> np.ndarray:
    """``(T, B, R)`` interpolated precision of one class at each recall point over each image set;
    NaN where the set has no ground truth of it. Sets are accumulated in batches of about
    :data:`_ACCUMULATION_CELLS` (set, detection) cells."""
    per_image = np.bincount(m.image, minlength=n_images)
    first = np.cumsum(per_image) - per_image  # each image's first detection
    batch = max(1, _ACCUMULATION_CELLS // (int(per_image[sets].sum(1).max(initial=0)) + 1))
    precision = np.empty((len(IOU_THRESHOLDS), len(sets), len(RECALL_POINTS)))
    for start in range(0, len(sets), batch):
        precision[:, start : start + batch] = _batch_precision(m, sets[start : start + batch], per_image, first)
    return np.where(m.n_positive[sets].sum(1)[None, :, None] > 0, precision, np.nan)


def _batch_precision(m: ClassMatches, sets: np.ndarray, per_image: np.ndarray, first: np.ndarray) -> np.ndarray:
    """``(T, B, R)`` interpolated precision of one class over each image set at each recall point
    (``COCOeval.accumulate``'s ``q``), 0 where the set has no ground truth of it."""
    n_sets = len(sets)
    # The detections of each set: its images' detections in set order, then stable-sorted by score
    # (COCOeval concatenates per-image detections in image order and merge-sorts by -score).
    lengths = per_image[sets].ravel()
    out_start = np.cumsum(lengths) - lengths
    total = int(lengths.sum())
    gather = np.arange(total) - np.repeat(out_start - first[sets].ravel(), lengths)
    row_length = per_image[sets].sum(1)
    row = np.repeat(np.arange(n_sets), row_length)
    gather = gather[np.lexsort((-m.score[gather], row))]
    position = np.arange(total) - np.repeat(np.cumsum(row_length) - row_length, row_length)
    width = int(row_length.max(initial=0)) + 1  # one padding column at least
    padding = np.arange(width)[None, :] >= row_length[:, None]  # (B, width)
    n_positive = np.maximum(m.n_positive[sets].sum(1), 1)[:, None]  # no positives: no hits
    rows = np.arange(n_sets)[:, None]
    at_recall = np.empty((len(IOU_THRESHOLDS), n_sets, len(RECALL_POINTS)))
    for t in range(len(IOU_THRESHOLDS)):
        tp = np.zeros((n_sets, width))
        fp = np.zeros((n_sets, width))
        tp[row, position] = m.true_positive[t, gather]
        fp[row, position] = m.false_positive[t, gather]
        tp, fp = np.cumsum(tp, axis=1), np.cumsum(fp, axis=1)
        recall = np.where(padding, 2.0, tp / n_positive)
        precision = np.where(padding, 0.0, tp / (fp + tp + np.spacing(1)))
        envelope = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
        # First position whose recall reaches each recall point, for every set at once: complex
        # numbers sort by real part, then imaginary part, so (row + 1j * recall) is one sorted array.
        keys = (rows + 1j * recall).ravel()
        found = np.searchsorted(keys, (rows + 1j * RECALL_POINTS[None, :]).ravel(), side="left")
        index = found.reshape(n_sets, len(RECALL_POINTS)) - rows * width
        at_recall[t] = np.take_along_axis(envelope, index, axis=1)
    return at_recall


def check_inputs(ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int) -> None:
    if len(ground_truth) != len(predictions):
        raise MetricsError(f"{len(ground_truth)} ground-truth images but {len(predictions)} prediction sets")
    if not ground_truth:
        raise MetricsError("no images to evaluate")
    boxes = np.concatenate([*(t.boxes for t in ground_truth), *(p.boxes for p in predictions)])
    class_ids = np.concatenate([*(t.class_ids for t in ground_truth), *(p.class_ids for p in predictions)])
    scores = np.concatenate([p.scores for p in predictions])
    in_range = not len(class_ids) or (class_ids.min() >= 0 and class_ids.max() < n_classes)
    if in_range and np.isfinite(boxes).all() and np.isfinite(scores).all():
        return
    for i, (truth, pred) in enumerate(zip(ground_truth, predictions, strict=True)):  # name the first bad image
        _check(f"ground truth of image {i}", truth.boxes, truth.class_ids, n_classes)
        _check(f"predictions of image {i}", pred.boxes, pred.class_ids, n_classes)
        if not np.isfinite(pred.scores).all():
            raise MetricsError(f"predictions of image {i}: non-finite scores, expected finite numbers")


def _check(what: str, boxes: np.ndarray, class_ids: np.ndarray, n_classes: int) -> None:
    if len(class_ids) and (class_ids.min() < 0 or class_ids.max() >= n_classes):
        raise MetricsError(f"{what}: class ids {sorted(set(class_ids.tolist()))}, expected 0..{n_classes - 1}")
    if not np.isfinite(boxes).all():
        raise MetricsError(f"{what}: non-finite box coordinates, expected finite pixel x_min, y_min, x_max, y_max")


@dataclass(frozen=True)
class _Truths:
    """The ground truth of every image in one table, sorted by group (``class * n_images + image``).
    ``ignored``: a crowd region, or outside :data:`AREA_ALL`; it does not count as a positive."""

    xywh: np.ndarray
    group: np.ndarray
    crowd: np.ndarray
    ignored: np.ndarray


@dataclass(frozen=True)
class _Kept:
    """The detections COCOeval keeps, in one table sorted by group, within a group by descending
    score. ``ignored``: outside :data:`AREA_ALL`, which counts only while unmatched."""

    xywh: np.ndarray
    group: np.ndarray
    ignored: np.ndarray
    score: np.ndarray


def _truth_table(ground_truth: Sequence[GroundTruth], n_images: int) -> _Truths:
    """Ground truth per group in its given order (_prepare: ``ignore`` is ``iscrowd``). evaluateImg
    moves ignored boxes last; :func:`_assign` weighs counted and ignored ones apart, which keeps the
    order within each kind and needs no such sort."""
    image = np.repeat(np.arange(n_images), [len(t) for t in ground_truth])
    xywh = _xywh(np.concatenate([t.boxes for t in ground_truth]))
    group = np.concatenate([t.class_ids for t in ground_truth]) * n_images + image
    crowd = np.concatenate([t.crowd for t in ground_truth])
    order = np.argsort(group, kind="stable")
    return _Truths(xywh[order], group[order], crowd[order], (crowd | _outside_area(xywh))[order])


def _kept_detections(predictions: Sequence[Detections], n_images: int) -> _Kept:
    """Detections per group in their given order, stable-sorted by descending score and cut at
    :data:`MAX_DETECTIONS` (evaluateImg: ``np.argsort(-score, kind='mergesort')[0:maxDet]``)."""
    image = np.repeat(np.arange(n_images), [len(p) for p in predictions])
    score = np.concatenate([p.scores for p in predictions]).astype(np.float64)
    group = np.concatenate([p.class_ids for p in predictions]) * n_images + image
    order = np.argsort(-score, kind="stable")
    order = order[np.argsort(group[order], kind="stable")]
    rank = np.arange(len(order)) - np.searchsorted(group[order], group[order], side="left")
    order = order[rank < MAX_DETECTIONS]
    xywh = _xywh(np.concatenate([p.boxes for p in predictions])[order])
    return _Kept(xywh, group[order], _outside_area(xywh), score[order])


def _outside_area(xywh: np.ndarray) -> np.ndarray:
    # evaluateImg: ``area < aRng[0] or area > aRng[1]``, the area being the annotation's w * h
    area = xywh[:, 2] * xywh[:, 3]
    return (area < AREA_ALL[0]) | (area > AREA_ALL[1])


def _greedy_matches(kept: _Kept, truths: _Truths, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """``(hit, on_ignored)``, each ``(T, D)`` over the kept detections: whether COCOeval's greedy
    assignment matches the detection at each IoU threshold, and whether to ignored ground truth."""
    n_truths = np.bincount(truths.group, minlength=n_groups)
    first_truth = np.cumsum(n_truths) - n_truths
    hit = np.zeros((len(IOU_THRESHOLDS), len(kept.group)), bool)
    on_ignored = np.zeros_like(hit)
    taken = np.zeros((len(IOU_THRESHOLDS), len(truths.group)), bool)  # ground truth matched at a threshold
    paired = np.flatnonzero(n_truths[kept.group])  # detections with ground truth of their group
    n_pairs = n_truths[kept.group[paired]]
    start = np.cumsum(n_pairs) - n_pairs
    # Chunks in group-then-rank order: a group split between chunks meets its lower ranks first.
    for chunk in np.split(paired, np.flatnonzero(np.diff(start // CHUNK_PAIRS)) + 1):
        if len(chunk):
            _match_chunk(chunk, kept, truths, first_truth, n_truths, taken, hit, on_ignored)
    return hit, on_ignored


def _match_chunk(
    detections: np.ndarray,
    kept: _Kept,
    truths: _Truths,
    first_truth: np.ndarray,
    n_truths: np.ndarray,
    taken: np.ndarray,
    hit: np.ndarray,
    on_ignored: np.ndarray,
) -> None:
    """Match ``detections`` (indices into ``kept``) rank by rank, updating ``taken``, ``hit`` and
    ``on_ignored`` in place. A pair below the lowest threshold can never match and is dropped."""
    rank = detections - np.searchsorted(kept.group, kept.group[detections], side="left")
    order = np.argsort(rank, kind="stable")
    detections, rank = detections[order], rank[order]
    group = kept.group[detections]
    count = n_truths[group]
    pair_detection = np.repeat(np.arange(len(detections)), count)
    pair_truth = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count - first_truth[group], count)
    iou = _iou(kept.xywh[detections][pair_detection], truths.xywh[pair_truth], truths.crowd[pair_truth])
    near = iou >= IOU_THRESHOLDS[0]
    pair_detection, pair_truth, iou = pair_detection[near], pair_truth[near], iou[near]
    bounds = np.searchsorted(rank[pair_detection], np.arange(MAX_DETECTIONS + 1))
    for lo, hi in itertools.pairwise(bounds):
        if lo == hi:
            continue
        _assign(detections, pair_detection[lo:hi], pair_truth[lo:hi], iou[lo:hi], truths, taken, hit, on_ignored)


def _assign(
    detections: np.ndarray,
    local: np.ndarray,
    truth: np.ndarray,
    iou: np.ndarray,
    truths: _Truths,
    taken: np.ndarray,
    hit: np.ndarray,
    on_ignored: np.ndarray,
) -> None:
    """One rank: at most one detection per group, its pairs contiguous (``local`` indexes
    ``detections``), the ground truth of a pair in COCOeval's order. evaluateImg's scan, per
    threshold: a candidate is not yet taken (a crowd region may be taken again) and reaches the IoU
    of the best so far, so the last index attaining the maximum wins; a match to ground truth that
    counts stops the scan at the first ignored one, so ignored ground truth matches only when no
    other does. (evaluateImg caps a threshold at 1 - 1e-10, which no COCO threshold reaches.)"""
    starts = np.flatnonzero(np.diff(local, prepend=-1))
    segment = np.cumsum(np.diff(local, prepend=-1) != 0) - 1
    candidate = (~taken[:, truth] | truths.crowd[truth]) & (iou[None, :] >= IOU_THRESHOLDS[:, None])
    ignored = truths.ignored[truth]
    chosen = _last_best(candidate & ~ignored, iou, starts, segment)
    if ignored.any():
        chosen = np.where(chosen >= 0, chosen, _last_best(candidate & ignored, iou, starts, segment))
    threshold, matched = np.nonzero(chosen >= 0)
    partner = truth[chosen[threshold, matched]]
    detection = detections[local[starts[matched]]]
    hit[threshold, detection] = True
    on_ignored[threshold, detection] = truths.ignored[partner]
    taken[threshold, partner] = True


def _last_best(candidate: np.ndarray, iou: np.ndarray, starts: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """``(T, S)``: per threshold and segment of pairs, the index of the last candidate attaining
    the segment's highest IoU among candidates; -1 where a segment has none."""
    value = np.where(candidate, iou[None, :], -1.0)
    best = np.maximum.reduceat(value, starts, axis=1)
    index = np.where(candidate & (value == best[:, segment]), np.arange(len(iou))[None, :], -1)
    return np.maximum.reduceat(index, starts, axis=1)


def _iou(detections: np.ndarray, truths: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """IoU of xywh float64 pairs, operation for operation as maskApi.c ``bbIou`` (cocodataset/cocoapi:
    common/maskApi.c): a crowd region divides by the detection's area alone."""
    d, g = detections.T, truths.T
    w = np.minimum(d[2] + d[0], g[2] + g[0]) - np.maximum(d[0], g[0])
    h = np.minimum(d[3] + d[1], g[3] + g[1]) - np.maximum(d[1], g[1])
    intersection = w * h
    detection_area = d[2] * d[3]
    union = np.where(crowd, detection_area, detection_area + g[2] * g[3] - intersection)
    return np.divide(intersection, union, out=np.zeros(len(crowd)), where=(w > 0) & (h > 0))


def _xywh(boxes: np.ndarray) -> np.ndarray:
    """Pixel x_min, y_min, x_max, y_max (float32) -> COCO x, y, w, h in float64."""
    b = boxes.astype(np.float64)
    return np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], axis=1)
