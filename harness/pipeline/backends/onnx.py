"""The float export in onnxruntime: the reference path, its own decode tail (or cut at its heads
and fed like a HEF where a host decoder is asked for)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from harness.core.path_names import ONNX, PathKind
from harness.pipeline.backends.descriptor import Backend, BackendDescriptor, OpenRunner

if TYPE_CHECKING:
    from harness.core.settings import EvalSettings
    from harness.pipeline.detect import OnnxPath
    from harness.pipeline.factory import RunContext
    from harness.pipeline.spec import PathSpec


def _open(spec: PathSpec, run: RunContext, settings: EvalSettings, stack: ExitStack) -> OpenRunner:
    from harness.backends.onnx.runner import FloatHeadsRunner  # onnx and onnxruntime: where they run

    return OpenRunner(stack.enter_context(FloatHeadsRunner(run.onnx, ssd=run.facts.ssd)), run.onnx, "float heads")


def _own_path(run: RunContext, settings: EvalSettings) -> OnnxPath:
    from harness.pipeline.detect import OnnxPath

    return OnnxPath(run.onnx, settings, run.names, facts=run.facts)


def _calibration(spec: PathSpec, run: RunContext) -> str:
    return "none (the float export)"


DESCRIPTOR = BackendDescriptor(
    Backend.ONNX,
    PathKind.FLOAT,
    (ONNX,),
    _open,
    _calibration,
    own_path=_own_path,
    help="the float export",
)
