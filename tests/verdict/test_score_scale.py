"""The agreement gate's score scale, stated as properties: scores put through a sigmoid twice fail at
every threshold, quantisation noise of the size the clean emulated HEFs show passes, a common shift
stays a confidence shift, a blessed scale holds a run to its own, and nothing matched never passes."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.detections import Detections
from harness.verdict.gates import gate_path_agreement
from harness.verdict.golden import Tolerances
from harness.verdict.golden_blessing import golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.metrics.agreement import MIN_SCALE_PAIRS, agreement, score_scale
from harness.verdict.score_scale import SCALE_LIMIT, scale_off

from support import synthetic_results as sr

TRUTHS = sr.truths(n_images=48)
CLEAN_SPREAD = 0.09  # the largest spread of the clean emulated HEFs' matched score changes (YOLOv5 at 0.2: 0.087)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _paths(threshold, transform, seed=1, low=None, high=0.99):
    """The reference (scores uniform from ``low``, default the threshold, to ``high``) and a candidate of the
    same boxes scored ``transform(scores, rng)``, each keeping what its threshold keeps, as a run does."""
    settings_ = sr.replaced(sr.SETTINGS, score_threshold=threshold)
    rng = np.random.default_rng(seed)
    preds = sr.predictions(TRUTHS, scores=(threshold if low is None else low, high))
    moved = sr.with_scores(preds, lambda s: transform(s, rng))
    kept = [[d.scores >= threshold for d in path] for path in (preds, moved)]
    ref, cand = (
        sr.result(
            [Detections(d.boxes[k], d.scores[k], d.class_ids[k]) for d, k in zip(path, keep, strict=True)],
            TRUTHS,
            name,
            settings=settings_,
        )
        for path, keep, name in zip((preds, moved), kept, ("onnx", "hailo"), strict=True)
    )
    return ref, cand


@settings(max_examples=40, deadline=None)
@given(threshold=st.floats(0.05, 0.95), seed=st.integers(0, 2**16))
def test_scores_put_through_a_sigmoid_twice_fail_at_every_threshold(threshold, seed):
    onnx, hailo = _paths(threshold, lambda s, rng: _sigmoid(s), seed)
    gate = gate_path_agreement(onnx, hailo)
    assert not gate.passed
    counts = agreement(onnx.predictions, hailo.predictions)
    if counts.score_scale is not None:  # a spread the sigmoid squeezes by its slope, at most 0.25
        assert counts.score_scale.ratio <= 0.25
        assert scale_off(counts) or counts.score_scale.pairs < 10  # 0.25 * e^(2 / 3) < 0.5 from 10 pairs
    # near 0.731 and above the sigmoid leaves few boxes or none over the threshold: different boxes
    assert "the same boxes, but their scores compressed to [0." in gate.text or "different boxes" in gate.text
    assert threshold > 0.6 or "compressed" in gate.text


@settings(max_examples=40, deadline=None)
@given(threshold=st.floats(0.05, 0.6), spread=st.floats(0.0, CLEAN_SPREAD), seed=st.integers(0, 2**16))
def test_quantisation_noise_of_the_size_the_clean_paths_show_keeps_the_scale(threshold, spread, seed):
    onnx, hailo = _paths(threshold, lambda s, rng: np.clip(s + rng.normal(0, spread, len(s)), 0, 1), seed)
    counts = agreement(onnx.predictions, hailo.predictions)
    assert counts.score_scale is not None and not scale_off(counts)
    assert "score scale" in gate_path_agreement(onnx, hailo).text.splitlines()[0]


@pytest.mark.parametrize("spread", [0.015, 0.03, 0.05])
def test_a_clean_path_with_the_noise_measured_on_the_clean_hefs_passes_the_gate(spread):
    onnx, hailo = _paths(0.5, lambda s, rng: np.clip(s + rng.normal(0, spread, len(s)), 0, 1), low=0.3)
    gate = gate_path_agreement(onnx, hailo)
    assert gate.passed, gate.text
    assert gate.allowed.endswith("score scale [0.5, 2]")


@settings(max_examples=30, deadline=None)
@given(shift=st.floats(0.03, 0.3).flatmap(lambda d: st.sampled_from([d, -d])), threshold=st.floats(0.1, 0.5))
def test_a_uniform_shift_keeps_the_scale_and_stays_named_a_confidence_shift(shift, threshold):
    low, high = threshold + max(-shift, 0), 0.99 - max(shift, 0)  # every box kept on both paths
    onnx, hailo = _paths(threshold, lambda s, rng: s + shift, low=low, high=high)
    counts = agreement(onnx.predictions, hailo.predictions)
    assert not scale_off(counts)
    assert f"every score shifted by {counts.mean_score_drift:+.4f}: a confidence shift" in (
        gate_path_agreement(onnx, hailo).text
    )


def test_scores_stretched_fail_and_say_so():
    onnx, stretched = _paths(0.2, lambda s, rng: 0.2 + 3 * (s - 0.2), low=0.2, high=0.45)
    gate = gate_path_agreement(onnx, stretched)
    assert not gate.passed and "their scores stretched to [0.2" in gate.text
    assert "at --score-threshold 0.2 they are no probabilities as the reference's are" in gate.text


def test_a_blessed_scale_holds_the_path_to_it_and_its_blessed_run_passes_again(tmp_path):
    # the same boxes scored about 0.7: a sigmoid's drift stays under the blessed drift plus its rise
    onnx, clean = _paths(0.5, lambda s, rng: s + rng.normal(0, 0.01, len(s)), low=0.6, high=0.8)
    _, twice = _paths(0.5, lambda s, rng: _sigmoid(s), low=0.6, high=0.8)
    file = tmp_path / "hailo.json"
    write_golden(file, golden_from_result(clean, reference=onnx))
    blessed = load_golden(file)
    assert blessed.agreement is not None and blessed.agreement.score_scale == pytest.approx(1.0, abs=0.1)
    assert gate_path_agreement(onnx, clean, blessed).passed
    held = gate_path_agreement(onnx, twice, blessed)
    limit = blessed.agreement.score_drift + Tolerances().score_drift_rise
    assert agreement(onnx.predictions, twice.predictions).mean_abs_score_drift < limit
    assert not held.passed and "compressed to [0.6" in held.text
    write_golden(file, golden_from_result(twice, reference=onnx))  # blessed knowingly: its own scale holds
    own = load_golden(file)
    assert own.agreement is not None and own.agreement.score_scale == pytest.approx(0.22, abs=0.03)
    assert gate_path_agreement(onnx, twice, own).passed
    assert "or of the blessed 0.2" in gate_path_agreement(onnx, twice, own).text


def test_a_baseline_written_before_the_scale_was_blessed_still_loads_and_holds_the_reference_scale(tmp_path):
    onnx, clean = _paths(0.5, lambda s, rng: s, low=0.6, high=0.8)
    _, twice = _paths(0.5, lambda s, rng: _sigmoid(s), low=0.6, high=0.8)
    file = tmp_path / "hailo.json"
    write_golden(file, golden_from_result(clean, reference=onnx))
    data = json.loads(file.read_text())
    del data["agreement"]["score_scale"], data["seal"]
    file.write_text(json.dumps({**data, "schema_version": 5}))
    old = load_golden(file)
    assert old.agreement is not None and old.agreement.score_scale is None
    gate = gate_path_agreement(onnx, twice, old)
    assert not gate.passed and "within a factor 2 of the reference's own (1): its baseline blessed none" in gate.text


@pytest.mark.parametrize("blessed_share", [None, 0.02])
def test_the_gate_never_passes_with_nothing_matched(blessed_share, tmp_path):
    onnx = sr.result(sr.predictions(TRUTHS), TRUTHS)
    empty = [Detections(np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64)) for _ in TRUTHS]
    away = [Detections(d.boxes + 500.0, d.scores, d.class_ids) for d in onnx.predictions]
    golden = None
    if blessed_share is not None:  # a blessed share under agreement_drop: a floor of 0
        base = golden_from_result(sr.result(away, TRUTHS, "hailo"), reference=onnx)
        golden = sr.replaced(base, agreement=sr.replaced(base.agreement, matched_share=blessed_share))
    for reference, candidate in ((onnx.predictions, away), (empty, empty), (onnx.predictions, empty)):
        gate = gate_path_agreement(sr.result(reference, TRUTHS), sr.result(candidate, TRUTHS, "hailo"), golden)
        assert not gate.passed, gate.text
    neither = gate_path_agreement(sr.result(empty, TRUTHS), sr.result(empty, TRUTHS, "hailo"))
    assert "neither path found a box on these images: nothing was held" in neither.text


@given(slope=st.floats(-3, 3), offset=st.floats(-1, 1), n=st.integers(MIN_SCALE_PAIRS, 200))
def test_the_scale_of_an_affine_transform_is_its_slope_and_fewer_pairs_measure_none(slope, offset, n):
    reference = np.linspace(0.2, 0.95, n)
    found = score_scale(reference, offset + slope * reference)
    assert found is not None and found.ratio == pytest.approx(abs(slope), abs=1e-9)
    assert found.pairs == n and found.log_error == pytest.approx(1 / np.sqrt(n - 1))
    assert found.reference == pytest.approx((reference[0], reference[-1]), abs=0.04)
    assert score_scale(reference[: MIN_SCALE_PAIRS - 1], reference[: MIN_SCALE_PAIRS - 1]) is None
    assert score_scale(np.full(n, 0.5), reference) is None  # no spread to measure against


def test_the_scale_band_is_a_factor_either_way():
    assert SCALE_LIMIT == 2.0
    onnx, half = _paths(0.2, lambda s, rng: 0.2 + 0.6 * (s - 0.2), low=0.2)
    assert not scale_off(agreement(onnx.predictions, half.predictions))  # 0.6: within a factor 2
    assert scale_off(agreement(onnx.predictions, half.predictions), (3.0,))  # 0.6: not within 2 of 3
