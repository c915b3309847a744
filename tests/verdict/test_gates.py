import functools
import math

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from harness.core.detections import Detections
from harness.core.path_names import DFC_QUANTIZED
from harness.core.settings import EvalSettings
from harness.verdict.agreement_floor import margin
from harness.verdict.diagnosis import Finding, diagnose
from harness.verdict.diagnosis_evidence import collect_evidence
from harness.verdict.gate_id import GateId
from harness.verdict.gates import (
    SCORE_DRIFT_LIMIT,
    GateResult,
    causes_lines,
    gate_box_count,
    gate_map,
    gate_path_agreement,
    gate_score_saturation,
    gate_stages,
    missing_golden_gates,
    run_gates,
)
from harness.verdict.golden import ROUNDING, BlessedAgreement, Golden, Tolerances
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.golden_weakness import weaknesses
from harness.verdict.metrics.coco import paired_bootstrap
from harness.verdict.metrics.distribution import BoxCounts, CellsAboveThreshold
from harness.verdict.result import PathResult

from support import synthetic_results as sr


@pytest.fixture(scope="module")
def truths():
    return sr.truths()


@pytest.fixture(scope="module")
def onnx(truths):
    return sr.result(sr.predictions(truths), truths)


@pytest.fixture(scope="module")
def hailo(truths):
    return sr.result(sr.predictions(truths, seed=2), truths, path="hailo", emulated=True)


def _golden(result, **metrics):
    """A baseline of the hailo path with ``result``'s measurements."""
    golden = golden_from_result(result, Tolerances(map50_drop=0.02, map50_95_drop=0.02))
    return sr.replaced(golden, path="hailo", metrics=sr.replaced(golden.metrics, **metrics))


def test_map_gate_is_one_sided_a_rise_passes_a_drop_within_tolerance_passes_a_larger_drop_fails(hailo):
    observed = hailo.metrics.map50
    assert gate_map(hailo, _golden(hailo, map50=observed - 0.5)).passed  # far better than the baseline
    assert gate_map(hailo, _golden(hailo, map50=observed + 0.019)).passed
    failed = gate_map(hailo, _golden(hailo, map50=observed + 0.05))
    assert not failed.passed
    assert failed.name == "test_map[fire_smoke_val-hailo]"
    assert (failed.baseline, failed.observed, failed.tolerance) == (pytest.approx(observed + 0.05), observed, 0.02)
    assert f"baseline {observed + 0.05:.4f}" in failed.message and "allowed drop 0.0200" in failed.message
    assert "change -0.0500" in failed.message


def test_map50_95_gate_holds_its_own_metric(hailo):
    gate = gate_map(hailo, _golden(hailo, map50_95=hailo.metrics.map50_95 + 0.1), "map50_95")
    assert gate.name == "test_map50_95[fire_smoke_val-hailo]" and not gate.passed
    assert "mAP@0.5:0.95" in gate.message
    assert gate_map(hailo, _golden(hailo, map50_95=hailo.metrics.map50_95 + 0.1)).passed  # mAP@0.5 untouched


def test_the_bootstrap_interval_against_the_reference_appears_in_the_message(truths, onnx):
    worse = sr.predictions(truths, seed=2)
    worse[:5] = [p.select(slice(0, 0)) for p in worse[:5]]
    hailo = sr.result(worse, truths, path="hailo")
    boot = paired_bootstrap(truths, onnx.predictions, hailo.predictions, sr.NAMES, resamples=50)
    gate = gate_map(hailo, _golden(onnx), reference=onnx, bootstrap=boot)
    assert not gate.passed and gate.interval == boot.map50
    iv = boot.map50
    assert iv.low <= iv.point <= iv.high < 0
    expected = f"hailo minus onnx on the same 16 images: {iv.point:+.4f}, 95 % paired bootstrap interval"
    assert expected in gate.message
    assert f"[{iv.low:+.4f}, {iv.high:+.4f}] (50 resamples)" in gate.message


def test_different_settings_fail_every_gate_naming_the_field_and_no_number(truths, hailo):
    at_eval_threshold = sr.result(
        hailo.predictions, truths, path="hailo", settings=EvalSettings((640, 640), score_threshold=0.001)
    )
    golden = golden_from_result(hailo)
    for gate in (
        gate_map(at_eval_threshold, golden),
        gate_score_saturation(at_eval_threshold, golden),
        gate_box_count(at_eval_threshold, golden),
    ):
        assert not gate.passed
        assert "score_threshold: 0.2 vs 0.001" in gate.message
        assert (gate.baseline, gate.observed, gate.tolerance) == (None, None, None)
        assert "mAP" not in gate.message and "boxes per image" not in gate.message


def test_a_baseline_measured_on_another_dataset_manifest_fails(truths, hailo):
    other = sr.result(hailo.predictions, truths, path="hailo", manifest="b" * 64)
    gate = gate_map(other, golden_from_result(hailo))
    assert not gate.passed and gate.observed is None
    assert "dataset manifest aaaaaaaaaaaaaaaa, this run on bbbbbbbbbbbbbbbb" in gate.message


def test_a_baseline_of_another_path_is_not_held_against_this_one(onnx, hailo):
    gate = gate_box_count(hailo, golden_from_result(onnx))
    assert not gate.passed and gate.observed is None
    assert "the baseline is of path onnx on fire_smoke_val, this run is path hailo" in gate.message


def test_saturation_gate_is_two_sided_and_absolute(hailo):
    golden = golden_from_result(hailo)  # saturation 0.0
    assert gate_score_saturation(hailo, golden).passed
    for base in (0.3, -0.3):
        shifted = sr.replaced(golden, scores=sr.replaced(golden.scores, saturation=hailo.scores.saturation + base))
        gate = gate_score_saturation(hailo, shifted)
        assert not gate.passed and gate.name == "test_score_saturation[fire_smoke_val-hailo]"
        assert "allowed +-0.0500" in gate.message
    near = sr.replaced(golden, scores=sr.replaced(golden.scores, saturation=0.04))
    assert gate_score_saturation(hailo, near).passed


def test_box_count_gate_is_two_sided_and_relative(hailo):
    golden = golden_from_result(hailo)
    mean = hailo.box_counts.mean
    with_mean = lambda m: sr.replaced(golden, box_counts=sr.replaced(golden.box_counts, mean=m))  # noqa: E731
    assert gate_box_count(hailo, with_mean(mean * 1.2)).passed
    assert gate_box_count(hailo, with_mean(mean / 1.2)).passed
    for base in (mean * 2, mean / 2):
        gate = gate_box_count(hailo, with_mean(base))
        assert not gate.passed and "allowed +-25%" in gate.message
        assert f"mean {mean:.2f} against baseline {base:.2f}" in gate.message


def test_box_count_below_one_per_image_is_held_to_its_own_mean_and_a_run_without_a_box_fails(hailo):
    golden = golden_from_result(hailo, Tolerances(box_count_rel=0.25))
    sparse = sr.replaced(golden, box_counts=sr.replaced(golden.box_counts, mean=0.15))
    with_mean = lambda m, t=34: sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, mean=m, total=t))  # noqa: E731
    assert gate_box_count(with_mean(0.18), sparse).passed  # +20 %
    assert gate_box_count(with_mean(0.12), sparse).passed  # -20 %
    assert not gate_box_count(with_mean(0.3), sparse).passed  # +100 %: one box of one image allowed 0.25 no more
    empty = gate_box_count(with_mean(0.0, 0), sparse)
    assert not empty.passed and "mean 0.00 against baseline 0.15 (change -100.0%, allowed +-25%)" in empty.message
    tiny = sr.replaced(golden, box_counts=sr.replaced(golden.box_counts, mean=0.0015))
    assert "against baseline 0.0015" in gate_box_count(with_mean(0.0, 0), tiny).message


def test_path_agreement_passes_on_matching_paths_and_fails_below_the_floor(truths, onnx, hailo):
    twin = sr.result(sr.with_scores(onnx.predictions, lambda s: s - 0.02), truths, path="hailo")
    gate = gate_path_agreement(onnx, twin)
    assert gate.passed and gate.observed == 1.0 and gate.tolerance == pytest.approx(1 - margin(34))
    assert gate.name == "test_path_agreement[fire_smoke_val-hailo]"

    preds = list(hailo.predictions)
    preds[0] = sr.with_scores([preds[0]], lambda s: s - 0.1)[0]
    preds[1:9] = [p.select(slice(0, 0)) for p in preds[1:9]]  # missed
    flipped = [sr.Detections(p.boxes, p.scores, 1 - p.class_ids) for p in preds[9:12]]
    preds[9:12] = flipped
    bad = sr.result(preds, truths, path="hailo")
    gate = gate_path_agreement(onnx, bad)
    n_missed = sum(len(p) for p in hailo.predictions[1:9])
    n_flipped = sum(len(p) for p in flipped)
    assert not gate.passed
    assert f"{n_missed} missed, 0 extra, {n_flipped} class-flipped" in gate.message
    assert "score drift -" in gate.message


def test_path_agreement_fails_when_the_same_boxes_are_scored_differently(truths, onnx, hailo):
    squeezed = sr.result(sr.with_scores(onnx.predictions, lambda s: 1 / (1 + np.exp(-s))), truths, path="hailo")
    gate = gate_path_agreement(onnx, squeezed)
    assert not gate.passed and gate.observed == 1.0
    assert "the same boxes, but their scores compressed to [0.6" in gate.message
    assert "a sigmoid put over scores that are probabilities already compresses them so" in gate.message
    unrelated = gate_path_agreement(onnx, hailo)  # the same boxes, each scored at random
    assert not unrelated.passed and unrelated.observed == 1.0
    assert (
        f"more than {SCORE_DRIFT_LIMIT}, and not by one common shift: the two paths score the same objects"
        in unrelated.message
    )


def test_the_same_boxes_with_every_score_shifted_are_a_confidence_shift_with_the_matching_threshold(truths, onnx):
    lower = sr.result(sr.with_scores(onnx.predictions, lambda s: s - 0.05), truths, path="hailo")
    gate = gate_path_agreement(onnx, lower)
    assert gate.passed and gate.observed == 1.0  # 0.05 lower, as Ultralytics measured YOLO26 on a Hailo-8L
    assert "the same boxes, every score shifted by -0.0500: a confidence shift, not different boxes" in gate.message
    assert "--score-threshold 0.15 on this path (0.2 - 0.05)" in gate.message
    far = sr.result(sr.with_scores(onnx.predictions, lambda s: s - 0.2), truths, path="hailo")
    assert not gate_path_agreement(onnx, far).passed
    assert "more than the limit 0.1 here" in gate_path_agreement(onnx, far).message
    same = gate_path_agreement(onnx, onnx)
    assert same.passed and "the same boxes with the same scores" in same.message


def test_path_agreement_needs_same_settings_and_images(truths, onnx, hailo):
    other = sr.result(hailo.predictions, truths, path="hailo", settings=EvalSettings((640, 640), iou_threshold=0.45))
    gate = gate_path_agreement(onnx, other)
    assert not gate.passed and "iou_threshold: 0.7 vs 0.45" in gate.message and gate.observed is None
    shifted = sr.result(hailo.predictions, truths, path="hailo", image_ids=[f"x/{i}" for i in range(16)])
    gate = gate_path_agreement(onnx, shifted)
    assert not gate.passed and "did not run on the same images" in gate.message


def test_a_failing_gate_lists_the_likely_causes_and_a_passing_gate_none(truths, onnx):
    rng = np.random.default_rng(3)
    flood = []
    for p in sr.predictions(truths, seed=2):
        junk = rng.uniform(0, 600, (30, 2))
        boxes = np.concatenate([p.boxes, np.concatenate([junk, junk + 40], 1)])
        scores = np.concatenate([p.scores, rng.uniform(0.2, 0.6, 30)])
        flood.append(sr.Detections(boxes, scores, np.concatenate([p.class_ids, rng.integers(0, 2, 30)])))
    cells = CellsAboveThreshold(0.2, 8400, 1640, 1700)
    bad = sr.result(flood, truths, path="hailo", cells=cells)
    gates = {g.name.split("[")[0]: g for g in run_gates(bad, _golden(onnx), reference=onnx)}
    box = gates["test_box_count"]
    assert not box.passed
    assert [c.name for c in box.causes][:2] == ["box_flood", "cells_flood"]
    assert (
        "likely causes, most specific first:\n  1. " in box.message
        and "fix: decode by the output's spec" in box.message
    )
    assert not gates["test_path_agreement"].passed
    assert gates["test_score_saturation"].passed and gates["test_score_saturation"].causes == ()
    assert "likely causes" not in gates["test_score_saturation"].message


def test_a_missing_baseline_fails_each_baseline_gate_with_the_create_command(hailo):
    gates = missing_golden_gates(hailo, "no baseline at g.json; ... with: pytest --update-golden")
    assert [g.name for g in gates] == [
        "test_map[fire_smoke_val-hailo]",
        "test_map50_95[fire_smoke_val-hailo]",
        "test_score_saturation[fire_smoke_val-hailo]",
        "test_box_count[fire_smoke_val-hailo]",
    ]
    assert all(not g.passed and g.message.endswith("--update-golden") for g in gates)
    # what the run observed is kept, as a first run's report shows it before anyone blesses it
    assert [g.observed for g in gates] == [
        hailo.metrics.map50,
        hailo.metrics.map50_95,
        hailo.scores.saturation,
        hailo.box_counts.mean,
    ]
    assert all(g.baseline is None for g in gates)


def _staged(truths, quantized_preds):
    """ONNX, a faithful fp_optimized stage and a quantized stage with ``quantized_preds``."""
    from harness.core.path_names import DFC_FP_OPTIMIZED, DFC_QUANTIZED

    onnx = sr.result(sr.predictions(truths), truths)
    fp = sr.result(sr.predictions(truths, seed=5), truths, path=DFC_FP_OPTIMIZED, emulated=True)
    return [onnx, fp, sr.result(quantized_preds, truths, path=DFC_QUANTIZED, emulated=True)]


def test_stage_gate_passes_when_no_stage_drops_past_the_tolerance(truths):
    results = _staged(truths, sr.predictions(truths, seed=6))
    gate = gate_stages(results, tolerance=0.02)
    assert gate.passed and gate.name == "test_stages[fire_smoke_val]"
    assert gate.baseline == results[0].metrics.map50
    assert gate.observed == min(r.metrics.map50 for r in results)
    assert "no stage loses more than 0.02" in gate.message


def test_stage_gate_names_the_first_degraded_stage_with_its_diagnosis(truths):
    capped = sr.with_scores(sr.predictions(truths, seed=6), lambda s: np.minimum(s, 0.3554))
    kept = [Detections(p.boxes[:1], p.scores[:1], p.class_ids[:1]) for p in capped]  # recall falls
    results = _staged(truths, kept)
    gate = gate_stages(results, tolerance=0.02)
    assert not gate.passed
    assert gate.observed == results[2].metrics.map50 < results[0].metrics.map50 - 0.02
    assert "the first stage past the tolerance is quantized" in gate.message
    assert "lost in quantization" in gate.message
    assert [line.split()[0] for line in gate.text.splitlines()[1:4]] == ["float", "fp_optimized", "quantized"]
    assert gate.causes and gate.causes[0].name == "score_cap"


def test_stage_gate_refuses_stages_measured_under_other_settings(truths):
    results = _staged(truths, sr.predictions(truths, seed=6))
    other = EvalSettings(results[0].settings.input_hw, score_threshold=0.001)
    results[1] = sr.replaced(results[1], settings=other)
    gate = gate_stages(results)
    assert not gate.passed and gate.observed is None
    assert "score_threshold: 0.2 vs 0.001" in gate.message


def test_a_nan_on_either_side_fails_every_number_gate_and_never_passes(hailo):
    golden = _golden(hailo)
    nan_map = sr.replaced(hailo, metrics=sr.replaced(hailo.metrics, map50=float("nan"), map50_95=float("nan")))
    nan_scores = sr.replaced(hailo, scores=sr.replaced(hailo.scores, saturation=float("nan")))
    nan_boxes = sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, mean=float("nan")))
    gates = [
        gate_map(nan_map, golden),
        gate_map(nan_map, golden, "map50_95"),
        gate_score_saturation(nan_scores, golden),
        gate_box_count(nan_boxes, golden),
        gate_map(hailo, _golden(hailo, map50=float("nan"))),  # a baseline made in code, not read from a file
    ]
    assert [g.passed for g in gates] == [False] * 5
    assert all("nothing was measured (NaN)" in g.message for g in gates[:4])


def test_another_models_baseline_fails_every_baseline_gate_naming_both_models(hailo):
    other = sr.replaced(golden_from_result(hailo), model="yolo11n_coco")
    gates = run_gates(hailo, other)
    assert gates and not any(g.passed for g in gates)
    assert all("the baseline is of model yolo11n_coco" in g.text and g.baseline is None for g in gates)


def test_a_baseline_of_an_earlier_export_says_which_export_it_was_blessed_from(hailo):
    golden = golden_from_result(hailo)
    newer = sr.replaced(hailo, provenance=sr.replaced(hailo.provenance, model_sha256="ab" * 32))
    (gate,) = run_gates(newer, golden, kinds=("map",))
    assert gate.passed
    assert f"baseline blessed from model sha256 {golden.provenance.model_sha256[:12]} on" in gate.text
    assert "this run's model sha256 abababababab" in gate.text


def test_a_gate_held_to_a_baseline_blessed_weak_says_it_cannot_fail(hailo):
    zero = sr.replaced(hailo, metrics=sr.replaced(hailo.metrics, map50=0.0))
    weak = golden_from_result(zero, accept_weak=True)
    by_kind = {g.id.kind: g for g in run_gates(zero, weak)}
    assert by_kind["map"].passed and "WEAK BASELINE, blessed with --accept-weak-baseline" in by_kind["map"].text
    assert by_kind["map"].weak.startswith("map50_drop 0.02 >= baseline map50 0")
    assert by_kind["box_count"].weak == ""


def _worse(truths, hailo, dropped: slice):
    """``hailo`` with the detections of the images ``dropped`` missed."""
    preds = list(hailo.predictions)
    preds[dropped] = [p.select(slice(0, 0)) for p in preds[dropped]]
    return sr.result(preds, truths, path="hailo")


def test_a_blessed_agreement_holds_the_path_to_its_own_share_so_a_blessed_run_passes_again(
    truths, onnx, hailo, tmp_path
):
    low = _worse(truths, hailo, slice(0, 5))
    default = gate_path_agreement(onnx, low)
    assert not default.passed and default.observed < 0.8  # below the floor that held before blessing
    exact = Tolerances(0, 0, 0, 0, 0, 0)  # nothing allowed: only the baseline's rounding
    file = tmp_path / "hailo.json"
    write_golden(file, golden_from_result(low, exact, reference=onnx))
    blessed = load_golden(file)
    assert blessed.agreement is not None and blessed.agreement.matched_share == pytest.approx(
        default.observed, abs=1e-6
    )
    gates = run_gates(low, blessed, reference=onnx)
    assert [g.name for g in gates if not g.passed] == []  # bless, then the same run: every gate passes
    gate = gates[-1]
    assert gate.name == "test_path_agreement[fire_smoke_val-hailo]" and gate.causes == ()
    assert gate.baseline == blessed.agreement.matched_share and "held to blessed" in gate.text
    lower = gate_path_agreement(onnx, _worse(truths, hailo, slice(0, 6)), blessed)
    assert not lower.passed and lower.observed < lower.tolerance
    assert f"below the floor {blessed.agreement.matched_share:.1%}" in lower.text


def test_a_blessed_score_drift_holds_the_path_to_its_own_drift_plus_its_tolerance(truths, onnx, tmp_path):
    squeezed = sr.result(sr.with_scores(onnx.predictions, lambda s: 1 / (1 + np.exp(-s))), truths, path="hailo")
    assert not gate_path_agreement(onnx, squeezed).passed  # beyond the default limit
    file = tmp_path / "hailo.json"
    write_golden(file, golden_from_result(squeezed, Tolerances(score_drift_rise=0.01), reference=onnx))
    blessed = load_golden(file)
    assert gate_path_agreement(onnx, squeezed, blessed).passed
    further = sr.result(sr.with_scores(squeezed.predictions, lambda s: s - 0.05), truths, path="hailo")
    gate = gate_path_agreement(onnx, further, blessed)
    assert not gate.passed and f"limit {blessed.agreement.score_drift + 0.01:.4g}" in gate.text


def test_a_blessed_agreement_is_held_on_its_own_images_only(truths, onnx, hailo, tmp_path):
    golden = golden_from_result(hailo, reference=onnx)
    other = sr.replaced(golden, provenance=sr.replaced(golden.provenance, dataset_manifest="f" * 64))
    gate = gate_path_agreement(onnx, hailo, other)
    assert not gate.passed and "dataset manifest ffffffffffffffff" in gate.text


def test_a_baseline_without_a_blessed_agreement_holds_a_derived_floor_and_says_so(truths, onnx, hailo):
    gate = gate_path_agreement(onnx, _worse(truths, hailo, slice(0, 5)), golden_from_result(hailo))
    assert not gate.passed and gate.tolerance is not None and gate.tolerance > gate.observed
    assert gate.baseline is None
    assert "held to a floor derived from this model and HEF on these images:" in gate.text
    assert "the default drift limit: its baseline blessed no agreement" in gate.text
    assert "--update-golden blesses this run's agreement" in gate.text


def test_a_pass_held_to_a_weak_baseline_never_blessed_knowingly_is_not_a_clean_pass(hailo):
    zero = sr.replaced(hailo, metrics=sr.replaced(hailo.metrics, map50=0.0))
    unblessed = golden_from_result(zero)  # made in code: its weakness accepted by nobody
    by_kind = {g.id.kind: g for g in run_gates(zero, unblessed)}
    assert by_kind["map"].passed and by_kind["map"].weak.startswith("map50_drop 0.02 >= baseline map50 0")
    assert "WEAK BASELINE, not blessed knowingly" in by_kind["map"].text
    assert "--accept-weak-baseline" not in by_kind["map"].text


# --- every gate can fail: for any baseline the weakness check accepts, some result fails the gate, and
# the result the baseline was blessed from passes it. The failing result is built from the baseline.


@functools.cache
def _pair() -> tuple[PathResult, PathResult]:
    """The reference (onnx) and a hailo path's result on the same synthetic images."""
    ground_truth = sr.truths()
    return sr.result(sr.predictions(ground_truth), ground_truth), sr.result(
        sr.predictions(ground_truth, seed=2), ground_truth, path="hailo", emulated=True
    )


@functools.cache
def _blind() -> PathResult:
    """The hailo path finding nothing on the same images."""
    ground_truth = sr.truths()
    return sr.result([Detections.empty() for _ in ground_truth], ground_truth, path="hailo", emulated=True)


_shares = st.floats(0, 1, allow_nan=False)
_tolerances = st.builds(Tolerances, _shares, _shares, _shares, _shares, _shares, _shares)


def _accepted(golden: Golden, kind: str) -> bool:
    """Whether the weakness check lets ``golden`` hold gate ``kind`` (no weakness of that gate)."""
    return not any(kind in w.kinds for w in weaknesses(golden))


def _baseline(tolerances: Tolerances, **metrics: float) -> Golden:
    _, hailo = _pair()
    golden = golden_from_result(hailo, tolerances)
    return sr.replaced(golden, metrics=sr.replaced(golden.metrics, **metrics))


@pytest.mark.parametrize("metric", ["map50", "map50_95"])
@given(base=_shares, tolerances=_tolerances)
@example(base=0.02, tolerances=Tolerances(0.0199999, 0.0199999))  # within the rounding: a mAP of 0 passes
def test_for_any_map_baseline_the_weakness_check_accepts_a_run_that_finds_nothing_fails_and_its_own_run_passes(
    metric, base, tolerances
):
    golden = _baseline(tolerances, **{metric: round(base, 6)})  # as a baseline keeps it
    assume(_accepted(golden, "map" if metric == "map50" else metric))
    _, hailo = _pair()
    worst = sr.replaced(hailo, metrics=sr.replaced(hailo.metrics, **{metric: 0.0}))
    assert not gate_map(worst, golden, metric).passed
    same = sr.replaced(hailo, metrics=sr.replaced(hailo.metrics, **{metric: base}))
    assert gate_map(same, golden, metric).passed


@given(saturation=_shares, tolerances=_tolerances)
@example(saturation=0.5, tolerances=Tolerances(saturation_abs=0.4999996))  # both extremes within the rounding
def test_for_any_saturation_baseline_the_weakness_check_accepts_the_farther_extreme_fails_and_its_own_share_passes(
    saturation, tolerances
):
    _, hailo = _pair()
    golden = golden_from_result(hailo, tolerances)
    golden = sr.replaced(golden, scores=sr.replaced(golden.scores, saturation=round(saturation, 6)))
    assume(_accepted(golden, "score_saturation"))
    farther = 0.0 if saturation > 0.5 else 1.0
    extreme = sr.replaced(hailo, scores=sr.replaced(hailo.scores, saturation=farther))
    assert not gate_score_saturation(extreme, golden).passed
    same = sr.replaced(hailo, scores=sr.replaced(hailo.scores, saturation=saturation))
    assert gate_score_saturation(same, golden).passed


@given(
    total=st.integers(0, 10**6),
    images=st.integers(1, 10**6),
    mean=st.none() | st.floats(0, 1e3, allow_nan=False),
    tolerances=_tolerances,
)
@example(total=2, images=10**6, mean=None, tolerances=Tolerances(box_count_rel=0.9))  # no box: within the rounding
@example(total=15, images=100, mean=None, tolerances=Tolerances())  # 0.15 boxes per image against one box
def test_for_any_box_count_baseline_the_weakness_check_accepts_a_run_without_a_box_fails_and_its_own_count_passes(
    total, images, mean, tolerances
):
    _, hailo = _pair()
    measured = total / images if mean is None else mean  # None: the count's own mean; else any, as a hand edit
    golden = golden_from_result(hailo, tolerances)
    golden = sr.replaced(golden, box_counts=BoxCounts(round(measured, 6), 0.0, 0, total))
    assume(_accepted(golden, "box_count"))
    empty = sr.replaced(hailo, box_counts=BoxCounts(0.0, 0.0, 0, 0))
    assert not gate_box_count(empty, golden).passed
    same = sr.replaced(hailo, box_counts=BoxCounts(measured, 0.0, 0, total))
    assert gate_box_count(same, golden).passed


@given(
    blessed=st.none() | st.builds(BlessedAgreement, _shares, _shares),
    tolerances=_tolerances,
)
@example(blessed=BlessedAgreement(0.5, 0.0), tolerances=Tolerances(agreement_drop=0.4999996))
def test_for_any_agreement_baseline_the_weakness_check_accepts_a_path_that_finds_nothing_fails(blessed, tolerances):
    onnx, hailo = _pair()
    golden = sr.replaced(golden_from_result(hailo, tolerances), agreement=blessed)
    assume(_accepted(golden, "path_agreement"))
    assert not gate_path_agreement(onnx, _blind(), golden).passed


@given(tolerances=_tolerances)
def test_for_any_accepted_agreement_tolerances_the_path_the_agreement_was_blessed_from_passes(tolerances):
    onnx, hailo = _pair()
    golden = golden_from_result(hailo, tolerances, reference=onnx)
    assume(_accepted(golden, "path_agreement"))
    assert gate_path_agreement(onnx, hailo, golden).passed


@given(float_map=_shares, tolerance=_shares)
def test_for_any_float_model_and_stage_tolerance_a_stage_that_finds_nothing_fails_the_stages_gate(float_map, tolerance):
    onnx, _ = _pair()
    reference = sr.replaced(onnx, metrics=sr.replaced(onnx.metrics, map50=float_map))
    nothing = sr.replaced(onnx, path=DFC_QUANTIZED, metrics=sr.replaced(onnx.metrics, map50=0.0))
    gate = gate_stages([reference, nothing], tolerance)
    assert not gate.passed
    same = sr.replaced(nothing, metrics=reference.metrics)
    assert gate_stages([reference, same], tolerance).passed == (float_map > tolerance)


def test_the_stages_gate_never_passes_when_no_stage_was_measured_or_a_map_is_nan(onnx):
    alone = gate_stages([onnx])
    assert not alone.passed and "no stage to hold against the float model" in alone.message
    nan = sr.replaced(onnx, path=DFC_QUANTIZED, metrics=sr.replaced(onnx.metrics, map50=math.nan))
    gate = gate_stages([onnx, nan])
    assert not gate.passed and "not measured (NaN) at stage quantized" in gate.message
    weak = sr.replaced(onnx, metrics=sr.replaced(onnx.metrics, map50=0.01))
    gate = gate_stages([weak, sr.replaced(weak, path=DFC_QUANTIZED)], tolerance=0.02)
    assert not gate.passed and "the float model's mAP@0.5 0.0100 is no larger than the tolerance 0.02" in gate.message


# --- what each gate reports, to the letter, and where its comparison turns (the mutation survivors' tests)


def test_the_map_gate_passes_exactly_at_its_allowed_drop_and_reports_every_field(hailo, onnx, truths):
    golden = _golden(hailo, map50=0.9)
    at_edge = sr.replaced(hailo, metrics=sr.replaced(hailo.metrics, map50=0.9 - 0.02 - ROUNDING))
    gate = gate_map(at_edge, golden)
    assert gate == GateResult(
        GateId("map", "fire_smoke_val", "hailo"),
        True,
        0.9,
        0.9 - 0.02 - ROUNDING,
        0.02,
        None,
        (),
        "mAP@0.5 of hailo (emulated) holds: 0.8800 against baseline 0.9000 (change -0.0200, allowed drop 0.0200)",
        False,
        "drop <= 0.0200",
    )
    boot = paired_bootstrap(truths, onnx.predictions, hailo.predictions, sr.NAMES, resamples=20)
    iv = boot.map50
    fell = gate_map(hailo, _golden(hailo, map50=1.0 + 0.5), reference=None, bootstrap=boot)
    assert fell.text.splitlines() == [
        "mAP@0.5 of hailo (emulated) fell: 1.0000 against baseline 1.5000 (change -0.5000, allowed drop 0.0200)",
        f"hailo (emulated) minus the reference path on the same 16 images: {iv.point:+.4f}, 95 % paired bootstrap "
        f"interval [{iv.low:+.4f}, {iv.high:+.4f}] (20 resamples)",
    ]
    assert (fell.passed, fell.diagnosed, fell.interval, fell.allowed) == (False, True, iv, "drop <= 0.0200")


def test_the_saturation_gate_passes_exactly_at_its_tolerance_and_reports_every_field(hailo):
    golden = golden_from_result(hailo, Tolerances(saturation_abs=0.0))  # baseline saturation 0.0
    edge = sr.replaced(hailo, scores=sr.replaced(hailo.scores, saturation=ROUNDING))
    assert gate_score_saturation(edge, golden).passed
    above = sr.replaced(hailo, scores=sr.replaced(hailo.scores, saturation=0.3))
    assert gate_score_saturation(above, golden_from_result(hailo)) == GateResult(
        GateId("score_saturation", "fire_smoke_val", "hailo"),
        False,
        0.0,
        0.3,
        0.05,
        None,
        (),
        "share of scores >= 0.99 of hailo (emulated): 0.3000 against baseline 0.0000 (change +0.3000, allowed "
        "+-0.0500; 34 boxes)",
        True,
        "+-0.05 absolute".replace("0.05", "0.0500"),
    )


def test_the_box_count_gate_passes_exactly_at_its_tolerance_and_reports_every_field(hailo):
    golden = golden_from_result(hailo, Tolerances(box_count_rel=0.0))
    golden = sr.replaced(golden, box_counts=sr.replaced(golden.box_counts, mean=0.0))
    edge = sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, mean=ROUNDING))
    assert gate_box_count(edge, golden).passed
    fewer = sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, mean=1.5))
    assert gate_box_count(fewer, golden_from_result(hailo)) == GateResult(
        GateId("box_count", "fire_smoke_val", "hailo"),
        False,
        2.125,
        1.5,
        0.25,
        None,
        (),
        "boxes per image of hailo (emulated): mean 1.50 against baseline 2.12 (change -29.4%, allowed +-25%); "
        "p95 3.0 vs 3.0, max 3 vs 3, total 34 vs 34",
        True,
        "+-25% relative",
    )
    empty = golden_from_result(sr.replaced(hailo, box_counts=BoxCounts(0.0, 0.0, 0, 0)), accept_weak=True)
    assert "(change +2.12, allowed +-25%)" in gate_box_count(hailo, empty).text  # no mean to be relative to


def test_the_agreement_gate_reports_its_counts_limits_and_verdict_to_the_letter(truths, onnx, hailo):
    gate = gate_path_agreement(onnx, hailo)
    assert gate.text.splitlines() == [
        "hailo (emulated) agrees with onnx on 100.0% of the boxes (floor 88.9%): 34 matched at IoU >= 0.5 with the "
        "same class, 0 missed, 0 extra, 0 class-flipped, of 34 reference and 34 hailo (emulated) boxes; score drift "
        "-0.0119 mean, 0.1668 mean absolute (limit 0.1); score scale 1.023 (the spread of its 34 matched scores "
        "over the reference's, uncertain by a factor 1.42; 1 is the reference's own; allowed [0.5, 2])",
        "held to a floor derived from this model and HEF on these images: 0 of the 0 missed or extra boxes lie "
        "within the paths' own noise of a threshold (a score under 0.2 + 0.100, or a same-class neighbour at IoU "
        "0.7 +- 0.063; 90% of the 34 matched pairs' absolute score changes (at most the drift limit) and 1 - IoU "
        "(at most half of 1 - 0.7)) "
        "and cannot be expected to match, nor 0.0 of the other 0 (the 10% of the noise the windows leave out): "
        "floor 1 - 0.0/34 - margin 0.111 (0.05 and its counting noise on 34 boxes); the default drift limit: "
        "no baseline; "
        "--update-golden blesses this run's agreement",
        "the same boxes, but their scores moved by 0.1668 on average, more than 0.1, and not by one common shift: "
        "the two paths score the same objects differently",
    ]
    floor = pytest.approx(1 - margin(34))
    assert (gate.passed, gate.baseline, gate.observed, gate.tolerance) == (False, None, 1.0, floor)
    assert gate.allowed == "at least 88.9% matched, drift <= 0.1, score scale [0.5, 2]"
    blessed = golden_from_result(hailo, reference=onnx)
    held = gate_path_agreement(onnx, hailo, blessed)
    assert held.passed and held.text.splitlines()[1:] == [
        "held to blessed 100.0% matched less agreement_drop 0.05, blessed drift 0.1668 plus score_drift_rise 0.05, "
        "a score scale within a factor 2 of the reference's own (1) or of the blessed 1.023",
        "the same boxes with the same scores",
    ]
    schema1 = sr.replaced(blessed, agreement=None)
    assert "the default drift limit: its baseline blessed no agreement" in (
        gate_path_agreement(onnx, hailo, schema1).text
    )
    at_floor = sr.replaced(blessed, agreement=BlessedAgreement(1.0 + 0.05, 0.0))  # floor 1.0: matched 100 % holds
    assert gate_path_agreement(onnx, sr.result(onnx.predictions, truths, path="hailo"), at_floor).passed


def test_a_confidence_shift_names_the_threshold_that_matches_the_reference_either_way(truths, onnx):
    up = sr.result(sr.with_scores(onnx.predictions, lambda s: s + 0.05), truths, path="hailo")
    assert gate_path_agreement(onnx, up).text.splitlines()[-1] == (
        "the same boxes, every score shifted by +0.0500: a confidence shift, not different boxes; compare at the "
        "same operating point with --score-threshold 0.25 on this path (0.2 + 0.05)"
    )
    down = sr.result(sr.with_scores(onnx.predictions, lambda s: s - 0.3), truths, path="hailo")
    assert gate_path_agreement(onnx, down).text.splitlines()[-1] == (
        "the same boxes, every score shifted by -0.3000: a confidence shift, not different boxes; compare at the "
        "same operating point with --score-threshold 0.00 on this path (0.2 - 0.30), more than the limit 0.1 here"
    )
    high = sr.replaced(onnx, settings=EvalSettings((640, 640), score_threshold=0.98))
    far_up = sr.result(
        sr.with_scores(onnx.predictions, lambda s: s + 0.05), truths, path="hailo", settings=high.settings
    )
    assert "--score-threshold 1.00 on this path (0.98 + 0.05)" in gate_path_agreement(high, far_up).text


def test_paths_on_other_images_name_the_first_five_of_each_and_fail_with_no_number(truths, onnx, hailo):
    shifted = sr.result(hailo.predictions, truths, path="hailo", image_ids=[f"x/{i:02d}" for i in range(16)])
    gate = gate_path_agreement(onnx, shifted)
    assert gate == GateResult(
        GateId("path_agreement", "fire_smoke_val", "hailo"),
        False,
        None,
        None,
        None,
        None,
        (),
        f"onnx and hailo did not run on the same images in the same order (16 vs 16 images; only in onnx: "
        f"{sorted(onnx.image_ids)[:5]}, only in hailo: {[f'x/{i:02d}' for i in range(5)]})",
        False,
        "",
    )
    other = sr.result(hailo.predictions, truths, path="hailo", settings=EvalSettings((640, 640), iou_threshold=0.45))
    refused = gate_path_agreement(onnx, other)
    assert refused.id == GateId("path_agreement", "fire_smoke_val", "hailo") and refused.passed is False
    assert refused.text.startswith("onnx vs hailo: ")


def test_the_stages_gate_reports_every_field_passing_failing_and_refusing(truths):
    results = _staged(truths, sr.predictions(truths, seed=6))
    gate = gate_stages(results, tolerance=0.02)
    maps = [r.metrics.map50 for r in results]
    rows = [
        f"  {stage:<13} {r.label:<28} mAP@0.5 {m:.4f}  drop {maps[0] - m:+.4f}"
        for stage, r, m in zip(("float", "fp_optimized", "quantized"), results, maps, strict=True)
    ]
    assert gate == GateResult(
        GateId("stages", "fire_smoke_val"),
        True,
        maps[0],
        min(maps),
        0.02,
        None,
        (),
        "\n".join(["no stage loses more than 0.02 mAP@0.5 against the float model:", *rows]),
        False,
        "drop <= 0.0200 per stage",
    )
    other = sr.replaced(results[1], settings=EvalSettings(results[0].settings.input_hw, score_threshold=0.001))
    refused = gate_stages([results[0], other])
    assert (refused.passed, refused.baseline, refused.observed, refused.tolerance, refused.causes) == (
        False,
        None,
        None,
        0.02,
        (),
    )
    assert refused.text.startswith("onnx vs dfc-fp-optimized (emulated): results measured under different settings")
    moved = sr.replaced(results[1], image_ids=tuple(f"x/{i}" for i in range(16)))
    assert gate_stages([results[0], moved], tolerance=0.05) == GateResult(
        GateId("stages", "fire_smoke_val"),
        False,
        None,
        None,
        0.05,
        None,
        (),
        "dfc-fp-optimized (emulated) did not run on the same images as onnx",
        False,
        "",
    )


def test_the_first_degraded_stage_is_diagnosed_against_the_float_model_with_the_original_sizes(truths):
    capped = sr.with_scores(sr.predictions(truths, seed=6), lambda s: np.minimum(s, 0.3554))
    results = _staged(truths, [Detections(p.boxes[:1], p.scores[:1], p.class_ids[:1]) for p in capped])
    sizes = {i: (480, 640) for i in results[0].image_ids}
    gate = gate_stages(results, tolerance=0.02, original_hw=sizes)
    expected = tuple(diagnose(collect_evidence(results[2], results[0], sizes)))
    assert gate.causes == expected and gate.diagnosed
    assert (gate.baseline, gate.observed, gate.tolerance) == (results[0].metrics.map50, results[2].metrics.map50, 0.02)
    assert gate.allowed == "drop <= 0.0200 per stage"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"model": "other"},
            "the baseline is of model other (blessed from models/fire_smoke_yolo11n.hef), this run is of model "
            "fire_smoke_yolo11n: another model's baseline is never held to this one",
        ),
        ({"dataset": "other"}, "the baseline is of path hailo on other, this run is path hailo on fire_smoke_val"),
        ({"path": "onnx"}, "the baseline is of path onnx on fire_smoke_val, this run is path hailo on fire_smoke_val"),
        ({"labelled": False}, "the baseline was measured on images without labels, this run with labels"),
        (
            {"settings": EvalSettings((640, 640), score_threshold=0.3)},
            "baseline vs hailo (emulated): results measured under different settings (score_threshold: 0.3 vs 0.2)",
        ),
    ],
)
def test_a_baseline_that_cannot_be_held_to_this_run_fails_every_gate_saying_why_and_no_number(hailo, change, expected):
    golden = sr.replaced(golden_from_result(hailo), **change)
    for kind, gate in (
        ("map", gate_map(hailo, golden)),
        ("score_saturation", gate_score_saturation(hailo, golden)),
        ("box_count", gate_box_count(hailo, golden)),
    ):
        assert gate == GateResult(GateId(kind, "fire_smoke_val", "hailo"), False, None, None, None, None, (), expected)


def test_a_baseline_of_other_images_fails_naming_both_manifests(truths, hailo):
    other = sr.result(hailo.predictions, truths, path="hailo", emulated=True, manifest="b" * 64)
    assert gate_score_saturation(other, golden_from_result(hailo)) == GateResult(
        GateId("score_saturation", "fire_smoke_val", "hailo"),
        False,
        None,
        None,
        None,
        None,
        (),
        "the baseline was measured on dataset manifest aaaaaaaaaaaaaaaa, this run on bbbbbbbbbbbbbbbb: the images "
        "or labels changed; review the run and update the baseline",
    )


def test_a_gate_held_to_an_earlier_export_and_a_weak_baseline_says_both_in_its_report(truths, hailo):
    other = sr.result(hailo.predictions, truths, path="hailo", emulated=True, model_sha256="f" * 64)
    weak = golden_from_result(sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, total=3)), accept_weak=True)
    box = run_gates(other, weak)[3]
    reason = (
        "3 boxes in the baseline run: box_count_rel 0.25 of them is less than one box, so the box count gate cannot "
        "tell a regression from one box more or less; too few boxes to measure a change"
    )
    assert box.text.splitlines()[1:] == [
        "baseline blessed from model sha256 0123456789ab on 2025-03-04T05:06:07Z; this run's model sha256 ffffffffffff",
        f"WEAK BASELINE, blessed with --accept-weak-baseline: {reason}",
    ]
    assert box.weak == reason and box.passed
    assert [g.weak for g in run_gates(other, weak)[:3]] == ["", "", ""]


def test_run_gates_holds_the_kinds_asked_for_with_the_bootstrap_the_reference_and_the_image_sizes(truths, onnx):
    worse = sr.predictions(truths, seed=2)
    worse[:5] = [p.select(slice(0, 0)) for p in worse[:5]]
    hailo = sr.result(worse, truths, path="hailo")
    boot = paired_bootstrap(truths, onnx.predictions, hailo.predictions, sr.NAMES, resamples=20)
    sizes = {i: (480, 640) for i in hailo.image_ids}
    golden = _golden(onnx)
    gates = run_gates(hailo, golden, reference=onnx, bootstrap=boot, original_hw=sizes)
    assert [g.id.kind for g in gates] == ["map", "map50_95", "score_saturation", "box_count", "path_agreement"]
    causes = tuple(diagnose(collect_evidence(hailo, onnx, sizes)))
    assert causes and all(g.causes == causes for g in gates if not g.passed)
    assert (gates[0].interval, gates[1].interval) == (boot.map50, boot.map50_95)
    assert "hailo minus onnx on the same 16 images" in gates[0].text
    assert "hailo minus onnx on the same 16 images" in gates[1].text
    label_free = run_gates(hailo, golden, kinds=("score_saturation", "box_count"))
    assert [g.id.kind for g in label_free] == ["score_saturation", "box_count"]
    # a reference under other settings fails the agreement gate; the diagnosis goes without it
    other = sr.replaced(onnx, settings=EvalSettings((640, 640), score_threshold=0.001))
    alone = tuple(diagnose(collect_evidence(hailo, None, sizes)))
    gates = run_gates(hailo, golden, reference=other, original_hw=sizes)
    assert all(g.causes == alone for g in gates[:4] if not g.passed) and not gates[4].passed
    moved = sr.replaced(onnx, image_ids=tuple(f"x/{i}" for i in range(16)))
    assert all(
        g.causes == alone for g in run_gates(hailo, golden, reference=moved, original_hw=sizes)[:4] if not g.passed
    )


def test_a_missing_baseline_is_one_failing_gate_per_kind_with_no_baseline_number_and_no_causes(hailo):
    gates = missing_golden_gates(hailo, "no baseline", kinds=("box_count",))
    mean = hailo.box_counts.mean
    assert gates == (
        GateResult(GateId("box_count", "fire_smoke_val", "hailo"), False, None, mean, None, None, (), "no baseline"),
    )


def test_failure_causes_are_kept_by_a_failing_gate_only_and_said_once_numbered(hailo):
    assert causes_lines(()) == ["likely causes: none of the known failure modes matches the evidence"]
    finding = Finding("box_flood", "a cause", "its evidence", "its fix")
    assert causes_lines([finding]) == [
        "likely causes, most specific first:",
        "  1. a cause",
        "     evidence: its evidence",
        "     fix: its fix",
    ]
    held = gate_box_count(hailo, golden_from_result(hailo), causes=(finding,))
    assert held.causes == () and not held.diagnosed and held.message == held.text
    fewer = sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, mean=1.0))
    fell = gate_box_count(fewer, golden_from_result(hailo), causes=(finding,))
    assert fell.causes == (finding,) and fell.diagnosed
    assert fell.message == "\n".join([fell.text, *causes_lines((finding,))])
    nan = sr.replaced(hailo, box_counts=sr.replaced(hailo.box_counts, mean=float("nan")))
    unmeasured = gate_box_count(nan, golden_from_result(hailo), causes=(finding,))
    assert unmeasured.text.splitlines()[-1] == (
        "nothing was measured (NaN): no ground truth or no predictions to hold; a gate never passes so"
    )
    assert not unmeasured.diagnosed and unmeasured.causes == (finding,)


def test_the_change_of_a_share_is_the_run_minus_its_baseline_and_a_tenth_of_a_box_shows_two_decimals(hailo):
    golden = golden_from_result(hailo)
    golden = sr.replaced(golden, scores=sr.replaced(golden.scores, saturation=0.1))
    above = sr.replaced(hailo, scores=sr.replaced(hailo.scores, saturation=0.3))
    assert "0.3000 against baseline 0.1000 (change +0.2000," in gate_score_saturation(above, golden).text
    tenth = sr.replaced(golden, box_counts=sr.replaced(golden.box_counts, mean=0.1))
    assert "against baseline 0.10 (change" in gate_box_count(hailo, tenth).text


def test_an_unheld_stages_gate_reports_every_field_and_names_each_unmeasured_stage(onnx):
    from harness.core.path_names import DFC_FP_OPTIMIZED

    nan = sr.replaced(onnx.metrics, map50=math.nan)
    stages = [
        onnx,
        sr.replaced(onnx, path=DFC_FP_OPTIMIZED, metrics=nan),
        sr.replaced(onnx, path=DFC_QUANTIZED, metrics=nan),
    ]
    gate = gate_stages(stages, tolerance=0.05)
    assert (gate.id, gate.passed, gate.baseline, gate.observed, gate.tolerance, gate.causes, gate.allowed) == (
        GateId("stages", "fire_smoke_val"),
        False,
        onnx.metrics.map50,
        None,
        0.05,
        (),
        "drop <= 0.0500 per stage",
    )
    assert gate.text.splitlines()[0] == "mAP@0.5 not measured (NaN) at stage fp_optimized, quantized: nothing was held"
    weak = sr.replaced(onnx, metrics=sr.replaced(onnx.metrics, map50=0.01))
    assert gate_stages([weak, sr.replaced(weak, path=DFC_QUANTIZED)]).text.splitlines()[0] == (
        "the float model's mAP@0.5 0.0100 is no larger than the tolerance 0.02: a stage that finds nothing would lose "
        "no more than it, so the stages gate could not fail; nothing was held"
    )


def test_a_failing_or_refused_stages_gate_is_named_and_failed(truths):
    capped = sr.with_scores(sr.predictions(truths, seed=6), lambda s: np.minimum(s, 0.3554))
    results = _staged(truths, [Detections(p.boxes[:1], p.scores[:1], p.class_ids[:1]) for p in capped])
    gate = gate_stages(results, tolerance=0.02)
    assert gate.id == GateId("stages", "fire_smoke_val") and gate.passed is False
    other = sr.replaced(results[1], settings=EvalSettings(results[0].settings.input_hw, score_threshold=0.001))
    assert gate_stages([results[0], other]).id == GateId("stages", "fire_smoke_val")


def test_a_blessed_agreement_of_other_images_fails_the_agreement_gate_under_its_name(truths, onnx, hailo):
    blessed = golden_from_result(hailo, reference=onnx)
    other = sr.replaced(blessed, provenance=sr.replaced(blessed.provenance, dataset_manifest="c" * 64))
    gate = gate_path_agreement(onnx, hailo, other)
    assert gate == GateResult(
        GateId("path_agreement", "fire_smoke_val", "hailo"),
        False,
        None,
        None,
        None,
        None,
        (),
        "the baseline was measured on dataset manifest cccccccccccccccc, this run on aaaaaaaaaaaaaaaa: the images "
        "or labels changed; review the run and update the baseline",
    )


def test_a_refused_agreement_keeps_the_diagnosis_it_was_given(truths, onnx, hailo):
    finding = Finding("box_flood", "a cause", "its evidence", "its fix")
    other = sr.result(hailo.predictions, truths, path="hailo", settings=EvalSettings((640, 640), iou_threshold=0.45))
    gate = gate_path_agreement(onnx, other, causes=(finding,))
    assert gate.observed is None and gate.causes == (finding,) and gate.diagnosed


def test_run_gates_gives_every_failing_gate_the_causes_and_says_where_a_blessed_agreement_came_from(truths, onnx):
    hailo = sr.result(sr.with_scores(sr.predictions(truths, seed=2), lambda s: s * 0 + 0.995), truths, path="hailo")
    golden = golden_from_result(sr.result(sr.predictions(truths, seed=2), truths, path="hailo"), reference=onnx)
    moved = sr.replaced(golden, provenance=sr.replaced(golden.provenance, model_sha256="e" * 64))
    gates = {g.id.kind: g for g in run_gates(hailo, moved, reference=onnx)}
    causes = tuple(diagnose(collect_evidence(hailo, onnx, None, own=golden.agreement)))
    assert not gates["score_saturation"].passed and gates["score_saturation"].causes == causes and causes
    said = "baseline blessed from model sha256 eeeeeeeeeeee"
    assert said in gates["path_agreement"].text
    unblessed = sr.replaced(moved, agreement=None)
    assert said not in {g.id.kind: g for g in run_gates(hailo, unblessed, reference=onnx)}["path_agreement"].text


def test_every_accepted_weakness_of_a_gate_is_said_one_after_another(hailo):
    empty = sr.replaced(hailo, box_counts=BoxCounts(0.0, 0.0, 0, 0))
    golden = golden_from_result(empty, Tolerances(box_count_rel=1.0), accept_weak=True)
    box = run_gates(hailo, golden)[3]
    assert box.weak == (
        "box_count_rel 1 >= 1: a run without a single box passes the box count gate; the baseline run made no "
        "detection: its box count and score gates hold a run to nothing found"
    )


def test_a_shift_as_wide_as_the_paths_own_blessed_noise_is_called_a_confidence_shift_only_with_that_noise(truths, onnx):
    def noisy(shift: float, seed: int) -> PathResult:
        rng = np.random.default_rng(seed)
        moved = sr.with_scores(onnx.predictions, lambda s: np.clip(s + shift + rng.normal(0, 0.08, len(s)), 0, 1))
        return sr.result(moved, truths, path="hailo")

    shifted = noisy(-0.15, 1)
    unblessed = gate_path_agreement(onnx, shifted).text.splitlines()[-1]
    assert "not by one common shift" in unblessed
    blessed = golden_from_result(noisy(0.0, 2), reference=onnx)
    held = gate_path_agreement(onnx, shifted, blessed).text.splitlines()[-1]
    assert "a confidence shift, not different boxes" in held
