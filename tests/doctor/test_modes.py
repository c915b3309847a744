"""The doctor's failure modes on the demo (its first 30 images): every mode injected is caught by a
gate and named by the diagnosis, clean runs raise no alarm, and a model the emulator refuses gets
the modes that need no emulated HEF."""

from contextlib import ExitStack
from dataclasses import replace

import numpy as np
import pytest

from harness.conformance.misreadings import SIXTEEN_AS_EIGHT
from harness.conformance.suite import FCR_CHANNEL_FIRST, PAIRED_ACROSS_GRIDS, SIGMOID_TWICE, run_conformance
from harness.core.detections import Detections
from harness.core.head_family import HeadFamily
from harness.core.settings import EvalSettings
from harness.decode.heads import decoder
from harness.doctor.bench import open_bench
from harness.doctor.evidence import NOTHING_RETURNED, REPRODUCTION_FRAMES, decoder_reproduction
from harness.doctor.mistakes import (
    fcr_read_channel_first,
    paired_by_listing_order,
    records_read_x_first,
    sigmoid_on_probabilities,
)
from harness.doctor.modes import (
    MODES,
    REFUSALS,
    family_modes,
    heads_paired_across_grids,
    modes_by_name,
    modes_for,
)
from harness.doctor.table import clean_runs, controls, run_doctor, run_mode
from harness.inputs.demo import DEMO26_ONNX
from harness.pipeline.spec import SettingsSpec
from harness.verdict.diagnosis import RULES
from harness.verdict.hef_checks import STATIC_CHECKS

IMAGES = 30
MODES_BY_NAME = modes_by_name()


@pytest.fixture(scope="session")
def doctor_cache(tmp_path_factory):
    """One cache for the modes, doctor and localisation tests of a session (demo data, emulated
    HEFs, predictions), so each is made once."""
    return tmp_path_factory.getbasetemp() / "doctor-cache"


@pytest.fixture(scope="module", params=[0.2, 0.5], ids=["threshold_0.2", "threshold_0.5"])
def bench(doctor_cache, request):
    """The demo at the default operating threshold and at a deployment one."""
    return open_bench(first=IMAGES, cache_dir=doctor_cache, settings=SettingsSpec(score_threshold=request.param))


class _Rows(dict):
    """Each mode's row, run on first use: a test runs only the modes it reads."""

    def __init__(self, bench) -> None:
        super().__init__()
        self.bench = bench

    def __missing__(self, name: str):
        self[name] = run_mode(self.bench, MODES_BY_NAME[name])
        return self[name]


@pytest.fixture(scope="module")
def rows(bench):
    return _Rows(bench)


# The modes whose outcome the operating threshold changes (the score cap against it, scores drawn
# toward it, the NMS op's threshold against the evaluation's); at the deployment threshold only these
# run again, the others are held at the default one.
THRESHOLD_MODES = (
    "calibration_off_domain",
    "nms_without_sigmoid",
    "host_sigmoid_on_probabilities",
    "host_sigmoid_on_nms_scores",
    "scores_shifted_on_device",
    "box_range_collapsed",
    "nms_score_threshold_differs",
)


@pytest.fixture(scope="module")
def yolo26_bench(doctor_cache):
    """The YOLO26 demo export (its one-to-one head) on the demo's first images."""
    return open_bench(DEMO26_ONNX, first=IMAGES, cache_dir=doctor_cache)


@pytest.fixture(scope="module")
def yolo26_rows(yolo26_bench):
    """The YOLO26 demo export's own modes."""
    return {mode.name: run_mode(yolo26_bench, mode) for mode in modes_for(yolo26_bench.run.family)}


def test_every_expected_diagnosis_is_a_rule_a_static_check_or_a_refusal():
    known = {r.name for r in RULES} | {c.__name__.removeprefix("check_") for c in STATIC_CHECKS}
    known |= {r.name for r in REFUSALS}
    every = MODES_BY_NAME.values()
    assert {m.expected for m in every if not m.gap} <= known
    assert {m.expected for m in every if m.gap} <= known | {"none"}  # a gap may leave nothing to name
    assert len(MODES_BY_NAME) >= len(MODES) >= 12


def test_a_gap_a_family_states_is_for_a_shared_mode_offered_to_it_and_replaces_the_mode_s_own():
    for family in HeadFamily:
        gaps = family_modes(family).shared_gaps()
        offered = {m.name: m for m in modes_for(family)}
        assert set(gaps) <= {m.name for m in MODES} & set(offered), family
        assert all(offered[name].gap == why != "" for name, why in gaps.items()), family


def test_a_family_s_own_modes_are_its_alone_and_no_two_modes_share_a_name():
    shared = {m.name for m in MODES}
    for family in HeadFamily:
        for mode in family_modes(family).own_modes():
            assert mode.name not in shared and not mode.every_family, (family, mode.name)
            assert MODES_BY_NAME[mode.name] is mode, (family, mode.name)  # one record per name


@pytest.mark.parametrize(
    ("bench", "name"),
    [
        *((0.2, m.name) for m in modes_for(HeadFamily.YOLOV8) if not m.gap),
        *((0.5, name) for name in THRESHOLD_MODES),
    ],
    ids=lambda value: f"threshold_{value}" if isinstance(value, float) else value,
    indirect=["bench"],
)
def test_each_injected_mode_fails_a_gate_and_is_named(rows, name):
    row = rows[name]
    assert row.injected and row.gate_failed, row
    assert (row.diagnosis, row.correct) == (MODES_BY_NAME[name].expected, True), row.cause


YOLO26_MODES = (
    "sixteen_bit_read_as_eight",
    "one2one_decoded_with_nms",
    "one2one_decoded_as_one2many",
    "box_distances_read_as_dfl",
    "one_class_per_anchor",
)


def test_the_emulated_yolo26_hef_has_16_bit_outputs_as_ultralytics_compiles_it(yolo26_bench):
    assert yolo26_bench.hef is not None and yolo26_bench.hef.options.output_bits == 16


def test_a_yolo26_export_gets_the_modes_its_users_meet_each_caught_and_named(yolo26_rows):
    assert set(YOLO26_MODES) <= set(yolo26_rows)
    assert not {"nms_without_sigmoid", "box_range_collapsed", "nms_classes_wrong"} & set(yolo26_rows)
    wrong = {name: (row.diagnosis, row.gate_failed) for name, row in yolo26_rows.items() if not row.correct}
    assert not wrong
    for name, row in yolo26_rows.items():
        assert row.injected and row.gate_failed is (not row.gap), (name, row.gate)
    assert "read as 8-bit" in yolo26_rows["sixteen_bit_read_as_eight"].cause


@pytest.mark.parametrize("name", ["one2one_decoded_with_nms", "one2one_decoded_as_one2many"])
def test_an_nms_over_the_one_to_one_head_is_named_by_the_reference_it_reproduces_after_an_nms(yolo26_rows, name):
    row = yolo26_rows[name]
    assert row.gate_failed and row.diagnosis == "nms_on_one_to_one", row.gate
    assert "the reference's after an NMS per class" in row.cause


def test_box_distances_read_as_dfl_bins_leave_point_boxes_and_are_named_so(yolo26_rows):
    row = yolo26_rows["box_distances_read_as_dfl"]
    assert "test_map" in row.gate and "median box has no size" in row.cause


def test_one_class_per_anchor_is_a_known_gap_with_the_same_detections_on_the_demo(yolo26_rows):
    row = yolo26_rows["one_class_per_anchor"]
    assert (row.gate_failed, row.diagnosis, row.correct) == (False, "none", True) and "two classes" in row.gap


def test_clean_yolo26_paths_pass_every_gate_and_no_rule_fires(yolo26_bench):
    for row in controls(yolo26_bench):
        assert (row.gate_failed, row.diagnosis, row.correct) == (False, "none", True), row.gate


def test_a_host_sigmoid_over_nms_scores_is_caught_by_the_score_drift_of_the_agreement_gate(rows):
    row = rows["host_sigmoid_on_nms_scores"]
    assert row.gate_failed and "test_path_agreement" in row.gate
    assert row.diagnosis == "sigmoid_applied_twice" and "[0.5, 0.731]" in row.cause


def test_the_field_reports_symptoms_are_named_with_their_numbers(rows, bench):
    threshold = bench.settings.score_threshold
    # a ceiling under the float model's scores is named by the boxes it cuts, however few reach it
    cap = "score above 0.355, the highest score" if threshold < 0.355 else f"below your threshold {threshold:g}"
    assert cap in rows["calibration_off_domain"].cause
    assert "outside [0, 1]" in rows["nms_without_sigmoid"].cause
    assert "not a raw head map" in rows["raw_decoder_on_nms_buffer"].gate  # an explicit error, not nonsense boxes
    assert "preprocess: 'letterbox' vs 'resize'" in rows["resize_not_letterbox"].gate
    assert "same names in another order" in rows["class_names_swapped"].gate
    assert "class_map: [0, 1] vs [1, 0]" in rows["class_map_wrong"].gate


def test_clean_paths_pass_every_gate_and_no_rule_fires(bench):
    clean, raw, static = controls(bench)
    for row in (clean, raw):
        assert (row.gate_failed, row.diagnosis, row.correct) == (False, "none", True), row.gate
    # The demo model never scores above 0.0012 on its stride-16/32 class outputs over the calibration
    # frames, so the static score-range check flags those outputs of the clean HEF; nothing else fails.
    assert static.diagnosis in ("none", "class_score_range")


def test_clean_runs_on_five_samples_agree_with_the_reference_within_tolerance(bench):
    runs = clean_runs(bench)
    assert [r.seed for r in runs] == [0, 1, 2, 3, 4]
    assert all(r.n_images == 24 for r in runs)
    assert all(r.passed for r in runs), runs
    if bench.settings.score_threshold < 0.5:  # at 0.5 every sample agrees fully: the shares cannot tell them apart
        assert len({round(r.matched_share, 6) for r in runs}) > 1  # five different samples


@pytest.mark.parametrize(
    ("decoder", "named"),
    [(fcr_read_channel_first, FCR_CHANNEL_FIRST), (paired_by_listing_order, PAIRED_ACROSS_GRIDS)],
)
def test_the_injectable_wrong_decoders_are_named_by_the_conformance_suite(decoder, named):
    failures = [f for f in run_conformance(decoder).values() if f]
    assert failures and named in failures[0]


def test_a_host_sigmoid_decoder_squeezes_scores_in_the_conformance_suite():
    failures = [f for f in run_conformance(sigmoid_on_probabilities).values() if f]
    assert SIGMOID_TWICE in failures[0]


def test_reading_records_x_first_swaps_x_and_y_in_the_model_input():
    settings = EvalSettings((256, 256))
    boxes = np.array([[10, 20, 50, 120]], np.float32)  # in a 256x256 image: no letterbox
    got = records_read_x_first(settings)(Detections(boxes, [0.9], [1]), (256, 256))
    np.testing.assert_allclose(got.boxes, [[20, 10, 120, 50]], atol=1e-4)


def test_a_model_the_emulator_refuses_gets_the_modes_without_an_emulated_hef(shared_fixtures, doctor_cache):
    modes = [MODES_BY_NAME[n] for n in ("calibration_off_domain", "nms_records_read_x_first", "nms_classes_wrong")]
    onnx, dataset = (
        shared_fixtures / "onnx" / "yolov8n_coco80_640_int8.onnx",
        shared_fixtures / "datasets" / "coco128_val16",
    )
    table = run_doctor(open_bench(onnx, dataset, first=4, cache_dir=doctor_cache), modes, seeds=())
    skipped, swapped, static = table.rows
    assert not skipped.injected and skipped.gate_failed is None and "quantized ops" in skipped.how
    assert table.hailo_path.startswith("none:") and table.clean_runs == ()
    assert (swapped.gate_failed, swapped.diagnosis) == (True, "yx_swapped")
    assert (static.gate_failed, static.diagnosis) == (True, "nms_classes_vs_onnx")
    assert all(not r.gate_failed for r in table.controls)


def test_without_an_emulated_hef_the_yolo26_host_decoders_run_over_the_onnx_cut_at_its_heads(yolo26_bench):
    from dataclasses import replace

    from harness.pipeline.spec import REFERENCE

    onnx = yolo26_bench.reference  # the path under test where the emulator refuses the model
    bench = replace(yolo26_bench, hef=None, emulator_refusal="refused", subject_spec=REFERENCE, subject=onnx)
    hosts = ("one2one_decoded_with_nms", "one2one_decoded_as_one2many", "box_distances_read_as_dfl")
    for name in (*hosts, "yolov8_decoder_on_yolo26"):
        row = run_mode(bench, MODES_BY_NAME[name])
        assert (row.injected, row.gate_failed, row.correct) == (True, True, True), (name, row.diagnosis, row.gate)
        assert "onnx" in row.gate or row.gate.startswith("refused: "), row.gate
    assert not run_mode(bench, MODES_BY_NAME["sixteen_bit_read_as_eight"]).injected  # needs the 16-bit HEF


@pytest.mark.parametrize("bench", [0.2], indirect=True, ids=["threshold_0.2"])
@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("fcr_read_channel_first", "with the FCR heads ("),
        ("host_sigmoid_on_probabilities", "with the class heads of all 3 strides put through a second sigmoid"),
    ],
)
def test_a_host_decoders_mistake_is_named_by_reproducing_it_on_its_own_frames(rows, name, words):
    row = rows[name]
    assert row.correct and f"on each of the {REPRODUCTION_FRAMES} frames run again" in row.cause, row.cause
    assert words in row.cause, row.cause


def _resampled(values: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """A map put on another grid by nearest-neighbour resampling: a mistake no known misreading makes."""
    rows, columns = values.shape[:2]
    picked = values[np.arange(grid[0]) * rows // grid[0]][:, np.arange(grid[1]) * columns // grid[1]]
    return np.ascontiguousarray(picked)


@pytest.mark.parametrize("bench", [0.2], indirect=True, ids=["threshold_0.2"])
def test_a_host_decoder_no_misreading_reproduces_is_named_by_its_symptoms(bench):
    paired = MODES_BY_NAME["heads_paired_across_grids"]
    resampling = replace(paired, inject=heads_paired_across_grids(_resampled), expected="heads_paired_across_grids")
    row = run_mode(bench, resampling)
    assert row.gate_failed and row.correct, row.cause
    assert row.cause.startswith("the host decoder fails the decoder conformance suite"), row.cause


def test_a_yolo26_host_decoder_reading_16_bits_as_8_is_named_by_reproduction_and_says_it_returned_nothing(
    yolo26_rows,
):
    cause = yolo26_rows["sixteen_bit_read_as_eight"].cause
    assert "frames run again" in cause and f"every head {SIXTEEN_AS_EIGHT}" in cause and NOTHING_RETURNED in cause


@pytest.mark.parametrize("bench", [0.2], indirect=True, ids=["threshold_0.2"])
def test_the_harness_decoder_run_again_on_its_frames_agrees_with_itself(bench):
    with ExitStack() as stack:
        found = decoder_reproduction(bench, bench.raw_path(stack, decoder(bench.run.family)))
    assert found is not None and (found.frames, found.differing, found.reproduction) == (REPRODUCTION_FRAMES, 0, None)


def test_misreadings_alike_at_the_run_threshold_are_told_apart_where_the_heads_they_misread_leave_boxes(doctor_cache):
    """On the YOLO26 demo at 0.5 the heads paired across grids and its 16-bit class heads read as 8-bit leave the same
    boxes on every frame run again (what either misreads scores under 0.5); decoded again at a tenth of the
    threshold, the pairing alone reproduces them, and is named."""
    bench = open_bench(DEMO26_ONNX, first=IMAGES, cache_dir=doctor_cache, settings=SettingsSpec(score_threshold=0.5))
    row = run_mode(bench, {m.name: m for m in modes_for(bench.run.family)}["heads_paired_across_grids"])
    assert row.gate_failed and (row.diagnosis, row.correct) == ("heads_paired_by_output_order", True), row.cause
    assert "sixteen_bit_read_as_eight reproduced it alike; decoded again at 0.05" in row.cause, row.cause
