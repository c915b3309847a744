"""The doctor on the real fire/smoke fixture images (their first 30), where the project's exports, trained on the
synthetic set, find few boxes: what the images cannot show is said as a gap found on them, and what the HEF's own
quant info shows is named however few scores show it."""

from pathlib import Path

import pytest

from harness.doctor.bench import open_bench
from harness.doctor.modes import modes_for
from harness.doctor.table import run_doctor, run_mode
from harness.pipeline.spec import SettingsSpec

IMAGES = 30
YOLOX = Path(__file__).resolve().parents[1] / "support" / "data" / "fire_smoke_yolox_256.onnx"


@pytest.fixture(scope="session")
def doctor_cache(tmp_path_factory):
    """The cache the other doctor tests use too (same session path), so nothing is made twice."""
    return tmp_path_factory.getbasetemp() / "doctor-cache"


def _bench(shared_fixtures, doctor_cache, onnx=None):
    real = shared_fixtures / "datasets" / "fire_smoke_val"
    settings = SettingsSpec(score_threshold=0.2)
    if onnx is None:  # the demo export
        return open_bench(dataset=real, first=IMAGES, cache_dir=doctor_cache, settings=settings)
    return open_bench(onnx, dataset=real, first=IMAGES, cache_dir=doctor_cache, settings=settings)


def _mode(bench, name):
    return {m.name: m for m in modes_for(bench.run.family)}[name]


def test_an_off_domain_calibration_that_caps_no_score_of_these_images_is_a_gap_found_on_them(
    shared_fixtures, doctor_cache
):
    bench = _bench(shared_fixtures, doctor_cache, YOLOX)
    row = run_mode(bench, _mode(bench, "calibration_off_domain"))
    assert row.gap.startswith("its class outputs still represent scores up to"), row
    assert (row.gate_failed, row.diagnosis, row.correct) == (False, "none", True), row


def test_an_nms_hef_without_its_sigmoid_is_named_by_its_quant_info_where_no_score_leaves_zero_to_one(
    shared_fixtures, doctor_cache
):
    bench = _bench(shared_fixtures, doctor_cache)
    row = run_mode(bench, _mode(bench, "nms_without_sigmoid"))
    assert row.gate_failed and (row.diagnosis, row.correct) == ("sigmoid_missing", True), row.cause
    assert "reads class outputs that hold logits" in row.cause, row.cause
    off = run_mode(bench, _mode(bench, "calibration_off_domain"))  # its cap under the float model's top: caught
    assert not off.gap and off.gate_failed and (off.diagnosis, off.correct) == ("score_cap", True), off


def test_a_bench_where_the_float_model_finds_under_five_boxes_is_refused_in_one_line(shared_fixtures, doctor_cache):
    from harness.inputs.dataset import DatasetError
    from harness.inputs.demo import DEMO26_ONNX

    real = shared_fixtures / "datasets" / "fire_smoke_val"
    high = SettingsSpec(score_threshold=0.5)
    bench = open_bench(DEMO26_ONNX, dataset=real, first=IMAGES, cache_dir=doctor_cache, settings=high)
    with pytest.raises(DatasetError, match=r"the float model finds \d box(es)? on the 30 images .* at least 5: give"):
        run_doctor(bench)
