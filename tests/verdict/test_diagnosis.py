import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.conformance import misreadings, words
from harness.core.detections import Detections, Letterbox, letterbox_boxes, unletterbox
from harness.core.settings import EvalSettings, SettingsMismatch
from harness.verdict.diagnosis import RULES, Rule, diagnose
from harness.verdict.diagnosis_evidence import Evidence, _median, collect_evidence
from harness.verdict.metrics.distribution import CellsAboveThreshold
from harness.verdict.misreading_fixes import REPRODUCED_FIXES

from support import synthetic_results as sr


@pytest.fixture(scope="module")
def truths():
    return sr.truths(n_images=20)


@pytest.fixture(scope="module")
def onnx(truths):
    return sr.result(sr.predictions(truths), truths, cells=CellsAboveThreshold(0.2, 8400, 30, 34))


def _hailo(truths, preds, **kwargs):
    return sr.result(preds, truths, path="hailo", **kwargs)


def _healthy(truths):
    return sr.predictions(truths, seed=2)


def _flood(truths):
    rng = np.random.default_rng(3)
    out = []
    for p in _healthy(truths):
        junk = rng.uniform(0, 600, (25, 2))
        boxes = np.concatenate([p.boxes, np.concatenate([junk, junk + 30], 1)])
        scores = np.concatenate([p.scores, rng.uniform(0.2, 0.6, 25)])
        out.append(Detections(boxes, scores, np.concatenate([p.class_ids, rng.integers(0, 2, 25)])))
    return out


def _not_normalised(truths):
    """Every cell lit: the flood of boxes, nearly all scored at saturation."""
    return sr.with_scores(_flood(truths), lambda s: 0.995 + s / 1000)


def _quantisation_loss(truths):
    preds = _healthy(truths)
    rng = np.random.default_rng(4)
    # a fifth of the objects lost, and the rest scored less consistently
    return [p.select(rng.uniform(size=len(p)) > 0.2) for p in sr.with_scores(preds, lambda s: s * rng.uniform(0.4, 1))]


SCENARIOS = {
    # scores of logits: the sigmoid is missing
    "sigmoid_missing": lambda t: sr.with_scores(_healthy(t), lambda s: np.log(s / (1 - s)) * 3),
    "sigmoid_applied_twice": lambda t: sr.with_scores(_healthy(t), lambda s: 1 / (1 + np.exp(-s))),
    # calibration without positives: every confident score stops at the class output's top level
    "score_cap": lambda t: sr.with_scores(_healthy(t), lambda s: np.minimum(s, 0.8355)),
    "input_normalised_twice": lambda t: [p.select(slice(0, 0)) for p in _healthy(t)],
    "yx_swapped": lambda t: [Detections(p.boxes[:, [1, 0, 3, 2]], p.scores, p.class_ids) for p in _healthy(t)],
    "class_order": lambda t: [Detections(p.boxes, p.scores, 1 - p.class_ids) for p in _healthy(t)],
    "input_not_normalised": _not_normalised,
    "box_flood": _flood,
    "score_saturation": lambda t: sr.with_scores(_healthy(t), lambda s: 0.99 + s / 100),
    "quantisation_loss": _quantisation_loss,
}


def _shifted(predictions, shift):
    """Every score moved by ``shift``, those then under the threshold 0.2 left out (as a device returns them)."""
    return [p.select(p.scores >= 0.2) for p in sr.with_scores(predictions, lambda s: s + shift)]


def test_a_uniform_score_shift_that_drops_boxes_under_the_threshold_is_a_confidence_shift_not_quantisation_loss(
    truths, onnx
):
    evidence = collect_evidence(_hailo(truths, _shifted(onnx.predictions, -0.5)), onnx)
    assert evidence.matched_share < 0.7 and evidence.reference_map50 - evidence.map50 >= 0.03  # boxes lost
    assert evidence.shifted_matched_share == 1.0  # every one of them the shift put under the threshold
    findings = diagnose(evidence)
    assert [f.name for f in findings] == ["confidence_shift", "quantisation_loss"]
    assert "shifted by -0.500" in findings[0].cause and "100% match once the reference's scores" in findings[0].cause


def test_scores_moved_each_its_own_way_are_no_confidence_shift_whatever_the_shifted_reference_matches(truths, onnx):
    lost = collect_evidence(_hailo(truths, _quantisation_loss(truths)), onnx)
    assert lost.shifted_matched_share is not None
    assert [f.name for f in diagnose(lost)] == ["quantisation_loss"]


def test_a_loss_is_called_quantisation_loss_only_where_its_interval_lies_below_the_allowed_drop(truths, onnx):
    """With a paired bootstrap interval, the loss must be shown beyond the images' noise and beyond the drop the
    gates allow; a point loss of 0.03 or more is the rule only where no interval was measured."""
    from harness.verdict.golden import DEFAULT_TOLERANCES
    from harness.verdict.metrics.coco import DifferenceInterval

    hailo = _hailo(truths, _quantisation_loss(truths))
    point = hailo.metrics.map50 - onnx.metrics.map50
    drop = DEFAULT_TOLERANCES.map50_drop
    assert point <= -0.03
    shown = DifferenceInterval(point, point - 0.01, -drop - 0.001)
    noise = DifferenceInterval(point, point - 0.05, 0.01)  # cannot be told from no loss at all
    within = DifferenceInterval(point, point - 0.01, -drop + 0.001)  # cannot be told from a loss the gates allow
    names = {
        name: [f.name for f in diagnose(collect_evidence(hailo, onnx, map50_difference=interval))]
        for name, interval in (("shown", shown), ("noise", noise), ("within", within))
    }
    assert names == {"shown": ["quantisation_loss"], "noise": [], "within": []}


@pytest.mark.parametrize("rule", sorted(SCENARIOS))
def test_each_rule_fires_first_on_its_evidence(truths, onnx, rule):
    findings = diagnose(collect_evidence(_hailo(truths, SCENARIOS[rule](truths)), onnx))
    assert findings and findings[0].name == rule, [f.name for f in findings]
    assert findings[0].fix and findings[0].evidence


def test_cells_flood_fires_on_the_share_of_raw_cells_above_threshold(truths, onnx):
    flooded = _hailo(truths, _healthy(truths), cells=CellsAboveThreshold(0.2, 8400, 1640, 1700))
    findings = diagnose(collect_evidence(flooded, onnx))
    assert [f.name for f in findings] == ["cells_flood"]
    assert "19.5% of the raw grid cells" in findings[0].cause


def test_no_rule_fires_on_a_clean_run_with_or_without_a_reference(truths, onnx):
    clean = _hailo(truths, _healthy(truths), cells=CellsAboveThreshold(0.2, 8400, 31, 35))
    assert diagnose(collect_evidence(clean, onnx)) == []
    assert diagnose(collect_evidence(clean)) == []
    assert diagnose(collect_evidence(onnx, onnx)) == []


def test_the_field_reports_cap_is_named_with_its_value(truths, onnx):
    capped = _hailo(truths, SCENARIOS["score_cap"](truths))
    (finding,) = diagnose(collect_evidence(capped, onnx))
    assert "stopped at the same highest value 0.836" in finding.cause and "limvals_max" in finding.cause
    assert "calibrate on images of the task that show the classes" in finding.fix


def test_a_cap_the_reference_shares_is_not_blamed_on_quantisation(truths):
    low = sr.with_scores(_healthy(truths), lambda s: np.minimum(s, 0.8355))
    reference = sr.result(low, truths)
    assert "score_cap" not in [f.name for f in diagnose(collect_evidence(_hailo(truths, low), reference))]


def _under(preds, ceiling: float, seed: int = 4):
    """``preds`` with every score above ``ceiling`` brought under it, each its own way (a cap through a
    product of two capped outputs, objectness x class: few scores stop at one value)."""
    rng = np.random.default_rng(seed)
    return sr.with_scores(preds, lambda s: np.where(s > ceiling, ceiling - rng.uniform(0.001, 0.1, len(s)), s))


def test_a_ceiling_under_the_float_models_scores_is_named_however_few_boxes_reach_it(truths, onnx):
    scores = np.concatenate([p.scores for p in onnx.predictions])
    ceiling = float(np.quantile(scores, 0.6))
    path = dataclasses.replace(_hailo(truths, _under(onnx.predictions, ceiling)), score_ceiling=ceiling)
    evidence = collect_evidence(path, onnx)
    assert evidence.at_cap is not None and evidence.at_cap < 5  # the count rule would not see it
    above = int((scores > ceiling + 1e-3).sum())
    assert evidence.reference_above_ceiling == above
    findings = diagnose(evidence)
    assert [f.name for f in findings][:1] == ["score_cap"]
    assert findings[0].cause.startswith(f"{above} of the {len(scores)} boxes of onnx score above {ceiling:.3f}")
    assert "calibrate on images of the task that show the classes" in findings[0].fix


def test_a_ceiling_that_cuts_only_the_brightest_box_of_a_clean_calibration_is_not_named(truths, onnx):
    """A clean in-domain calibration may miss the evaluated set's brightest box (the demo's: 0.956 against 0.967)."""
    scores = np.sort(np.concatenate([p.scores for p in onnx.predictions]))
    ceiling = float((scores[-1] + scores[-2]) / 2 - 0.001)
    path = dataclasses.replace(_hailo(truths, _under(onnx.predictions, ceiling)), score_ceiling=ceiling)
    evidence = collect_evidence(path, onnx)
    assert evidence.reference_above_ceiling == 1
    assert "score_cap" not in [f.name for f in diagnose(evidence)]
    # the count rule is for a path whose ceiling is unknown: a known one that cuts no score is no cap
    stopped = dataclasses.replace(_hailo(truths, SCENARIOS["score_cap"](truths)), score_ceiling=0.9999)
    assert "score_cap" not in [f.name for f in diagnose(collect_evidence(stopped, onnx))]


def test_rules_needing_a_reference_stay_silent_without_one(truths):
    evidence = collect_evidence(_hailo(truths, SCENARIOS["input_normalised_twice"](truths)))
    assert evidence.reference_n_boxes is None and diagnose(evidence) == []


def test_yx_swap_is_found_in_the_model_input_frame_of_letterboxed_images():
    hw = {f"images/{i:03d}.png": (183, 275) for i in range(12)}
    truths = sr.truths(n_images=12, side=183)
    onnx = sr.result(sr.predictions(truths), truths)
    swapped = []
    for image_id, p in zip(sorted(hw), _healthy(truths), strict=True):
        box = Letterbox.fit(hw[image_id], (640, 640))
        in_input = letterbox_boxes(p.boxes, box)[:, [1, 0, 3, 2]]
        swapped.append(unletterbox(Detections(in_input, p.scores, p.class_ids), box, clip=False))
    evidence = collect_evidence(_hailo(truths, swapped), onnx, original_hw=hw)
    assert evidence.swapped_matched_share == 1.0 and evidence.matched_share < 0.5
    assert diagnose(evidence)[0].name == "yx_swapped"


def test_evidence_needs_a_reference_under_the_same_settings(truths, onnx):
    other = _hailo(truths, _healthy(truths), settings=EvalSettings((640, 640), score_threshold=0.001))
    with pytest.raises(SettingsMismatch, match=r"score_threshold: 0\.2 vs 0\.001"):
        collect_evidence(other, onnx)


def test_adding_a_failure_mode_is_adding_a_rule(truths, onnx):
    evidence = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    few = Rule(
        name="few_images",
        cause="only {n_images} images: intervals are wide",
        needs=("n_images",),
        holds=lambda e: e.n_images < 50,
        fix="evaluate on more images",
    )
    (finding,) = diagnose(evidence, (*RULES, few))
    assert (finding.name, finding.cause, finding.evidence) == (
        "few_images",
        "only 20 images: intervals are wide",
        "n_images 20",
    )


def test_every_rule_names_measured_evidence_fields_and_formats_with_them():
    names = set(Evidence.__dataclass_fields__)
    for rule in RULES:
        assert set(rule.needs) <= names, rule.name
        assert rule.cause and rule.fix


def test_a_count_of_one_box_reads_as_one_box_in_a_cause(truths):
    healthy = _healthy(truths)
    first = healthy[0].select(slice(0, 1))
    faint = sr.Detections(first.boxes[:, [2, 3, 2, 3]] + [0, 0, 20, 20], first.scores, first.class_ids)  # beside it
    one = [faint, *(p.select(slice(0, 0)) for p in healthy[1:])]
    reference = sr.result(healthy, truths)
    findings = diagnose(collect_evidence(_hailo(truths, one), reference))
    cause = next(f.cause for f in findings if f.name == "input_normalised_twice")
    n = sum(len(p) for p in healthy)
    assert cause.startswith(f"hailo returns 1 box where onnx returns {n} boxes on the same images")


def test_a_near_black_input_is_named_by_the_faint_boxes_it_still_finds_nowhere_the_reference_has_one(truths):
    """A near-black frame through YOLOX or YOLOv5 still yields a few faint boxes (0.3 to 0.5 a frame against
    3.8 to 5.1): none where the float model finds one."""
    healthy = _healthy(truths)
    reference = sr.result(healthy, truths)
    faint = [
        Detections(np.array([[600, 600, 630, 640]], np.float32), np.float32([0.21 + 0.02 * i]), np.array([0]))
        if i % 3 == 0
        else p.select(slice(0, 0))
        for i, p in enumerate(healthy)
    ]
    findings = diagnose(collect_evidence(_hailo(truths, faint), reference))
    assert [f.name for f in findings][:1] == ["input_normalised_twice"]
    # as few boxes, but each where the reference has one: boxes lost, not a blind network
    kept = [p.select(slice(0, 1)) if i % 3 == 0 else p.select(slice(0, 0)) for i, p in enumerate(healthy)]
    names = [f.name for f in diagnose(collect_evidence(_hailo(truths, kept), reference))]
    assert "input_normalised_twice" not in names


def test_a_cap_below_the_operating_threshold_is_named_alone_and_a_near_black_input_only_without_it(
    truths,
):
    healthy = _healthy(truths)
    at_half = dataclasses.replace(sr.SETTINGS, score_threshold=0.5)
    reference = sr.result(healthy, truths, settings=at_half)
    none = [p.select(slice(0, 0)) for p in healthy]
    capped = dataclasses.replace(_hailo(truths, none, settings=at_half), score_ceiling=0.3554)
    findings = diagnose(collect_evidence(capped, reference))
    # the cap leaves no box, and is the one cause: no box the path could score was lost
    assert [f.name for f in findings] == ["score_cap"]
    assert findings[0].cause.startswith("every score of hailo is capped at 0.355 (the highest its class outputs'")
    assert "below your threshold 0.5: it returns 0 boxes where onnx returns" in findings[0].cause
    # a ceiling above the threshold is no cap: the near-black input is the cause then
    lit = dataclasses.replace(capped, score_ceiling=0.97)
    assert diagnose(collect_evidence(lit, reference))[0].name == "input_normalised_twice"


@given(
    st.lists(st.floats(0, 1e6, width=32) | st.sampled_from([0.0, 1.5, 7.25]), min_size=1, max_size=60)
    | st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=9)
)
def test_the_median_box_size_is_numpys_median_to_the_bit_but_for_the_sign_of_a_zero(values):
    """Equal zeros of either sign are left in any order by numpy's partition ([0.0, -0.0, 0.0] gives 0.0,
    a sort -0.0); the sign of a zero median changes nothing the diagnosis reads (it asks ``<= 0``)."""
    expected = float(np.median(np.array(values, dtype=np.float64)))
    got = _median(np.array(values))
    assert got.hex() == expected.hex() or got == expected == 0.0


def _reproduced(evidence: Evidence, name: str, words: str) -> Evidence:
    return dataclasses.replace(
        evidence, reproduction_frames=4, differing_frames=3, reproduced_misreading=name, reproduction=words
    )


@pytest.mark.parametrize("name", words.REPRODUCED_NAMES)
def test_a_host_decoder_reproduced_by_a_misreading_is_named_by_it_before_any_symptom(truths, onnx, name):
    # the scores of a second sigmoid too: the reproduction is the finding, the symptom comes after it
    squeezed = collect_evidence(_hailo(truths, SCENARIOS["sigmoid_applied_twice"](truths)), onnx)
    findings = diagnose(_reproduced(squeezed, name, "the FCR heads (box0, cls2) read channel-first"))
    assert findings[0].name == name and findings[0].fix == REPRODUCED_FIXES[name]
    assert "on each of the 4 frames run again" in findings[0].cause
    assert "with the FCR heads (box0, cls2) read channel-first" in findings[0].cause
    assert "differ from the reference decoder's on 3 of them" in findings[0].cause
    assert "sigmoid_applied_twice" in [f.name for f in findings[1:]]


def test_a_host_decoder_no_misreading_reproduces_is_said_so_after_the_symptoms(truths, onnx):
    squeezed = collect_evidence(_hailo(truths, SCENARIOS["sigmoid_applied_twice"](truths)), onnx)
    names = [f.name for f in diagnose(_reproduced(squeezed, "", misreadings.NOT_REPRODUCED))]
    assert names[0] == "sigmoid_applied_twice" and names[-1] == "host_decoder_not_reproduced"
    clean = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    (only,) = diagnose(_reproduced(clean, "", misreadings.NOT_REPRODUCED))
    assert only.name == "host_decoder_not_reproduced" and "none of the known misreadings" in only.cause


def test_a_host_decoder_that_agrees_with_the_reference_decoder_is_named_nothing(truths, onnx):
    clean = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    agreeing = dataclasses.replace(clean, reproduction_frames=4, differing_frames=0)
    assert diagnose(agreeing) == []


def _duplicated(truths, copies=3):
    """Each healthy box with ``copies`` near copies of it: what proposals look like before any NMS."""
    out = []
    for p in _healthy(truths):
        shifted = [p.boxes + np.float32(k) for k in range(copies + 1)]
        out.append(Detections(np.concatenate(shifted), np.tile(p.scores, copies + 1), np.tile(p.class_ids, copies + 1)))
    return out


def test_proposals_left_without_nms_are_named_by_the_nms_that_gives_back_the_reference(truths, onnx):
    from harness.decode.nms import greedy_per_class
    from harness.verdict.diagnosis_evidence import matched_share
    from harness.verdict.metrics.agreement import agreement

    def after_nms(predictions, iou, most):
        kept = [greedy_per_class(p.boxes, p.scores, p.class_ids, iou, most) for p in predictions]
        return [Detections(p.boxes[k], p.scores[k], p.class_ids[k]) for p, k in zip(predictions, kept, strict=True)]

    flooded = _duplicated(truths)
    evidence = collect_evidence(_hailo(truths, flooded), onnx)
    suppressed = after_nms(flooded, 0.7, 300)
    nms_share = matched_share(agreement(onnx.predictions, suppressed))
    findings = diagnose(dataclasses.replace(evidence, path_nms_matched_share=nms_share))
    assert findings[0].name == "host_nms_missing" and "no NMS ran over its proposals" in findings[0].cause
    # a clean run: the NMS over its own boxes changes nothing, and the rule stays silent
    clean = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    same = matched_share(agreement(onnx.predictions, after_nms(_healthy(truths), 0.7, 300)))
    assert "host_nms_missing" not in [f.name for f in diagnose(dataclasses.replace(clean, path_nms_matched_share=same))]


def test_an_nms_over_the_one_to_one_head_is_named_where_after_it_the_path_agrees_as_its_own_noise_allows(truths, onnx):
    """The path's boxes match the reference's after an NMS: to the floor derived from the two paths' own noise
    (never above 0.9), so a HEF whose clean agreement is 0.87 is not held to 0.9."""
    base = dataclasses.replace(
        collect_evidence(_hailo(truths, _healthy(truths)), onnx),
        n_boxes=30,
        reference_n_boxes=36,
        matched_share=0.74,
        nms_matched_share=0.85,
    )

    def named(floor):
        return "nms_on_one_to_one" in [f.name for f in diagnose(dataclasses.replace(base, agreement_floor=floor))]

    assert named(0.83) and not named(0.87) and not named(None)  # None: the fixed 0.9


def test_a_class_map_other_than_its_baselines_is_named_the_dataset_class_order_however_few_boxes_sit_on_a_truth(
    truths, onnx
):
    remapped = EvalSettings((640, 640), class_map=(1, 0))
    hailo = _hailo(truths, [p.select(slice(0, 0)) for p in _healthy(truths)], settings=remapped)  # no box at all

    def named(blessed):
        return [f for f in diagnose(collect_evidence(hailo, baseline_class_map=blessed)) if f.name.startswith("data")]

    (finding,) = named((0, 1))
    assert finding.name == "dataset_class_order" and "[0, 1] blessed, [1, 0] now" in finding.cause
    assert named((1, 0)) == [] and named(None) == []  # the blessed map, or no baseline


def test_an_nms_hef_whose_quant_info_says_its_class_outputs_hold_logits_is_named_sigmoid_missing_with_no_score_out(
    truths, onnx
):
    from dataclasses import replace

    evidence = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    assert evidence.outside_unit == 0 and not [f for f in diagnose(evidence) if f.name == "sigmoid_missing"]
    logits = replace(evidence, class_logits="class output conv/cls limvals: found [-7.9, 5.2] (logits)")
    (finding, *_) = diagnose(logits)
    assert finding.name == "sigmoid_missing" and "[-7.9, 5.2]" in finding.cause


def test_a_path_whose_few_boxes_all_sit_on_the_references_is_no_near_black_input(truths):
    healthy = _healthy(truths)
    strongest = [healthy[0].select(slice(0, 1)), *(p.select(slice(0, 0)) for p in healthy[1:])]
    findings = diagnose(collect_evidence(_hailo(truths, strongest), sr.result(healthy, truths)))
    assert "input_normalised_twice" not in [f.name for f in findings]


def test_boxes_read_x_first_are_named_where_the_swap_restores_what_a_clean_run_of_the_path_matches(truths, onnx):
    from dataclasses import replace

    base = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    cut = replace(base, matched_share=0.04, swapped_matched_share=0.45)  # an image's edge cut some swapped boxes

    def named(evidence):
        return "yx_swapped" in [f.name for f in diagnose(evidence)]

    assert not named(cut)  # held to all of the boxes: half of them
    assert named(replace(cut, own_matched_share=0.87))  # held to half of what its clean run matches
    assert not named(replace(cut, own_matched_share=0.87, swapped_matched_share=0.07))  # not twice as many


def test_a_missing_host_nms_is_named_where_an_nms_over_the_paths_boxes_lifts_it_to_the_derived_floor(truths, onnx):
    from dataclasses import replace

    base = collect_evidence(_hailo(truths, _healthy(truths)), onnx)
    # on images where the model finds little, few proposals overlap: not twice the boxes, not twice the share
    few = replace(base, n_boxes=154, reference_n_boxes=78, matched_share=0.47, path_nms_matched_share=0.82)

    def named(evidence):
        return "host_nms_missing" in [f.name for f in diagnose(evidence)]

    assert not named(replace(few, agreement_floor=None))
    assert named(replace(few, agreement_floor=0.55))
    assert not named(replace(few, agreement_floor=0.45))  # over the floor as it is: nothing to lift
    assert not named(replace(few, agreement_floor=0.55, path_nms_matched_share=0.5))  # the NMS does not lift it
    assert not named(replace(few, agreement_floor=0.55, n_boxes=70))  # fewer boxes than the reference


def test_a_score_within_the_paths_own_noise_of_its_ceiling_is_not_counted_above_it(truths, onnx):
    """On 8 demo images the clean HEF represents 0.956 and the float model's brightest box scores 0.967: by less than
    the path's own score noise (its blessed mean absolute drift), which a clean path misses a score by alone."""
    from harness.verdict.golden import BlessedAgreement

    scores = np.sort(np.concatenate([p.scores for p in onnx.predictions]))
    ceiling = float(scores[-1] - 0.011)
    path = dataclasses.replace(_hailo(truths, _under(onnx.predictions, ceiling)), score_ceiling=ceiling)
    bare = collect_evidence(path, onnx)
    assert bare.reference_above_ceiling is not None and bare.reference_above_ceiling >= 1
    noisy = collect_evidence(path, onnx, own=BlessedAgreement(0.9, 0.017))
    assert noisy.reference_above_ceiling == int((scores > ceiling + 0.017).sum()) < bare.reference_above_ceiling
    far = collect_evidence(path, onnx, own=BlessedAgreement(0.9, 0.005))
    assert far.reference_above_ceiling == int((scores > ceiling + 0.005).sum()) >= 1  # the top, 0.011 over: counted
