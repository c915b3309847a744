"""YOLOv10's conformance scenes: YOLOv8's box maps of 4 x 16 DFL bins and class maps
(:mod:`harness.families.yolov8.scenes`; the planted objects neither overlap nor exceed the top-k), decoded by its
one-to-one head; ``verify-decode`` held to the export's own top-k rows ``(max_det, 6)``
(:func:`~harness.families.yolo26.one2one.scenes.top_k_agreement`), its DFL conv run in float where quantized."""

from __future__ import annotations

from harness.conformance.agreement import ImageAgreement, VerifyFrame
from harness.conformance.decoder_misreadings import DecoderMisreading, half_cells
from harness.conformance.misreadings import ConfigMisreading
from harness.conformance.scenes import Decoder, SceneRecipe
from harness.core.head_family import HeadFamily
from harness.families.yolo26.one2one.decode import top_k
from harness.families.yolo26.one2one.scenes import top_k_agreement
from harness.families.yolov8.scenes import export_reference, fcr_mixed, logit_classes, misordered, plant, sentences
from harness.families.yolov10.decode import decode

__all__ = ["export_reference", "fcr_mixed", "logit_classes", "misordered", "plant", "sentences"]


def recipe() -> SceneRecipe:
    return SceneRecipe(family=HeadFamily.YOLOV10, reg_max=16)


def config_misreadings() -> tuple[ConfigMisreading, ...]:
    return ()


def coordinate_misreadings() -> tuple[DecoderMisreading, ...]:
    """Its centres half a cell off either way, then its one-to-one top-k (no NMS)."""
    return half_cells(top_k)


def reference_decoder() -> Decoder:
    return decode


def agreement(frame: VerifyFrame) -> ImageAgreement:
    return top_k_agreement(frame, decode)
