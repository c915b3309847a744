"""The doctor: every mode injected into one bench, each run gated and diagnosed like any run, and
the clean controls and clean runs it is measured against."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

import numpy as np

from harness.core.checks import CheckResult
from harness.core.errors import HarnessError
from harness.decode.heads import decoder
from harness.doctor.bench import Bench, subset
from harness.doctor.description import hef_description
from harness.doctor.evidence import doctor_evidence
from harness.doctor.modes import REFUSALS, Injected, Mode, inject, modes_for, static_checks_control
from harness.inputs.hef.reader import HefInfo
from harness.pipeline.detect import (
    DetectionPath,
)
from harness.pipeline.factory import evaluate_spec
from harness.pipeline.job import path_bootstrap
from harness.pipeline.spec import REFERENCE
from harness.verdict.diagnosis import diagnose
from harness.verdict.diagnosis_evidence import collect_evidence
from harness.verdict.gate_id import baseline_kinds
from harness.verdict.gates import GateResult, gate_path_agreement, run_gates
from harness.verdict.golden import DEFAULT_TOLERANCES
from harness.verdict.metrics.coco import DifferenceInterval
from harness.verdict.result import PathResult

CLEAN_SEEDS = (0, 1, 2, 3, 4)
CLEAN_SHARE = 0.8  # share of the images each clean run samples


# --------------------------------------------------------------------------------------------- doctor


@dataclass(frozen=True)
class DoctorRow:
    """One mode (or clean control) run against the bench. ``gate_failed`` is None when it did not
    run; ``gate`` names the first failed gate (or check, or the refusal) and what it said;
    ``diagnosis`` is the top finding's name (``none`` when no rule holds); ``correct`` says the
    diagnosis is the expected one."""

    mode: str
    expected: str
    injected: bool
    how: str
    gate_failed: bool | None
    gate: str
    diagnosis: str
    cause: str
    correct: bool | None
    gap: str = ""


@dataclass(frozen=True)
class CleanRun:
    """The clean path under test against the ONNX reference on a sample of the images: passes when
    the agreement gate passes, the paired bootstrap interval of mAP@0.5 (path minus reference) does
    not lie wholly below the allowed drop (a loss beyond it, shown beyond the images' noise), and no rule
    of the diagnosis holds."""

    seed: int
    n_images: int
    matched_share: float
    map50_difference: DifferenceInterval | None  # None without labels: no mAP to differ
    findings: tuple[str, ...]
    passed: bool


@dataclass(frozen=True)
class DoctorTable:
    model: str
    dataset: str
    n_images: int
    hailo_path: str
    baselines: Mapping[str, str]
    controls: tuple[DoctorRow, ...]
    rows: tuple[DoctorRow, ...]
    clean_runs: tuple[CleanRun, ...] = field(default=())

    @property
    def problems(self) -> list[str]:
        """Every way the doctor found the harness wanting: a clean control or clean run that
        fails, an injected mode not caught (without a known gap) or not named (a mode with a known gap
        is named by its expected diagnosis, or by none where no gate failed: the run it gives is clean)."""
        found = [f"clean control {r.mode}: {r.gate}" for r in self.controls if r.gate_failed]
        found += [f"clean run seed {c.seed} fails" for c in self.clean_runs if not c.passed]
        for r in self.rows:
            if not r.injected:
                continue
            if not r.gate_failed and not r.gap:
                found.append(f"{r.mode}: no gate failed")
            if not r.correct:
                found.append(f"{r.mode}: diagnosed {r.diagnosis}, expected {r.expected}")
        return found


def _first_failure(gates: Sequence[GateResult]) -> str:
    failed = [g for g in gates if not g.passed]
    if not failed:
        return ""
    return f"{failed[0].name}: {failed[0].text.splitlines()[0]}"


def _row(mode: Mode, how: str, gate_failed: bool, gate: str, name: str, text: str) -> DoctorRow:
    """A run's row: ``name`` and ``text`` are its top diagnosis (``none``, ``""`` when nothing holds). It is
    named correctly by the mode's expected diagnosis; a mode with a stated gap (no gate can catch it on these
    heads) also by ``none`` where no gate failed, the run it gives being clean."""
    clean_gap = bool(mode.gap) and name == "none" and not gate_failed
    correct = (name == mode.expected and mode.detail in text) or clean_gap
    return DoctorRow(mode.name, mode.expected, True, how, gate_failed, gate, name, text, correct, mode.gap)


def _static_failure(check: CheckResult) -> str:
    return f"test_hef_static[{check.name}]: {check.message}"


def _path_row(
    bench: Bench,
    mode: Mode,
    how: str,
    path: DetectionPath,
    result: PathResult,
    broken: Sequence[CheckResult] = (),
) -> DoctorRow:
    """``result`` of ``path`` held to its baseline and the reference, then diagnosed; ``broken``: the static checks
    its HEF fails that the clean HEF passes, gates beside the path's (named after them)."""
    reference = bench.reference_for(result)
    kinds = baseline_kinds(bench.dataset.labelled)
    gates = run_gates(result, bench.baselines[result.path], reference, None, bench.original_hw, kinds=kinds)
    failed = any(not g.passed for g in gates) or bool(broken)
    gate = _first_failure(gates) or (_static_failure(broken[0]) if broken else "")
    findings = diagnose(doctor_evidence(bench, result, reference, path, failed, broken))
    if not findings:
        return _row(mode, how, failed, gate, "none", "")
    top = findings[0]
    return _row(mode, how, failed, gate, top.name, f"{top.cause} ({top.evidence})")


def _broken_checks(bench: Bench, info: HefInfo) -> list[CheckResult]:
    """The static checks ``info`` fails that the bench's clean HEF description passes: what an injection broke."""
    clean = {r.name for r in bench.checks(bench.description) if r.passed is False}
    return [r for r in bench.checks(info) if r.passed is False and r.name not in clean]


def _hef_built_otherwise(bench: Bench, injected: Injected) -> list[CheckResult]:
    """The static checks broken on the emulated HEF an injection built otherwise than the bench's, where the
    static checks have a description of it (:func:`~harness.doctor.modes.static_checks_control`); none else."""
    hef = injected.hef
    if hef is None or bench.hef is None or hef.content_hash == bench.hef.content_hash:
        return []
    if not static_checks_control(bench.run.family, bench.bbox_only):
        return []
    return _broken_checks(bench, hef_description(bench.onnx, bench.run.facts, bench.settings, hef))


def _checks_row(mode: Mode, how: str, failing: Sequence[CheckResult]) -> DoctorRow:
    if not failing:
        return _row(mode, how, False, "", "none", "")
    top = failing[0]
    return _row(mode, how, True, _static_failure(top), top.name, top.message)


def _refusal_name(error: HarnessError) -> str:
    for refusal in REFUSALS:
        if isinstance(error, refusal.error) and refusal.phrase in str(error):
            return refusal.name
    return "refused"


def run_mode(bench: Bench, mode: Mode) -> DoctorRow:
    """Inject ``mode`` into ``bench``, run its gates (or static checks) and its diagnosis. Static
    checks that fail on the injected HEF description (or on the description of an emulated HEF the mode
    built otherwise, beside its path's gates) but pass on the clean one are what the injection broke; an
    error the harness raises is the run refused, named by :data:`REFUSALS`."""
    if mode.needs_emulator and bench.hef is None:
        why = f"not run: needs an emulated HEF; {bench.emulator_refusal}"
        return DoctorRow(mode.name, mode.expected, False, why, None, "", "", "", None, mode.gap)
    if mode.needs_labels and not bench.dataset.labelled:
        why = "not run: the mistake lives in the dataset's class names, and images without labels have none"
        return DoctorRow(mode.name, mode.expected, False, why, None, "", "", "", None, mode.gap)
    with ExitStack() as stack:
        try:
            injected = inject(mode, bench, stack)
            mode = replace(mode, gap=mode.gap or injected.gap)
            if injected.description is not None:
                return _checks_row(mode, mode.injection, _broken_checks(bench, injected.description))
            assert injected.path is not None
            result = bench.evaluate_path(injected.path, injected.dataset)
            broken = _hef_built_otherwise(bench, injected)
        except HarnessError as error:
            return _row(mode, mode.injection, True, f"refused: {error}", _refusal_name(error), str(error))
        return _path_row(bench, mode, mode.injection, injected.path, result, broken)


_CLEAN = Mode("clean", "none", "", "none", lambda bench, stack: Injected())


def controls(bench: Bench) -> tuple[DoctorRow, ...]:
    """The clean runs the modes are measured against, held to the same gates and checks: no gate
    may fail and no rule may hold."""
    with ExitStack() as stack:
        clean = _path_row(bench, _CLEAN, f"clean {bench.subject.label}", bench.subject_path(stack), bench.subject)
        raw = bench.raw_path(stack, decoder(bench.run.family))
        heads = _path_row(
            bench,
            replace(_CLEAN, name="clean_raw_heads"),
            "raw head outputs, harness decoder",
            raw,
            bench.evaluate_path(raw),
        )
    if not static_checks_control(bench.run.family, bench.bbox_only):  # no NMS op the description can give
        return clean, heads
    failing = [r for r in bench.checks(bench.description) if r.passed is False]
    static = _checks_row(replace(_CLEAN, name="clean_hef_description"), "static checks, clean HEF description", failing)
    return clean, heads, static


def clean_runs(bench: Bench, seeds: Sequence[int] = CLEAN_SEEDS, share: float = CLEAN_SHARE) -> tuple[CleanRun, ...]:
    """The clean path under test held against the ONNX reference on ``share`` of the images drawn
    with each seed (predictions from the cache: nothing is inferred again). Baselines are not used:
    they hold all the images, and a sample is another manifest."""
    if bench.hef is None:
        return ()
    drop = DEFAULT_TOLERANCES.map50_drop
    out = []
    for seed in seeds:
        n = max(1, round(share * len(bench.dataset.samples)))
        picked = np.random.default_rng(seed).choice(len(bench.dataset.samples), n, replace=False)
        sample = subset(bench.dataset, picked.tolist())
        reference = evaluate_spec(REFERENCE, bench.run, sample)
        hailo = evaluate_spec(bench.subject_spec, bench.run, sample)
        gate = gate_path_agreement(reference, hailo)
        interval, within = None, True
        if bench.dataset.labelled:
            interval = path_bootstrap(sample, reference, hailo).map50
            within = interval.high >= -drop  # no loss beyond the allowed drop shown beyond the images' noise
        findings = tuple(
            f.name
            for f in diagnose(
                collect_evidence(hailo, reference, map50_difference=interval, own=bench.own_agreement(hailo.path))
            )
        )
        share_seen = gate.observed if gate.observed is not None else math.nan
        out.append(CleanRun(seed, n, share_seen, interval, findings, gate.passed and within and not findings))
    return tuple(out)


def run_doctor(
    bench: Bench,
    modes: Sequence[Mode] | None = None,
    seeds: Sequence[int] = CLEAN_SEEDS,
    log: Callable[[str], None] = lambda line: None,
) -> DoctorTable:
    """Every mode of ``modes`` (default: those of the bench's head family) injected into ``bench`` (see
    :func:`~harness.doctor.bench.open_bench`), after the clean controls and the clean runs on ``seeds``;
    ``log`` gets a line per step."""
    bench.require_boxes()
    modes = modes_for(bench.run.family, bench.bbox_only) if modes is None else modes
    hailo = bench.hef.label if bench.hef is not None else f"none: {bench.emulator_refusal}"
    log("doctor: the clean controls")
    clean = controls(bench)
    rows = []
    for number, mode in enumerate(modes, start=1):
        start = time.monotonic()
        rows.append(row := run_mode(bench, mode))
        caught = "caught" if row.gate_failed else "not caught"
        took = time.monotonic() - start
        log(f"doctor: mode {number}/{len(modes)} {mode.name}: {caught}, diagnosed {row.diagnosis} ({took:.1f} s)")
    log(f"doctor: {len(seeds)} clean runs, each on {CLEAN_SHARE:.0%} of the images")
    return DoctorTable(
        model=str(bench.onnx),
        dataset=str(bench.dataset.root),
        n_images=len(bench.dataset.samples),
        hailo_path=hailo,
        baselines=dict(bench.baseline_sources),
        controls=clean,
        rows=tuple(rows),
        clean_runs=clean_runs(bench, seeds),
    )
