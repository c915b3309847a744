"""YOLO26's one-to-many head's conformance scenes (:mod:`harness.families.yolo26.scenes`); ``verify-decode``
held to the export's decoded head output, its detections the one-to-many decode's (NMS)."""

from __future__ import annotations

from harness.conformance.agreement import ImageAgreement, VerifyFrame
from harness.conformance.scenes import Decoder, SceneRecipe
from harness.core.head_family import HeadFamily
from harness.families.yolo26.one2many.decode import decode as decode_one2many
from harness.families.yolo26.scenes import *  # noqa: F403  (what either head's scenes share)
from harness.families.yolo26.scenes import recipe_of
from harness.families.yolov8.scenes import decoded_head_agreement


def recipe() -> SceneRecipe:
    return recipe_of(HeadFamily.YOLO26_ONE2MANY)


def reference_decoder() -> Decoder:
    return decode_one2many


def agreement(frame: VerifyFrame) -> ImageAgreement:
    return decoded_head_agreement(frame, decode_one2many)
