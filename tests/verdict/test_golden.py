import errno
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness.verdict.golden_writing as writing
from harness.core import signing
from harness.verdict.gates import gate_path_agreement, run_gates
from harness.verdict.golden import (
    ROUNDING,
    SCHEMA_VERSION,
    BlessedAgreement,
    GoldenError,
    Tolerances,
    golden_path,
    missing_golden_message,
)
from harness.verdict.golden_blessing import bless, golden_from_result, write_golden
from harness.verdict.golden_reading import load_golden
from harness.verdict.golden_weakness import MIN_OBJECTS, Weakness, weaknesses

from support import synthetic_results as sr


@pytest.fixture(scope="module")
def run():
    truths = sr.truths()
    return sr.result(sr.predictions(truths), truths, path="hailo")


def _later(run, drop_images=4, created="2025-04-01T00:00:00Z", sha="fedcba9876543210" * 4):
    """A second, worse run: the first images lose their detections."""
    truths = sr.truths()
    preds = sr.predictions(truths)
    preds[:drop_images] = [p.select(slice(0, 0)) for p in preds[:drop_images]]
    return sr.result(preds, truths, path="hailo", created=created, model_sha256=sha)


def test_baseline_path_is_model_stem_then_dataset_and_path(tmp_path):
    file = golden_path(tmp_path / "golden", "models/fire_smoke_yolo11n.hef", "hailo", "fire_smoke_val")
    assert file == tmp_path / "golden" / "fire_smoke_yolo11n" / "fire_smoke_val--hailo.json"
    assert golden_path(tmp_path, "m.hef", "hailo", "/data/sets/fire_smoke_val").name == "fire_smoke_val--hailo.json"
    with pytest.raises(GoldenError, match=r"dataset 'fire smoke'"):
        golden_path(tmp_path, "m.hef", "hailo", "fire smoke")
    with pytest.raises(GoldenError, match=r"path 'hailo/x'"):
        golden_path(tmp_path, "m.hef", "hailo/x", "ds")


def test_baseline_round_trips_through_its_file(tmp_path, run):
    golden = golden_from_result(run, Tolerances(map50_drop=0.03))
    file = golden_path(tmp_path, run.provenance.model_path, run.path, run.provenance.dataset)
    write_golden(file, golden)
    loaded = load_golden(file)
    assert (loaded.settings, loaded.provenance, loaded.tolerances) == (run.settings, run.provenance, golden.tolerances)
    assert (loaded.model, loaded.path, loaded.dataset, loaded.emulated) == (
        "fire_smoke_yolo11n",
        "hailo",
        "fire_smoke_val",
        False,
    )
    assert loaded.metrics.map50 == pytest.approx(run.metrics.map50, abs=1e-6)
    assert loaded.metrics.map50_95 == pytest.approx(run.metrics.map50_95, abs=1e-6)
    for old, new in zip(run.metrics.per_class, loaded.metrics.per_class, strict=True):
        assert new.name == old.name and new.n_ground_truth == old.n_ground_truth
        assert (new.ap50, new.ap50_95, new.precision, new.recall) == pytest.approx(
            (old.ap50, old.ap50_95, old.precision, old.recall), abs=1e-6
        )
    assert loaded.box_counts == pytest.approx(run.box_counts)
    assert loaded.scores.histogram == run.scores.histogram
    assert loaded.scores.saturation == pytest.approx(run.scores.saturation, abs=1e-6)


def test_baseline_file_is_sorted_two_space_json_with_one_value_per_line_and_null_for_nan(tmp_path, run):
    no_smoke = sr.replaced(
        run.metrics, per_class=(run.metrics.per_class[0], sr.replaced(run.metrics.per_class[1], ap50=math.nan))
    )
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(sr.replaced(run, metrics=no_smoke)))
    text = file.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["metrics"]["per_class"][1]["ap50"] is None
    assert math.isnan(load_golden(file).metrics.per_class[1].ap50)
    assert data["metrics"]["score_histogram"]["0.95-1.00"] == run.scores.histogram[-1]
    assert data["provenance"]["environment"] == {"hailort": "4.23.0", "onnxruntime": "1.20.1"}
    assert data["tolerances"] == {
        "agreement_drop": 0.05,
        "box_count_rel": 0.25,
        "map50_95_drop": 0.02,
        "map50_drop": 0.02,
        "saturation_abs": 0.05,
        "score_drift_rise": 0.05,
    }
    assert all(line.count(": ") <= 1 for line in text.splitlines())


def test_a_write_failing_midway_leaves_the_old_baseline_and_no_partial_file(tmp_path, run, monkeypatch):
    file = tmp_path / "m" / "ds--hailo.json"
    write_golden(file, golden_from_result(run))
    before = file.read_bytes()
    real_document = writing.baseline_document

    def half_serialisable(golden):
        # sorted last, so json.dump has written most of the file when it meets the object
        return {**real_document(golden), "zz_unserialisable": object()}

    monkeypatch.setattr(writing, "baseline_document", half_serialisable)
    with pytest.raises(TypeError, match="not JSON serializable"):
        write_golden(file, golden_from_result(_later(run)))
    assert file.read_bytes() == before
    assert sorted(os.listdir(file.parent)) == ["ds--hailo.json"]  # no temporary file, no history entry


def test_replacing_a_baseline_keeps_the_old_one_in_history_and_says_what_changed(tmp_path, run):
    file = tmp_path / "fire_smoke_yolo11n" / "fire_smoke_val--hailo.json"
    first = write_golden(file, golden_from_result(run))
    assert first.startswith(f"created baseline {file}")
    assert f"metrics.map50: {run.metrics.map50:.6g}" in first
    old_bytes = file.read_bytes()
    worse = _later(run)
    summary = write_golden(file, golden_from_result(worse))

    kept = file.parent / "history" / "fire_smoke_val--hailo" / "20250304T050607Z-0123456789ab.json"
    assert kept.read_bytes() == old_bytes
    assert f"kept as {kept}" in summary
    old, new = round(run.metrics.map50, 6), round(worse.metrics.map50, 6)
    assert f"metrics.map50: {old:.6g} -> {new:.6g} ({new - old:+.6g})" in summary
    assert "provenance.model_sha256: 0123456789abcdef" in summary
    assert "settings." not in summary  # unchanged values are not listed
    assert load_golden(file).metrics.map50 == pytest.approx(worse.metrics.map50, abs=1e-6)

    write_golden(file, golden_from_result(_later(run, drop_images=2, created="2025-05-01T00:00:00Z")))
    history = sorted(p.name for p in kept.parent.iterdir())
    assert history == ["20250304T050607Z-0123456789ab.json", "20250401T000000Z-fedcba987654.json"]


def test_an_unreadable_baseline_can_be_replaced_and_is_kept(tmp_path, run):
    file = tmp_path / "g.json"
    file.write_text("<<<<<<< merge conflict\n")
    summary = write_golden(file, golden_from_result(run))
    assert "previous baseline was unreadable" in summary
    kept = list((tmp_path / "history" / "g").iterdir())
    assert len(kept) == 1 and kept[0].read_text() == "<<<<<<< merge conflict\n"


def test_corrupt_json_names_the_file_and_the_position(tmp_path):
    file = tmp_path / "g.json"
    file.write_text('{"schema_version": 1,\n "metrics": }')
    with pytest.raises(GoldenError, match=rf"{file}: not valid JSON at line 2 column 13"):
        load_golden(file)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["metrics"].pop("map50"), r"field metrics\.map50 is missing, expected a share in \[0, 1\]"),
        (
            lambda d: d["metrics"]["per_class"][1].update(ap50="high"),
            r"field metrics\.per_class\[1\]\.ap50 is 'high', expected a share in \[0, 1\] or null",
        ),
        (lambda d: d["metrics"].update(map50=None), r"field metrics\.map50 is None, expected a share in \[0, 1\]"),
        (lambda d: d["metrics"].update(map50=1.5), r"field metrics\.map50 is 1\.5, expected a share in \[0, 1\]"),
        (
            lambda d: d["metrics"]["box_counts"].update(mean=-1.0),
            r"field metrics\.box_counts\.mean is -1\.0, expected a finite number >= 0",
        ),
        (lambda d: d.update(schema_version=7), r"field schema_version is 7, expected one of \[1, 2, 3, 4, 5, 6\]"),
        (
            lambda d: d["tolerances"].update(map50_drop=-0.1),
            r"field tolerances\.map50_drop is -0\.1, expected a number from 0 to 1",
        ),
        (
            lambda d: d["metrics"]["box_counts"].update(max=2.5),
            r"field metrics\.box_counts\.max is 2\.5, expected an integer",
        ),
        (lambda d: d["settings"].update(conf=0.2), r"field settings has unknown keys \['conf'\]"),
        (
            lambda d: d["provenance"].update(created="yesterday"),
            r"field provenance\.created is 'yesterday', expected an ISO",
        ),
        (
            lambda d: d["metrics"]["score_histogram"].pop("0.50-0.55"),
            r"field metrics\.score_histogram\.0\.50-0\.55 is missing, expected an integer >= 0",
        ),
        (lambda d: d.update(metrics=[]), r"field metrics is \[\], expected an object"),
        (
            lambda d: d["tolerances"].update(map_drop=0.05),
            r"field tolerances has unknown keys \['map_drop'\], expected only \['agreement_drop', 'box_count_rel'",
        ),
    ],
)
def test_schema_errors_name_the_file_the_field_and_what_was_expected(tmp_path, run, change, message):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data))
    with pytest.raises(GoldenError, match=rf"^{file}: .*{message}"):
        load_golden(file)


def test_a_missing_baseline_is_an_error_and_its_message_gives_the_command_that_creates_it(tmp_path):
    file = tmp_path / "m" / "ds--hailo.json"
    with pytest.raises(GoldenError, match="no such baseline file"):
        load_golden(file)
    text = missing_golden_message(file, ["hailo-harness", "run", "--hef", "my model.hef", "--dataset", "ds"])
    assert text.endswith("hailo-harness run --hef 'my model.hef' --dataset ds --update-golden")
    assert str(file) in text
    assert missing_golden_message(file, ["pytest", "--hef", "m.hef"]).endswith("pytest --hef m.hef --update-golden")
    with_report = missing_golden_message(file, ["pytest"], "reports/latest/report.html")
    assert "; review this run's report reports/latest/report.html, then create the baseline with" in with_report


@pytest.mark.parametrize(
    ("field", "key", "literal"), [("metrics", "map50", "NaN"), ("tolerances", "map50_drop", "Infinity")]
)
def test_a_non_finite_number_in_a_hand_edited_baseline_is_refused_naming_the_file_and_the_literal(
    tmp_path, run, field, key, literal
):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    data = json.loads(file.read_text())
    data[field][key] = "@"
    file.write_text(json.dumps(data).replace('"@"', literal))  # JSON from Python writes NaN and Infinity so
    with pytest.raises(GoldenError, match=rf"^{file}: {literal} is not a JSON number"):
        load_golden(file)


@pytest.mark.parametrize("block", ["tolerances", "metrics", "settings"])
def test_a_key_given_twice_by_a_merge_that_accepted_both_sides_is_refused_naming_the_key(tmp_path, run, block):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    text = file.read_text()
    data = json.loads(text)
    second = json.dumps(data[block], indent=2)
    merged = text.rstrip().removesuffix("}").rstrip() + f',\n  "{block}": {second}\n}}\n'
    file.write_text(merged)
    with pytest.raises(GoldenError, match=rf"^{file}: key '{block}' given twice in one object"):
        load_golden(file)


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (("metrics", "box_counts"), {"median": 2}, r"field metrics\.box_counts has unknown keys \['median'\]"),
        (("metrics", "per_class", 0), {"f1": 0.5}, r"field metrics\.per_class\[0\] has unknown keys \['f1'\]"),
        (("provenance",), {"signed_by": "x"}, r"field provenance has unknown keys \['signed_by'\]"),
        (("settings",), {"score_threshold": "0.2"}, r"field settings\.score_threshold is '0\.2', expected a number"),
        (("settings",), {"input_hw": [256.9, 256.2]}, r"field settings\.input_hw is \[256\.9, 256\.2\]"),
        (("settings",), {"max_total": 300.0}, r"field settings\.max_total is 300\.0, expected an integer"),
        ((), {"emulated": "false"}, r"field emulated is 'false', expected true or false"),
        ((), {"labelled": 1}, r"field labelled is 1, expected true or false"),
    ],
)
def test_unknown_keys_at_any_depth_and_coerced_values_are_refused_naming_the_key_path(
    tmp_path, run, where, value, message
):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    data = json.loads(file.read_text())
    node = data
    for key in where:
        node = node[key]
    node.update(value)
    file.write_text(json.dumps(data))
    with pytest.raises(GoldenError, match=rf"^{file}: {message}"):
        load_golden(file)


@pytest.mark.parametrize(
    ("tolerances", "message"),
    [
        ({"map50_drop": 1.0}, r"map50_drop 1 >= baseline map50 .*: the mAP@0\.5 gate can never fail"),
        ({"map50_95_drop": 0.99}, r"map50_95_drop 0\.99 >= baseline map50_95 .*: the mAP@0\.5:0\.95 gate can never"),
        (
            {"saturation_abs": 1.0},
            r"saturation_abs 1 around baseline saturation .* the score saturation gate can never",
        ),
        ({"box_count_rel": 1.0}, r"box_count_rel 1 >= 1: a run without a single box passes the box count gate"),
        ({"map50_drop": 1e6}, r"field tolerances\.map50_drop is 1000000\.0, expected a number from 0 to 1"),
    ],
)
def test_a_hand_edited_tolerance_that_can_never_fail_is_refused_saying_why(tmp_path, run, tolerances, message):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    data = json.loads(file.read_text())
    data["tolerances"].update(tolerances)
    file.write_text(json.dumps(data))
    with pytest.raises(GoldenError, match=rf"^{file}: .*{message}"):
        load_golden(file)


def test_a_baseline_of_map_zero_is_blessed_only_knowingly_and_then_keeps_saying_so(tmp_path, run):
    zero = sr.replaced(run, metrics=sr.replaced(run.metrics, map50=0.0, map50_95=0.0))
    file = tmp_path / "g.json"
    with pytest.raises(
        GoldenError, match=r"map50_drop 0\.02 >= baseline map50 0: .*--update-golden --accept-weak-base"
    ):
        write_golden(file, golden_from_result(zero))
    assert list(tmp_path.iterdir()) == []
    write_golden(file, golden_from_result(zero, accept_weak=True))
    back = load_golden(file)
    assert back.accepted_weak == ("map50_cannot_fail", "map50_95_cannot_fail")
    assert [w.code for w in weaknesses(back)] == list(back.accepted_weak)


def test_a_set_with_too_few_labelled_objects_or_no_detection_is_weak(run):
    few = tuple(sr.replaced(c, n_ground_truth=2) for c in run.metrics.per_class)
    assert "few_objects" in [
        w.code
        for w in weaknesses(golden_from_result(sr.replaced(run, metrics=sr.replaced(run.metrics, per_class=few))))
    ]
    none = sr.replaced(run, box_counts=sr.replaced(run.box_counts, total=0))
    assert "no_detections" in [w.code for w in weaknesses(golden_from_result(none))]
    assert weaknesses(golden_from_result(run)) == ()


def test_a_baseline_with_fewer_boxes_than_its_tolerance_can_measure_is_weak_and_refused_unless_blessed_knowingly(
    tmp_path, run
):
    # 0.25 of 3 boxes is less than one box: the gate could not tell a regression from one box more or less.
    sparse = sr.replaced(run, box_counts=sr.replaced(run.box_counts, mean=3 / 16, total=3))
    (found,) = weaknesses(golden_from_result(sparse))
    assert (found.code, found.kinds) == ("few_boxes", ("box_count",))
    assert "3 boxes in the baseline run: box_count_rel 0.25 of them is less than one box" in found.text
    file = tmp_path / "g.json"
    with pytest.raises(GoldenError, match=r"3 boxes in the baseline run: .*--update-golden --accept-weak-baseline"):
        write_golden(file, golden_from_result(sparse))
    assert list(tmp_path.iterdir()) == []
    write_golden(file, golden_from_result(sparse, accept_weak=True))
    assert load_golden(file).accepted_weak == ("few_boxes",)
    # Four boxes hold one box of change at 0.25; a tolerance of 0 asks for the very count and is no weakness.
    assert weaknesses(golden_from_result(sr.replaced(run, box_counts=sr.replaced(run.box_counts, total=4)))) == ()
    exact = golden_from_result(sparse, Tolerances(box_count_rel=0.0))
    assert weaknesses(exact) == ()


def test_a_tolerance_within_the_baselines_rounding_of_its_value_is_as_weak_as_one_above_it(run):
    base = run.metrics.map50
    near = golden_from_result(run, Tolerances(map50_drop=base - 1e-7))
    assert [w.code for w in weaknesses(near)] == ["map50_cannot_fail"]
    assert "within the baseline's rounding of baseline map50" in weaknesses(near)[0].text
    tiny = sr.replaced(run, box_counts=sr.replaced(run.box_counts, mean=1e-6, total=5))
    assert [w.code for w in weaknesses(golden_from_result(tiny, Tolerances(box_count_rel=0.75)))] == [
        "box_count_cannot_fail"
    ]


def test_every_weakness_is_named_by_its_code_its_gates_and_why_in_the_order_of_the_gates(run):
    lax = golden_from_result(run, Tolerances(1.0, 1.0, 1.0, 1.0, 1.0, 1.0))
    few = tuple(sr.replaced(c, n_ground_truth=4) for c in lax.metrics.per_class)
    golden = sr.replaced(
        lax,
        metrics=sr.replaced(lax.metrics, per_class=few, map50_95=0.75),
        agreement=BlessedAgreement(0.9, 0.1),
        box_counts=sr.replaced(lax.box_counts, total=0),
    )
    assert weaknesses(golden) == (
        Weakness("map50_cannot_fail", ("map",), "map50_drop 1 >= baseline map50 1: the mAP@0.5 gate can never fail"),
        Weakness(
            "map50_95_cannot_fail",
            ("map50_95",),
            "map50_95_drop 1 >= baseline map50_95 0.75: the mAP@0.5:0.95 gate can never fail",
        ),
        Weakness("few_objects", ("map", "map50_95"), "8 labelled objects, fewer than 10: too few to measure a mAP"),
        Weakness(
            "saturation_cannot_fail",
            ("score_saturation",),
            "saturation_abs 1 around baseline saturation 0 covers every share from 0 to 1: the score saturation "
            "gate can never fail",
        ),
        Weakness(
            "box_count_cannot_fail",
            ("box_count",),
            "box_count_rel 1 >= 1: a run without a single box passes the box count gate",
        ),
        Weakness(
            "agreement_cannot_fail",
            ("path_agreement",),
            "agreement_drop 1 >= blessed matched share 0.9: the path agreement gate passes a run that matches no box",
        ),
        Weakness(
            "score_drift_cannot_fail",
            ("path_agreement",),
            "blessed score drift 0.1 + score_drift_rise 1 >= 1: the path agreement gate passes any score drift",
        ),
        Weakness(
            "no_detections",
            ("box_count", "score_saturation"),
            "the baseline run made no detection: its box count and score gates hold a run to nothing found",
        ),
    )
    # without labels: no mAP, so neither its tolerance nor its objects are weaknesses
    free = sr.replaced(golden, labelled=False)
    assert [w.code for w in weaknesses(free)][:1] == ["saturation_cannot_fail"]


def test_each_weakness_turns_where_its_gate_starts_to_fail(run):
    def codes(tolerances=None, **changes):
        golden = sr.replaced(golden_from_result(run, tolerances or Tolerances()), **changes)
        return [w.code for w in weaknesses(golden)]

    metrics = run.metrics
    assert codes(metrics=sr.replaced(metrics, map50=ROUNDING), tolerances=Tolerances(map50_drop=0.0)) == [
        "map50_cannot_fail"
    ]
    assert codes(metrics=sr.replaced(metrics, map50=2 * ROUNDING), tolerances=Tolerances(map50_drop=0.0)) == []
    per_class = metrics.per_class
    at_least = (
        sr.replaced(per_class[0], n_ground_truth=MIN_OBJECTS),
        *(sr.replaced(c, n_ground_truth=0) for c in per_class[1:]),
    )
    assert codes(metrics=sr.replaced(metrics, per_class=at_least)) == []
    one_short = (sr.replaced(at_least[0], n_ground_truth=MIN_OBJECTS - 1), *at_least[1:])
    assert codes(metrics=sr.replaced(metrics, per_class=one_short)) == ["few_objects"]
    scores = run.scores
    assert codes(Tolerances(saturation_abs=0.5), scores=sr.replaced(scores, saturation=0.5)) == [
        "saturation_cannot_fail"
    ]
    assert codes(Tolerances(saturation_abs=0.25), scores=sr.replaced(scores, saturation=0.75)) == []
    assert codes(Tolerances(saturation_abs=0.75), scores=sr.replaced(scores, saturation=0.25)) == [
        "saturation_cannot_fail"
    ]
    boxes = run.box_counts
    assert codes(Tolerances(box_count_rel=0.25), box_counts=sr.replaced(boxes, total=4)) == []
    assert codes(Tolerances(box_count_rel=0.5), box_counts=sr.replaced(boxes, total=2)) == []
    assert codes(Tolerances(box_count_rel=0.5), box_counts=sr.replaced(boxes, total=1)) == ["few_boxes"]
    assert codes(Tolerances(box_count_rel=0.0), box_counts=sr.replaced(boxes, mean=2 * ROUNDING, total=1)) == []
    assert codes(Tolerances(box_count_rel=0.5), box_counts=sr.replaced(boxes, mean=2 * ROUNDING, total=4)) == [
        "box_count_cannot_fail"
    ]
    assert codes(Tolerances(box_count_rel=0.25), box_counts=sr.replaced(boxes, mean=0.0, total=0)) == ["no_detections"]
    assert codes(Tolerances(saturation_abs=0.5 - ROUNDING), scores=sr.replaced(scores, saturation=0.5)) == [
        "saturation_cannot_fail"
    ]  # the gate's own turning point: 0 and 1 both pass within the rounding
    assert codes(Tolerances(box_count_rel=0.5), box_counts=sr.replaced(boxes, mean=ROUNDING, total=1)) == [
        "box_count_cannot_fail"
    ]
    tiny = sr.replaced(
        golden_from_result(run, Tolerances(box_count_rel=0.5)), box_counts=sr.replaced(boxes, mean=ROUNDING, total=1)
    )
    (rounded,) = weaknesses(tiny)
    assert rounded.text == (
        "box_count_rel 0.5 of baseline mean 5e-07 boxes per image lies within the baseline's rounding of it: a run "
        "without a single box passes the box count gate"
    )
    assert codes(Tolerances(agreement_drop=0.5 - ROUNDING), agreement=BlessedAgreement(0.5, 0.0)) == [
        "agreement_cannot_fail"
    ]
    assert codes(Tolerances(agreement_drop=0.5), agreement=BlessedAgreement(0.5, 0.0)) == ["agreement_cannot_fail"]
    assert codes(Tolerances(agreement_drop=0.5), agreement=BlessedAgreement(0.75, 0.0)) == []
    assert codes(Tolerances(score_drift_rise=0.5), agreement=BlessedAgreement(1.0, 0.5)) == ["score_drift_cannot_fail"]
    assert codes(Tolerances(score_drift_rise=0.25), agreement=BlessedAgreement(1.0, 0.5)) == []
    assert codes(Tolerances(score_drift_rise=1 - ROUNDING - 0.5), agreement=BlessedAgreement(1.0, 0.5)) == [
        "score_drift_cannot_fail"
    ]  # a drift of 1 passes within the rounding


def test_a_baseline_that_measured_nothing_is_refused_before_anything_is_written(tmp_path, run):
    nothing = sr.replaced(run.metrics, map50=math.nan, map50_95=math.nan)
    file = tmp_path / "g.json"
    with pytest.raises(GoldenError, match=r"field metrics\.map50 is None, expected a share in \[0, 1\]"):
        write_golden(file, golden_from_result(sr.replaced(run, metrics=nothing)))
    assert list(tmp_path.iterdir()) == []


def test_a_label_free_baseline_has_no_map_and_says_so_and_a_labelled_one_still_needs_its_map(tmp_path, run):
    no_truth = tuple(sr.replaced(c, n_ground_truth=0) for c in run.metrics.per_class)
    metrics = sr.replaced(run.metrics, map50=math.nan, map50_95=math.nan, per_class=no_truth)
    free = golden_from_result(sr.replaced(run, metrics=metrics))
    assert not free.labelled
    file = tmp_path / "free.json"
    write_golden(file, free)
    back = load_golden(file)
    assert not back.labelled and math.isnan(back.metrics.map50) and back.box_counts == free.box_counts
    data = json.loads(file.read_text())
    data["labelled"] = True  # hand-edited into a labelled baseline without a mAP: refused
    file.write_text(json.dumps(data))
    with pytest.raises(GoldenError, match=r"field metrics\.map50 is None, expected a share in \[0, 1\]$"):
        load_golden(file)


# --- blessing a set --------------------------------------------------------------------------------

_BLESS_LOOP = """
import sys, dataclasses
from pathlib import Path
sys.path.insert(0, {tests!r})
from support import synthetic_results as sr
from harness.verdict.golden_blessing import bless, golden_from_result
truths = sr.truths()
run = sr.result(sr.predictions(truths), truths, path="hailo")
folder = Path({folder!r})
generation = {start}
print("ready", flush=True)
while True:
    generation += 1
    metrics = dataclasses.replace(run.metrics, map50=0.5 + generation / 1e6)
    golden = golden_from_result(dataclasses.replace(run, metrics=metrics))
    bless([(folder / "ds--onnx.json", dataclasses.replace(golden, path="onnx")), (folder / "ds--hailo.json", golden)])
"""


def test_a_set_killed_at_any_moment_of_its_blessing_is_the_old_set_or_the_new_one(tmp_path):
    folder, kills, seen = tmp_path / "m", 20, set()
    rng = __import__("random").Random(7)
    for kill in range(kills):
        program = _BLESS_LOOP.format(
            tests=str(Path(__file__).resolve().parents[1]), folder=str(folder), start=kill * 1000
        )
        child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.0, 0.4))  # a blessing takes tens of milliseconds (fsyncs)
        child.send_signal(signal.SIGKILL)
        child.wait()
        if not (folder / "ds--hailo.json").exists() and not (folder / "ds--onnx.json").exists():
            continue  # killed before its first set was committed: still no set, and no half of one
        onnx, hailo = load_golden(folder / "ds--onnx.json"), load_golden(folder / "ds--hailo.json")
        assert onnx.metrics.map50 == hailo.metrics.map50  # one generation, never a mix
        seen.add(hailo.metrics.map50)
        leftovers = [p.name for p in folder.rglob(".*")]
        assert leftovers == [], leftovers  # no journal and no temporary file once read
    assert len(seen) >= 3  # the kills did land at different moments


def test_a_set_blessed_under_a_run_token_is_written_once_for_all_its_workers(tmp_path, run):
    folder = tmp_path / "m"
    entries = [(folder / "ds--hailo.json", golden_from_result(run))]
    (created,) = bless(entries, token="run-1")
    assert created.startswith(f"created baseline {folder / 'ds--hailo.json'}")
    before = (folder / "ds--hailo.json").read_bytes()
    (again,) = bless([(folder / "ds--hailo.json", golden_from_result(_later(run)))], token="run-1")
    assert again.endswith("blessed by another worker of this test run")
    assert (folder / "ds--hailo.json").read_bytes() == before and not (folder / "history").exists()
    (updated,) = bless([(folder / "ds--hailo.json", golden_from_result(_later(run)))], token="run-2")
    assert updated.startswith("updated baseline") and (folder / "history").is_dir()


def test_a_set_with_one_bad_baseline_writes_neither(tmp_path, run):
    folder = tmp_path / "m"
    nothing = sr.replaced(run, metrics=sr.replaced(run.metrics, map50=math.nan))
    with pytest.raises(GoldenError, match=r"ds--onnx\.json: field metrics\.map50 is None"):
        bless(
            [
                (folder / "ds--hailo.json", golden_from_result(run)),
                (folder / "ds--onnx.json", golden_from_result(nothing)),
            ]
        )
    assert not folder.exists()


# --- faults and links ------------------------------------------------------------------------------


def test_a_symlinked_baseline_stays_a_link_and_its_target_gets_the_new_baseline(tmp_path, run):
    kept = tmp_path / "store" / "ds--hailo.json"
    kept.parent.mkdir()
    folder = tmp_path / "m"
    write_golden(kept, golden_from_result(run))
    folder.mkdir()
    (folder / "ds--hailo.json").symlink_to(kept)
    write_golden(folder / "ds--hailo.json", golden_from_result(_later(run)))
    assert (folder / "ds--hailo.json").is_symlink()
    assert load_golden(kept).provenance.model_sha256 == _later(run).provenance.model_sha256
    assert [p.name for p in kept.parent.iterdir()] == ["ds--hailo.json"]  # no temporary file left beside it


def test_a_rewritten_baseline_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path, run):
    file = tmp_path / "g.json"
    old = os.umask(0o022)
    try:
        write_golden(file, golden_from_result(run))
    finally:
        os.umask(old)
    assert file.stat().st_mode & 0o777 == 0o644
    file.chmod(0o664)
    write_golden(file, golden_from_result(_later(run)))
    assert file.stat().st_mode & 0o777 == 0o664


def test_a_full_disk_while_blessing_keeps_the_old_baselines_and_says_so(tmp_path, run, monkeypatch):
    folder = tmp_path / "m"
    write_golden(folder / "ds--hailo.json", golden_from_result(run))
    before = (folder / "ds--hailo.json").read_bytes()
    calls = iter(range(100))

    def full(fd):
        if next(calls) >= 1:  # the first temporary file is written; the second finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(GoldenError, match=r"not written: .*No space left on device; the previous baselines are kept"):
        write_golden(folder / "ds--hailo.json", golden_from_result(_later(run)))
    monkeypatch.undo()
    assert (folder / "ds--hailo.json").read_bytes() == before
    assert [p.name for p in folder.rglob(".*")] == []


def test_a_read_only_folder_refuses_a_blessing_clearly_and_gates_read_a_committed_one_through_its_journal(
    tmp_path, run, monkeypatch
):
    folder = tmp_path / "m"
    write_golden(folder / "ds--hailo.json", golden_from_result(run))
    newer = golden_from_result(_later(run))
    real_replace = os.replace

    def killed(src, dst):  # a blessing killed right after its journal was committed
        if not str(dst).endswith(".blessing.json"):
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        bless([(folder / "ds--hailo.json", newer)])

    def read_only(src, dst):
        raise OSError(errno.EROFS, "Read-only file system", str(dst))

    monkeypatch.setattr(os, "replace", read_only)
    assert load_golden(folder / "ds--hailo.json").provenance.model_sha256 == newer.provenance.model_sha256
    with pytest.raises(GoldenError, match=r"^baselines in .*m not written: .*Read-only file system; the previous"):
        bless([(folder / "ds--hailo.json", golden_from_result(run))])
    monkeypatch.undo()
    assert load_golden(folder / "ds--hailo.json").provenance.model_sha256 == newer.provenance.model_sha256
    assert not (folder / ".blessing.json").exists()


def test_a_journal_that_names_files_outside_its_blessing_is_refused_and_nothing_is_moved(tmp_path, run):
    folder = tmp_path / "m"
    write_golden(folder / "ds--hailo.json", golden_from_result(run))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (folder / ".blessing.json").write_text(json.dumps([[str(victim), str(folder / "ds--hailo.json")]]))
    with pytest.raises(GoldenError, match=r"\.blessing\.json: entry .*expected a blessing's own temporary"):
        load_golden(folder / "ds--hailo.json")
    assert victim.read_text() == "keep me"


def test_a_baseline_name_takes_letters_of_any_script_and_refuses_undecodable_bytes_and_overlong_names():
    assert golden_path("g", "m.onnx", "onnx", "café_rauch").name == "café_rauch--onnx.json"
    with pytest.raises(GoldenError, match=r"baseline dataset 'caf\\udce9': expected letters, digits .* in UTF-8"):
        golden_path("g", "m.onnx", "onnx", os.fsdecode(b"caf\xe9"))
    with pytest.raises(GoldenError, match=r"240 bytes make a baseline file name longer than 200 bytes"):
        golden_path("g", "m.onnx", "onnx", "d" * 240)


def test_a_set_blessed_under_a_relative_root_is_completed_from_any_working_folder(tmp_path, run, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_golden(Path("g") / "ds--hailo.json", golden_from_result(run))  # a relative root, as --golden g
    real_replace = os.replace

    def killed(src, dst):  # killed right after the journal was committed
        if not str(dst).endswith(".blessing.json"):
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        bless([(Path("g") / "ds--hailo.json", golden_from_result(_later(run)))])
    monkeypatch.undo()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    later = load_golden(tmp_path / "g" / "ds--hailo.json")
    assert later.provenance.model_sha256 == _later(run).provenance.model_sha256


@pytest.fixture(scope="module")
def reference():
    truths = sr.truths()
    return sr.result(sr.predictions(truths, seed=2), truths)


def _schema_1(data):
    """``data`` as a baseline written before the agreement was blessed."""
    data.update(schema_version=1)
    data.pop("agreement", None)
    data.pop("release")  # schema 3's
    data.pop("history")
    data.pop("history_tip"), data.pop("seal")  # schema 4's
    for key in ("agreement_drop", "score_drift_rise"):
        data["tolerances"].pop(key)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["agreement"].update(matched_share=1.5),
            r"field agreement\.matched_share is 1\.5, expected a share in \[0, 1\]",
        ),
        (
            lambda d: d["agreement"].update(score_drift="0.03"),
            r"field agreement\.score_drift is '0\.03', expected a number from 0 to 1",
        ),
        (lambda d: d["agreement"].pop("score_drift"), r"field agreement\.score_drift is missing"),
        (lambda d: d["agreement"].update(floor=0.8), r"field agreement has unknown keys \['floor'\]"),
        (
            lambda d: d["tolerances"].pop("agreement_drop"),
            r"field tolerances\.agreement_drop is missing, expected a number from 0 to 1",
        ),
        (
            lambda d: (_schema_1(d), d.update(agreement={"matched_share": 0.9, "score_drift": 0.0})),
            r"unknown keys \['agreement'\]",  # schema 1 never had one
        ),
        (
            lambda d: (_schema_1(d), d["tolerances"].update(agreement_drop=0.05)),
            r"field tolerances has unknown keys \['agreement_drop'\]",
        ),
    ],
)
def test_a_blessed_agreement_is_read_strictly(tmp_path, run, reference, change, message):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run, reference=reference))
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data))
    with pytest.raises(GoldenError, match=rf"^{file}: .*{message}"):
        load_golden(file)


def test_a_hailo_baseline_keeps_its_agreement_with_the_reference_and_the_reference_baseline_none(
    tmp_path, run, reference
):
    file = tmp_path / "g.json"
    summary = write_golden(file, golden_from_result(run, reference=reference))
    data = json.loads(file.read_text())
    assert data["schema_version"] == SCHEMA_VERSION and set(data["agreement"]) == {
        "matched_share",
        "score_drift",
        "score_scale",
    }
    measured = gate_path_agreement(reference, run)
    assert data["agreement"]["matched_share"] == round(measured.observed, 6) and "agreement.matched_share: " in summary
    assert "agreement" not in json.loads(_written(tmp_path / "r.json", golden_from_result(reference)))


def _written(file, golden):
    write_golden(file, golden)
    return file.read_text()


def test_a_schema_1_baseline_is_still_read_without_an_agreement_and_with_the_default_tolerances(tmp_path, run):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    data = json.loads(file.read_text())
    _schema_1(data)
    file.write_text(json.dumps(data))
    old = load_golden(file)
    assert old.agreement is None and old.tolerances == Tolerances()
    assert old.metrics.map50 == pytest.approx(run.metrics.map50, abs=1e-6)


def test_an_agreement_drop_as_large_as_the_blessed_share_cannot_fail_and_is_blessed_only_knowingly(
    tmp_path, run, reference
):
    lax = Tolerances(agreement_drop=1.0)
    with pytest.raises(GoldenError, match=r"agreement_drop 1 >= blessed matched share .*--accept-weak-baseline"):
        write_golden(tmp_path / "g.json", golden_from_result(run, lax, reference=reference))
    write_golden(tmp_path / "g.json", golden_from_result(run, lax, accept_weak=True, reference=reference))
    assert load_golden(tmp_path / "g.json").accepted_weak == ("agreement_cannot_fail",)


# --- seals ---------------------------------------------------------------------------------

KEY = "a-release-key-for-the-tests-0123456789"
VACUOUS = {"map50_drop": 1.0, "map50_95_drop": 1.0, "box_count_rel": 1.0, "saturation_abs": 1.0}
WEAK_BY_HAND = ["map50_cannot_fail", "map50_95_cannot_fail", "saturation_cannot_fail", "box_count_cannot_fail"]


@pytest.fixture
def policy(monkeypatch):
    """No key and no --require-signed unless a test sets them (and none left behind)."""
    monkeypatch.setenv(signing.KEY_VARIABLE, "")  # set, so that its undo removes what a test sets
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "0")  # require_signed() sets it: undone after
    monkeypatch.setattr(signing, "_required_by_option", False)
    return monkeypatch


def _rewritten(file, change):
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data, indent=2))


def _weak_by_hand(data):
    data["tolerances"].update(VACUOUS)
    data["accepted_weak"] = list(WEAK_BY_HAND)


def test_a_blessing_seals_the_baseline_by_digest_without_a_key_and_signs_it_with_one(tmp_path, run, policy):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    seal = json.loads(file.read_text())["seal"]
    assert len(seal["sha256"]) == 64 and seal["hmac"] is None and seal["key_id"] is None
    assert load_golden(file).seal.state is signing.SealState.SEALED and load_golden(file).seal_note is None
    policy.setenv(signing.KEY_VARIABLE, KEY)
    write_golden(file, golden_from_result(run))
    assert json.loads(file.read_text())["seal"]["hmac"] is not None
    assert load_golden(file).seal.state is signing.SealState.SIGNED
    policy.setenv(signing.KEY_VARIABLE, "")
    assert load_golden(file).seal.state is signing.SealState.UNVERIFIED  # no key here to check it


@pytest.mark.parametrize("schema", [3, 4])
def test_a_hand_typed_accepted_weak_is_void_and_the_weak_baseline_refused(tmp_path, run, policy, schema):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))

    def change(data):
        _weak_by_hand(data)
        if schema == 3:  # as written before seals
            data.update(schema_version=3)
            data.pop("seal"), data.pop("history_tip")

    _rewritten(file, change)
    state = "an unsigned edit" if schema == 4 else "an unsealed"
    with pytest.raises(GoldenError) as refused:
        load_golden(file)
    said = str(refused.value)
    assert said.startswith(f"{file}: its accepted_weak {WEAK_BY_HAND} is void: the file is {state} (")
    assert "map50_drop 1 >= baseline map50" in said and "blessed with --accept-weak-baseline" not in said


def test_the_same_weakness_blessed_knowingly_holds_and_says_who_vouches_for_it(tmp_path, run, policy):
    file = tmp_path / "g.json"
    lax = Tolerances(map50_drop=1.0, map50_95_drop=1.0, box_count_rel=1.0, saturation_abs=1.0)
    write_golden(file, golden_from_result(run, lax, accept_weak=True))
    back = load_golden(file)
    assert set(back.accepted_weak) == set(WEAK_BY_HAND)
    (gate,) = run_gates(run, back, kinds=("map",))
    assert "WEAK BASELINE, blessed with --accept-weak-baseline (as written, unsigned" in gate.text


def test_a_hand_edit_that_weakens_nothing_keeps_its_gates_and_the_verdict_says_unsigned_edit(tmp_path, run, policy):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    _rewritten(file, lambda d: d["tolerances"].update(map50_drop=0.05))
    back = load_golden(file)
    assert back.tolerances.map50_drop == 0.05 and back.seal.state is signing.SealState.UNSIGNED_EDIT
    (gate,) = run_gates(run, back, kinds=("map",))
    assert gate.passed and "baseline unsigned edit: changed after it was written" in gate.text


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (lambda d: d["tolerances"].update(map50_drop=0.5), r"its signature does not hold: changed after it was signed"),
        (
            lambda d: (_weak_by_hand(d), d.update(seal=signing.seal_document(_unsealed(d), b"o" * 32))),
            r"signed with another key",
        ),
        (
            lambda d: (_weak_by_hand(d), d["seal"].update(sha256=signing.seal_document(_unsealed(d), None)["sha256"])),
            r"its signature does not hold",
        ),
    ],
)
def test_with_the_key_set_an_edited_or_forged_signed_baseline_is_refused(tmp_path, run, policy, forge, message):
    policy.setenv(signing.KEY_VARIABLE, KEY)
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    _rewritten(file, forge)
    with pytest.raises(GoldenError, match=rf"^baseline {file}: {message}.*; refused \(bless"):
        load_golden(file)


def _unsealed(data):
    return {k: v for k, v in data.items() if k != "seal"}


def test_require_signed_refuses_an_unsigned_baseline_and_a_blessing_without_the_key(tmp_path, run, policy):
    file = tmp_path / "g.json"
    write_golden(file, golden_from_result(run))
    signing.require_signed()
    with pytest.raises(GoldenError, match=rf"^baseline {file}: not signed with the release key .*--require-signed$"):
        load_golden(file)
    with pytest.raises(GoldenError, match=r"--update-golden under --require-signed: HARNESS_SIGNING_KEY is not set"):
        write_golden(file, golden_from_result(run))
    policy.setenv(signing.KEY_VARIABLE, KEY)
    with pytest.raises(GoldenError, match=r"not signed with the release key \(as written, unsigned"):
        load_golden(file)
    write_golden(file, golden_from_result(run))  # blessed again with the key: signed, and read
    assert load_golden(file).seal.state is signing.SealState.SIGNED


def _leaf_paths(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, (*path, key))
    elif isinstance(node, list) and node:
        for i, value in enumerate(node):
            yield from _leaf_paths(value, (*path, i))
    else:
        yield path


@pytest.fixture(scope="module")
def sealed_document(tmp_path_factory, run):
    file = tmp_path_factory.mktemp("sealed") / "g.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(signing.KEY_VARIABLE, "")
        patch.setenv(signing.REQUIRE_VARIABLE, "0")
        write_golden(file, golden_from_result(run))
    return json.loads(file.read_text())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_changed_by_hand_in_a_sealed_baseline_is_an_unsigned_edit_or_refused(
    tmp_path, sealed_document, policy, data
):
    paths = [p for p in _leaf_paths(sealed_document) if p[0] != "seal"]
    path = data.draw(st.sampled_from(paths), label="field")
    changed = json.loads(json.dumps(sealed_document))
    *parents, key = path
    node = changed
    for parent in parents:
        node = node[parent]
    old = node[key]
    new = data.draw(
        st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(0, 1), st.text(max_size=4)).filter(
            lambda v: v != old or type(v) is not type(old)
        ),
        label="value",
    )
    node[key] = new
    file = tmp_path / "g.json"
    file.write_text(json.dumps(changed))
    try:
        back = load_golden(file)
    except GoldenError:
        return  # refused by its schema, naming the field
    assert back.seal is not None and back.seal.state is signing.SealState.UNSIGNED_EDIT
    assert back.seal_note is not None and back.seal_note.startswith("baseline unsigned edit: ")


def test_with_the_key_set_only_a_signature_vouches_for_a_weakness_blessed_knowingly(tmp_path, run, policy):
    file = tmp_path / "g.json"
    lax = Tolerances(map50_drop=1.0, map50_95_drop=1.0, box_count_rel=1.0, saturation_abs=1.0)
    write_golden(file, golden_from_result(run, lax, accept_weak=True))  # no key: sealed by digest alone
    assert set(load_golden(file).accepted_weak) == set(WEAK_BY_HAND)
    policy.setenv(signing.KEY_VARIABLE, KEY)
    with pytest.raises(GoldenError, match=r"is void: the file is sealed without the release key, which is set here"):
        load_golden(file)
    write_golden(file, golden_from_result(run, lax, accept_weak=True))  # blessed again with the key
    assert set(load_golden(file).accepted_weak) == set(WEAK_BY_HAND)


def test_blessing_through_a_history_link_out_of_the_project_is_refused_and_nothing_changes(tmp_path, run):
    from harness.core import confine

    project, outside = tmp_path / "project", tmp_path / "outside"
    file = project / "golden" / "m" / "ds--hailo.json"
    write_golden(file, golden_from_result(run))
    before = file.read_bytes()
    outside.mkdir()
    (file.parent / "history").symlink_to(outside)
    confine.confine(project, [], follow=False)
    try:
        with pytest.raises(confine.LinkEscape, match=r"history is a link to .*outside"):
            write_golden(file, golden_from_result(_later(run)))
    finally:
        confine.release()
    assert file.read_bytes() == before and list(outside.iterdir()) == []
    assert (file.parent / "history").is_symlink()
