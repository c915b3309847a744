"""The agreement gate's score scale: whether the matched boxes' scores of a path follow the reference's
(:class:`~harness.verdict.metrics.agreement.ScoreScale`), and what it means in words where they do not.

The scale (the least-squares slope of a path's matched scores on the reference's) is 1 on a path that
scores as the reference does, for any model: quantisation noise scatters the scores about the
reference's and a common shift moves them all, and neither changes their scale (the clean emulated
HEFs of the demo exports, YOLOv8, YOLO26, YOLOv5, YOLOX and SSD, measure 0.88 to 1.01 at thresholds
0.2 and 0.5). A transform the path adds changes it: a sigmoid put over scores that are probabilities
already squeezes them into [0.5, 0.731] with a slope of at most 0.25, its steepest (measured 0.20 to
0.23 on the same exports), and keeps their order, so neither the mAP nor the boxes move and its mean
drift stays under a drift limit at a high threshold, while no score means what the reference's does.

The rule: a scale further than a factor :data:`SCALE_LIMIT` from the one it is held to, either way,
fails, by more than :data:`SCALE_ERRORS` standard errors of the slope measured on the run's own pairs
(their scatter about the fitted line: a noisy path with few pairs is given its noise). It is held to
1, the reference's own, and where a baseline blessed a scale (``agreement.score_scale``) to that one
too, so that a blessed run passes again. No scale is measured, and none held, with fewer than
:data:`~harness.verdict.metrics.agreement.MIN_SCALE_PAIRS` matched pairs or reference scores all equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.verdict.metrics.agreement import MIN_SCALE_PAIRS, Agreement, ScoreScale

SCALE_LIMIT = 2.0  # the factor a path's score scale may differ from the one it is held to, either way
SCALE_ERRORS = 2.0  # standard errors of the slope (the pairs' own scatter) given to a path before it fails


def within(scale: float) -> tuple[float, float]:
    """The scales within a factor :data:`SCALE_LIMIT` of ``scale`` (of its sign; 0 alone for 0)."""
    low, high = sorted((scale / SCALE_LIMIT, scale * SCALE_LIMIT))
    return low, high


def band(scales: Sequence[float]) -> str:
    """The scales allowed around each of ``scales`` in words: "[0.5, 2]"."""
    return " or ".join(f"[{low:.4g}, {high:.4g}]" for low, high in map(within, scales))


def scale_off(counts: Agreement, scales: Sequence[float] = (1.0,)) -> bool:
    """Whether the matched scores left the scale they are held to: their slope outside a factor
    :data:`SCALE_LIMIT` of every one of ``scales`` by more than :data:`SCALE_ERRORS` standard errors of
    the pairs (no scale measured: too few pairs or one reference score, nothing to hold)."""
    scale = counts.score_scale
    if scale is None:
        return False
    margin = SCALE_ERRORS * scale.error
    return all(scale.slope + margin < low or scale.slope - margin > high for low, high in map(within, scales))


def scale_said(counts: Agreement, scales: Sequence[float]) -> str:
    """The measured scale in words, with what it is held to (``scales``: see :func:`scale_off`)."""
    scale = counts.score_scale
    if scale is None:
        return (
            f"score scale not measured: {counts.matched} matched pairs (at least {MIN_SCALE_PAIRS} needed), "
            "or their reference scores all equal"
        )
    return (
        f"score scale {scale.slope:.3f} +- {scale.error:.3f} (the slope of its scores on the reference's over "
        f"{scale.pairs} matched pairs; 1 is the reference's own scale; allowed {band(scales)})"
    )


def _span(span: tuple[float, float]) -> str:
    return f"[{span[0]:.2f}, {span[1]:.2f}]"


def span_ratio(scale: ScoreScale) -> float:
    """How wide the candidate's matched scores spread against the reference's (5th to 95th percentile)."""
    ref, cand = scale.reference[1] - scale.reference[0], scale.candidate[1] - scale.candidate[0]
    return cand / ref if ref > 0 else math.inf


def scale_verdict(scale: ScoreScale, threshold: float) -> str:
    """The same boxes scored on another scale: compressed (a sigmoid over probabilities, say), stretched,
    or in no relation to the reference's scores."""
    spans = (
        f"{_span(scale.candidate)} where the reference's span {_span(scale.reference)} (5th to 95th percentile "
        f"of the matched boxes; the scale is {scale.slope:.2f} of the reference's)"
    )
    ratio = span_ratio(scale)
    if ratio < 1 / SCALE_LIMIT:
        return (
            f"the same boxes, but their scores compressed to {spans}: the scores no longer follow the reference's, "
            "so a score threshold set on the reference's scores picks other boxes on this path (above "
            f"{scale.candidate[1]:.2f} hardly any); a sigmoid put over scores that are probabilities already "
            "compresses them so (into [0.5, 0.731], a scale of at most 0.25)"
        )
    if ratio > SCALE_LIMIT:
        return (
            f"the same boxes, but their scores stretched to {spans}: the scores no longer follow the reference's; "
            f"at --score-threshold {threshold:g} they are no probabilities as the reference's are (a sigmoid left "
            "out, or a score read on another scale)"
        )
    return (
        f"the same boxes, but their scores do not follow the reference's: {spans}; a box the reference scores "
        "higher is not scored higher on this path"
    )
