"""``hailo-harness doctor``: the table for the demo, as text and as JSON."""

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli.commands import doctor
from harness.core.errors import HarnessError
from harness.core.head_family import HeadFamily
from harness.doctor.modes import modes_for


@pytest.fixture(scope="session")
def doctor_cache(tmp_path_factory):
    """The cache test_modes.py uses too (same session path), so nothing is made twice."""
    return tmp_path_factory.getbasetemp() / "doctor-cache"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    doctor.add_arguments(parser)
    return parser.parse_args(argv)


def test_doctor_json_for_the_demo_lists_every_mode_caught_and_named(doctor_cache, capsys):
    code = doctor.run(_args("--first", "30", "--cache", str(doctor_cache), "--json"))
    table = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in table["modes"]] == [m.name for m in modes_for(HeadFamily.YOLOV8)]
    for row in table["modes"]:
        assert row["injected"] and row["correct"], row
        assert row["gate_failed"] is (not row["gap"]), row
    assert [c["passed"] for c in table["clean_runs"]] == [True] * 5
    assert [r["mode"] for r in table["controls"]] == ["clean", "clean_raw_heads", "clean_hef_description"]
    assert code == (1 if table["problems"] else 0)
    assert all(p.startswith("clean control clean_hef_description") for p in table["problems"])


def test_doctor_text_names_the_selected_modes_and_sums_up(doctor_cache, capsys):
    code = doctor.run(
        _args("--first", "30", "--cache", str(doctor_cache), "--mode", "bgr_input", "--mode", "nms_classes_wrong")
    )
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    table = [line.split() for line in out if line.startswith(("bgr_input ", "nms_classes_wrong "))]
    progress = [line for line in captured.err.splitlines() if line.startswith("doctor: ")]
    assert progress[0] == "doctor: the clean controls"
    assert progress[1].startswith("doctor: mode 1/2 bgr_input: caught, diagnosed channels_swapped (")
    assert progress[2].startswith("doctor: mode 2/2 nms_classes_wrong: caught, diagnosed nms_classes_vs_onnx (")
    assert progress[3] == "doctor: 5 clean runs, each on 80% of the images"
    assert table == [
        ["bgr_input", "yes", "yes", "channels_swapped", "channels_swapped", "yes"],
        ["nms_classes_wrong", "yes", "yes", "nms_classes_vs_onnx", "nms_classes_vs_onnx", "yes"],
    ]
    assert "2 of 2 injected modes caught by a gate, 2 of 2 named correctly" in out[-1]
    assert code == (1 if any(line.startswith("PROBLEM") for line in out) else 0)
    for line in (line.strip() for line in out if line.strip().startswith("gate: ")):
        gate = line.removeprefix("gate: ").split(":")[0]
        assert f"{gate}: {gate}" not in line, line  # each gate named once


def test_a_non_positive_image_count_is_refused():
    with pytest.raises(HarnessError, match="--first 0"):
        doctor.run(_args("--first", "0"))


def test_a_baseline_measured_at_another_operating_threshold_is_not_the_doctors_reference(tmp_path):
    from types import SimpleNamespace

    from harness.doctor.bench import _baseline
    from harness.verdict.golden import golden_path
    from harness.verdict.golden_blessing import golden_from_result, write_golden

    from support import synthetic_results as syn

    truth = syn.truths(4)
    at_02 = syn.result(syn.predictions(truth), truth)
    at_05 = syn.result(syn.predictions(truth), truth, settings=replace(syn.SETTINGS, score_threshold=0.5))
    onnx = Path("m.onnx")
    dataset = SimpleNamespace(root="/data/sets/fire_smoke_val", manifest=syn.MANIFEST, samples=range(4))
    write_golden(golden_path(tmp_path, onnx, "onnx", "fire_smoke_val"), golden_from_result(at_02))
    assert _baseline(tmp_path, onnx, at_02, dataset)[1].startswith("golden ")
    golden, source = _baseline(tmp_path, onnx, at_05, dataset)
    assert source.startswith("clean run") and golden.settings.score_threshold == 0.5


def test_without_labels_the_doctor_runs_the_label_free_gates_and_leaves_out_the_modes_of_class_names(
    doctor_cache, capsys
):
    from harness.inputs.demo import demo_data

    frames = demo_data(doctor_cache) / "images" / "val"
    code = doctor.run(_args("--first", "30", "--cache", str(doctor_cache), "--images", str(frames), "--json"))
    table = json.loads(capsys.readouterr().out)
    rows = {r["mode"]: r for r in table["modes"]}
    assert {name for name, r in rows.items() if not r["injected"]} == {"class_names_swapped", "class_map_wrong"}
    for row in (*table["controls"], *(r for r in rows.values() if r["injected"])):
        assert row["correct"], row
        assert "test_map" not in (row["gate"] or ""), row  # no mAP gate without labels
    assert all(r["map50_difference"] is None for r in table["clean_runs"])
    assert code == 0


def test_a_mode_of_another_head_family_is_a_usage_error_before_any_work(tmp_path):
    from harness.inputs.demo import DEMO26_ONNX

    args = _args("--onnx", str(DEMO26_ONNX), "--cache", str(tmp_path), "--mode", "nms_without_sigmoid")
    with pytest.raises(HarnessError, match=r"^--mode nms_without_sigmoid: not a mistake of yolo26-one2one heads; "):
        doctor.run(args)
    assert not (tmp_path / "emulator").exists()  # refused before any emulated HEF was built


def test_doctor_json_for_the_yolo26_demo_lists_its_modes_each_caught_or_a_stated_gap_and_named(doctor_cache, capsys):
    from harness.inputs.demo import DEMO26_ONNX

    code = doctor.run(_args("--onnx", str(DEMO26_ONNX), "--first", "30", "--cache", str(doctor_cache), "--json"))
    table = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in table["modes"]] == [m.name for m in modes_for(HeadFamily.YOLO26_ONE2ONE)]
    for row in table["modes"]:
        assert row["injected"] and row["correct"], row
        assert row["gate_failed"] is (not row["gap"]), row
    assert [r["mode"] for r in table["controls"]] == ["clean", "clean_raw_heads"]
    assert [c["passed"] for c in table["clean_runs"]] == [True] * 5
    assert (code, table["problems"]) == (0, [])


def test_a_yolo26_mode_on_a_yolov8_export_is_a_usage_error(tmp_path):
    args = _args("--cache", str(tmp_path), "--mode", "one2one_decoded_with_nms")
    with pytest.raises(HarnessError, match=r"^--mode one2one_decoded_with_nms: not a mistake of yolov8 heads; "):
        doctor.run(args)


def test_bbox_only_on_a_family_without_a_bbox_only_op_is_a_usage_error_before_any_work(tmp_path):
    from harness.inputs.demo import DEMO26_ONNX

    args = _args("--onnx", str(DEMO26_ONNX), "--cache", str(tmp_path), "--bbox-only")
    with pytest.raises(
        HarnessError, match=r"^--bbox-only: HailoRT has no bbox-only op for YOLO26 \(one-to-one\) heads"
    ):
        doctor.run(args)
    assert not (tmp_path / "emulator").exists()
