"""The path-agreement floor where no agreement was blessed, from what this model and this HEF do on
these images rather than a fixed share.

A quantized HEF does not score or place a box exactly as the float model does. A box whose score sits
near the score threshold may fall under it on one path and not on the other, and a box whose overlap
with a neighbour of its class sits near the NMS IoU threshold may be suppressed on one path and kept on
the other: such a box cannot be expected to match, whichever path is right. Every other disagreement
(a box missed or added far from both thresholds, a class flipped) is a box that truly moved.

How near is measured on the same run, from the boxes both paths agree on (IoU >= 0.5, same class):

- the score window is the :data:`QUANTILE` of their absolute score change (the HEF's score noise, a
  common shift included), at most the gate's drift limit;
- the IoU window is the :data:`QUANTILE` of their ``1 - IoU`` (how far the HEF moves a box), at most half
  the distance from the NMS IoU threshold to 1: a path that moves its boxes further than that is no
  quantization noise, and in a crowded scene a window that wide would excuse the boxes it moved.

A high quantile, as a box that crossed a threshold is one whose score or place changed most: with the
median, the clean emulated YOLO26 demo at threshold 0.5 misses boxes scored 0.54 to 0.61 by the float model
that the windows leave unexplained.

The output's quantization step alone is a small part of that noise: the whole network is quantized.
A clean emulated YOLOv5 fire/smoke HEF scores its matched boxes with a spread of 0.08 against an
output step of 1/255, and keeps 145 boxes the float model does not, most of them a second box at IoU
0.6 to 0.7 with a neighbour, under the NMS IoU threshold 0.7.

A missed or extra box is explained where its score is under the threshold plus the score window, or
its highest IoU with another box of its path and class lies within the IoU window of the NMS IoU
threshold. The windows cover :data:`QUANTILE` of the noise, so of the boxes they leave unexplained
``1 - QUANTILE`` may still be its tail. The floor is 1 minus the share of all distinct boxes that the
explained boxes and that tail make, minus the margin: the gate passes when the other boxes that
disagree are at most the margin of all. The margin is :data:`MARGIN`, the share of boxes a clean path may
move with no threshold to explain it, plus the noise of counting that share on these boxes: a path that
moves :data:`MARGIN` of its boxes moves more on a few boxes as often as not, so the margin is the upper end
of its one-sided 95% binomial range (:data:`MARGIN_Z` standard errors), 0.05 + 0.066 on 30 boxes and
0.05 + 0.011 on 1,000 (at 30 boxes the clean emulated YOLO26 demo at threshold 0.5 moved 2 to 3 boxes on
24-image samples, over the 1.5 a flat 5% allows). With fewer than :data:`MIN_PAIRS` matched pairs nothing
is measured, the windows are 0 and no box is explained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.core.detections import Detections
from harness.verdict.metrics.agreement import disagreement

QUANTILE = 0.9  # the share of the matched pairs whose score noise and box movement the windows cover
MARGIN = 0.05  # the share of all distinct boxes that may disagree with no threshold to explain it
MARGIN_Z = 1.645  # standard errors of that share on the boxes counted: its one-sided 95% binomial range
MIN_PAIRS = 5  # fewer matched pairs than this measure no noise
# The agreement gate's score drift limit where its baseline blessed no agreement (none yet, a schema 1
# baseline), and the score window's top here. A blessed agreement holds the path to its own, less the
# baseline's tolerances. Matched boxes' mean absolute score change against the reference: a clean
# emulated HEF of the demo drifts 0.025; a score cap or a host-side sigmoid over final scores moves it by
# 0.2 to 0.3.
SCORE_DRIFT_LIMIT = 0.1


@dataclass(frozen=True)
class DerivedFloor:
    """The floor (:func:`derived_floor`), its windows, and the boxes it rests on: ``explained`` of the
    ``unmatched`` missed and extra boxes, of ``distinct`` boxes of both paths; ``source`` in words."""

    floor: float
    score_window: float
    iou_window: float
    explained: int
    unmatched: int
    distinct: int
    source: str


def margin(distinct: int) -> float:
    """The share of ``distinct`` boxes that may disagree with no threshold to explain it: :data:`MARGIN` and
    :data:`MARGIN_Z` standard errors of a share :data:`MARGIN` counted on them (no boxes: :data:`MARGIN`)."""
    if distinct <= 0:
        return MARGIN
    return MARGIN + MARGIN_Z * math.sqrt(MARGIN * (1 - MARGIN) / distinct)


def derived_floor(
    reference: Sequence[Detections],
    candidate: Sequence[Detections],
    score_threshold: float,
    nms_iou_threshold: float,
    drift_limit: float,
) -> DerivedFloor:
    """The agreement floor of ``candidate`` against ``reference`` on the same images (see the module),
    evaluated at ``score_threshold`` and ``nms_iou_threshold``; the score window is at most ``drift_limit`` (a
    change larger than the gate allows is no noise it excuses); class-flipped boxes are never explained."""
    found = disagreement(reference, candidate)
    pairs = len(found.drift)
    if pairs >= MIN_PAIRS:
        score_window = min(float(np.quantile(np.abs(found.drift), QUANTILE)), drift_limit)
        iou_window = min(float(np.quantile(1.0 - found.matched_iou, QUANTILE)), (1.0 - nms_iou_threshold) / 2)
    else:
        score_window = iou_window = 0.0
    scores = np.concatenate([found.missed_scores, found.extra_scores])
    neighbours = np.concatenate([found.missed_neighbour_iou, found.extra_neighbour_iou])
    near_score = scores < score_threshold + score_window
    near_iou = (neighbours > 0) & (np.abs(neighbours - nms_iou_threshold) <= iou_window)
    explained = int((near_score | near_iou).sum())
    unmatched = len(scores)
    distinct = pairs + found.flipped + unmatched
    # the windows cover QUANTILE of the noise: of the boxes they leave unexplained, the rest's share may be its tail
    tail = (1.0 - QUANTILE) * (unmatched - explained)
    allowed = margin(distinct)
    floor = 1.0 - ((explained + tail) / distinct if distinct else 0.0) - allowed
    if pairs >= MIN_PAIRS:
        noise = (
            f"{QUANTILE:.0%} of the {pairs} matched pairs' absolute score changes (at most the drift limit) and "
            f"1 - IoU (at most half of 1 - {nms_iou_threshold:g})"
        )
    else:
        noise = f"only {pairs} matched pairs, too few to measure the noise: no box explained"
    source = (
        f"derived from this model and HEF on these images: {explained} of the {unmatched} missed or extra boxes "
        f"lie within the paths' own noise of a threshold (a score under {score_threshold:g} + {score_window:.3f}, "
        f"or a same-class neighbour at IoU {nms_iou_threshold:g} +- {iou_window:.3f}; {noise}) and cannot be "
        f"expected to match, nor {tail:.1f} of the other {unmatched - explained} (the {1 - QUANTILE:.0%} of the "
        f"noise the windows leave out): floor 1 - {explained + tail:.1f}/{distinct} - margin {allowed:.3f} "
        f"({MARGIN:g} and its counting noise on {distinct} boxes)"
    )
    return DerivedFloor(max(floor, 0.0), score_window, iou_window, explained, unmatched, distinct, source)
