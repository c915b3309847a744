"""YOLO26's one-to-one head's conformance scenes (:mod:`harness.families.yolo26.scenes`); ``verify-decode``
held to the export's own top-k rows ``(max_det, 6)`` (exported end to end)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.conformance.agreement import (
    BOX_TOLERANCE_PX,
    ImageAgreement,
    VerifyFrame,
    paired_differences,
    same_detections,
)
from harness.conformance.scenes import Decoder, SceneRecipe
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.decode.nms import above
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolo26.scenes import *  # noqa: F403  (what either head's scenes share)
from harness.families.yolo26.scenes import recipe_of


def recipe() -> SceneRecipe:
    return recipe_of(HeadFamily.YOLO26_ONE2ONE)


def reference_decoder() -> Decoder:
    return decode_one2one


def agreement(frame: VerifyFrame) -> ImageAgreement:
    """The export's own top-k ``(max_det, 6)`` rows (x1, y1, x2, y2, score, class) against
    :func:`~harness.families.yolo26.one2one.decode.decode` at the same number of rows and no threshold, then
    both above the threshold. Rows scored within rounding of the last row may take each other's place
    (the export's sigmoid and top-k round otherwise), so the rows compared are those clearly above it."""
    outputs, specs, config, reference = frame.outputs, frame.specs, frame.config, frame.reference
    own = Detections(reference[:, :4], reference[:, 4], reference[:, 5].astype(np.int64))
    ours = decode_one2one(outputs, specs, replace(config, max_total=len(reference), score_threshold=0.0))
    last = float(own.scores.min()) if len(own) else 0.0
    box_diff, score_diff = paired_differences(ours, own, last, 1e-5)
    kept, expected = decode_one2one(outputs, specs, config), own.select(above(own.scores, config.score_threshold))
    return ImageAgreement(
        frame.image,
        box_diff,
        score_diff,
        len(kept),
        len(expected),
        same_detections(kept, expected, BOX_TOLERANCE_PX, 1e-5),
    )
