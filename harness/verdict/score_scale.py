"""The agreement gate's score scale: whether the matched boxes' scores of a path spread as the
reference's do (:class:`~harness.verdict.metrics.agreement.ScoreScale`), and what it means in words
where they do not.

The scale (the standard deviation of a path's matched scores over the reference's) is 1 on a path
that scores as the reference does, for any model: a common shift moves every score and keeps it, and
quantisation noise scatters the scores about the reference's and widens it a little (the clean
emulated HEFs of the demo exports, YOLOv8, YOLO26, YOLOv5, YOLOX and SSD, measure 0.96 to 1.05 at
thresholds 0.2 and 0.5). A transform the path adds changes it: a sigmoid put over scores that are
probabilities already squeezes them into [0.5, 0.731], at most 0.25 of their spread (its steepest
slope; measured 0.21 to 0.24 on the same exports), and keeps their order, so neither the mAP nor the
boxes move and, at a high threshold, its mean drift stays under the drift limit while no score means
what the reference's does.

The rule: a scale further than a factor :data:`SCALE_LIMIT` from the one it is held to, either way,
fails, by more than :data:`SCALE_ERRORS` standard errors of its logarithm (``1 / sqrt(pairs - 1)``:
few pairs are given their noise). It is held to 1, the reference's own, and where a baseline blessed
a scale (``agreement.score_scale``) to that one too, so that a run blessed knowingly passes again.
No scale is measured, and none held, with fewer than
:data:`~harness.verdict.metrics.agreement.MIN_SCALE_PAIRS` matched pairs or reference scores all equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.verdict.metrics.agreement import MIN_SCALE_PAIRS, Agreement, ScoreScale

SCALE_LIMIT = 2.0  # the factor a path's score scale may differ from the one it is held to, either way
SCALE_ERRORS = 2.0  # standard errors of the scale's logarithm given to a path before it fails


def within(scale: float) -> tuple[float, float]:
    """The scales within a factor :data:`SCALE_LIMIT` of ``scale`` (0 alone for 0)."""
    return scale / SCALE_LIMIT, scale * SCALE_LIMIT


def band(scales: Sequence[float]) -> str:
    """The scales allowed around each of ``scales`` in words: "[0.5, 2]"."""
    return " or ".join(f"[{low:.4g}, {high:.4g}]" for low, high in map(within, scales))


def scale_off(counts: Agreement, scales: Sequence[float] = (1.0,)) -> bool:
    """Whether the matched scores left the scale they are held to: their scale outside a factor
    :data:`SCALE_LIMIT` of every one of ``scales`` by more than :data:`SCALE_ERRORS` standard errors of
    its logarithm (no scale measured: too few pairs or one reference score, nothing to hold)."""
    scale = counts.score_scale
    if scale is None:
        return False
    give = math.exp(SCALE_ERRORS * scale.log_error)
    return all(scale.ratio * give < low or scale.ratio / give > high for low, high in map(within, scales))


def scale_said(counts: Agreement, scales: Sequence[float]) -> str:
    """The measured scale in words, with what it is held to (``scales``: see :func:`scale_off`)."""
    scale = counts.score_scale
    if scale is None:
        return (
            f"score scale not measured: {counts.matched} matched pairs (at least {MIN_SCALE_PAIRS} needed), "
            "or their reference scores all equal"
        )
    return (
        f"score scale {scale.ratio:.3f} (the spread of its {scale.pairs} matched scores over the reference's, "
        f"uncertain by a factor {math.exp(SCALE_ERRORS * scale.log_error):.2f}; 1 is the reference's own; "
        f"allowed {band(scales)})"
    )


def _span(span: tuple[float, float]) -> str:
    return f"[{span[0]:.2f}, {span[1]:.2f}]"


def scale_verdict(scale: ScoreScale, threshold: float) -> str:
    """The same boxes scored on another scale: compressed (a sigmoid over probabilities, say) or stretched."""
    spans = (
        f"{_span(scale.candidate)} where the reference's span {_span(scale.reference)} (5th to 95th percentile "
        f"of the matched boxes; {scale.ratio:.2f} of the reference's spread)"
    )
    if scale.ratio < 1:
        return (
            f"the same boxes, but their scores compressed to {spans}: the scores no longer follow the reference's, "
            "so a score threshold set on the reference's scores picks other boxes on this path (above "
            f"{scale.candidate[1]:.2f} hardly any); a sigmoid put over scores that are probabilities already "
            "compresses them so (into [0.5, 0.731], at most 0.25 of their spread)"
        )
    return (
        f"the same boxes, but their scores stretched to {spans}: the scores no longer follow the reference's; "
        f"at --score-threshold {threshold:g} they are no probabilities as the reference's are (a sigmoid left "
        "out, or a score read on another scale)"
    )
