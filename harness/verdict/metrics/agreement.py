"""Agreement of two paths on the same images: which boxes of a candidate path (a HEF, say) find a
box of the reference path (the ONNX) at IoU >= 0.5, with the same class or another, and how the
matched boxes' scores follow the reference's (their drift and their scale)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import HarnessError

IOU_THRESHOLD = 0.5
MIN_SCALE_PAIRS = 5  # fewer matched pairs than this measure no score scale
SPAN = (0.05, 0.95)  # the quantiles that say where a path's matched scores lie
_CELLS = 1 << 18  # (image, reference, candidate) cells matched at once: 2 MiB per float64 array


class AgreementError(HarnessError):
    """Two prediction sets that do not cover the same images."""


@dataclass(frozen=True)
class Agreement:
    """Counts over all images. Every reference box is matched, class-flipped or missed; every
    candidate box is matched, class-flipped or extra. Score drift is candidate minus reference score
    over the matched pairs (0.0 when none matched); its standard deviation tells one common shift
    (near 0) from scores moved each its own way."""

    n_reference: int
    n_candidate: int
    matched: int
    class_flipped: int
    missed: int
    extra: int
    mean_score_drift: float
    mean_abs_score_drift: float
    score_drift_std: float = 0.0
    score_scale: ScoreScale | None = None  # None: too few matched pairs, or their reference scores all equal


@dataclass(frozen=True)
class ScoreScale:
    """How the matched pairs' candidate scores spread against their reference scores. ``ratio``: the
    candidate's standard deviation over the reference's (1: the same scale, whatever common shift or
    noise; a sigmoid put over scores that are probabilities already gives at most 0.25, its steepest
    slope). Both paths' matched scores lie above the same threshold, so the ratio holds where a
    least-squares slope does not: the noise of a path pushes the pairs near the threshold under it on
    one side only and flattens a slope, not the spreads. ``log_error``: the standard error of the ratio's
    logarithm, 1 / sqrt(pairs - 1) (the two spreads' errors taken as independent, which pairs that
    move together are not: a margin on the safe side); ``reference`` and ``candidate``: where each
    path's matched scores lie (the :data:`SPAN` quantiles), over ``pairs`` matched pairs."""

    pairs: int
    ratio: float
    log_error: float
    reference: tuple[float, float]
    candidate: tuple[float, float]


def score_scale(reference: np.ndarray, candidate: np.ndarray) -> ScoreScale | None:
    """The :class:`ScoreScale` of matched pairs' ``reference`` and ``candidate`` scores (float64, pair
    by pair); None with fewer than :data:`MIN_SCALE_PAIRS` pairs or reference scores all equal (no
    spread to measure against)."""
    n = len(reference)
    if n < MIN_SCALE_PAIRS:
        return None
    spread = float(reference.std())
    if not spread > 0:
        return None
    ref_span, cand_span = np.quantile(reference, SPAN), np.quantile(candidate, SPAN)
    return ScoreScale(
        n,
        float(candidate.std()) / spread,
        1 / math.sqrt(n - 1),
        (float(ref_span[0]), float(ref_span[1])),
        (float(cand_span[0]), float(cand_span[1])),
    )


def agreement(
    reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float = IOU_THRESHOLD
) -> Agreement:
    """Greedy matching per image: candidate boxes in descending score order each take the unmatched
    reference box of their class with the highest IoU >= ``iou_threshold``; the boxes left over are
    then paired the same way across classes (class flips)."""
    found = _match(reference, candidate, iou_threshold)
    n_ref, n_cand = int(found.n_reference.sum()), int(found.n_candidate.sum())
    matched, flipped, drift = int(found.matched.sum()), int(found.flipped.sum()), found.drift
    return Agreement(
        n_reference=n_ref,
        n_candidate=n_cand,
        matched=matched,
        class_flipped=flipped,
        missed=n_ref - matched - flipped,
        extra=n_cand - matched - flipped,
        mean_score_drift=float(drift.mean()) if len(drift) else 0.0,
        mean_abs_score_drift=float(np.abs(drift).mean()) if len(drift) else 0.0,
        score_drift_std=float(drift.std()) if len(drift) else 0.0,
        score_scale=score_scale(found.reference_scores, found.reference_scores + drift),
    )


def differing_boxes(
    reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float = IOU_THRESHOLD
) -> np.ndarray:
    """Per image, the boxes of either path that the other does not match with its class, as
    :func:`agreement` matches them: missed + extra + class-flipped (every box of the other where one
    path has none)."""
    found = _match(reference, candidate, iou_threshold)
    return found.n_reference + found.n_candidate - 2 * found.matched - found.flipped


@dataclass(frozen=True)
class _Matches:
    """Per image its reference and candidate boxes, matched pairs and class flips; ``drift``: candidate
    minus reference score (float64) of each matched pair, image by image, within an image in the
    order the candidates took their references; ``reference_scores`` their reference scores (float64)."""

    n_reference: np.ndarray
    n_candidate: np.ndarray
    matched: np.ndarray
    flipped: np.ndarray
    drift: np.ndarray
    reference_scores: np.ndarray


def _match(reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float) -> _Matches:
    """The greedy matching of every image, a chunk of images of about :data:`_CELLS` (image, reference,
    candidate) cells at a time."""
    if len(reference) != len(candidate):
        raise AgreementError(f"agreement: {len(reference)} reference images but {len(candidate)} candidate images")
    n_ref = np.array([len(d) for d in reference], dtype=np.int64)
    n_cand = np.array([len(d) for d in candidate], dtype=np.int64)
    matched, flipped = np.zeros(len(reference), np.int64), np.zeros(len(reference), np.int64)
    drifts: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    for a, b in _chunks(n_ref.tolist(), n_cand.tolist()):
        matched[a:b], flipped[a:b], drift, score = _match_chunk(reference[a:b], candidate[a:b], iou_threshold)
        drifts.append(drift)
        scores.append(score)
    drift = np.concatenate(drifts) if drifts else np.zeros(0)
    return _Matches(n_ref, n_cand, matched, flipped, drift, np.concatenate(scores) if scores else np.zeros(0))


def _chunks(n_ref: list[int], n_cand: list[int]) -> list[tuple[int, int]]:
    """Consecutive image ranges whose padded (images, most references, most candidates) cells stay
    within :data:`_CELLS` (one image at least)."""
    ranges, start = [], 0
    while start < len(n_ref):
        stop, rows, columns = start + 1, n_ref[start], n_cand[start]
        while stop < len(n_ref):
            wider_rows, wider_columns = max(rows, n_ref[stop]), max(columns, n_cand[stop])
            if (stop + 1 - start) * wider_rows * wider_columns > _CELLS:
                break
            stop, rows, columns = stop + 1, wider_rows, wider_columns
        ranges.append((start, stop))
        start = stop
    return ranges


def _ranked(detections: Sequence[Detections], width: int) -> tuple[np.ndarray, ...]:
    """Each image's boxes (float64), scores and class ids in descending score order (ties: in their
    order), padded to ``width`` per image; and whether each slot holds a box."""
    n = len(detections)
    lengths = np.array([len(d) for d in detections], dtype=np.int64)
    image = np.repeat(np.arange(n), lengths)
    scores = np.concatenate([d.scores for d in detections])
    order = np.lexsort((-scores, image))  # stable: as np.argsort(-scores, kind="stable") image by image
    rank = np.arange(len(order)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    boxes = np.zeros((n, width, 4))
    ranked_scores = np.zeros((n, width), np.float32)
    class_ids = np.zeros((n, width), np.int64)
    boxes[image, rank] = np.concatenate([d.boxes for d in detections])[order]
    ranked_scores[image, rank] = scores[order]
    class_ids[image, rank] = np.concatenate([d.class_ids for d in detections])[order]
    held = np.arange(width)[None, :] < lengths[:, None]
    return boxes, ranked_scores, class_ids, held


def _match_chunk(
    reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(matched, class flips) per image of the chunk, the matched pairs' score drifts and reference scores
    (see :class:`_Matches`)."""
    n = len(reference)
    rows, columns = max(len(d) for d in reference), max(len(d) for d in candidate)
    if not rows or not columns:
        return np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(0), np.zeros(0)
    ref_boxes, ref_scores, ref_ids, ref_held = _ranked(reference, rows)
    cand_boxes, cand_scores, cand_ids, cand_held = _ranked(candidate, columns)
    iou = _pairwise_iou(ref_boxes, cand_boxes)  # (n, rows, columns)
    near = (iou >= iou_threshold) & ref_held[:, :, None] & cand_held[:, None, :]
    same_class = ref_ids[:, :, None] == cand_ids[:, None, :]
    image, ref, cand = _greedy(np.where(same_class & near, iou, -1.0))
    free_ref, free_cand = ref_held.copy(), cand_held.copy()
    free_ref[image, ref] = False
    free_cand[image, cand] = False
    eligible = ~same_class & near & free_ref[:, :, None] & free_cand[:, None, :]
    flip_image, _, _ = _greedy(np.where(eligible, iou, -1.0))
    order = np.lexsort((cand, image))  # image by image, each in the order its candidates were taken
    image, ref, cand = image[order], ref[order], cand[order]
    matched_ref = ref_scores[image, ref].astype(np.float64)
    drift = cand_scores[image, cand].astype(np.float64) - matched_ref
    return np.bincount(image, minlength=n), np.bincount(flip_image, minlength=n), drift, matched_ref


def _greedy(quality: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(image, reference, candidate) of each pair: in every image at once, each candidate in turn (the
    columns, in descending score order) takes the free reference (the rows, in descending score
    order) of highest ``quality`` (negative: not eligible); equal qualities go to the first row (the
    higher-scoring reference, so that a path compared with itself pairs every box with itself).
    ``quality`` ``(images, references, candidates)`` is used up (a taken reference's row set to -1)."""
    images = np.arange(len(quality))
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for c in range(quality.shape[2]):
        column = quality[:, :, c]
        best = column.argmax(axis=1)
        taken = column[images, best] >= 0
        if taken.any():
            image, ref = images[taken], best[taken]
            quality[image, ref, :] = -1.0
            found.append((image, ref, np.full(len(image), c)))
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    image, ref, cand = (np.concatenate(parts) for parts in zip(*found, strict=True))
    return image, ref, cand


def _pairwise_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU ``(n, len(a), len(b))`` of each image's pixel xyxy boxes ``a`` ``(n, A, 4)`` and ``b`` ``(n, B, 4)``,
    in float64; 0 where boxes do not overlap."""
    a, b = a.astype(np.float64)[:, :, None, :], b.astype(np.float64)[:, None, :, :]
    width = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    height = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = width * height
    union = (
        (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / union, 0.0)


@dataclass(frozen=True)
class Disagreement:
    """Every box of two paths that :func:`agreement` leaves unmatched, and what it matched: the missed
    reference boxes' and the extra candidate boxes' scores and their highest IoU with another box of
    their own path and class (0 where none; the overlap an NMS per class judged them by), the
    matched pairs' IoU and score drift (candidate minus reference), and the class-flipped pairs' count
    (in none of the arrays)."""

    missed_scores: np.ndarray
    missed_neighbour_iou: np.ndarray
    extra_scores: np.ndarray
    extra_neighbour_iou: np.ndarray
    matched_iou: np.ndarray
    drift: np.ndarray
    flipped: int = 0


def disagreement(
    reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float = IOU_THRESHOLD
) -> Disagreement:
    """The boxes :func:`agreement` leaves unmatched (missed and extra, flips left out) and its matched pairs,
    as :class:`Disagreement`, matched the same greedy way a chunk of images at a time."""
    if len(reference) != len(candidate):
        raise AgreementError(f"agreement: {len(reference)} reference images but {len(candidate)} candidate images")
    parts: list[tuple[np.ndarray, ...]] = []
    n_ref = [len(d) for d in reference]
    n_cand = [len(d) for d in candidate]
    for a, b in _chunks(n_ref, n_cand):
        parts.append(_disagreement_chunk(reference[a:b], candidate[a:b], iou_threshold))
    empty = np.zeros(0)
    missed, missed_near, extra, extra_near, matched_iou, drift, flips = (
        [np.concatenate(column) for column in zip(*parts, strict=True)] if parts else [empty] * 7
    )
    return Disagreement(missed, missed_near, extra, extra_near, matched_iou, drift, len(flips))


def _disagreement_chunk(
    reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float
) -> tuple[np.ndarray, ...]:
    rows, columns = max(len(d) for d in reference), max(len(d) for d in candidate)
    ref_near = _neighbour_iou(reference, rows)
    cand_near = _neighbour_iou(candidate, columns)
    if not rows or not columns:
        ref_held = np.arange(rows)[None, :] < np.array([len(d) for d in reference])[:, None]
        cand_held = np.arange(columns)[None, :] < np.array([len(d) for d in candidate])[:, None]
        ref_scores = _ranked(reference, rows)[1] if rows else np.zeros((len(reference), 0), np.float32)
        cand_scores = _ranked(candidate, columns)[1] if columns else np.zeros((len(candidate), 0), np.float32)
        empty = np.zeros(0)
        scores = (ref_scores[ref_held].astype(np.float64), cand_scores[cand_held].astype(np.float64))
        return scores[0], ref_near[ref_held], scores[1], cand_near[cand_held], empty, empty, empty
    ref_boxes, ref_scores, ref_ids, ref_held = _ranked(reference, rows)
    cand_boxes, cand_scores, cand_ids, cand_held = _ranked(candidate, columns)
    iou = _pairwise_iou(ref_boxes, cand_boxes)
    near = (iou >= iou_threshold) & ref_held[:, :, None] & cand_held[:, None, :]
    same_class = ref_ids[:, :, None] == cand_ids[:, None, :]
    image, ref, cand = _greedy(np.where(same_class & near, iou, -1.0))
    matched_iou = iou[image, ref, cand]
    drift = cand_scores[image, cand].astype(np.float64) - ref_scores[image, ref].astype(np.float64)
    free_ref, free_cand = ref_held.copy(), cand_held.copy()
    free_ref[image, ref] = False
    free_cand[image, cand] = False
    eligible = ~same_class & near & free_ref[:, :, None] & free_cand[:, None, :]
    flip_image, flip_ref, flip_cand = _greedy(np.where(eligible, iou, -1.0))
    free_ref[flip_image, flip_ref] = False
    free_cand[flip_image, flip_cand] = False
    return (
        ref_scores[free_ref].astype(np.float64),
        ref_near[free_ref],
        cand_scores[free_cand].astype(np.float64),
        cand_near[free_cand],
        matched_iou,
        drift,
        flip_image,
    )


def _neighbour_iou(detections: Sequence[Detections], width: int) -> np.ndarray:
    """Per image and ranked slot (as :func:`_ranked` orders them, padded to ``width``), the box's highest
    IoU with another box of its image and class (0 where none)."""
    out = np.zeros((len(detections), width))
    if not width:
        return out
    lengths = [len(d) for d in detections]
    for a, b in _chunks(lengths, lengths):
        inner = max(lengths[a:b])
        if not inner:
            continue
        boxes, _, class_ids, held = _ranked(detections[a:b], inner)
        iou = _pairwise_iou(boxes, boxes)
        others = (class_ids[:, :, None] == class_ids[:, None, :]) & held[:, :, None] & held[:, None, :]
        others &= ~np.eye(inner, dtype=bool)[None]
        out[a:b, :inner] = np.where(others, iou, 0.0).max(axis=2)
    return out
