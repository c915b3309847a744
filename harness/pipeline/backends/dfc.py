"""An optimized HAR in the Dataflow Compiler's emulator, at one of its emulation stages."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from harness.core.path_names import DFC_FP_OPTIMIZED, DFC_QUANTIZED, EmulationStage, PathKind
from harness.pipeline.backends.descriptor import Backend, BackendDescriptor, CompiledThresholds, Log, OpenRunner

if TYPE_CHECKING:
    from harness.core.settings import EvalSettings
    from harness.pipeline.factory import RunContext
    from harness.pipeline.spec import PathSpec

_STAGE_PATHS = {EmulationStage.FP_OPTIMIZED: DFC_FP_OPTIMIZED, EmulationStage.QUANTIZED: DFC_QUANTIZED}


def _open(spec: PathSpec, run: RunContext, settings: EvalSettings, stack: ExitStack) -> OpenRunner:
    assert spec.har is not None
    from harness.backends.dfc import HarRunner  # each backend imported where it is used

    har = stack.enter_context(HarRunner(spec.har, spec.stage, settings.input_hw))
    run.log(f"stage {spec.stage.value}: {har.label}")
    return OpenRunner(har, spec.har, "")


def _compiled(spec: PathSpec, log: Log) -> CompiledThresholds | None:
    """The thresholds of the NMS config beside the HAR, where it has one."""
    if spec.har is None:
        return None
    from harness.backends.dfc import compiled_nms_thresholds

    found = compiled_nms_thresholds(spec.har)
    return CompiledThresholds(*found, f"NMS config beside {spec.har}") if found else None


def _check(spec: PathSpec, settings: EvalSettings) -> None:
    """Refuse a HAR whose compiled NMS thresholds are not the evaluation's (every stage would differ
    by them alone)."""
    if spec.har is not None:
        from harness.backends.dfc import check_compiled_thresholds

        check_compiled_thresholds(spec.har, settings.score_threshold, settings.iou_threshold)


def _calibration(spec: PathSpec, run: RunContext) -> str:
    return f"the calibration compiled into {spec.har} (a HAR does not record its images)"


def _calibration_facts(spec: PathSpec, run: RunContext) -> tuple[tuple[str, str], ...]:
    """The HEF compiled with the HAR and its calibration images, as compile recorded them beside it."""
    assert spec.har is not None
    from harness.backends.dfc.record import har_facts

    return har_facts(spec.har)


DESCRIPTOR = BackendDescriptor(
    Backend.DFC,
    PathKind.EMULATED,
    tuple(_STAGE_PATHS.values()),
    _open,
    _calibration,
    takes=frozenset({"har", "record"}),
    needs=(("har", "--backend dfc: needs --har M.har (the optimized HAR to emulate)"),),
    name_of=lambda spec: _STAGE_PATHS[spec.stage],
    compiled=_compiled,
    check=_check,
    calibration_facts=_calibration_facts,
    help="--har in the Dataflow Compiler's emulator",
)
