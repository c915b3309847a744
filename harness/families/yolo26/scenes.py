"""What YOLO26's two heads share of their conformance scenes: YOLOv8's box and class maps at reg_max 1 (the 4
distances themselves; the planted objects neither overlap nor exceed the top-k, so the one-to-one and the
one-to-many decode find the same), and the export as its own reference (no DFL conv to run in float)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.conformance.misreadings import ConfigMisreading
from harness.conformance.scenes import SceneRecipe
from harness.core.head_family import HeadFamily, HeadTensor
from harness.core.settings import DecodeConfig
from harness.families.yolov8.scenes import fcr_mixed, logit_classes, misordered, plant, sentences

if TYPE_CHECKING:
    from onnx import ModelProto

__all__ = [
    "config_misreadings",
    "export_reference",
    "fcr_mixed",
    "logit_classes",
    "misordered",
    "plant",
    "recipe_of",
    "sentences",
]


def recipe_of(family: HeadFamily) -> SceneRecipe:
    return SceneRecipe(family=family, reg_max=1)


def config_misreadings() -> tuple[ConfigMisreading, ...]:
    return ()


def export_reference(
    model: ModelProto, heads: Sequence[HeadTensor], config: DecodeConfig
) -> tuple[ModelProto, DecodeConfig]:
    return model, config
