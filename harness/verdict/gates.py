"""Gates: a run held against its golden baseline, and a Hailo path held against the ONNX reference on
the same images. Pure functions; each returns a :class:`GateResult` whose message is the whole
failure report (baseline, observed, tolerance, the bootstrap interval, the likely causes).

Settings are compared before any number: results measured under different settings fail their gate
with the differing fields named, never with a number. So does a baseline measured on a different
dataset manifest (other images or labels).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from harness.core import defaults
from harness.core.errors import HarnessError
from harness.core.settings import SettingsMismatch
from harness.verdict.agreement_floor import SCORE_DRIFT_LIMIT, derived_floor
from harness.verdict.diagnosis import Finding, diagnose
from harness.verdict.diagnosis_evidence import collect_evidence, matched_share
from harness.verdict.gate_id import BASELINE_KINDS, GateId
from harness.verdict.golden import ROUNDING, UPDATE_FLAG, Golden, dataset_name, gated_values
from harness.verdict.golden_weakness import ACCEPT_WEAK_FLAG, weaknesses
from harness.verdict.metrics.agreement import Agreement, agreement
from harness.verdict.metrics.coco import DifferenceInterval, PairedBootstrap
from harness.verdict.result import PathResult
from harness.verdict.score_scale import SCALE_LIMIT, band, scale_off, scale_said, scale_verdict
from harness.verdict.score_shift import common_shift
from harness.verdict.stages import first_degraded_stage, stage_results

SHIFT_MIN = 0.02  # the least mean drift the agreement gate calls a confidence shift (harness.verdict.score_shift)
MapMetric = Literal["map50", "map50_95"]
_MAP_LABEL = {"map50": "mAP@0.5", "map50_95": "mAP@0.5:0.95"}
_MAP_KIND = {"map50": "map", "map50_95": "map50_95"}  # gate names test_map[...] and test_map50_95[...]


@dataclass(frozen=True)
class GateResult:
    """``baseline``/``observed``/``tolerance`` are ``None`` where no number was compared (settings
    differ, no baseline); the agreement gate's ``baseline`` is its blessed matched share (None where
    none was blessed) and its ``tolerance`` the floor it held.
    ``interval`` is the paired bootstrap interval of this path minus the reference path, where one
    was measured; ``causes`` are the diagnosis of a failing gate; ``text`` what the gate measured
    and why it failed, without the causes (a run's failing gates share them: say them once), and
    ``diagnosed`` whether the causes belong to its failure report (not for a refusal or a NaN)."""

    id: GateId
    passed: bool
    baseline: float | None
    observed: float | None
    tolerance: float | None
    interval: DifferenceInterval | None
    causes: tuple[Finding, ...]
    text: str
    diagnosed: bool = False
    allowed: str = ""  # the tolerance in words: "drop <= 0.0200", "+-25% relative", "at least 80% matched"
    weak: str = ""  # why this gate cannot fail or measures too little: its baseline was blessed weak knowingly

    @property
    def name(self) -> str:
        return str(self.id)

    @property
    def message(self) -> str:
        """The whole failure report of this gate alone: its text, then its likely causes."""
        return "\n".join([self.text, *(causes_lines(self.causes) if self.diagnosed else ())])


def shared_causes(gates: Sequence[GateResult]) -> list[tuple[tuple[str, ...], tuple[Finding, ...]]]:
    """The failing gates grouped by the causes they share (a run's gates are diagnosed once, so
    its failures share one list): each group's gate names and their causes, in gate order."""
    groups: dict[tuple[str, tuple[Finding, ...]], list[str]] = {}
    for gate in gates:
        if not gate.passed and gate.diagnosed:
            groups.setdefault((gate.id.path or "", gate.causes), []).append(gate.name)
    return [(tuple(names), causes) for (_, causes), names in groups.items()]


def causes_lines(causes: Sequence[Finding]) -> list[str]:
    """The likely causes of a failure, most specific first, with their evidence and fix."""
    if not causes:
        return ["likely causes: none of the known failure modes matches the evidence"]
    lines = ["likely causes, most specific first:"]
    for i, finding in enumerate(causes, start=1):
        lines += [f"  {i}. {finding.cause}", f"     evidence: {finding.evidence}", f"     fix: {finding.fix}"]
    return lines


def gate_id(kind: str, result: PathResult) -> GateId:
    return GateId(kind, dataset_name(result), result.path)


def gate_map(
    result: PathResult,
    golden: Golden,
    metric: MapMetric = "map50",
    reference: PathResult | None = None,
    bootstrap: PairedBootstrap | None = None,
    causes: Sequence[Finding] = (),
) -> GateResult:
    """One-sided: passes when ``observed >= baseline - allowed drop``. ``bootstrap`` (of ``result``
    minus ``reference`` on the same images) is shown, not gated on."""
    name = gate_id(_MAP_KIND[metric], result)
    refused = _incomparable(name, result, golden)
    if refused:
        return refused
    label = _MAP_LABEL[metric]
    baseline, observed = getattr(golden.metrics, metric), getattr(result.metrics, metric)
    drop = getattr(golden.tolerances, f"{metric}_drop")
    interval = getattr(bootstrap, metric) if bootstrap else None
    passed = observed >= baseline - drop - ROUNDING  # a NaN on either side compares false: nothing held, a fail
    verdict = "holds" if passed else "fell"
    head = (
        f"{label} of {result.label} {verdict}: {observed:.4f} against baseline {baseline:.4f} "
        f"(change {observed - baseline:+.4f}, allowed drop {drop:.4f})"
    )
    lines = [head]
    if interval is not None:
        other = reference.label if reference else "the reference path"
        lines.append(
            f"{result.label} minus {other} on the same {result.metrics.n_images} images: {interval.point:+.4f}, "
            f"95 % paired bootstrap interval [{interval.low:+.4f}, {interval.high:+.4f}] "
            f"({bootstrap.resamples if bootstrap else 0} resamples)"
        )
    return _result(name, passed, baseline, observed, drop, interval, causes, lines, f"drop <= {drop:.4f}")


def gate_score_saturation(result: PathResult, golden: Golden, causes: Sequence[Finding] = ()) -> GateResult:
    """Two-sided, absolute: the share of scores >= 0.99 within ``saturation_abs`` of the baseline."""
    name = gate_id("score_saturation", result)
    refused = _incomparable(name, result, golden)
    if refused:
        return refused
    baseline, observed = golden.scores.saturation, result.scores.saturation
    allowed = golden.tolerances.saturation_abs
    passed = abs(observed - baseline) <= allowed + ROUNDING
    lines = [
        f"share of scores >= 0.99 of {result.label}: {observed:.4f} against baseline {baseline:.4f} "
        f"(change {observed - baseline:+.4f}, allowed +-{allowed:.4f}; {result.scores.n_boxes} boxes)"
    ]
    return _result(name, passed, baseline, observed, allowed, None, causes, lines, f"+-{allowed:.4f} absolute")


def gate_box_count(result: PathResult, golden: Golden, causes: Sequence[Finding] = ()) -> GateResult:
    """Two-sided, relative: mean boxes per image within ``box_count_rel`` of the baseline mean, however
    small (a baseline too small for that to measure is a weakness: ``few_boxes``)."""
    name = gate_id("box_count", result)
    refused = _incomparable(name, result, golden)
    if refused:
        return refused
    base, seen = golden.box_counts, result.box_counts
    rel = golden.tolerances.box_count_rel
    passed = abs(seen.mean - base.mean) <= rel * base.mean + ROUNDING
    change = f"{(seen.mean - base.mean) / base.mean:+.1%}" if base.mean > 0 else f"{seen.mean - base.mean:+.2f}"
    lines = [
        f"boxes per image of {result.label}: mean {_boxes(seen.mean)} against baseline {_boxes(base.mean)} "
        f"(change {change}, allowed +-{rel:.0%}); "
        f"p95 {seen.p95:.1f} vs {base.p95:.1f}, max {seen.max} vs {base.max}, total {seen.total} vs {base.total}"
    ]
    return _result(name, passed, base.mean, seen.mean, rel, None, causes, lines, f"+-{rel:.0%} relative")


def _boxes(mean: float) -> str:
    """Boxes per image in words: two decimals, two significant digits below 0.1 (0.0015, not 0.00)."""
    return f"{mean:.2f}" if mean == 0 or mean >= 0.1 else f"{mean:.2g}"


@dataclass(frozen=True)
class AgreementLimits:
    """What the agreement gate holds a path to: at least ``floor`` of the boxes matched, a mean
    absolute score drift of at most ``drift_limit``, a score scale within a factor
    :data:`~harness.verdict.score_scale.SCALE_LIMIT` of one of ``scales`` (1, the reference's own, and
    the blessed scale where one was blessed: :mod:`harness.verdict.score_scale`);
    ``blessed`` the matched share its baseline blessed (None: the defaults), ``source`` where the
    limits came from, in words; ``own_drift`` the blessed mean absolute drift, the path's own score noise
    (None: not blessed)."""

    floor: float
    drift_limit: float
    blessed: float | None
    source: str
    scales: tuple[float, ...] = (1.0,)
    own_drift: float | None = None


def agreement_limits(
    golden: Golden | None, reference: PathResult | None = None, candidate: PathResult | None = None
) -> AgreementLimits:
    """The blessed agreement less the baseline's tolerances; where none was blessed, the floor derived
    from ``reference`` and ``candidate`` on the same images (:func:`~harness.verdict.agreement_floor.derived_floor`:
    the boxes that disagree within the paths' own noise of the score or the NMS IoU threshold excused, at
    most its margin of the others) and the default drift limit :data:`SCORE_DRIFT_LIMIT`. The score scale
    is held to the reference's own (1), and where one was blessed to the blessed one too."""
    if golden is None or golden.agreement is None:
        why = "no baseline" if golden is None else "its baseline blessed no agreement"
        if reference is None or candidate is None:
            raise HarnessError("agreement limits: no agreement was blessed, and no two paths to derive a floor from")
        settings = candidate.settings
        derived = derived_floor(
            reference.predictions,
            candidate.predictions,
            settings.score_threshold,
            settings.iou_threshold,
            SCORE_DRIFT_LIMIT,
        )
        return AgreementLimits(
            derived.floor,
            SCORE_DRIFT_LIMIT,
            None,
            f"a floor {derived.source}; the default drift limit: {why}; {UPDATE_FLAG} blesses this run's agreement",
        )
    blessed, t = golden.agreement, golden.tolerances
    own = blessed.score_scale
    scale = f"a score scale within a factor {SCALE_LIMIT:g} of the reference's own (1)" + (
        ": its baseline blessed none" if own is None else f" or of the blessed {own:.3f}"
    )
    return AgreementLimits(
        blessed.matched_share - t.agreement_drop,
        blessed.score_drift + t.score_drift_rise,
        blessed.matched_share,
        f"blessed {blessed.matched_share:.1%} matched less agreement_drop {t.agreement_drop:g}, blessed drift "
        f"{blessed.score_drift:.4f} plus score_drift_rise {t.score_drift_rise:g}, {scale}",
        (1.0,) if own is None or own == 1.0 else (1.0, own),
        blessed.score_drift,
    )


def gate_path_agreement(
    reference: PathResult, candidate: PathResult, golden: Golden | None = None, causes: Sequence[Finding] = ()
) -> GateResult:
    """The candidate's boxes agree with the reference's on the same images: the matched share
    (IoU >= 0.5, same class, over all distinct boxes of both paths) is at least the floor, the
    matched boxes' scores drift at most the limit (:func:`agreement_limits`: the candidate's baseline
    ``golden``'s blessed agreement, else a floor derived from the two paths), and their scores keep
    the reference's scale (:func:`~harness.verdict.score_scale.scale_off`: the spread of the candidate's
    matched scores over the reference's within a factor 2 of 1, or of a blessed scale, beyond two
    standard errors: a sigmoid over probabilities, at most 0.25, fails at any threshold).
    Nothing matched holds nothing: the gate fails."""
    name = gate_id("path_agreement", candidate)
    try:
        reference.settings.require_same(candidate.settings, f"{reference.label} vs {candidate.label}")
    except SettingsMismatch as error:
        return _result(name, False, None, None, None, None, causes, [str(error)])
    if reference.image_ids != candidate.image_ids:
        only_ref = sorted(set(reference.image_ids) - set(candidate.image_ids))[:5]
        only_cand = sorted(set(candidate.image_ids) - set(reference.image_ids))[:5]
        text = (
            f"{reference.label} and {candidate.label} did not run on the same images in the same order "
            f"({len(reference.image_ids)} vs {len(candidate.image_ids)} images; only in {reference.label}: "
            f"{only_ref}, only in {candidate.label}: {only_cand})"
        )
        return _result(name, False, None, None, None, None, causes, [text])
    if golden is not None and golden.agreement is not None:
        refused = _incomparable(name, candidate, golden)  # a blessed agreement holds on its own images only
        if refused:
            return refused
    limits = agreement_limits(golden, reference, candidate)
    counts = agreement(reference.predictions, candidate.predictions)
    share = matched_share(counts)
    drifted = counts.mean_abs_score_drift > limits.drift_limit + ROUNDING
    off = scale_off(counts, limits.scales)
    passed = counts.matched > 0 and share >= limits.floor - ROUNDING and not drifted and not off
    floor = limits.floor
    lines = [
        f"{candidate.label} agrees with {reference.label} on {share:.1%} of the boxes (floor {floor:.1%}): "
        f"{counts.matched} matched at IoU >= 0.5 with the same class, {counts.missed} missed, {counts.extra} extra, "
        f"{counts.class_flipped} class-flipped, of {counts.n_reference} reference and {counts.n_candidate} "
        f"{candidate.label} boxes; score drift {counts.mean_score_drift:+.4f} mean, "
        f"{counts.mean_abs_score_drift:.4f} mean absolute (limit {limits.drift_limit:.4g}); "
        + scale_said(counts, limits.scales),
        f"held to {limits.source}",
        _agreement_verdict(counts, share, limits, candidate.settings.score_threshold),
    ]
    allowed = f"at least {floor:.1%} matched, drift <= {limits.drift_limit:.4g}, score scale {band(limits.scales)}"
    return _result(name, passed, limits.blessed, share, floor, None, causes, lines, allowed)


def _agreement_verdict(counts: Agreement, share: float, limits: AgreementLimits, threshold: float) -> str:
    """Nothing matched, different boxes, the same boxes scored compressed or stretched, with every
    score shifted by one amount (a confidence shift, with the threshold that matches the reference's
    operating point), or scored differently."""
    drift, spread, limit = counts.mean_score_drift, counts.mean_abs_score_drift, limits.drift_limit
    if not counts.n_reference + counts.n_candidate:
        return "neither path found a box on these images: nothing was held; a gate never passes so"
    if not counts.matched or share < limits.floor - ROUNDING:
        held = "" if counts.matched else "; with no box matched nothing was held, whatever the floor"
        return f"different boxes: {share:.1%} of them match, below the floor {limits.floor:.1%}" + held
    if scale_off(counts, limits.scales) and counts.score_scale is not None:
        return scale_verdict(counts.score_scale, threshold)
    if common_shift(drift, counts.score_drift_std, SHIFT_MIN, limits.own_drift):
        matched_threshold = min(max(threshold + drift, 0.0), 1.0)
        return (
            f"the same boxes, every score shifted by {drift:+.4f}: a confidence shift, not different boxes; "
            f"compare at the same operating point with --score-threshold {matched_threshold:.2f} on this path "
            f"({threshold:g} {'+' if drift >= 0 else '-'} {abs(drift):.2f})"
            + (f", more than the limit {limit:.4g} here" if spread > limit + ROUNDING else "")
        )
    if spread > limit + ROUNDING:
        return (
            f"the same boxes, but their scores moved by {spread:.4f} on average, more than {limit:.4g}, "
            "and not by one common shift: the two paths score the same objects differently"
        )
    return "the same boxes with the same scores"


def gate_stages(
    results: Sequence[PathResult],
    tolerance: float = defaults.STAGE_DROP,
    original_hw: Mapping[str, tuple[int, int]] | None = None,
) -> GateResult:
    """No stage on the way float -> fp_optimized -> quantized -> hardware loses more than ``tolerance``
    mAP@0.5 against the float model (``results[0]``, the ONNX); fails naming the first that does, with
    the diagnosis of that stage against the float model. All stages must have run under the same
    settings on the same images."""
    reference = results[0]
    name = GateId("stages", dataset_name(reference))
    staged = stage_results(results)
    for result in staged.values():
        if result is reference:
            continue
        try:
            reference.settings.require_same(result.settings, f"{reference.label} vs {result.label}")
        except SettingsMismatch as error:
            return _result(name, False, None, None, tolerance, None, (), [str(error)])
        if result.image_ids != reference.image_ids:
            text = f"{result.label} did not run on the same images as {reference.label}"
            return _result(name, False, None, None, tolerance, None, (), [text])
    maps = {stage: r.metrics.map50 for stage, r in staged.items()}
    rows = [
        f"  {stage:<13} {r.label:<28} mAP@0.5 {maps[stage]:.4f}  drop {maps['float'] - maps[stage]:+.4f}"
        for stage, r in staged.items()
    ]
    per_stage = f"drop <= {tolerance:.4f} per stage"
    unheld = _stages_unheld(maps, tolerance)
    if unheld:
        return _result(name, False, maps.get("float"), None, tolerance, None, (), [unheld, *rows], per_stage)
    found = first_degraded_stage(maps, tolerance)
    if found is None:
        head = f"no stage loses more than {tolerance:g} mAP@0.5 against the float model:"
        return _result(name, True, maps["float"], min(maps.values()), tolerance, None, (), [head, *rows], per_stage)
    head = f"the first stage past the tolerance is {found.stage}: {found.message}"
    causes = tuple(diagnose(collect_evidence(staged[found.stage], reference, original_hw)))
    return _result(name, False, found.float_map, found.map, tolerance, None, causes, [head, *rows], per_stage)


def _stages_unheld(maps: Mapping[str, float], tolerance: float) -> str:
    """Why the stages gate holds nothing (a gate never passes so), or "": no stage beside the float
    model, a mAP not measured (NaN), or a float mAP no larger than the tolerance (a stage finding
    nothing at all would lose no more than it)."""
    if "float" not in maps or len(maps) < 2:
        return f"no stage to hold against the float model: stages measured {sorted(maps)}; nothing was held"
    unmeasured = sorted(stage for stage, value in maps.items() if math.isnan(value))
    if unmeasured:
        return f"mAP@0.5 not measured (NaN) at stage {', '.join(unmeasured)}: nothing was held"
    if not maps["float"] > tolerance:
        return (
            f"the float model's mAP@0.5 {maps['float']:.4f} is no larger than the tolerance {tolerance:g}: a stage "
            "that finds nothing would lose no more than it, so the stages gate could not fail; nothing was held"
        )
    return ""


def missing_golden_gates(
    result: PathResult, message: str, kinds: Sequence[str] = BASELINE_KINDS
) -> tuple[GateResult, ...]:
    """The baseline gates (``kinds``) of a run without a baseline, each failing with ``message`` (see
    :func:`harness.verdict.golden.missing_golden_message`), so a missing baseline is never a silent pass. Each
    keeps what the run observed, the value a blessing would hold (a first run's report shows it, not n/a)."""
    seen = gated_values(result)
    return tuple(GateResult(gate_id(k, result), False, None, seen.get(k), None, None, (), message) for k in kinds)


def run_gates(
    result: PathResult,
    golden: Golden,
    reference: PathResult | None = None,
    bootstrap: PairedBootstrap | None = None,
    original_hw: Mapping[str, tuple[int, int]] | None = None,
    kinds: Sequence[str] = BASELINE_KINDS,
) -> tuple[GateResult, ...]:
    """The baseline gates ``kinds`` of ``result`` against ``golden`` (images without labels: the
    label-free ones), and its agreement with ``reference`` when given. The evidence is gathered and
    diagnosed once; failing gates carry the findings."""
    usable = (
        reference
        if reference is not None
        and not reference.settings.differences(result.settings)
        and reference.image_ids == result.image_ids
        else None
    )  # an incomparable reference fails the agreement gate; the diagnosis goes without it
    # a failing gate is judged by its point estimate, so is its cause (on a small set no interval shows a loss)
    evidence = collect_evidence(
        result, usable, original_hw, own=golden.agreement, baseline_class_map=golden.settings.class_map
    )
    causes = tuple(diagnose(evidence))
    makers: dict[str, Callable[[], GateResult]] = {
        "map": lambda: gate_map(result, golden, "map50", reference, bootstrap, causes),
        "map50_95": lambda: gate_map(result, golden, "map50_95", reference, bootstrap, causes),
        "score_saturation": lambda: gate_score_saturation(result, golden, causes),
        "box_count": lambda: gate_box_count(result, golden, causes),
    }
    gates = [_identified(makers[kind](), result, golden) for kind in kinds]
    if reference is not None:
        agreed = gate_path_agreement(reference, result, golden, causes)
        gates.append(agreed if golden.agreement is None else _identified(agreed, result, golden))
    return tuple(gates)


def _identified(gate: GateResult, result: PathResult, golden: Golden) -> GateResult:
    """``gate`` saying which export its baseline was blessed from where this run's is another (a new
    version of the same model, the normal case), and that it cannot fail where its baseline was
    blessed weak knowingly (:data:`~harness.verdict.golden_weakness.ACCEPT_WEAK_FLAG`)."""
    lines = [gate.text]
    old, new = golden.provenance, result.provenance
    if old.model_sha256 != new.model_sha256:
        lines.append(
            f"baseline blessed from model sha256 {old.model_sha256[:12]} on {old.created}; this run's model sha256 "
            f"{new.model_sha256[:12]}"
        )
    if golden.seal_note is not None:
        lines.append(golden.seal_note)
    # every weakness of the gate, blessed knowingly or not (a baseline made in code may hold one):
    # a pass held to it is never a clean pass
    found = [w for w in weaknesses(golden) if gate.id.kind in w.kinds]
    weak = "; ".join(w.text for w in found)
    if weak:
        blessed = all(w.code in golden.accepted_weak for w in found)
        how = f"blessed with {ACCEPT_WEAK_FLAG}{_vouched(golden)}" if blessed else "not blessed knowingly"
        lines.append(f"WEAK BASELINE, {how}: {weak}")
    return replace(gate, text="\n".join(lines), weak=weak)


def _vouched(golden: Golden) -> str:
    """Who vouches that ``golden``'s weaknesses were blessed knowingly: a signature, or its digest alone."""
    if golden.seal is None:
        return ""
    return " (signed with the release key)" if golden.seal.state.value == "signed" else f" ({golden.seal.detail})"


def _incomparable(name: GateId, result: PathResult, golden: Golden) -> GateResult | None:
    """A failed gate when ``result`` cannot be held against ``golden`` at all: another model's,
    path's or dataset's baseline, other settings, labels or images."""
    model = Path(result.provenance.model_path).stem
    if golden.model != model:
        text = (
            f"the baseline is of model {golden.model} (blessed from {golden.provenance.model_path}), this run is "
            f"of model {model}: another model's baseline is never held to this one"
        )
        return _result(name, False, None, None, None, None, (), [text])
    if (golden.path, golden.dataset) != (result.path, dataset_name(result)):
        text = (
            f"the baseline is of path {golden.path} on {golden.dataset}, this run is path {result.path} "
            f"on {dataset_name(result)}"
        )
        return _result(name, False, None, None, None, None, (), [text])
    try:
        golden.settings.require_same(result.settings, f"baseline vs {result.label}")
    except SettingsMismatch as error:
        return _result(name, False, None, None, None, None, (), [str(error)])
    if golden.labelled != result.labelled:
        said = {True: "with labels", False: "on images without labels"}
        text = f"the baseline was measured {said[golden.labelled]}, this run {said[result.labelled]}"
        return _result(name, False, None, None, None, None, (), [text])
    old, new = golden.provenance.dataset_manifest, result.provenance.dataset_manifest
    if old != new:
        text = (
            f"the baseline was measured on dataset manifest {old[:16]}, this run on {new[:16]}: the images "
            "or labels changed; review the run and update the baseline"
        )
        return _result(name, False, None, None, None, None, (), [text])
    return None


def _result(
    name: GateId,
    passed: bool,
    baseline: float | None,
    observed: float | None,
    tolerance: float | None,
    interval: DifferenceInterval | None,
    causes: Sequence[Finding],
    lines: list[str],
    allowed: str = "",
) -> GateResult:
    kept = tuple(causes) if not passed else ()
    nan = not passed and observed is not None and math.isnan(observed)
    if nan:
        lines = [
            *lines,
            "nothing was measured (NaN): no ground truth or no predictions to hold; a gate never passes so",
        ]
    diagnosed = not passed and not nan and (bool(kept) or observed is not None)
    text = "\n".join(lines)
    return GateResult(name, passed, baseline, observed, tolerance, interval, kept, text, diagnosed, allowed)
