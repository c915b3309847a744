"""Agreement of two paths on the same images: which boxes of a candidate path (a HEF, say) find a
box of the reference path (the ONNX) at IoU >= 0.5, with the same class or another."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import HarnessError

IOU_THRESHOLD = 0.5


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


def agreement(
    reference: Sequence[Detections], candidate: Sequence[Detections], iou_threshold: float = IOU_THRESHOLD
) -> Agreement:
    """Greedy matching per image: candidate boxes in descending score order each take the unmatched
    reference box of their class with the highest IoU >= ``iou_threshold``; the boxes left over are
    then paired the same way across classes (class flips)."""
    if len(reference) != len(candidate):
        raise AgreementError(f"agreement: {len(reference)} reference images but {len(candidate)} candidate images")
    matched = flipped = n_ref = n_cand = 0
    drifts: list[np.ndarray] = []
    for ref, cand in zip(reference, candidate, strict=True):
        iou = _pairwise_iou(ref.boxes, cand.boxes)
        same_class = ref.class_ids[:, None] == cand.class_ids[None, :]
        order = np.argsort(-cand.scores, kind="stable")
        ref_order = np.argsort(-ref.scores, kind="stable")
        pairs = _greedy(np.where(same_class & (iou >= iou_threshold), iou, -1.0), order, ref_order)
        free_ref = np.ones(len(ref), bool)
        free_ref[[r for r, _ in pairs]] = False
        free_cand = np.ones(len(cand), bool)
        free_cand[[c for _, c in pairs]] = False
        eligible = ~same_class & (iou >= iou_threshold) & free_ref[:, None] & free_cand[None, :]
        flips = _greedy(np.where(eligible, iou, -1.0), order, ref_order)
        matched += len(pairs)
        flipped += len(flips)
        n_ref += len(ref)
        n_cand += len(cand)
        if pairs:
            r, c = np.array(pairs).T
            drifts.append(cand.scores[c].astype(np.float64) - ref.scores[r].astype(np.float64))
    drift = np.concatenate(drifts) if drifts else np.zeros(0)
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
    )


def _greedy(quality: np.ndarray, order: np.ndarray, ref_order: np.ndarray) -> list[tuple[int, int]]:
    """(reference, candidate) pairs: each candidate in ``order`` takes the free reference of highest
    ``quality`` (negative: not eligible); equal qualities go to the reference first in ``ref_order``
    (the higher-scoring one, so that a path compared with itself pairs every box with itself)."""
    quality = quality[ref_order]
    pairs = []
    for c in order:
        if not len(quality):
            break
        r = int(np.argmax(quality[:, c]))
        if quality[r, c] < 0:
            continue
        pairs.append((int(ref_order[r]), int(c)))
        quality[r, :] = -1.0
    return pairs


def _pairwise_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU ``(len(a), len(b))`` of pixel xyxy boxes, in float64; 0 where boxes do not overlap."""
    a, b = a.astype(np.float64)[:, None, :], b.astype(np.float64)[None, :, :]
    width = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    height = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = width * height
    union = (
        (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / union, 0.0)
