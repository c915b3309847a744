"""A compiled HEF on a Hailo device through HailoRT: the only device path."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from harness.core.errors import HefError
from harness.core.path_names import HAILO, PathKind
from harness.pipeline.backends.descriptor import Backend, BackendDescriptor, CompiledThresholds, Log, OpenRunner

if TYPE_CHECKING:
    from harness.core.settings import EvalSettings
    from harness.pipeline.factory import RunContext
    from harness.pipeline.spec import PathSpec


def _open(spec: PathSpec, run: RunContext, settings: EvalSettings, stack: ExitStack) -> OpenRunner:
    assert spec.hef is not None
    from harness.backends.hailort import HailoRTRunner

    devices = spec.hailo_devices or None
    device = stack.enter_context(HailoRTRunner(spec.hef, format_type=spec.hailo_format, device_ids=devices))
    run.log(f"Hailo path: {device.label}")
    # the two formats dequantize in different places: cached apart
    return OpenRunner(device, spec.hef, spec.hailo_format.name.lower())


def _compiled(spec: PathSpec, log: Log) -> CompiledThresholds | None:
    """The HEF's NMS op's thresholds; None without one, or where the harness cannot read the HEF
    (``log`` is told: HailoRT may still run it)."""
    if spec.hef is None:
        return None
    from harness.inputs.hef.reader import read_hef

    try:
        groups = read_hef(spec.hef).network_groups
    except HefError as error:
        log(f"thresholds: cannot read the NMS compiled into {spec.hef} ({error}); the defaults apply")
        return None
    nms = groups[0].nms if groups else None
    if nms is None or nms.bbox_decoding_only:
        return None
    return CompiledThresholds(nms.score_threshold, nms.iou_threshold, f"NMS op compiled into {spec.hef}")


def _calibration(spec: PathSpec, run: RunContext) -> str:
    from harness.inputs.hef.ultralytics import export_of

    export = export_of(spec.hef) if spec.hef is not None else None
    said = f"; its Ultralytics export says {export.calibration}" if export and export.calibration else ""
    return f"the calibration compiled into {spec.hef} (a HEF does not record its images{said})"


DESCRIPTOR = BackendDescriptor(
    Backend.HAILORT,
    PathKind.DEVICE,
    (HAILO,),
    _open,
    _calibration,
    takes=frozenset({"hef", "record", "hailo_devices"}),
    needs=(("hef", "--backend hailort: needs --hef M.hef (the compiled model to run on the device)"),),
    job_path=True,
    compiled=_compiled,
    help="--hef on a Hailo device (default with --hef)",
)
