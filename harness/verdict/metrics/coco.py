"""COCO box metrics with pycocotools, and a paired bootstrap of the mAP difference between two paths.

pycocotools' ``COCOeval`` is the matcher (boxes, IoU 0.50:0.05:0.95, at most 100 detections per
image and class, area range "all", crowd regions as COCO has them). Its matching is per image and
class, so it runs on chunks of :data:`CHUNK_IMAGES` images, each with small in-memory datasets that
are dropped once :func:`per_image_matches` has taken their compact records: per kept detection its
score and true/false positive flags per IoU threshold, per image and class the ground truth that
counts. Memory then grows with the detections, not with pycocotools' bookkeeping.

Accumulation (``COCOeval.accumulate``: 101 recall points) is this module's own, vectorised over
image sets: :func:`evaluate` accumulates the dataset once, the bootstrap repeats it over resampled
image sets, with the same matches. An image drawn twice counts twice, exactly as if it were listed
twice.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval, Params

from harness.core import defaults
from harness.core.detections import Detections
from harness.core.errors import HarnessError
from harness.inputs.dataset import GroundTruth

_PARAMS = Params(iouType="bbox")
IOU_THRESHOLDS: np.ndarray = _PARAMS.iouThrs
RECALL_POINTS: np.ndarray = _PARAMS.recThrs
MAX_DETECTIONS = 100
CHUNK_IMAGES = 64  # images matched by one COCOeval
_ACCUMULATION_CELLS = 1 << 18  # (image set, detection) cells accumulated at once: 2 MiB per float array


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
    """COCOeval's matches of one class: one entry per kept detection, grouped by image in image
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
    ap = _average_precision(matches, np.arange(len(ground_truth))[None])  # (K, T, 1), NaN without ground truth
    map50, map50_95 = _class_means(ap)
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
                ap50=float(ap[k, 0, 0]),
                ap50_95=float(ap[k, :, 0].mean()),
                precision=tp / (tp + fp) if tp + fp else 0.0,
                recall=tp / n_pos if n_pos else 0.0,
            )
        )
    return CocoMetrics(
        map50=float(map50[0]),
        map50_95=float(map50_95[0]),
        score_threshold=score_threshold,
        n_images=len(ground_truth),
        per_class=tuple(per_class),
    )


def per_image_matches(
    ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int
) -> ImageMatches:
    """COCOeval's per-image, per-class matching of ``predictions`` against ``ground_truth``, run on
    chunks of :data:`CHUNK_IMAGES` images."""
    _check_inputs(ground_truth, predictions, n_classes)
    chunks = [
        _chunk_matches(ground_truth[start : start + CHUNK_IMAGES], predictions[start : start + CHUNK_IMAGES], n_classes)
        for start in range(0, len(ground_truth), CHUNK_IMAGES)
    ]
    return _joined(chunks)


def mean_average_precision(matches: ImageMatches, image_sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mAP@0.5, mAP@0.5:0.95), each ``(B,)``, over the image sets ``(B, M)`` of image indices
    (repeats allowed), accumulated as ``COCOeval.accumulate`` does for a dataset listing those
    images in that order. NaN for a set in which no class has ground truth."""
    sets = np.asarray(image_sets, dtype=np.int64)
    if sets.ndim != 2 or (sets.size and (sets.min() < 0 or sets.max() >= matches.n_images)):
        raise MetricsError(f"image sets: shape {sets.shape}, expected (B, M) indices in 0..{matches.n_images - 1}")
    return _class_means(_average_precision(matches, sets))


def paired_bootstrap(
    ground_truth: Sequence[GroundTruth],
    predictions_a: Sequence[Detections],
    predictions_b: Sequence[Detections],
    names: Sequence[str],
    resamples: int = 200,
    seed: int = 0,
) -> PairedBootstrap:
    """Paired bootstrap over images of mAP(b) - mAP(a): the same ``resamples`` image sets, drawn
    with replacement, score both paths; the interval is their 2.5 %-97.5 % quantile range."""
    if resamples < 1:
        raise MetricsError(f"bootstrap: resamples {resamples}, expected at least 1")
    a = per_image_matches(ground_truth, predictions_a, len(names))
    b = per_image_matches(ground_truth, predictions_b, len(names))
    n = len(ground_truth)
    sets = np.concatenate([np.arange(n)[None], np.random.default_rng(seed).integers(0, n, size=(resamples, n))])
    a50, a50_95 = mean_average_precision(a, sets)
    b50, b50_95 = mean_average_precision(b, sets)
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
        ap[k] = _class_average_precision(m, sets, matches.n_images)
    return ap


def _class_means(ap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mAP@0.5, mAP@0.5:0.95) ``(B,)`` from ``(K, T, B)`` APs: the mean over the classes with ground truth."""
    valid = ~np.isnan(ap[:, 0])  # (K, B): a class counts where the set holds some of its ground truth
    count = valid.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        map50 = np.where(valid, ap[:, 0], 0).sum(0) / count
        map50_95 = np.where(valid, ap.mean(1), 0).sum(0) / count
    return map50, map50_95


def _class_average_precision(m: ClassMatches, sets: np.ndarray, n_images: int) -> np.ndarray:
    """``(T, B)`` AP of one class over each image set; NaN where the set has no ground truth of it.
    Sets are accumulated in batches of about :data:`_ACCUMULATION_CELLS` (set, detection) cells."""
    per_image = np.bincount(m.image, minlength=n_images)
    first = np.cumsum(per_image) - per_image  # each image's first detection
    batch = max(1, _ACCUMULATION_CELLS // (int(per_image[sets].sum(1).max(initial=0)) + 1))
    ap = np.empty((len(IOU_THRESHOLDS), len(sets)))
    for start in range(0, len(sets), batch):
        ap[:, start : start + batch] = _batch_average_precision(m, sets[start : start + batch], per_image, first)
    return np.where(m.n_positive[sets].sum(1)[None, :] > 0, ap, np.nan)


def _batch_average_precision(m: ClassMatches, sets: np.ndarray, per_image: np.ndarray, first: np.ndarray) -> np.ndarray:
    """``(T, B)`` AP of one class over each image set, 0 where the set has no ground truth of it."""
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
    ap = np.empty((len(IOU_THRESHOLDS), n_sets))
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
        ap[t] = np.take_along_axis(envelope, index, axis=1).mean(1)
    return ap


def _check_inputs(ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int) -> None:
    if len(ground_truth) != len(predictions):
        raise MetricsError(f"{len(ground_truth)} ground-truth images but {len(predictions)} prediction sets")
    if not ground_truth:
        raise MetricsError("no images to evaluate")
    for i, (truth, pred) in enumerate(zip(ground_truth, predictions, strict=True)):
        _check(f"ground truth of image {i}", truth.boxes, truth.class_ids, n_classes)
        _check(f"predictions of image {i}", pred.boxes, pred.class_ids, n_classes)
        if not np.isfinite(pred.scores).all():
            raise MetricsError(f"predictions of image {i}: non-finite scores, expected finite numbers")


def _chunk_matches(
    ground_truth: Sequence[GroundTruth], predictions: Sequence[Detections], n_classes: int
) -> ImageMatches:
    """The matches of a few images, from a ``COCOeval`` over in-memory datasets of those alone."""
    gt_anns: list[dict[str, object]] = []
    dt_anns: list[dict[str, object]] = []
    for i, (truth, pred) in enumerate(zip(ground_truth, predictions, strict=True)):
        for box, c, crowd in zip(_xywh(truth.boxes), truth.class_ids.tolist(), truth.crowd.tolist(), strict=True):
            gt_anns.append(_annotation(len(gt_anns) + 1, i, c, box, iscrowd=int(crowd)))
        for box, c, s in zip(_xywh(pred.boxes), pred.class_ids.tolist(), pred.scores.tolist(), strict=True):
            dt_anns.append(_annotation(len(dt_anns) + 1, i, c, box, score=s))
    images = [{"id": i + 1} for i in range(len(ground_truth))]
    categories = [{"id": k + 1, "name": str(k)} for k in range(n_classes)]
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt, coco_dt = COCO(), COCO()
        coco_gt.dataset = {"images": images, "categories": categories, "annotations": gt_anns}
        coco_dt.dataset = {"images": images, "categories": categories, "annotations": dt_anns}
        coco_gt.createIndex()
        coco_dt.createIndex()
        coco_eval = COCOeval(coco_gt, coco_dt, iouType="bbox")
        coco_eval.params.areaRng = coco_eval.params.areaRng[:1]  # "all" only
        coco_eval.params.areaRngLbl = coco_eval.params.areaRngLbl[:1]
        coco_eval.params.maxDets = [MAX_DETECTIONS]
        coco_eval.evaluate()
    return _matches(coco_eval, len(ground_truth), n_classes)


def _joined(chunks: Sequence[ImageMatches]) -> ImageMatches:
    """The matches of consecutive chunks of images as those of one dataset."""
    offsets = np.cumsum([0] + [c.n_images for c in chunks])
    classes = []
    for per_chunk in zip(*(c.classes for c in chunks), strict=True):
        classes.append(
            ClassMatches(
                image=np.concatenate([m.image + offset for m, offset in zip(per_chunk, offsets[:-1], strict=True)]),
                score=np.concatenate([m.score for m in per_chunk]),
                true_positive=np.concatenate([m.true_positive for m in per_chunk], axis=1),
                false_positive=np.concatenate([m.false_positive for m in per_chunk], axis=1),
                n_positive=np.concatenate([m.n_positive for m in per_chunk]),
            )
        )
    return ImageMatches(int(offsets[-1]), tuple(classes))


def _matches(coco_eval: COCOeval, n_images: int, n_classes: int) -> ImageMatches:
    """Flatten ``COCOeval.evalImgs`` (category-major, then image; one area range) per class."""
    n_thresholds = len(IOU_THRESHOLDS)
    classes = []
    for k in range(n_classes):
        images, scores, tps, fps = [], [], [], []
        n_positive = np.zeros(n_images, dtype=np.int64)
        for i, entry in enumerate(coco_eval.evalImgs[k * n_images : (k + 1) * n_images]):
            if entry is None:
                continue
            matched, ignored = entry["dtMatches"] > 0, entry["dtIgnore"].astype(bool)
            images.append(np.full(len(entry["dtScores"]), i))
            scores.append(np.asarray(entry["dtScores"], dtype=np.float64))
            tps.append(matched & ~ignored)
            fps.append(~matched & ~ignored)
            n_positive[i] = int((entry["gtIgnore"] == 0).sum())
        classes.append(
            ClassMatches(
                image=np.concatenate(images).astype(np.int64) if images else np.zeros(0, np.int64),
                score=np.concatenate(scores) if scores else np.zeros(0),
                true_positive=np.concatenate(tps, axis=1) if tps else np.zeros((n_thresholds, 0), bool),
                false_positive=np.concatenate(fps, axis=1) if fps else np.zeros((n_thresholds, 0), bool),
                n_positive=n_positive,
            )
        )
    return ImageMatches(n_images, tuple(classes))


def _check(what: str, boxes: np.ndarray, class_ids: np.ndarray, n_classes: int) -> None:
    if len(class_ids) and (class_ids.min() < 0 or class_ids.max() >= n_classes):
        raise MetricsError(f"{what}: class ids {sorted(set(class_ids.tolist()))}, expected 0..{n_classes - 1}")
    if not np.isfinite(boxes).all():
        raise MetricsError(f"{what}: non-finite box coordinates, expected finite pixel x_min, y_min, x_max, y_max")


def _xywh(boxes: np.ndarray) -> list[list[float]]:
    b = boxes.astype(np.float64)
    return np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], axis=1).tolist()


def _annotation(ann_id: int, image: int, class_id: int, xywh: list[float], **extra: float) -> dict[str, object]:
    # ids start at 1: COCOeval stores a match as the partner's id and 0 as "unmatched"
    return {
        "id": ann_id,
        "image_id": image + 1,
        "category_id": class_id + 1,
        "bbox": xywh,
        "area": xywh[2] * xywh[3],
        **extra,
    }
