"""Is a calibration set fit to compile with, before any compile? From the float export and its emulated
quantization on that set, predict what the HEF will do on the evaluated images at the run's threshold: the
activation ranges the set leaves out, the highest score its class outputs can represent, the accuracy against the
float model and against calibrating on the evaluated images themselves (a paired bootstrap interval), a verdict
in the diagnosis's words, and, where it is unfit, the fewest images of a pool that close the gap.

Cost: two emulated quantizations (this set's, and the evaluated images' own, which is cached and so paid once
per dataset), one float pass per image for the ranges, and one evaluation per path (the float and the in-domain
ones cached by the prediction cache); a third quantization and evaluation where images are recommended."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from harness.backends.emulator.build import EmulatedHef
from harness.backends.emulator.ranges import ImageRanges, RangeGraph
from harness.core import defaults
from harness.core.confine import make_folder
from harness.core.errors import HarnessError
from harness.core.files import write_atomic
from harness.doctor.range_cache import cached_ranges
from harness.doctor.range_cover import images_to_add, uncovered
from harness.inputs.calibration import (
    calibration_paths,
    calibration_shortfall,
    calibration_size,
    write_list_file,
)
from harness.inputs.dataset import require_evaluable
from harness.inputs.demo import IN_DOMAIN, OFF_DOMAIN, demo_split
from harness.pipeline.factory import RunContext, emulated_hef, evaluate_spec
from harness.pipeline.job import path_bootstrap
from harness.pipeline.spec import REFERENCE, Backend, PathSpec
from harness.verdict.diagnosis import MIN_BOXES
from harness.verdict.golden import DEFAULT_TOLERANCES
from harness.verdict.metrics.coco import PairedBootstrap
from harness.verdict.result import PathResult

FIT, SCORE_CAP, QUANTISATION_LOSS = "fit", "score_cap", "quantisation_loss"  # the diagnosis's words
WORST = 5  # layers shown where the set's ranges fall short
_AT_CAP = 0.001  # a float score above the ceiling by more than this is cut to it
ADDITIONS = "calibration-additions.txt"
WITH_ADDITIONS = "calibration-with-additions.txt"


@dataclass(frozen=True)
class TensorCover:
    """One tensor's range on the calibration images and on the evaluated images; ``uncovered``: the share of the
    latter the former misses; ``role``: the head role of a head output, ``""`` for a layer inside the graph."""

    tensor: str
    role: str
    calibration: tuple[float, float]
    evaluated: tuple[float, float]
    uncovered: float


@dataclass(frozen=True)
class Accuracy:
    """mAP@0.5 and mAP@0.5:0.95 of one path on the evaluated images."""

    path: str
    map50: float
    map50_95: float

    @classmethod
    def of(cls, result: PathResult, path: str) -> Accuracy:
        return cls(path, result.metrics.map50, result.metrics.map50_95)


@dataclass(frozen=True)
class CalibrationCheck:
    """The check's finding. ``verdict``: :data:`FIT`, or the cause that makes the set unfit (:data:`SCORE_CAP`,
    :data:`QUANTISATION_LOSS`), ``reason`` in words; ``findings``: what else is worth knowing (too few images for
    the Dataflow Compiler, fewer than asked). ``score_ceiling``: the highest score the class outputs calibrated on
    the set can represent (None where the outputs carry logits); ``float_boxes``: boxes the float model finds at
    the threshold, ``capped``: how many of them score above the ceiling. ``versus_in_domain``: the paired
    bootstrap intervals of this set's mAPs minus the in-domain calibration's (the evaluated images' own),
    ``quantization_cost``: the in-domain calibration's minus the float model's."""

    verdict: str
    reason: str
    calibration: str
    images: int
    findings: tuple[str, ...]
    score_threshold: float
    score_ceiling: float | None
    float_boxes: int
    capped: int
    heads: tuple[TensorCover, ...]
    worst_layers: tuple[TensorCover, ...]
    float_model: Accuracy
    calibrated: Accuracy
    in_domain: Accuracy
    versus_in_domain: PairedBootstrap
    quantization_cost: PairedBootstrap
    additions: tuple[Path, ...] = ()
    with_additions: Accuracy | None = None
    written: tuple[Path, ...] = ()
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def fit(self) -> bool:
        return self.verdict == FIT


def _covers(cal: ImageRanges, evaluated: ImageRanges) -> list[TensorCover]:
    low, high = cal.union()
    target_low, target_high = evaluated.union()
    share = uncovered(low, high, target_low, target_high)
    return [
        TensorCover(
            t,
            evaluated.roles[t].value if t in evaluated.roles else "",
            (float(low[i]), float(high[i])),
            (float(target_low[i]), float(target_high[i])),
            float(share[i]),
        )
        for i, t in enumerate(evaluated.tensors)
    ]


# each mAP, and the most of it a run may lose against its baseline before the harness's mAP gate fails
_METRICS = (
    ("map50", "mAP@0.5", DEFAULT_TOLERANCES.map50_drop),
    ("map50_95", "mAP@0.5:0.95", DEFAULT_TOLERANCES.map50_95_drop),
)


def _loss(versus: PairedBootstrap, cost: PairedBootstrap) -> tuple[str, bool]:
    """In words, each metric of this calibration against calibrating on the evaluated images, and whether one
    loses what the bootstrap holds (its interval below 0) and more than the mAP gate lets a run lose against a
    baseline blessed from the in-domain calibration."""
    said, lost = [], False
    for field_name, name, allowed in _METRICS:
        v, c = getattr(versus, field_name), getattr(cost, field_name)
        lost |= bool(np.isfinite(v.high) and v.high < 0 and -v.point > allowed)
        said.append(
            f"{name} {v.point:+.4f} (95 % interval [{v.low:+.4f}, {v.high:+.4f}]; quantizing at all: {c.point:+.4f})"
        )
    return "; ".join(said) + " against calibrating on the evaluated images themselves", lost


def _verdict(
    ceiling: float | None,
    threshold: float,
    float_boxes: int,
    capped: int,
    versus: PairedBootstrap,
    cost: PairedBootstrap,
    count: int,
) -> tuple[str, str]:
    """The verdict and its reason: a ceiling under the threshold loses every box (``score_cap``); a loss against
    in-domain calibration that the bootstrap holds (its interval below 0) and that the mAP gate would fail
    (more than its allowed drop) is ``score_cap`` where the ceiling cuts the scores of many float boxes (as
    many as the diagnosis's own score-cap rule asks), else ``quantisation_loss``; anything else is fit."""
    if ceiling is not None and ceiling < threshold and float_boxes:
        return SCORE_CAP, (
            f"the class outputs calibrated on these {count} images can represent scores up to {ceiling:.3f}, "
            f"below your threshold {threshold:g}: all {float_boxes} boxes the float model finds at {threshold:g} "
            "would be lost, as after calibrating on images that show none of the classes"
        )
    said, lost = _loss(versus, cost)
    if not lost:
        return FIT, f"{said}: no loss the images hold that the mAP gates would fail"
    if ceiling is not None and capped >= max(MIN_BOXES, 0.1 * float_boxes):
        return SCORE_CAP, (
            f"{said}: the class outputs can represent scores up to {ceiling:.3f}, and {capped} of the "
            f"{float_boxes} boxes the float model finds at {threshold:g} score above it"
        )
    return QUANTISATION_LOSS, f"{said}: the calibration ranges miss what the evaluated images reach"


def _undecided(versus: PairedBootstrap, images: int) -> list[str]:
    """Where a metric's loss the mAP gate would fail is not held by the bootstrap but not ruled out either (its
    interval reaches below the gate's allowed drop): the loss these images cannot tell from noise."""
    said = []
    for field_name, name, allowed in _METRICS:
        v = getattr(versus, field_name)
        if np.isfinite(v.low) and v.low < -allowed and not v.high < 0:
            said.append(
                f"{name} {v.point:+.4f} against calibrating on the evaluated images, with an interval down to "
                f"{v.low:+.4f}: {images} evaluated images cannot rule that loss out; evaluate on more to tell"
            )
    return said


def _findings(
    count: int,
    asked: int,
    available: int,
    ceiling: float | None,
    capped: int,
    float_boxes: int,
    undecided: Sequence[str] = (),
) -> tuple[str, ...]:
    found = list(undecided)
    if ceiling is not None and capped >= MIN_BOXES:
        found.append(
            f"{capped} of the {float_boxes} boxes the float model finds score above {ceiling:.3f}, the highest score "
            f"the class outputs can represent: their scores are cut to it (their order lost), and a threshold above "
            f"{ceiling:.3f} would lose them all"
        )
    if available < asked:
        found.append(
            f"the set holds {available} images, fewer than the {asked} asked (--calibration-count): "
            f"all {available} used"
        )
    shortfall = calibration_shortfall(count, available=available)
    if shortfall:
        found.append(shortfall)
    return tuple(found)


def _list(file: Path, paths: Sequence[Path]) -> Path:
    make_folder(file.parent)
    write_list_file(file, paths)
    return file


def _copy(paths: Sequence[Path], folder: Path) -> None:
    """``paths`` copied into ``folder`` under their names; an existing file of the same name is refused unless it
    holds the same bytes (then left as it is)."""
    make_folder(folder)
    for path in paths:
        target = folder / path.name
        if target.exists() or target.is_symlink():
            if target.is_file() and not target.is_symlink() and target.read_bytes() == path.read_bytes():
                continue
            raise HarnessError(f"--copy-to {folder}: {target.name} exists with other content; expected a new name")
    for path in paths:
        target = folder / path.name
        if not target.exists():
            write_atomic(target, path.read_bytes())


def check_calibration(
    run: RunContext,
    calibration: str | Path,
    calibration_count: int = defaults.CALIBRATION_COUNT,
    pool: Path | None = None,
    out: Path | None = None,
    copy_to: Path | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> CalibrationCheck:
    """The fitness of the calibration set ``calibration`` (a folder, or a list file) for ``run``'s export on its
    evaluated images at its threshold; ``pool``: the images to recommend from (default the evaluated images);
    ``out``: where the recommendation's list files go (where unfit); ``copy_to``: a folder to copy the
    recommended images into."""
    require_evaluable(run.dataset)
    start, timings = time.perf_counter(), {}
    if calibration in (IN_DOMAIN, OFF_DOMAIN):  # the demo set's named frames
        calibration = demo_split(run.cache_dir, str(calibration))
    available = calibration_size(calibration)
    count = min(calibration_count, available)
    if count < 1:
        raise HarnessError(f"--calibration {calibration}: no images; expected a folder or list file of images")
    evaluated = [s.path for s in run.dataset.samples]
    own = _list(run.cache_dir / "calibration-check" / f"{run.dataset.manifest[:16]}.txt", evaluated)
    specs = {
        "calibrated": PathSpec(Backend.EMULATOR, calibration=str(calibration), calibration_count=count),
        "in_domain": PathSpec(Backend.EMULATOR, calibration=str(own), calibration_count=min(count, len(evaluated))),
    }
    log(f"calibration check: the float model and the emulated HEF calibrated on {count} images of {calibration}")
    reference = evaluate_spec(REFERENCE, run)
    results, hefs = {}, {}
    for name, spec in specs.items():
        t = time.perf_counter()
        hefs[name] = emulated_hef(spec, run)
        results[name] = evaluate_spec(spec, run)
        timings[name] = time.perf_counter() - t
    t = time.perf_counter()
    graph = RangeGraph(hefs["calibrated"])
    measure = _measure(run, hefs["calibrated"], graph, log)
    cal_ranges, eval_ranges = measure(hefs["calibrated"].calibration_images), measure(evaluated)
    timings["ranges"] = time.perf_counter() - t
    calibrated, in_domain = results["calibrated"], results["in_domain"]
    versus = path_bootstrap(run.dataset, in_domain, calibrated)
    cost = path_bootstrap(run.dataset, reference, in_domain)
    threshold = run.settings.score_threshold
    scores = np.concatenate([p.scores for p in reference.predictions]) if reference.predictions else np.zeros(0)
    float_scores = scores[scores >= threshold]
    ceiling = calibrated.score_ceiling
    capped = int((float_scores > ceiling + _AT_CAP).sum()) if ceiling is not None else 0
    verdict, reason = _verdict(ceiling, threshold, len(float_scores), capped, versus, cost, count)
    covers = _covers(cal_ranges, eval_ranges)
    heads = tuple(c for c in covers if c.role)
    layers = tuple(sorted((c for c in covers if not c.role and c.uncovered > 0), key=lambda c: -c.uncovered))
    found = CalibrationCheck(
        verdict,
        reason,
        str(calibration),
        count,
        _findings(
            count,
            calibration_count,
            available,
            ceiling,
            capped,
            len(float_scores),
            _undecided(versus, len(evaluated)) if verdict == FIT else (),
        ),
        threshold,
        ceiling,
        len(float_scores),
        capped,
        heads,
        layers[:WORST],
        Accuracy.of(reference, reference.label),
        Accuracy.of(calibrated, f"emulated, calibrated on {calibration}"),
        Accuracy.of(in_domain, "emulated, calibrated on the evaluated images"),
        versus,
        cost,
        timings=timings,
    )
    if found.fit:
        return replace(found, seconds=time.perf_counter() - start)
    found = _recommend(found, run, measure, cal_ranges, eval_ranges, pool, out, copy_to, log)
    return replace(found, seconds=time.perf_counter() - start)


def _measure(
    run: RunContext, hef: EmulatedHef, graph: RangeGraph, log: Callable[[str], None]
) -> Callable[[Sequence[Path]], ImageRanges]:
    return lambda paths: cached_ranges(hef, graph, run.facts.sha256, paths, run.cache_dir, log)


def _recommend(
    found: CalibrationCheck,
    run: RunContext,
    measure: Callable[[Sequence[Path]], ImageRanges],
    cal: ImageRanges,
    evaluated: ImageRanges,
    pool: Path | None,
    out: Path | None,
    copy_to: Path | None,
    log: Callable[[str], None],
) -> CalibrationCheck:
    """The fewest pool images that make the set cover the evaluated images' ranges as well as calibrating on the
    evaluated images themselves does, and the accuracy predicted with them added."""
    t = time.perf_counter()
    pool_paths = list(calibration_paths(pool, calibration_size(pool))) if pool is not None else list(evaluated.images)
    pool_ranges = evaluated if pool is None else measure(pool_paths)
    target_low, target_high = evaluated.union()
    # as well covered as calibrating on the evaluated images themselves (the first as many as the set) covers them
    own_low, own_high = evaluated.union(list(range(min(found.images, len(evaluated.images)))))
    allowed = uncovered(own_low, own_high, target_low, target_high)
    base_low, base_high = cal.union()
    taken = {p.resolve() for p in cal.images}
    rows = [i for i, p in enumerate(pool_paths) if p.resolve() not in taken]
    picks = images_to_add(
        base_low, base_high, pool_ranges.low[rows], pool_ranges.high[rows], target_low, target_high, allowed
    )
    additions = tuple(pool_paths[rows[i]] for i in picks)
    timings = {**found.timings, "recommendation": time.perf_counter() - t}
    if not additions:
        return replace(found, timings=timings)
    log(f"calibration check: {len(additions)} images to add; the emulated HEF calibrated with them")
    folder = out or run.cache_dir / "calibration-check"
    added = _list(folder / ADDITIONS, additions)
    combined = _list(folder / WITH_ADDITIONS, [*cal.images, *additions])
    t = time.perf_counter()
    spec = PathSpec(Backend.EMULATOR, calibration=str(combined), calibration_count=len(cal.images) + len(additions))
    result = evaluate_spec(spec, run)
    timings["with_additions"] = time.perf_counter() - t
    if copy_to is not None:
        _copy(additions, copy_to)
    return replace(
        found,
        additions=additions,
        with_additions=Accuracy.of(result, f"emulated, calibrated on the set and {len(additions)} images added"),
        written=(added, combined),
        timings=timings,
    )
