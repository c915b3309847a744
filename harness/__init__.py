"""Accuracy-regression harness for object detectors compiled for Hailo accelerators.

The public API, each name loaded when first used (so ``import harness`` stays cheap)::

    import harness

    job = harness.run_job(harness.JobConfig())  # the demo: ONNX + emulated Hailo path, gates, reports
    run = harness.prepare_run("m.onnx", harness.load_dataset("data/fire_smoke_val"))
    result = harness.evaluate_spec(harness.PathSpec(harness.Backend.EMULATOR), run)
    info = harness.read_hef("m.hef")
    failures = harness.run_conformance(my_decoder)
    fit = harness.check_calibration(run, "calibration/").fit  # before compiling with that calibration set
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_API = {
    "JobConfig": "harness.pipeline.spec",
    "JobResult": "harness.pipeline.job",
    "run_job": "harness.pipeline.job",
    "PathSpec": "harness.pipeline.spec",
    "SettingsSpec": "harness.pipeline.spec",
    "Backend": "harness.pipeline.spec",
    "RunContext": "harness.pipeline.factory",
    "prepare_run": "harness.pipeline.factory",
    "load_dataset": "harness.pipeline.factory",
    "open_path": "harness.pipeline.factory",
    "evaluate_spec": "harness.pipeline.factory",
    "read_hef": "harness.inputs.hef.reader",
    "run_conformance": "harness.conformance.suite",
    "check_calibration": "harness.doctor.calibration_check",
    # What a decoder of one's own takes and returns (see README, "Your own decoder").
    "Detections": "harness.core.detections",
    "OutputSpec": "harness.core.specs",
    "FormatOrder": "harness.core.specs",
    "FormatType": "harness.core.specs",
    "QuantInfo": "harness.core.specs",
    "DecodeConfig": "harness.core.settings",
    "SsdConfig": "harness.core.settings",
}
__all__ = [
    "Backend",
    "DecodeConfig",
    "Detections",
    "FormatOrder",
    "FormatType",
    "JobConfig",
    "JobResult",
    "OutputSpec",
    "PathSpec",
    "QuantInfo",
    "RunContext",
    "SettingsSpec",
    "SsdConfig",
    "__version__",
    "check_calibration",
    "evaluate_spec",
    "load_dataset",
    "open_path",
    "prepare_run",
    "read_hef",
    "run_conformance",
    "run_job",
]

if TYPE_CHECKING:
    from harness.conformance.suite import run_conformance
    from harness.core.detections import Detections
    from harness.core.settings import DecodeConfig, SsdConfig
    from harness.core.specs import FormatOrder, FormatType, OutputSpec, QuantInfo
    from harness.doctor.calibration_check import check_calibration
    from harness.inputs.hef.reader import read_hef
    from harness.pipeline.factory import RunContext, evaluate_spec, load_dataset, open_path, prepare_run
    from harness.pipeline.job import JobResult, run_job
    from harness.pipeline.spec import Backend, JobConfig, PathSpec, SettingsSpec


# Names that were renamed: each still works until 0.2, with a DeprecationWarning naming the new one.
_RENAMED = {"evaluate": "evaluate_spec"}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"harness.{name} is renamed harness.{new} (the old name goes in 0.2)", DeprecationWarning, 2)
        name = new
    if name not in _API:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(_API[name]), name)
