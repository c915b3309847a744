"""``hailo-harness doctor``: the table for the demo, as text and as JSON."""

import argparse
import json

import pytest

from harness.cli.commands import doctor
from harness.core.errors import HarnessError
from harness.doctor.modes import MODES


@pytest.fixture(scope="session")
def doctor_cache(tmp_path_factory):
    """The cache test_catalogue.py uses too (same session path), so nothing is made twice."""
    return tmp_path_factory.getbasetemp() / "doctor-cache"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    doctor.add_arguments(parser)
    return parser.parse_args(argv)


def test_doctor_json_for_the_demo_lists_every_mode_caught_and_named(doctor_cache, capsys):
    code = doctor.run(_args("--first", "30", "--cache", str(doctor_cache), "--json"))
    table = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in table["modes"]] == [m.name for m in MODES]
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


def test_a_non_positive_image_count_is_refused():
    with pytest.raises(HarnessError, match="--first 0"):
        doctor.run(_args("--first", "0"))
