"""What the diagnosis is given for every doctor run alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from harness.conformance.misreadings import PathReproduction, reproduce_path
from harness.conformance.suite import run_conformance
from harness.core.checks import CheckResult
from harness.core.detections import (
    Detections,
)
from harness.decode.nms import greedy_per_class
from harness.doctor.adapters import HostPath
from harness.doctor.bench import Bench, subset
from harness.doctor.mistakes import reversed_channels
from harness.inputs.dataset import Dataset
from harness.inputs.preprocess import load_image
from harness.pipeline.detect import DecoderPath, DetectionPath
from harness.pipeline.job import path_bootstrap
from harness.verdict.diagnosis_evidence import Evidence, collect_evidence, matched_share
from harness.verdict.metrics.agreement import agreement
from harness.verdict.result import PathResult

PROBE_IMAGES = 16  # images the reversed-channel probe runs on
# frames a host decoder's path runs again for its mistake to be reproduced: enough that two misreadings which
# agree on a few frames (one head misread, or the heads paired across grids, both losing its detections) part
REPRODUCTION_FRAMES = 16
# the share of the run's score threshold frames are decoded again at where several misreadings reproduce them alike
SEPARATING_SHARE = 0.1
NOTHING_RETURNED = "no other known misreading leaves nothing on every one of them"


# ------------------------------------------------------------------------------------------- evidence


def _truth(result: PathResult, dataset: Dataset) -> list[Detections]:
    mapping = np.asarray(result.settings.class_map, dtype=np.int64)
    out = []
    for sample in dataset.samples:
        truth = sample.ground_truth.mapped(mapping)
        out.append(Detections(truth.boxes, np.ones(len(truth), np.float32), truth.class_ids))
    return out


def after_nms(predictions: Sequence[Detections], iou_threshold: float, max_per_class: int) -> list[Detections]:
    """Each image's detections after a greedy NMS per class at ``iou_threshold`` (HailoRT's rule)."""
    out = []
    for det in predictions:
        kept = greedy_per_class(det.boxes, det.scores, det.class_ids, iou_threshold, max_per_class)
        out.append(Detections(det.boxes[kept], det.scores[kept], det.class_ids[kept]))
    return out


def decoder_reproduction(bench: Bench, path: DecoderPath, frames: int = REPRODUCTION_FRAMES) -> PathReproduction | None:
    """The host decoder of ``path`` on the bench's first ``frames`` images run again, held to the head
    family's reference decoder on the same raw outputs (:func:`~harness.conformance.misreadings.reproduce_path`).
    Where several known misreadings reproduce it alike, the heads each misreads left no box over the run's score
    threshold: the frames are decoded again at :data:`SEPARATING_SHARE` of it, where those heads' boxes show,
    and the one rival that alone reproduces them there is named."""
    images = [load_image(sample.path) for sample in bench.dataset.samples[:frames]]
    config = path.decode_config
    found = reproduce_path(path.decoded_frames(images), path.output_specs, config, path.family)
    if found is None or not found.rivals:
        return found
    lower = replace(config, score_threshold=config.score_threshold * SEPARATING_SHARE)
    again = reproduce_path(path.decoded_frames(images, lower), path.output_specs, lower, path.family)
    rivals = {r.name for r in found.rivals}
    if again is None or again.reproduction is None or again.reproduction.name not in rivals:
        return found
    others = ", ".join(sorted(rivals - {again.reproduction.name}))
    told = (
        f"{again.reproduction.words} (at score threshold {config.score_threshold:g} {others} reproduced it alike; "
        f"decoded again at {lower.score_threshold:g}, where the heads they misread leave boxes, this one alone does)"
    )
    return replace(found, reproduction=replace(again.reproduction, words=told), rivals=())


def _reproduced(evidence: Evidence, found: PathReproduction | None) -> Evidence:
    if found is None or not found.differing:
        return evidence
    reproduction = found.reproduction
    words = reproduction.words if reproduction else found.unreproduced
    if reproduction and not found.returned:
        words += f" (the host decoder returned no detection on them: {NOTHING_RETURNED})"
    return replace(
        evidence,
        reproduction_frames=found.frames,
        differing_frames=found.differing,
        reproduced_misreading=reproduction.name if reproduction else "",
        reproduction=words,
    )


def doctor_evidence(
    bench: Bench,
    result: PathResult,
    reference: PathResult,
    path: DetectionPath | None = None,
    failed: bool = False,
    broken: Sequence[CheckResult] = (),
) -> Evidence:
    """What the diagnosis is given for every run alike: :func:`~harness.verdict.diagnosis_evidence.collect_evidence`
    against the reference (where it is comparable), against the reference after an NMS per class
    (:func:`after_nms`) and with that NMS over the path's own boxes, the settings that differ from it,
    agreement with the ground truth; for a host decoder's ``path``, its mistake reproduced on its first frames
    (:func:`decoder_reproduction`); and where
    its gates ``failed``, the matched share with red and blue exchanged on the first :data:`PROBE_IMAGES`
    images and the conformance of its host decoder, if it has one. ``broken``: the static checks its HEF fails that
    the clean one passes (a sigmoid left out of an NMS HEF is said by its quant info, however few scores show it)."""
    comparable = not reference.settings.differences(result.settings) and reference.image_ids == result.image_ids
    # the paired bootstrap a job's gates hold the path to, so a loss is judged against these images' noise alike
    interval = path_bootstrap(bench.dataset, reference, result).map50 if comparable and bench.dataset.labelled else None
    clean = bench.own_agreement(result.path)
    golden = bench.baselines.get(result.path)
    blessed = golden.settings.class_map if golden is not None else None
    evidence = collect_evidence(result, reference if comparable else None, bench.original_hw, interval, clean, blessed)
    logits = [c.message.split(". Fix: ")[0] for c in broken if c.name == "sigmoid_present"]
    evidence = replace(evidence, class_logits=logits[0] if logits else None)
    if comparable:
        settings = result.settings
        suppressed = after_nms(reference.predictions, settings.iou_threshold, settings.max_per_class)
        own = after_nms(result.predictions, settings.iou_threshold, settings.max_per_class)
        evidence = replace(
            evidence,
            nms_matched_share=matched_share(agreement(suppressed, result.predictions)),
            path_nms_matched_share=matched_share(agreement(reference.predictions, own)),
        )
    truth = agreement(_truth(result, bench.dataset), result.predictions)
    evidence = replace(
        evidence,
        settings_differences="; ".join(reference.settings.differences(result.settings)),
        truth_matched=truth.matched,
        truth_class_flipped=truth.class_flipped,
    )
    if isinstance(path, DecoderPath):
        evidence = _reproduced(evidence, decoder_reproduction(bench, path))
    if path is None or not failed:
        return evidence
    if comparable:
        few = subset(bench.dataset, range(min(PROBE_IMAGES, len(bench.dataset.samples))))
        swapped = bench.evaluate_path(HostPath(path, "probe: channels reversed", before=reversed_channels), few)
        counts = agreement(reference.predictions[: len(few.samples)], swapped.predictions)
        evidence = replace(evidence, reversed_channels_matched_share=matched_share(counts))
    if isinstance(path, DecoderPath):
        failures = [f for f in run_conformance(path.decoder, family=bench.run.family).values() if f]
        evidence = replace(evidence, decoder_conformance=failures[0] if failures else "")
    return evidence
