"""The main job: the ONNX path and the (emulated) Hailo path on one labelled set, held against the
golden baselines and against each other, with the sign-off reports written.

Without Hailo software the Hailo path is the emulator's HEF (sigmoid inside, HailoRT's NMS op,
a HAILO_NMS_BY_CLASS buffer), labelled ``emulated-hailo`` everywhere. With an optimized HAR and the
Dataflow Compiler, its fp_optimized and quantized emulations run too, and the stage gate names the
first stage (float -> fp_optimized -> quantized -> hardware) that lost the accuracy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.core import confine
from harness.core.errors import HarnessError
from harness.core.path_names import PathKind
from harness.inputs.dataset import Dataset
from harness.pipeline.backends import describe
from harness.pipeline.bootstrap_cache import FOLDER as BOOTSTRAP_FOLDER
from harness.pipeline.bootstrap_cache import kept_bootstrap
from harness.pipeline.factory import (
    RunContext,
    calibration_note,
    check,
    evaluate_spec,
    load_dataset,
    preflight,
    prepare_run,
)
from harness.pipeline.made_from import with_made_from
from harness.pipeline.spec import REFERENCE, JobConfig, PathSpec, golden_roots, planned_gates
from harness.verdict.gate_id import GateId
from harness.verdict.gates import (
    GateResult,
    causes_lines,
    gate_path_agreement,
    gate_stages,
    missing_golden_gates,
    run_gates,
    shared_causes,
)
from harness.verdict.golden import Golden, baseline_file, golden_path, missing_golden_message
from harness.verdict.golden_blessing import bless, golden_from_result
from harness.verdict.golden_reading import load_golden
from harness.verdict.golden_weakness import ACCEPT_WEAK_FLAG, weaknesses
from harness.verdict.metrics import SET_SCORES
from harness.verdict.metrics.coco import PairedBootstrap, paired_bootstrap
from harness.verdict.metrics.distribution import SATURATION_LEVEL
from harness.verdict.result import PathResult

LOCALISATION_FRAMES = 16
DRAWINGS_FOLDER = "drawings"  # under the cache folder: the reports' drawn worst images (harness.report.plots)


@dataclass(frozen=True)
class JobResult:
    results: tuple[PathResult, ...]  # the ONNX reference first, the Hailo path last
    gates: tuple[GateResult, ...]
    reports: dict[str, Path]
    golden_changes: tuple[str, ...] = field(default=())
    # what the verdict says of baselines not as their blessings wrote them: an unsigned edit, unsealed,
    # a history edited by hand (their gates held as written)
    baseline_notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    def gate(self, gate_id: GateId) -> GateResult | None:
        return next((g for g in self.gates if g.id == gate_id), None)


def path_bootstrap(
    dataset: Dataset, reference: PathResult, candidate: PathResult, kept: Path | None = None
) -> PairedBootstrap:
    """The paired bootstrap over ``dataset``'s images of ``candidate``'s mAPs minus ``reference``'s,
    measured under the run's metric (``settings.metric``, as its gates are), the ground truth
    relabelled by the run's class map; ``kept``: the folder where a run of the same inputs kept it
    (:mod:`harness.pipeline.bootstrap_cache`), None to resample."""
    names = [c.name for c in reference.metrics.per_class]
    truths = [s.ground_truth.mapped(np.asarray(reference.settings.class_map)) for s in dataset.samples]
    metric, a, b = reference.settings.metric, reference.predictions, candidate.predictions
    if kept is not None:
        return kept_bootstrap(kept, truths, a, b, names, metric)
    return paired_bootstrap(truths, a, b, names, scores=SET_SCORES[metric])


def _baseline_gates(
    config: JobConfig,
    run: RunContext,
    reference: PathResult,
    hailo: PathResult,
    files: dict[str, Path],
    goldens: dict[str, Golden | None],
) -> list[GateResult]:
    """Both paths against their golden baselines ``goldens``, read from ``files`` (by path name; None:
    no such file), the Hailo path against the
    reference too (with the paired bootstrap of their mAP where there are labels); the DFC stages
    are held to the float model only (gate_stages)."""
    kept = run.cache_dir / BOOTSTRAP_FOLDER if run.cache is not None else None  # no prediction cache: nothing kept
    bootstrap = path_bootstrap(run.dataset, reference, hailo, kept) if config.labelled else None
    kinds, original_hw = config.baseline_kinds, run.dataset.original_hw
    gates: list[GateResult] = []
    for result in (reference, hailo):
        file, golden = files[result.path], goldens[result.path]
        is_hailo = result is hailo
        if golden is None:
            from harness.report import report_files

            message = missing_golden_message(file, config.invocation, report_files(config.report_dir)["html"])
            weak = weaknesses(golden_from_result(result, reference=reference if is_hailo else None))
            if weak:  # said before the blessing refuses it
                message += (
                    f"; blessing this run would be refused, its baseline too weak to fail: "
                    f"{'; '.join(w.text for w in weak)} (bless it knowingly with --update-golden {ACCEPT_WEAK_FLAG}, "
                    "or use a set and a model that give more to measure)"
                )
            gates.extend(missing_golden_gates(result, message, kinds))
            if is_hailo:
                gates.append(gate_path_agreement(reference, hailo))
            continue
        if is_hailo:
            gates.extend(run_gates(result, golden, reference, bootstrap, original_hw, kinds=kinds))
        else:
            gates.extend(run_gates(result, golden, original_hw=original_hw, kinds=kinds))
    return gates


def _baseline_files(config: JobConfig) -> dict[str, Path]:
    """The baseline file each path is held against (path name -> file): the project's own where it
    has one, else a read-only one, else the project's to be blessed."""
    roots = golden_roots(config.golden_root, config.onnx)
    paths = (REFERENCE.path_name, config.hailo.path_name)
    return {path: baseline_file(roots, config.onnx, path, config.dataset_name) for path in paths}


def report_folder(folder: Path, pdf: bool = False) -> None:
    """Make the reports' folder before the work they report, or refuse it: one that cannot be made
    raises its :class:`OSError`, one that cannot be written a :class:`HarnessError`; ``pdf``: with
    ``report.pdf`` among the files checked."""
    from harness.report import report_files

    confine.make_folder(folder)
    for file in report_files(folder, pdf).values():  # a report linked out of the project: refused before the work
        confine.check(file)
    if not os.access(folder, os.W_OK | os.X_OK):  # a read-only file system refuses root too
        raise HarnessError(f"--report {os.fspath(folder)!r}: cannot be written by this user; choose another folder")


def prepare_job(config: JobConfig, log: Callable[[str], None] = print) -> tuple[RunContext, tuple[PathSpec, ...]]:
    """The run of ``config`` and its paths (the ONNX reference first, the HAR's stages, the Hailo path
    last), every refusal made before anything runs, the reports' folder made."""
    if config.pdf:  # before any work: a run that cannot write the PDF it was asked for is refused
        from harness.report.pdf import require_browser

        require_browser()
    facts = preflight(config)
    _baseline_files(config)  # a dataset or model name a baseline's file cannot have: refused before the work
    dataset = load_dataset(config.dataset, config.split, config.cache_dir, config.images, log)
    what = f"{dataset.n_boxes} labelled boxes" if dataset.labelled else "no labels (held to the ONNX path)"
    log(f"dataset {config.dataset_name}: {len(dataset.samples)} images, {what}")
    run = prepare_run(
        config.onnx,
        dataset,
        config.settings,
        config.cache_dir,
        progress=config.progress,
        log=log,
        max_unreadable=config.max_unreadable,
        paths=(config.hailo, *config.stages),
        batch=config.batch,
        facts=facts,
    )
    specs = (REFERENCE, *config.stages, config.hailo)
    for spec in specs:  # every refusal before anything runs
        check(spec, run.settings)
    report_folder(config.report_dir, config.pdf)
    return run, specs


def run_job(config: JobConfig, log: Callable[[str], None] = print) -> JobResult:
    """Evaluate the reference, the HAR's stages and the Hailo path, gate them, write the reports."""
    run, specs = prepare_job(config, log)
    results = tuple(evaluate_spec(spec, run) for spec in specs)
    return judge_job(config, run, results, calibration_note(config.hailo, run), log)


def judge_job(
    config: JobConfig,
    run: RunContext,
    results: tuple[PathResult, ...],
    calibration: str,
    log: Callable[[str], None] = print,
) -> JobResult:
    """The verdict on a job's ``results`` (the reference first, the Hailo path last), however they were
    made (one run, or the shards a merge joins): blessed if asked, gated, the Hailo path's losses
    located where it fails, the reports written; ``calibration``: what the Hailo path was calibrated on."""
    dataset = run.dataset
    results = with_made_from(results, (REFERENCE, *config.stages, config.hailo), run)
    reference, hailo = results[0], results[-1]
    if hailo.fps is not None or config.hailo.kind is PathKind.DEVICE:
        fps = f"{hailo.fps:.1f}" if hailo.fps else "no (every prediction came from the cache)"
        log(f"{fps} frames per second measured on the device")
    data = Path(reference.provenance.dataset).name
    changes: tuple[str, ...] = ()
    if config.update_golden:  # both baselines or neither, always into the project's folder
        pair = (reference, hailo)
        weak = config.accept_weak_baseline
        blessed = [  # the Hailo path's with its agreement with the reference, which its gate is held to
            (
                golden_path(config.golden_root, config.onnx, r.path, data),
                golden_from_result(
                    r, accept_weak=weak, reference=reference if r is hailo else None, release=config.release
                ),
            )
            for r in pair
        ]
        changes = bless(blessed, config.bless_token)
    files = _baseline_files(config)
    goldens = {path: load_golden(file) if file.exists() else None for path, file in files.items()}  # read once
    original_hw = run.dataset.original_hw
    gates = _baseline_gates(config, run, reference, hailo, files, goldens)
    if config.stages:
        gates.append(gate_stages(results, config.stage_drop, original_hw))
    planned = planned_gates(config)
    if tuple(g.id for g in gates) != planned:
        produced = [g.name for g in gates]
        raise HarnessError(f"the job produced gates {produced}, planned {[str(g) for g in planned]}")
    layers: list[dict[str, object]] = []
    locate = describe(config.hailo.backend).locate
    if locate is not None and not all(g.passed for g in gates if g.id.path == hailo.path):
        # Where did the Hailo path lose it (the emulated HEF: per-tensor SQNR against the float graph), on a few frames.
        layers = locate(config.hailo, run, [s.path for s in dataset.samples[:LOCALISATION_FRAMES]])
    log(f"reports: writing {config.report_dir}")
    from harness.report import write_reports  # the report writers (and PIL): once the paths have run

    baselines = {path: (file, goldens[path]) for path, file in files.items()}
    reports = write_reports(
        config.report_dir,
        results,
        gates,
        run.dataset,
        layers,
        calibration,
        baselines,
        run.thresholds,
        config.stage_drop,
        run.cache_dir / DRAWINGS_FOLDER if run.cache is not None else None,
        config.pdf,
    )
    notes = tuple(
        f"{files[path]}: {note}"
        for path, golden in goldens.items()
        if golden is not None
        for note in (golden.seal_note, golden.history_note)
        if note is not None
    )
    return JobResult(results, tuple(gates), reports, changes, notes)


def _gates_phrase(names: Sequence[str]) -> str:
    return f"why {names[0]} failed" if len(names) == 1 else f"why these {len(names)} gates failed ({', '.join(names)})"


def summary_lines(job: JobResult) -> Sequence[str]:
    lines = []
    for r in job.results:
        maps = (
            f"mAP@0.5 {r.metrics.map50:.4f}  mAP@0.5:0.95 {r.metrics.map50_95:.4f}"
            if r.labelled
            else "no labels: mAP n/a"
        )
        lines.append(
            f"{r.label:>24}: {maps}  "
            f"boxes/image {r.box_counts.mean:.2f}  scores >= {SATURATION_LEVEL}: {r.scores.saturation:.1%}  "
            f"highest score {r.highest_score:.3f}  images {r.metrics.n_images}"
            + (f"  {r.fps:.1f} frames/s on the device" if r.fps else "")
            + (f"\n{'':>26}{r.provenance.runtime}" if r.replayed else "")
        )
    lines.append("")
    for g in job.gates:
        # a pass held to a baseline that cannot fail is not a pass: said on the gate's own line, with why
        mark = "FAIL" if not g.passed else "WEAK PASS" if g.weak else "PASS"
        lines.append(f"{mark}  {g.name}" + (f": {g.weak}" if g.passed and g.weak else ""))
        if not g.passed:
            lines.extend(f"      {line}" for line in g.text.splitlines())
    for names, causes in shared_causes(job.gates):  # once, not under each gate that shares them
        lines += ["", f"{_gates_phrase(names)}:", *(f"  {line}" for line in causes_lines(causes))]
    lines.append("")
    lines.extend(job.baseline_notes)
    lines.extend(f"report: {p}" for p in job.reports.values())
    failed = sum(not g.passed for g in job.gates)
    verdict = "PASSED" if job.passed else "FAILED"
    weak = sum(bool(g.weak) for g in job.gates)
    blessed = all(f"blessed with {ACCEPT_WEAK_FLAG}" in g.text for g in job.gates if g.weak)
    how = f"blessed with {ACCEPT_WEAK_FLAG}" if blessed else "not all blessed knowingly: see each gate"
    held = f"; {weak} of them held to weak baselines that cannot fail ({how})" if weak else ""
    lines.append(f"{verdict}: {len(job.gates) - failed} of {len(job.gates)} gates passed{held}")
    return lines
