"""The main job: the ONNX path and the (emulated) Hailo path on one labelled set, held against the
golden baselines and against each other, with the sign-off reports written.

Without Hailo software the Hailo path is the emulator's HEF (sigmoid inside, HailoRT's NMS op,
a HAILO_NMS_BY_CLASS buffer), labelled ``emulated-hailo`` everywhere. With an optimized HAR and the
Dataflow Compiler, its fp-optimized and quantized emulations run too, and the stage gate names the
first stage (float -> fp-optimized -> quantized -> hardware) that lost the accuracy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.backends.dfc import EmulationStage, HarRunner, check_compiled_thresholds
from harness.backends.emulator import EmulatedHef, EmulatorOptions, EmulatorRunner, build_emulated_hef
from harness.backends.hailort import HailoRTRunner
from harness.cache import PredictionCache
from harness.data.dataset import Dataset, load_yolo
from harness.data.synthetic import Recipe, write_dataset
from harness.detect import (
    DFC_FP_OPTIMIZED,
    DFC_QUANTIZED,
    EMULATED_HAILO,
    HAILO,
    DetectionPath,
    NmsBufferPath,
    OnnxPath,
    runner_path,
)
from harness.errors import HarnessError
from harness.evaluate import evaluate_path
from harness.gates import GateResult, gate_path_agreement, gate_stages, missing_golden_gates, run_gates
from harness.golden import golden_from_result, golden_path, load_golden, missing_golden_message, write_golden
from harness.localisation import layer_sqnr, worst_layers
from harness.metrics.coco import paired_bootstrap
from harness.onnx_graph import load_model, model_input
from harness.report import write_reports
from harness.result import PathResult
from harness.settings import EvalSettings
from harness.specs import FormatType

ROOT = Path(__file__).resolve().parents[1]
DEMO_ONNX = ROOT / "datasets" / "demo" / "fire_smoke_yolo11n_256.onnx"
# The demo model's own validation and calibration frames (datasets/demo/MODEL_CARD.md: seed 0).
DEMO_RECIPE = Recipe(seed=0, train=0, val=100, calib=64, offdomain_calib=64, imgsz=256)
IN_DOMAIN, OFF_DOMAIN = "in-domain", "off-domain"
LOCALISATION_FRAMES = 16
DEMO_DATASET_NAME = f"synthetic_fire_smoke_seed{DEMO_RECIPE.seed}"


@dataclass(frozen=True)
class JobConfig:
    onnx: Path = DEMO_ONNX
    dataset: Path | None = None  # None: the demo validation set, generated from DEMO_RECIPE
    # A folder of images, or IN_DOMAIN / OFF_DOMAIN: the demo set's calibration splits.
    calibration: str = IN_DOMAIN
    calibration_count: int = 64
    golden_root: Path = ROOT / "golden"
    report_dir: Path = Path("reports") / "latest"
    cache_dir: Path = Path(".harness-cache")
    score_threshold: float = 0.2
    iou_threshold: float = 0.7
    update_golden: bool = False
    invocation: tuple[str, ...] = ("hailo-harness", "run")
    progress: bool | None = None
    # The Hailo path: "emulator" (the ONNX as an emulated HEF) or "hailort" (``hef`` on a device).
    backend: str = "emulator"
    hef: Path | None = None
    hailo_devices: tuple[str, ...] = ()
    # FLOAT32: HailoRT dequantizes the outputs; UINT8: the device's own type, dequantized by the harness.
    hailo_format: FormatType = FormatType.FLOAT32
    # An optimized HAR (hailo-harness compile writes one): its DFC emulation stages run and are gated.
    har: Path | None = None


@dataclass(frozen=True)
class JobResult:
    results: tuple[PathResult, ...]  # the ONNX reference first, the Hailo path last
    gates: tuple[GateResult, ...]
    reports: dict[str, Path]
    golden_changes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)


def demo_data(cache_dir: Path) -> Path:
    """The demo set (val + calibration splits), generated once into the cache; deterministic."""
    out = cache_dir / "demo-data" / DEMO_DATASET_NAME
    done = out / ".complete"
    if not done.exists():
        write_dataset(out, DEMO_RECIPE)
        done.touch()
    return out


def _calibration_source(config: JobConfig) -> Path:
    if config.calibration in (IN_DOMAIN, OFF_DOMAIN):
        split = "calib" if config.calibration == IN_DOMAIN else "calib_offdomain"
        return demo_data(config.cache_dir) / "images" / split
    source = Path(config.calibration)
    if not source.is_dir():
        raise HarnessError(f"--calibration {source}: not a folder of images (or {IN_DOMAIN!r} / {OFF_DOMAIN!r})")
    return source


def load_dataset(config: JobConfig) -> Dataset:
    return load_yolo(config.dataset if config.dataset is not None else demo_data(config.cache_dir))


@dataclass(frozen=True)
class _Run:
    """What every path of one job shares."""

    config: JobConfig
    settings: EvalSettings
    names: tuple[str, ...] | None  # the model's class names
    dataset: Dataset
    cache: PredictionCache
    log: Callable[[str], None]

    def evaluate(self, path: DetectionPath) -> PathResult:
        return evaluate_path(path, self.dataset, self.cache, self.config.progress)


def _emulated(run: _Run) -> tuple[PathResult, EmulatedHef]:
    config, settings = run.config, run.settings
    options = EmulatorOptions(
        calibration_count=config.calibration_count,
        sigmoid_inside=True,
        nms=True,
        score_threshold=settings.score_threshold,
        iou_threshold=settings.iou_threshold,
        max_proposals_per_class=settings.max_per_class,
    )
    hef = build_emulated_hef(config.onnx, _calibration_source(config), options, config.cache_dir / "emulator")
    run.log(f"Hailo path: {hef.label}")
    with EmulatorRunner(hef) as runner:
        path = NmsBufferPath(runner, settings, config.onnx, EMULATED_HAILO, run.names, variant=hef.content_hash)
        return run.evaluate(path), hef


def _dfc_stages(run: _Run, har: Path) -> tuple[PathResult, ...]:
    """The optimized HAR in the Dataflow Compiler's emulator, fp-optimized then quantized."""
    results = []
    for stage, name in ((EmulationStage.FP_OPTIMIZED, DFC_FP_OPTIMIZED), (EmulationStage.QUANTIZED, DFC_QUANTIZED)):
        with HarRunner(har, stage, run.settings.input_hw) as runner:
            results.append(run.evaluate(runner_path(runner, run.settings, har, name, run.names)))
            run.log(f"stage {stage.value}: {runner.label}")
    return tuple(results)


def _on_device(run: _Run) -> PathResult:
    """The HEF on a Hailo device: an NMS HEF through its NMS buffer, a raw HEF through the harness decoder."""
    config = run.config
    if config.hef is None:
        raise HarnessError("backend hailort: give the HEF to run on the device (--hef)")
    with HailoRTRunner(config.hef, format_type=config.hailo_format, device_ids=config.hailo_devices or None) as runner:
        variant = config.hailo_format.name.lower()  # the two formats dequantize differently: cached apart
        result = run.evaluate(runner_path(runner, run.settings, config.hef, HAILO, run.names, variant))
        fps = f"{result.fps:.1f}" if result.fps else "no (every prediction came from the cache)"
        run.log(f"Hailo path: {runner.label}; {fps} frames per second measured on the device")
        return result


def run_job(config: JobConfig, log: Callable[[str], None] = print) -> JobResult:
    if config.har is not None:  # before anything runs
        check_compiled_thresholds(config.har, config.score_threshold, config.iou_threshold)
    dataset = load_dataset(config)
    _, input_hw = model_input(load_model(config.onnx))
    settings = EvalSettings(input_hw, score_threshold=config.score_threshold, iou_threshold=config.iou_threshold)
    cache = PredictionCache(config.cache_dir / "predictions")
    with OnnxPath(config.onnx, settings) as onnx_path:
        reference = evaluate_path(onnx_path, dataset, cache, config.progress)
    run = _Run(config, settings, onnx_path.model_names, dataset, cache, log)
    emulated_hef: EmulatedHef | None = None
    if config.backend == "hailort":
        hailo = _on_device(run)
    elif config.backend == "emulator":
        hailo, emulated_hef = _emulated(run)
    else:
        raise HarnessError(f"backend {config.backend!r}: expected 'emulator' or 'hailort'")
    stages = _dfc_stages(run, config.har) if config.har is not None else ()
    results = (reference, *stages, hailo)
    ground_truth = [s.ground_truth.mapped(np.asarray(reference.settings.class_map)) for s in dataset.samples]
    names = [c.name for c in reference.metrics.per_class]
    bootstrap = paired_bootstrap(ground_truth, reference.predictions, hailo.predictions, names)
    original_hw = {s.image_id: s.original_hw for s in dataset.samples}

    gates: list[GateResult] = []
    changes: list[str] = []
    for result in (reference, hailo):  # the DFC stages are held to the float model only (gate_stages)
        file = golden_path(config.golden_root, config.onnx, result.path, Path(result.provenance.dataset).name)
        is_hailo = result is hailo
        if config.update_golden:
            changes.append(f"{file}: {write_golden(file, golden_from_result(result))}")
        if not file.exists():
            gates.extend(missing_golden_gates(result, missing_golden_message(file, config.invocation)))
            if is_hailo:
                gates.append(gate_path_agreement(reference, hailo))
            continue
        golden = load_golden(file)
        if is_hailo:
            gates.extend(run_gates(result, golden, reference, bootstrap, original_hw))
        else:
            gates.extend(run_gates(result, golden, original_hw=original_hw))
    if stages:
        gates.append(gate_stages(results, original_hw=original_hw))
    layers: list[dict[str, object]] = []
    if emulated_hef is not None and not all(g.passed for g in gates if g.name.endswith(f"-{EMULATED_HAILO}]")):
        # Where did the emulated HEF lose it: per-tensor SQNR against the float graph, on a few frames.
        frames = [s.path for s in dataset.samples[:LOCALISATION_FRAMES]]
        layers = worst_layers(layer_sqnr(emulated_hef, frames))
    reports = write_reports(config.report_dir, results, gates, dataset, layers)
    return JobResult(results, tuple(gates), reports, tuple(changes))


def summary_lines(job: JobResult) -> Sequence[str]:
    lines = []
    for r in job.results:
        lines.append(
            f"{r.label:>24}: mAP@0.5 {r.metrics.map50:.4f}  mAP@0.5:0.95 {r.metrics.map50_95:.4f}  "
            f"boxes/image {r.box_counts.mean:.2f}  saturation {r.scores.saturation:.3f}  images {r.metrics.n_images}"
            + (f"  {r.fps:.1f} frames/s on the device" if r.fps else "")
        )
    lines.append("")
    for g in job.gates:
        lines.append(f"{'PASS' if g.passed else 'FAIL'}  {g.name}")
        if not g.passed:
            lines.extend(f"      {line}" for line in g.message.splitlines())
    lines.append("")
    lines.extend(f"report: {p}" for p in job.reports.values())
    failed = sum(not g.passed for g in job.gates)
    verdict = "PASSED" if job.passed else "FAILED"
    lines.append(f"{verdict}: {len(job.gates) - failed} of {len(job.gates)} gates passed")
    return lines
