"""How predictions are distributed: boxes per image, score saturation and histogram, and how many
raw class-output cells pass a score threshold (a broken path shows as boxes everywhere at ~100 %)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.core.errors import HarnessError

SATURATION_LEVEL = 0.99
SCORE_BIN_EDGES: np.ndarray = np.linspace(0.0, 1.0, 21)  # 20 bins of 0.05; the last one holds 1.0


class DistributionError(HarnessError):
    """Inputs that a distribution cannot be taken over."""


@dataclass(frozen=True)
class BoxCounts:
    """Boxes per image over a set of images (p95 interpolated linearly between images)."""

    mean: float
    p95: float
    max: int
    total: int


@dataclass(frozen=True)
class ScoreDistribution:
    """``saturation``: share of boxes scoring at least :data:`SATURATION_LEVEL` (0.0 without boxes);
    ``histogram``: box counts per bin of :data:`SCORE_BIN_EDGES`, with the scores below 0 and above 1
    counted apart (raw logits taken for probabilities land there)."""

    n_boxes: int
    saturation: float
    histogram: tuple[int, ...]
    below_zero: int
    above_one: int


@dataclass(frozen=True)
class CellsAboveThreshold:
    """Raw class outputs against a score threshold: ``cells`` grid cells in all heads, ``cells_above``
    of them with some class at or above it, ``candidates`` (cell, class) pairs at or above it (the
    boxes HailoRT's YOLOv8 post-process would feed to NMS)."""

    threshold: float
    cells: int
    cells_above: int
    candidates: int

    @property
    def share(self) -> float:
        return self.cells_above / self.cells if self.cells else 0.0


def box_counts(predictions: Sequence[Detections]) -> BoxCounts:
    if not predictions:
        raise DistributionError("box counts: no images, expected one Detections per image")
    counts = np.array([len(p) for p in predictions])
    return BoxCounts(float(counts.mean()), _percentile_95(counts), int(counts.max()), int(counts.sum()))


def _percentile_95(counts: np.ndarray) -> float:
    """``np.percentile(counts, 95)`` of one whole number or more, to the bit: linear interpolation between the two
    ranks around ``(n - 1) * 0.95``, in numpy's order of operations (numpy: numpy/lib/_function_base_impl.py,
    ``_quantile``, ``_get_indexes`` and ``_lerp``), without numpy's quantile code, whose ``np.unique``
    imports ``numpy.ma`` (6 ms a run)."""
    ordered = np.sort(np.asarray(counts, dtype=np.int64))
    position = (len(ordered) - 1) * 0.95
    if position >= len(ordered) - 1:  # one value: the last
        return float(ordered[-1])
    below = math.floor(position)
    weight = position - below
    low, high = int(ordered[below]), int(ordered[below + 1])
    step = high - low
    return high - step * (1 - weight) if weight >= 0.5 else low + step * weight


def score_distribution(predictions: Sequence[Detections]) -> ScoreDistribution:
    scores = np.concatenate([p.scores for p in predictions]) if predictions else np.zeros(0, np.float32)
    if not np.isfinite(scores).all():
        raise DistributionError("scores: non-finite values, expected finite detection scores")
    inside = scores[(scores >= 0) & (scores <= 1)]
    histogram, _ = np.histogram(inside, bins=SCORE_BIN_EDGES)
    saturated = int((scores >= SATURATION_LEVEL).sum())
    return ScoreDistribution(
        n_boxes=len(scores),
        saturation=saturated / len(scores) if len(scores) else 0.0,
        histogram=tuple(int(h) for h in histogram),
        below_zero=int((scores < 0).sum()),
        above_one=int((scores > 1).sum()),
    )


def cells_above_threshold(class_scores: Sequence[np.ndarray], threshold: float) -> CellsAboveThreshold:
    """``class_scores``: one array per head with the class axis last (``(H, W, C)``, or any
    ``(..., C)``), holding class probabilities. A (cell, class) counts when its score is
    >= threshold, as the HailoRT post-process selects candidates
    (hailort: hailort/libhailort/src/net_flow/ops/yolov8_post_process.hpp, ``extract_detections``)."""
    if not class_scores:
        raise DistributionError("class scores: no heads, expected one (..., classes) array per head")
    cells = cells_above = candidates = 0
    n_classes = None
    for i, head in enumerate(class_scores):
        head = np.asarray(head)
        if head.ndim < 1 or head.shape[-1] == 0 or (n_classes is not None and head.shape[-1] != n_classes):
            raise DistributionError(
                f"class scores head {i}: shape {head.shape}, expected (..., {n_classes or 'classes'}) with classes last"
            )
        n_classes = head.shape[-1]
        above = head.reshape(-1, n_classes) >= threshold
        cells += len(above)
        cells_above += int(above.any(axis=1).sum())
        candidates += int(above.sum())
    return CellsAboveThreshold(threshold, cells, cells_above, candidates)
