"""Per-stage localisation: where on the way float -> fp_optimized -> quantized -> hardware the accuracy
went. Each stage is a detection path measured on the same images (the ONNX, the Dataflow Compiler's
emulator in its two contexts, the device); :func:`first_degraded_stage` names the first one whose
mAP@0.5 is more than the tolerance below the float model's. Hailo's advice is to check fp_optimized
first: a drop there is no quantization problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.core.errors import HarnessError
from harness.core.path_names import DFC_FP_OPTIMIZED, DFC_QUANTIZED, HAILO, ONNX
from harness.verdict.result import PathResult

STAGES = ("float", "fp_optimized", "quantized", "hardware")
STAGE_OF_PATH = {ONNX: "float", DFC_FP_OPTIMIZED: "fp_optimized", DFC_QUANTIZED: "quantized", HAILO: "hardware"}

_CAUSES = {
    "fp_optimized": "lost before quantization: the model script's changes (normalization, sigmoid, NMS config) or "
    "the pre/post-processing around the model differ from the float model",
    "quantized": "lost in quantization: the calibration set (in-domain images showing the classes, enough of them) "
    "or the optimization level",
    "hardware": "lost between the emulated quantized model and the device: the host's handling of the outputs "
    "(format order, dequantization, double normalization) or the compilation",
}


@dataclass(frozen=True)
class Degradation:
    stage: str
    map: float
    float_map: float
    tolerance: float

    @property
    def drop(self) -> float:
        return self.float_map - self.map

    @property
    def message(self) -> str:
        return (
            f"{self.stage} mAP@0.5 {self.map:.4f} is {self.drop:.4f} below the float mAP@0.5 {self.float_map:.4f} "
            f"(tolerance {self.tolerance:g}): {_CAUSES[self.stage]}"
        )


def first_degraded_stage(maps: Mapping[str, float], tolerance: float) -> Degradation | None:
    """The first stage, in the order float -> fp_optimized -> quantized -> hardware, whose mAP is more
    than ``tolerance`` below the float mAP; stages not measured are skipped, None if none drops."""
    unknown = sorted(set(maps) - set(STAGES))
    if unknown:
        raise HarnessError(f"stage mAPs: stages {unknown}, expected some of {list(STAGES)}")
    if "float" not in maps:
        raise HarnessError(f"stage mAPs: stages {sorted(maps)}, expected 'float' among them (the reference)")
    if tolerance < 0:
        raise HarnessError(f"stage mAPs: tolerance {tolerance}, expected >= 0")
    for stage in STAGES[1:]:
        if stage in maps and maps["float"] - maps[stage] > tolerance:
            return Degradation(stage, maps[stage], maps["float"], tolerance)
    return None


def stage_results(results: Sequence[PathResult]) -> dict[str, PathResult]:
    """The results that are a stage (emulated-hailo, the harness's own emulation, is none of the DFC's),
    by stage in the order of :data:`STAGES`; each stage at most once."""
    found: dict[str, PathResult] = {}
    for result in results:
        stage = STAGE_OF_PATH.get(result.path)
        if stage is None:
            continue
        if stage in found:
            raise HarnessError(f"stage mAPs: two results of stage {stage} (path {result.path})")
        found[stage] = result
    return {stage: found[stage] for stage in STAGES if stage in found}
