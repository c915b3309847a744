"""A Hailo path's outputs recorded before (``--record``), served again for the same inputs: its
name and kind are the recording's, and a store of another model or other settings is refused."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.path_names import PathKind
from harness.pipeline.backends.descriptor import Backend, BackendDescriptor, CompiledThresholds, Log, OpenRunner

if TYPE_CHECKING:
    from harness.backends.replay import Recording
    from harness.core.settings import EvalSettings, SsdConfig
    from harness.core.specs import OutputSpec
    from harness.pipeline.factory import RunContext
    from harness.pipeline.spec import PathSpec


def shaping(settings: EvalSettings, outputs: Iterable[OutputSpec]) -> dict[str, object]:
    """The settings that shape a runner's outputs: the input's size and fit, and the thresholds of an
    NMS compiled into the model (an emulated HEF's are the run's)."""
    shaped: dict[str, object] = {"input_hw": list(settings.input_hw), "preprocess": settings.preprocess.value}
    if any(o.is_nms for o in outputs):
        shaped |= {k: getattr(settings, k) for k in ("score_threshold", "iou_threshold", "max_per_class")}
    return shaped


def _recording(spec: PathSpec) -> Recording:
    from harness.backends.replay import read_recording  # reads the store's header

    assert spec.replay is not None
    return read_recording(spec.replay)


def _recorded(spec: PathSpec) -> PathKind:
    """The kind of the path that recorded the store, as its header says."""
    return PathKind.EMULATED if _recording(spec).emulated else PathKind.DEVICE


def _open(spec: PathSpec, run: RunContext, settings: EvalSettings, stack: ExitStack) -> OpenRunner:
    assert spec.replay is not None
    from harness.backends.replay import ReplayRunner, StoreError

    replay = stack.enter_context(ReplayRunner(spec.replay))
    recording = replay.recording
    facts = run.facts  # an ONNX file's facts carry its sha256 (a HEF's export folder's: its HEF's)
    read = facts.sha256 if facts.source == os.fspath(run.onnx) and run.onnx.is_file() else None
    check_replayed_model(spec, recording, run.onnx, read)
    expected = shaping(settings, recording.outputs)
    differ = {k: (v, expected.get(k)) for k, v in recording.shaping.items() if expected.get(k) != v}
    if differ:
        said = "; ".join(f"{k} recorded {was}, this run {now}" for k, (was, now) in differ.items())
        raise StoreError(f"--replay {spec.replay}: recorded under other settings that shape its outputs: {said}")
    run.log(f"Hailo path: {replay.label}")
    # the path is the recorded model's: its baselines, its report and its cache are that model's
    return OpenRunner(replay, Path(recording.model_file), "", recording.model_sha256)


def check_replayed_model(spec: PathSpec, recording: Recording, export: Path, export_sha256: str | None = None) -> None:
    """Refuse a store recorded from another model than this run's: the HEF where ``--hef`` is
    given, else the run's ``export`` (the one the recording run was given; ``export_sha256``: its
    sha256 where the run has read it), naming both and their sha256s."""
    from harness.backends.replay import StoreError
    from harness.pipeline.detect import file_sha256

    recorded = f"recorded from {recording.model_file} (sha256 {recording.model_sha256[:16]})"
    if recording.export_sha256 != recording.model_sha256:
        recorded += f" in a run of {recording.export_file} (sha256 {recording.export_sha256[:16]})"
    if spec.hef is not None:
        model, wanted, this, sha256 = spec.hef, recording.model_sha256, ", not from --hef", None
    else:
        model, wanted, this, sha256 = export, recording.export_sha256, "; this run's model is", export_sha256
    sha256 = sha256 or file_sha256(model)
    if sha256 != wanted:
        raise StoreError(
            f"--replay {spec.replay}: {recorded}{this} {model} (sha256 {sha256[:16]}): a store serves only the "
            "model it was recorded from; record this one into a new store (--record NEW.rec)"
        )


def _preflight(spec: PathSpec, onnx: Path, cache_dir: Path, ssd: SsdConfig | None) -> None:
    check_replayed_model(spec, _recording(spec), onnx)


def _compiled(spec: PathSpec, log: Log) -> CompiledThresholds | None:
    """The settings a replayed NMS buffer was recorded under; None for raw heads."""
    if spec.replay is None:
        return None
    recording = _recording(spec)
    recorded = recording.shaping
    if not any(o.is_nms for o in recording.outputs) or "score_threshold" not in recorded:
        return None
    score, iou = float(recorded["score_threshold"]), float(recorded["iou_threshold"])
    return CompiledThresholds(score, iou, f"NMS buffer recorded in {spec.replay}")


def _calibration(spec: PathSpec, run: RunContext) -> str:
    """The recorded path's: a recording keeps its model's outputs, not the images it was calibrated on."""
    recording = _recording(spec)
    made = "an emulated HEF" if recording.emulated else recording.model_file
    return (
        f"that of the recorded {recording.path} path ({made}, {recording.runtime}, recorded {recording.created}); "
        "a recording does not keep the images its model was calibrated on"
    )


DESCRIPTOR = BackendDescriptor(
    Backend.REPLAY,
    PathKind.REPLAYED,
    (),
    _open,
    _calibration,
    takes=frozenset({"hef", "replay"}),
    needs=(("replay", "--replay STORE and --backend replay go together"),),
    job_path=True,
    name_of=lambda spec: _recording(spec).path,
    recorded=_recorded,
    preflight=_preflight,
    compiled=_compiled,
    help="the outputs in --replay STORE (default with --replay)",
)
