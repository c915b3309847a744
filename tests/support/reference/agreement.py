"""The agreement of two paths as the harness first computed it, one image at a time in a Python loop
(harness.verdict.metrics.agreement before it matched every image at once): the reference the
vectorised matching is held to, counts and score drifts bit for bit."""

import numpy as np

from harness.core.detections import Detections
from harness.verdict.metrics.agreement import Agreement, score_scale


def agreement(reference: list[Detections], candidate: list[Detections], iou_threshold: float = 0.5) -> Agreement:
    matched = flipped = n_ref = n_cand = 0
    drifts: list[np.ndarray] = []
    ref_scores: list[np.ndarray] = []
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
            ref_scores.append(ref.scores[r].astype(np.float64))
            drifts.append(cand.scores[c].astype(np.float64) - ref_scores[-1])
    drift = np.concatenate(drifts) if drifts else np.zeros(0)
    matched_ref = np.concatenate(ref_scores) if ref_scores else np.zeros(0)
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
        score_scale=score_scale(matched_ref, matched_ref + drift),
    )


def differing(reference: Detections, candidate: Detections) -> int:
    """One image's boxes of either path that the other does not match with its class (the report's
    worst images, as it first counted them)."""
    if not len(reference) or not len(candidate):
        return len(reference) + len(candidate)
    a = agreement([reference], [candidate])
    return a.missed + a.extra + a.class_flipped


def _greedy(quality: np.ndarray, order: np.ndarray, ref_order: np.ndarray) -> list[tuple[int, int]]:
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
    a, b = a.astype(np.float64)[:, None, :], b.astype(np.float64)[None, :, :]
    width = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    height = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = width * height
    union = (
        (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / union, 0.0)
