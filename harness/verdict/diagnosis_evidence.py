"""The evidence a diagnosis reads (:class:`Evidence`): what a path measured and, against a reference
path on the same images, how the two agree (:func:`collect_evidence`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from harness.core.detections import Detections, letterbox_boxes, unletterbox, yxyx_normalized_to_xyxy_pixels
from harness.core.errors import HarnessError
from harness.inputs.preprocess import geometry
from harness.verdict.agreement_floor import SCORE_DRIFT_LIMIT, derived_floor
from harness.verdict.golden import BlessedAgreement
from harness.verdict.metrics.agreement import Agreement, agreement
from harness.verdict.metrics.coco import DifferenceInterval
from harness.verdict.result import PathResult

CAP_TIE = 1e-3  # scores this close to the highest one count as stopped at the same cap
MIN_BOXES = 5  # fewer boxes than this say nothing about a score distribution


@dataclass(frozen=True)
class Evidence:
    """What a path measured, and (``reference_*``, agreement counts) how it compares with a
    reference path on the same images. ``None``: not measured. ``matched_share`` is matched boxes
    over all distinct boxes of both paths (matched + flipped + missed + extra; 1.0 when both are
    empty); ``swapped_matched_share`` the same after swapping x and y of the path's boxes in the
    model input frame.

    Filled by whoever runs the extra measurement (:mod:`harness.doctor.evidence` does), ``None`` otherwise:
    ``settings_differences`` the settings in which the path differs from the reference
    (``field: reference vs path``, ``"; "``-joined, ``""`` when none); ``truth_matched`` /
    ``truth_class_flipped`` the path's boxes on a ground-truth box of the same / another class;
    ``reversed_channels_matched_share`` the matched share when the path is fed the same images with
    the first and last colour channels exchanged; ``decoder_conformance`` the first failure of the
    conformance suite (:mod:`harness.conformance.suite`) on the host decoder the path used, ``""`` when
    it conforms; ``nms_matched_share`` the matched share against the reference's boxes after a greedy
    NMS per class at the evaluation's IoU threshold (what an NMS over a head decoded without one keeps);
    ``path_nms_matched_share`` the same with that NMS over the path's boxes instead (what an NMS the path left
    out keeps);
    ``shifted_matched_share`` the matched share against the reference's boxes with every score moved by
    the mean score drift of the matched boxes and those then under the threshold left out (what a uniform
    shift of the scores leaves of the reference); ``reproduction_frames`` frames of a host decoder's path
    run again, ``differing_frames`` of them on which its
    detections differ from the family's reference decoder's on the same raw outputs, and where some do,
    ``reproduced_misreading`` the name of the known misreading under which the reference decoder returns the
    host decoder's detections on every one of them (:func:`harness.conformance.misreadings.reproduce_path`),
    ``""`` where none does, and ``reproduction`` its words (or that none does).

    ``score_ceiling`` is the highest score the path's class outputs can represent, where its runner knows
    it (an emulated HEF: its quant info's limvals_max), and ``reference_above_ceiling`` how many of the
    reference's boxes score above it by more than the path's own score noise (its blessed mean absolute drift, at
    least :data:`CAP_TIE`): scores that path cannot give, however few of its own boxes reach the cap; a score within
    that noise of the cap is one a clean path misses by its noise alone (the clean demo HEF represents 0.956, and one
    of 13 boxes on 8 images scores 0.967)."""

    path: str
    score_threshold: float
    n_images: int
    n_ground_truth: int
    map50: float
    n_boxes: int
    boxes_per_image: float
    max_boxes_per_image: int
    saturation: float
    outside_unit: int
    min_score: float | None = None
    max_score: float | None = None
    at_cap: int | None = None
    cells_share: float | None = None
    reference_path: str | None = None
    reference_map50: float | None = None
    # the top of the 95 % paired bootstrap interval of mAP@0.5, this path minus the reference, where one was measured
    map50_difference_high: float | None = None
    reference_n_boxes: int | None = None
    reference_boxes_per_image: float | None = None
    reference_saturation: float | None = None
    reference_max_score: float | None = None
    reference_cells_share: float | None = None
    matched: int | None = None
    class_flipped: int | None = None
    missed: int | None = None
    extra: int | None = None
    matched_share: float | None = None
    swapped_matched_share: float | None = None
    settings_differences: str | None = None
    truth_matched: int | None = None
    truth_class_flipped: int | None = None
    reversed_channels_matched_share: float | None = None
    decoder_conformance: str | None = None
    score_ceiling: float | None = None
    reference_above_ceiling: int | None = None
    score_drift: float | None = None
    score_drift_std: float | None = None
    own_score_drift: float | None = None
    own_matched_share: float | None = None
    score_scale: float | None = None
    class_map_change: str | None = None
    class_logits: str | None = None  # a failed sigmoid_present static check of the path's HEF (its found part)
    box_size_ratio: float | None = None
    box_size_spread: float | None = None
    reference_box_size_spread: float | None = None
    nms_matched_share: float | None = None
    path_nms_matched_share: float | None = None
    shifted_matched_share: float | None = None
    # the agreement floor derived from these two paths' own noise (harness.verdict.agreement_floor), as the gate's
    agreement_floor: float | None = None
    reproduction_frames: int | None = None
    differing_frames: int | None = None
    reproduced_misreading: str | None = None
    reproduction: str | None = None


def collect_evidence(
    result: PathResult,
    reference: PathResult | None = None,
    original_hw: Mapping[str, tuple[int, int]] | None = None,
    map50_difference: DifferenceInterval | None = None,
    own: BlessedAgreement | None = None,
    baseline_class_map: tuple[int, ...] | None = None,
) -> Evidence:
    """Evidence from ``result`` and, when given, a ``reference`` path on the same images under the
    same settings (:class:`~harness.core.settings.SettingsMismatch` otherwise). ``original_hw`` (image id
    -> original height, width) places boxes in the model input for the x/y-swap test; without it
    boxes are swapped in their own image frame. ``own``: the path's blessed agreement with the reference, what a
    clean run of it does (its matched share, its mean absolute score drift: its own noise; None: none blessed);
    ``baseline_class_map``: the class map its baseline was blessed with (None: no baseline), said where this run's
    differs."""
    scores = np.concatenate([p.scores for p in result.predictions]) if result.predictions else np.zeros(0)
    has_scores = len(scores) > 0
    top = float(scores.max()) if has_scores else None
    evidence = Evidence(
        path=result.label,
        score_threshold=result.settings.score_threshold,
        n_images=len(result.image_ids),
        n_ground_truth=sum(c.n_ground_truth for c in result.metrics.per_class),
        map50=result.metrics.map50,
        n_boxes=len(scores),
        boxes_per_image=result.box_counts.mean,
        max_boxes_per_image=result.box_counts.max,
        saturation=result.scores.saturation,
        outside_unit=result.scores.below_zero + result.scores.above_one,
        min_score=float(scores.min()) if has_scores else None,
        max_score=top,
        at_cap=int((np.abs(scores - top) <= CAP_TIE).sum()) if top is not None else None,
        cells_share=result.cells.share if result.cells else None,
        score_ceiling=result.score_ceiling,
        own_score_drift=own.score_drift if own is not None else None,
        own_matched_share=own.matched_share if own is not None else None,
        class_map_change=_class_map_change(baseline_class_map, result.settings.class_map),
    )
    if reference is None:
        return evidence
    reference.settings.require_same(result.settings, f"evidence: {reference.label} vs {result.label}")
    if reference.image_ids != result.image_ids:
        raise HarnessError(f"evidence: {reference.label} and {result.label} cover different images")
    counts = agreement(reference.predictions, result.predictions)
    swapped = agreement(reference.predictions, _swapped(result, original_hw))
    ref_scores = [p.scores for p in reference.predictions if len(p)]
    reference_scores = np.concatenate(ref_scores) if ref_scores else np.zeros(0, np.float32)
    ceiling = result.score_ceiling
    # hailort: hailort/libhailort/include/hailo/quantization.hpp: a value is clipped to [limvals_min,
    # limvals_max] of the output's calibrated range, so no score above the ceiling comes out
    noise = max(CAP_TIE, own.score_drift) if own is not None else CAP_TIE
    above = int((reference_scores > ceiling + noise).sum()) if ceiling is not None else None
    evidence = _box_sizes(evidence, result, reference)
    return replace(
        evidence,
        reference_path=reference.label,
        reference_map50=reference.metrics.map50,
        map50_difference_high=map50_difference.high if map50_difference is not None else None,
        reference_n_boxes=reference.box_counts.total,
        reference_boxes_per_image=reference.box_counts.mean,
        reference_saturation=reference.scores.saturation,
        reference_max_score=float(reference_scores.max()) if ref_scores else None,
        reference_above_ceiling=above,
        reference_cells_share=reference.cells.share if reference.cells else None,
        matched=counts.matched,
        class_flipped=counts.class_flipped,
        missed=counts.missed,
        extra=counts.extra,
        matched_share=matched_share(counts),
        swapped_matched_share=matched_share(swapped),
        score_drift=counts.mean_score_drift if counts.matched else None,
        score_drift_std=counts.score_drift_std if counts.matched else None,
        score_scale=counts.score_scale.ratio if counts.score_scale is not None else None,
        shifted_matched_share=_shifted_matched_share(reference, result, counts) if counts.matched else None,
        agreement_floor=derived_floor(
            reference.predictions,
            result.predictions,
            result.settings.score_threshold,
            result.settings.iou_threshold,
            SCORE_DRIFT_LIMIT,
        ).floor,
    )


def _class_map_change(blessed: tuple[int, ...] | None, now: tuple[int, ...] | None) -> str | None:
    """The class map a baseline was blessed with and this run's, in words, where they differ (None: the same, or
    no baseline)."""
    if blessed is None or tuple(blessed) == tuple(now or ()):
        return None
    return f"{list(blessed)} blessed, {list(now or ())} now"


def _median(values: np.ndarray) -> float:
    """``np.median(values)`` of one float64 value or more, to the bit (the middle value, or the mean of the middle two
    as ``np.mean`` takes it: their sum halved; NaN where one is NaN), without numpy's quantile code,
    whose ``np.unique`` imports ``numpy.ma`` (6 ms a run)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    middle = len(ordered) // 2
    if np.isnan(ordered[-1]):  # NaNs sort last
        return float("nan")
    return float(ordered[middle]) if len(ordered) % 2 else float((ordered[middle - 1] + ordered[middle]) / 2)


def _sizes(result: PathResult) -> np.ndarray:
    """sqrt(width * height) of every box, in pixels."""
    boxes = [p.boxes for p in result.predictions if len(p)]
    if not boxes:
        return np.zeros(0)
    b = np.concatenate(boxes).astype(np.float64)
    return np.sqrt(np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None))


def _box_sizes(evidence: Evidence, result: PathResult, reference: PathResult) -> Evidence:
    """The median box size against the reference's, and each one's spread (coefficient of variation)."""
    mine, theirs = _sizes(result), _sizes(reference)
    if len(mine) < MIN_BOXES or len(theirs) < MIN_BOXES or _median(theirs) <= 0:
        return evidence
    return replace(
        evidence,
        box_size_ratio=float(_median(mine) / _median(theirs)),
        box_size_spread=float(mine.std() / max(mine.mean(), 1e-9)),
        reference_box_size_spread=float(theirs.std() / max(theirs.mean(), 1e-9)),
    )


def _shifted_matched_share(reference: PathResult, result: PathResult, counts: Agreement) -> float:
    """The matched share of ``result`` against ``reference`` with every reference score moved by the mean
    score drift of ``counts``' matched boxes, those then under the threshold left out."""
    drift, threshold = np.float32(counts.mean_score_drift), result.settings.score_threshold
    shifted = []
    for p in reference.predictions:
        scores = p.scores + drift
        shifted.append(Detections(p.boxes, scores, p.class_ids).select(scores >= threshold))
    return matched_share(agreement(shifted, result.predictions))


def matched_share(counts: Agreement) -> float:
    """Matched boxes over all distinct boxes of both paths; 1.0 when neither has a box."""
    distinct = counts.n_reference + counts.n_candidate - counts.matched - counts.class_flipped
    return counts.matched / distinct if distinct else 1.0


def _swapped(result: PathResult, original_hw: Mapping[str, tuple[int, int]] | None) -> list[Detections]:
    """Each image's boxes as they would be had a y-first NMS record been read x-first, undone."""
    input_hw = result.settings.input_hw
    out = []
    for image_id, det in zip(result.image_ids, result.predictions, strict=True):
        if original_hw is None:
            out.append(Detections(det.boxes[:, [1, 0, 3, 2]], det.scores, det.class_ids))
            continue
        box = geometry(result.settings.preprocess, original_hw[image_id], input_hw)
        h, w = input_hw
        in_input = letterbox_boxes(det.boxes, box) / np.array([w, h, w, h], np.float32)
        unswapped = Detections(yxyx_normalized_to_xyxy_pixels(in_input, input_hw), det.scores, det.class_ids)
        out.append(unletterbox(unswapped, box, clip=False))
    return out
