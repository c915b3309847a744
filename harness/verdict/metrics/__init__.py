"""Metrics over detections: COCO mAP and its bootstrap, Ultralytics' mAP, prediction distributions, path agreement."""

from collections.abc import Callable, Sequence

from harness.core.detections import Detections
from harness.core.settings import MetricProtocol
from harness.inputs.dataset import GroundTruth
from harness.verdict.metrics import coco, ultralytics
from harness.verdict.metrics.agreement import Agreement, agreement
from harness.verdict.metrics.coco import CocoMetrics, PairedBootstrap, SetScores, evaluate, paired_bootstrap
from harness.verdict.metrics.distribution import box_counts, cells_above_threshold, score_distribution

Metric = Callable[[Sequence[GroundTruth], Sequence[Detections], Sequence[str], float], CocoMetrics]
METRICS: dict[MetricProtocol, Metric] = {
    MetricProtocol.COCO: coco.evaluate,
    MetricProtocol.ULTRALYTICS: ultralytics.evaluate,
}
# each protocol's mAPs over resampled image sets: paired_bootstrap(..., scores=SET_SCORES[settings.metric])
SET_SCORES: dict[MetricProtocol, SetScores] = {
    MetricProtocol.COCO: coco.set_scores,
    MetricProtocol.ULTRALYTICS: ultralytics.set_scores,
}

__all__ = [
    "METRICS",
    "SET_SCORES",
    "Agreement",
    "CocoMetrics",
    "Metric",
    "PairedBootstrap",
    "SetScores",
    "agreement",
    "box_counts",
    "cells_above_threshold",
    "evaluate",
    "paired_bootstrap",
    "score_distribution",
]
