"""What YOLO26's two heads share of their conformance scenes: YOLOv8's box and class maps at reg_max 1 (the 4
distances themselves; the planted objects neither overlap nor exceed the top-k, so the one-to-one and the
one-to-many decode find the same), and the export as its own reference (no DFL conv to run in float)."""

from __future__ import annotations

from harness.conformance.scenes import SceneRecipe
from harness.conformance.scenes import export_as_reference as export_reference
from harness.conformance.scenes import fcr_mixed_grids as fcr_mixed
from harness.conformance.scenes import half_cell_misreadings as coordinate_misreadings
from harness.conformance.scenes import logit_class_maps as logit_classes
from harness.conformance.scenes import no_config_misreadings as config_misreadings
from harness.conformance.scenes import no_sentences as sentences
from harness.conformance.scenes import paired_across_grids as misordered
from harness.core.head_family import HeadFamily
from harness.families.yolov8.scenes import plant

__all__ = [
    "config_misreadings",
    "coordinate_misreadings",
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
