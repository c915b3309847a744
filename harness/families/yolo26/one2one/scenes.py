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
from harness.conformance.decoder_misreadings import DecoderMisreading, half_cells
from harness.conformance.scenes import Decoder, SceneRecipe
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.decode.nms import above
from harness.families.yolo26.one2one.decode import decode as decode_one2one
from harness.families.yolo26.one2one.decode import top_k
from harness.families.yolo26.scenes import (
    config_misreadings,
    export_reference,
    fcr_mixed,
    logit_classes,
    misordered,
    plant,
    recipe_of,
    sentences,
)

__all__ = [
    "config_misreadings",
    "export_reference",
    "fcr_mixed",
    "logit_classes",
    "misordered",
    "plant",
    "sentences",
    "top_k_agreement",
]


def recipe() -> SceneRecipe:
    return recipe_of(HeadFamily.YOLO26_ONE2ONE)


def reference_decoder() -> Decoder:
    return decode_one2one


def coordinate_misreadings() -> tuple[DecoderMisreading, ...]:
    """Its centres half a cell off either way, then its top-k (no NMS)."""
    return half_cells(top_k)


def agreement(frame: VerifyFrame) -> ImageAgreement:
    return top_k_agreement(frame, decode_one2one)


def top_k_agreement(frame: VerifyFrame, decoder: Decoder) -> ImageAgreement:
    """The export's own top-k ``(max_det, 6)`` rows (x1, y1, x2, y2, score, class) against ``decoder`` (an
    end-to-end head's, :func:`~harness.families.yolo26.one2one.decode.top_k`) at the same number of rows and no
    threshold, then both above the threshold. Rows scored within rounding of the last row may take each other's
    place (the export's sigmoid and top-k round otherwise), so the rows compared are those clearly above it."""
    outputs, specs, config, reference = frame.outputs, frame.specs, frame.config, frame.reference
    own = Detections(reference[:, :4], reference[:, 4], reference[:, 5].astype(np.int64))
    ours = decoder(outputs, specs, replace(config, max_total=len(reference), score_threshold=0.0))
    last = float(own.scores.min()) if len(own) else 0.0
    box_diff, score_diff = paired_differences(ours, own, last, 1e-5)
    kept, expected = decoder(outputs, specs, config), own.select(above(own.scores, config.score_threshold))
    return ImageAgreement(
        frame.image,
        box_diff,
        score_diff,
        len(kept),
        len(expected),
        same_detections(kept, expected, BOX_TOLERANCE_PX, 1e-5),
    )
