"""``hailo-harness calibration-check``: a calibration set judged before any compile, on the demo."""

import argparse
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.cli.commands import calibration_check
from harness.cli.main import main
from harness.core import signing
from harness.core.errors import HarnessError
from harness.doctor.range_cache import _read
from harness.doctor.range_cover import images_to_add, uncovered
from harness.inputs.calibration import calibration_paths, list_file, write_list_file
from harness.inputs.demo import DEMO_ONNX


@pytest.fixture(scope="session")
def check_cache(tmp_path_factory):
    return tmp_path_factory.getbasetemp() / "calibration-check-cache"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    calibration_check.add_arguments(parser)
    return parser.parse_args(argv)


def test_off_domain_calibration_is_unfit_named_score_cap_and_the_images_it_recommends_restore_the_accuracy(
    check_cache, tmp_path, capsys
):
    out, copied = tmp_path / "out", tmp_path / "copied"
    argv = ("--calibration", "off-domain", "--cache", str(check_cache), "--report", str(out), "--json")
    code = calibration_check.run(_args(*argv, "--copy-to", str(copied)))
    found = json.loads(capsys.readouterr().out)
    assert code == 1 and found["verdict"] == "score_cap" and not found["fit"]
    assert found["score_ceiling"] < 0.5 and found["capped"] > 0
    assert found["versus_in_domain"]["map50"]["high"] < 0
    assert 0 < len(found["additions"]) <= found["images"]
    assert found["with_additions"]["map50"] >= found["in_domain"]["map50"] - 0.01
    assert found["with_additions"]["map50"] > found["calibrated"]["map50"]
    listed = list_file(out / "calibration-additions.txt")
    assert [str(p) for p in listed] == found["additions"]
    assert sorted(p.name for p in copied.iterdir()) == sorted(p.name for p in listed)
    combined = list_file(out / "calibration-with-additions.txt")
    assert combined[-len(listed) :] == listed and len(combined) == found["images"] + len(listed)


def test_in_domain_calibration_is_fit_and_recommends_nothing(check_cache, tmp_path, capsys):
    code = calibration_check.run(
        _args("--calibration", "in-domain", "--cache", str(check_cache), "--report", str(tmp_path))
    )
    text = capsys.readouterr().out
    assert code == 0
    assert text.startswith("calibration ") and ": FIT: mAP@0.5 " in text.splitlines()[0]
    assert "add these" not in text and not (tmp_path / "calibration-additions.txt").exists()


def test_a_check_without_a_calibration_set_is_refused_in_one_line():
    with pytest.raises(HarnessError, match=r"^--calibration DIR: expected the calibration images to check"):
        calibration_check.run(_args())


def test_the_command_exits_2_naming_a_pool_that_is_not_a_folder(tmp_path, capsys):
    code = main(["calibration-check", "--calibration", str(tmp_path), "--pool", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 2 and "--pool" in err and "not a folder" in err and "Traceback" not in err


def test_a_list_file_names_images_relative_to_its_folder_and_skips_comments(tmp_path):
    (tmp_path / "imgs").mkdir()
    for name in ("a.png", "b.jpg"):
        (tmp_path / "imgs" / name).write_bytes(b"x")
    listing = tmp_path / "cal.txt"
    listing.write_text("# chosen\nimgs/b.jpg\n\nimgs/a.png\n")
    assert calibration_paths(listing, 2) == (tmp_path / "imgs" / "b.jpg", tmp_path / "imgs" / "a.png")
    written = tmp_path / "again.txt"
    write_list_file(written, list_file(listing))
    assert written.read_text() == "imgs/b.jpg\nimgs/a.png\n"


def test_a_list_file_line_that_names_no_image_is_refused_with_its_line(tmp_path):
    listing = tmp_path / "cal.txt"
    listing.write_text("# chosen\nmissing.png\n")
    with pytest.raises(HarnessError, match=r"cal.txt', line 2: 'missing.png'; expected the path of an image file"):
        calibration_paths(listing, 1)


def test_a_range_record_edited_after_it_was_written_is_not_used(tmp_path):
    record = {"format": 1, "graph": "k", "low": [0.0, 1.0], "high": [2.0, 3.0]}
    file = tmp_path / "r.json"
    file.write_text(json.dumps(signing.with_seal(record, None)))
    assert _read(file, "k", 2) == ([0.0, 1.0], [2.0, 3.0])
    assert _read(file, "other graph", 2) is None
    edited = json.loads(file.read_text())
    edited["high"][1] = 9.0
    file.write_text(json.dumps(edited))
    assert _read(file, "k", 2) is None


_finite = st.floats(-100, 100, allow_nan=False, width=32)


@given(arrays(np.float64, (2, 4), elements=_finite), arrays(np.float64, (2, 4), elements=_finite))
def test_the_share_a_range_misses_lies_in_0_1_and_is_0_for_a_range_that_holds_the_target(a, b):
    low, high = np.minimum(a[0], a[1]), np.maximum(a[0], a[1])
    target_low, target_high = np.minimum(b[0], b[1]), np.maximum(b[0], b[1])
    share = uncovered(low, high, target_low, target_high)
    assert ((share >= 0) & (share <= 1)).all()
    assert (uncovered(np.minimum(low, target_low), np.maximum(high, target_high), target_low, target_high) == 0).all()


@given(arrays(np.float64, (6, 2, 5), elements=_finite), st.integers(0, 5))
def test_the_images_chosen_leave_no_tensor_less_covered_than_the_images_it_is_held_to(values, start):
    lows, highs = values.min(axis=1), values.max(axis=1)  # (images, tensors)
    target_low, target_high = lows.min(axis=0), highs.max(axis=0)
    own = [start]  # held to as well as one evaluated image covers them
    allowed = uncovered(lows[own].min(axis=0), highs[own].max(axis=0), target_low, target_high)
    base_low, base_high = np.zeros(5), np.zeros(5)
    picks = images_to_add(base_low, base_high, lows, highs, target_low, target_high, allowed)
    low = np.minimum(base_low, lows[picks].min(axis=0)) if picks else base_low
    high = np.maximum(base_high, highs[picks].max(axis=0)) if picks else base_high
    assert (uncovered(low, high, target_low, target_high) <= allowed + 1e-12).all()
    assert len(set(picks)) == len(picks)


pytest_plugins = ["pytester"]


def test_the_plugin_judges_the_jobs_calibration_set_as_one_item_failing_where_it_is_unfit(pytester, check_cache):
    args = (f"--onnx={DEMO_ONNX}", f"--cache={check_cache}", "-k", "test_calibration_check", "-q")
    unfit = pytester.runpytest_subprocess("--calibration-check", "--calibration=off-domain", *args)
    unfit.stdout.fnmatch_lines(["*calibration * is unfit (score_cap): *add the * images listed in *", "*1 failed*"])
    fit = pytester.runpytest_subprocess("--calibration-check", "--calibration=in-domain", *args)
    fit.stdout.fnmatch_lines(["*1 passed*"])


def test_the_plugin_refuses_a_calibration_check_without_a_calibration_set(pytester):
    result = pytester.runpytest_subprocess(f"--onnx={DEMO_ONNX}", "--calibration-check", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--calibration-check: the set it judges is --calibration DIR; none given*"])
