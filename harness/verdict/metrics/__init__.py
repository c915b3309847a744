"""Metrics over detections: COCO mAP and its bootstrap, prediction distributions, path agreement."""

from harness.verdict.metrics.agreement import Agreement, agreement
from harness.verdict.metrics.coco import CocoMetrics, PairedBootstrap, evaluate, paired_bootstrap
from harness.verdict.metrics.distribution import box_counts, cells_above_threshold, score_distribution

__all__ = [
    "Agreement",
    "CocoMetrics",
    "PairedBootstrap",
    "agreement",
    "box_counts",
    "cells_above_threshold",
    "evaluate",
    "paired_bootstrap",
    "score_distribution",
]
