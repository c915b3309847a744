"""The main job on the shipped demo, and the field report as a test: the same model calibrated on
64 off-domain frames must fail its gates with the score cap named as the cause."""

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness.backends.dfc import CompileRequest, compile_hef
from harness.core.errors import HarnessError
from harness.core.settings import MetricProtocol
from harness.inputs.dataset import DatasetError
from harness.inputs.demo import IN_DOMAIN, OFF_DOMAIN, SHIPPED_GOLDEN, demo_data
from harness.inputs.export_facts import file_sha256
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.job import path_bootstrap, run_job, summary_lines
from harness.pipeline.spec import JobConfig, SettingsSpec, planned_gates
from harness.verdict.golden_reading import load_golden
from harness.verdict.metrics import METRICS

from support import synthetic_results as synth


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> JobConfig:
    tmp = tmp_path_factory.mktemp("job")
    return JobConfig(report_dir=tmp / "report", cache_dir=tmp / "cache", progress=False)


def test_main_job_on_the_demo_passes_every_gate_against_the_shipped_golden(config, monkeypatch):
    monkeypatch.delenv("HARNESS_SHARED_CACHE", raising=False)  # its own: the emulated HEF's line is said as it is built
    lines: list[str] = []
    job = run_job(config, log=lines.append)
    assert [g.name for g in job.gates if not g.passed] == []
    # One line per stage, each before its work: what it is doing and how much of it.
    stages = [line.split(":")[0] for line in lines]
    expected = ["demo set", "demo set", "dataset synthetic_fire_smoke_seed0", "onnx", "onnx"]
    expected += ["emulated HEF of fire_smoke_yolo11n_256.onnx", "Hailo path", "emulated-hailo", "emulated-hailo"]
    assert stages == [*expected, "reports"], lines
    assert lines[2] == "dataset synthetic_fire_smoke_seed0: 100 images, 193 labelled boxes"
    assert lines[3] == "onnx: predicting 100 images"
    document = json.loads(job.reports["json"].read_text())
    assert document["calibration"].startswith("64 images of the demo set's in-domain frames")
    assert "a HEF compiled from them: 64 calibration images, below the 1024" in document["calibration"]
    assert document["calibration"].endswith("; this set holds no more; 1024 need a larger set (--calibration DIR)")
    assert [b["path"] for b in document["baselines"]] == ["onnx", "emulated-hailo"]
    assert all(Path(b["file"]).is_relative_to(SHIPPED_GOLDEN) for b in document["baselines"])
    names = {g.name for g in job.gates}
    assert "test_map[synthetic_fire_smoke_seed0-emulated-hailo]" in names
    assert "test_path_agreement[synthetic_fire_smoke_seed0-emulated-hailo]" in names
    assert [r.label for r in job.results] == ["onnx", "emulated-hailo (emulated)"]
    assert all(p.exists() for p in job.reports.values())
    assert "emulated" in job.reports["html"].read_text()
    assert "Worst layers" not in job.reports["markdown"].read_text()  # localisation only explains failures
    assert summary_lines(job)[-1] == f"PASSED: {len(job.gates)} of {len(job.gates)} gates passed"


def test_off_domain_calibration_fails_the_gate_and_names_the_score_cap(config):
    off = replace(
        config, hailo=replace(config.hailo, calibration=OFF_DOMAIN), report_dir=config.report_dir.parent / "report-off"
    )
    job = run_job(off, log=lambda line: None)
    failed = {g.name: g for g in job.gates if not g.passed}
    gate = failed["test_map[synthetic_fire_smoke_seed0-emulated-hailo]"]
    assert gate.observed < gate.baseline - gate.tolerance
    assert gate.interval is not None and gate.interval.high < 0  # a real drop, not noise
    assert gate.causes[0].name == "score_cap"
    hailo = job.results[1]
    assert hailo.predictions and max(float(d.scores.max(initial=0)) for d in hailo.predictions) < 0.5
    assert not any(name.endswith("-onnx]") for name in failed)  # the ONNX path is unaffected
    assert "Worst layers (emulated HEF vs float graph, per-tensor SQNR)" in job.reports["markdown"].read_text()


def _har(config, calibration: str, out) -> Path:
    """The demo model compiled by the fake Dataflow Compiler on the demo's in- or off-domain frames."""
    split = "calib" if calibration == "in-domain" else "calib_offdomain"
    request = CompileRequest(config.onnx, demo_data(config.cache_dir) / "images" / split)
    return compile_hef(request, out, cache_root=out / "cache").har


def test_a_har_adds_its_dfc_stages_and_the_stage_gate_passes_when_none_degrades(config, sdk, tmp_path):
    job = run_job(replace(config, har=_har(config, "in-domain", tmp_path)), log=lambda line: None)
    assert [r.label for r in job.results] == [
        "onnx",
        "dfc-fp-optimized (emulated)",
        "dfc-quantized (emulated)",
        "emulated-hailo (emulated)",
    ]
    assert [g.name for g in job.gates if not g.passed] == []
    assert job.gates[-1].name == "test_stages[synthetic_fire_smoke_seed0]"
    assert [g.name for g in job.gates].count("test_map[synthetic_fire_smoke_seed0-dfc-quantized]") == 0
    report = job.reports["markdown"].read_text()
    assert "## Stages (float -> fp\\_optimized -> quantized -> hardware)" in report  # Markdown-escaped
    assert "No stage loses more than 0.02 mAP@0.5 against the float model." in report


def test_each_dfc_stage_records_the_hef_and_calibration_its_har_was_compiled_with(config, sdk, tmp_path):
    har = _har(config, "off-domain", tmp_path)
    job = run_job(replace(config, har=har, report_dir=tmp_path / "r"), log=lambda line: None)
    folder = demo_data(config.cache_dir) / "images" / "calib_offdomain"
    for stage in job.results[1:3]:
        made = dict(stage.provenance.made_from)
        assert made["hef_sha256"] == file_sha256(har.with_name(har.name.replace("_optimized.har", ".hef")))
        assert made["calibration"] == f"{folder} (64)" and len(made["calibration_sha256"]) == 64
        assert stage.provenance.model_sha256 == file_sha256(har)  # the HAR it ran
    document = json.loads(job.reports["json"].read_text())
    assert document["paths"][2]["provenance"]["made_from"]["calibration"] == f"{folder} (64)"


def test_a_har_compiled_with_other_nms_thresholds_is_refused_before_anything_runs(config, sdk, tmp_path):
    har = _har(config, "in-domain", tmp_path)
    with pytest.raises(HarnessError, match=r"thresholds 0.2 / 0.7 .* the evaluation is at 0.25 / 0.7") as caught:
        run_job(
            replace(config, har=har, settings=SettingsSpec(score_threshold=0.25), report_dir=tmp_path / "r"),
            log=lambda line: None,
        )
    assert "--score-threshold 0.2 --iou-threshold 0.7" in str(caught.value)
    assert not (tmp_path / "r").exists()


def test_a_har_calibrated_off_domain_is_localised_to_quantization_with_the_score_cap(config, sdk, tmp_path):
    job = run_job(replace(config, har=_har(config, "off-domain", tmp_path)), log=lambda line: None)
    gate = {g.name: g for g in job.gates}["test_stages[synthetic_fire_smoke_seed0]"]
    assert not gate.passed
    assert "the first stage past the tolerance is quantized" in gate.message
    assert gate.causes[0].name == "score_cap"
    fp, quantized = job.results[1:3]
    assert abs(fp.metrics.map50 - job.results[0].metrics.map50) <= 0.02 < gate.baseline - quantized.metrics.map50
    assert "First stage past the tolerance: quantized." in job.reports["markdown"].read_text()


def test_a_har_whose_model_script_lost_the_normalization_is_localised_to_fp_optimized(config, sdk, tmp_path):
    har = _har(config, "in-domain", tmp_path)
    saved = json.loads(har.read_text())
    saved["emulation"]["normalization"] = None  # as if compiled from a model script without normalization
    broken = tmp_path / "no-normalization.har"
    broken.write_text(json.dumps(saved))
    job = run_job(replace(config, har=broken), log=lambda line: None)
    gate = {g.name: g for g in job.gates}["test_stages[synthetic_fire_smoke_seed0]"]
    assert not gate.passed and "the first stage past the tolerance is fp_optimized" in gate.message
    assert "lost before quantization" in gate.message
    assert gate.causes[0].name == "input_not_normalised"


def test_planned_gates_are_named_after_the_folder_a_dataset_yaml_points_at(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "data.yaml").write_text("path: ../fire_smoke_val\nval: images/val\nnames: [fire, smoke]\n")
    config = JobConfig(dataset=tmp_path / "configs" / "data.yaml", har=tmp_path / "m.har")
    planned = [str(g) for g in planned_gates(config)]
    assert planned[0] == "test_map[fire_smoke_val-onnx]" and planned[-1] == "test_stages[fire_smoke_val]"
    assert planned[-2] == "test_path_agreement[fire_smoke_val-emulated-hailo]" and len(planned) == 10
    assert str(planned_gates(JobConfig())[4]) == "test_map[synthetic_fire_smoke_seed0-emulated-hailo]"


def test_a_set_without_labels_is_refused_before_a_baseline_or_report_is_written(tmp_path):
    write_dataset(tmp_path / "d", Recipe(seed=9, train=0, val=2, calib=0))
    shutil.rmtree(tmp_path / "d" / "labels")  # the labels folder renamed away
    config = JobConfig(
        dataset=tmp_path / "d",
        golden_root=tmp_path / "golden",
        report_dir=tmp_path / "report",
        cache_dir=tmp_path / "cache",
        update_golden=True,
        progress=False,
    )
    with pytest.raises(DatasetError, match=r"0 labelled objects in 2 images \(2 without a label file"):
        run_job(config, log=lambda line: None)
    assert not (tmp_path / "golden").exists() and not (tmp_path / "report").exists()


def test_images_without_labels_are_held_to_the_onnx_path_and_label_free_baselines_naming_the_cap(config, tmp_path):
    images = demo_data(config.cache_dir) / "images" / "val"
    free = replace(
        config,
        images=images,
        hailo=replace(config.hailo, calibration=IN_DOMAIN),
        golden_root=tmp_path / "golden",
        report_dir=tmp_path / "report",
        update_golden=True,
    )
    blessed = run_job(free, log=lambda line: None)
    kinds = ["test_score_saturation", "test_box_count"]
    expected = [f"{k}[val-{p}]" for p in ("onnx", "emulated-hailo") for k in kinds]
    assert [g.name for g in blessed.gates] == [*expected, "test_path_agreement[val-emulated-hailo]"]
    assert blessed.passed and [str(g) for g in planned_gates(free)] == [g.name for g in blessed.gates]
    golden = load_golden(tmp_path / "golden" / "fire_smoke_yolo11n_256" / "val--emulated-hailo.json")
    assert not golden.labelled and math.isnan(golden.metrics.map50)
    assert "Label-free run: these images have no labels" in blessed.reports["markdown"].read_text()
    # the field report without labels: calibrated off-domain, the agreement fails and the cap is named
    off = replace(free, hailo=replace(config.hailo, calibration=OFF_DOMAIN), update_golden=False)
    job = run_job(replace(off, report_dir=tmp_path / "report-off"), log=lambda line: None)
    failed = [g for g in job.gates if not g.passed]
    assert [g.name for g in failed] == ["test_path_agreement[val-emulated-hailo]"]
    assert failed[0].causes[0].name == "score_cap"


def test_a_yolo26_export_runs_end_to_end_through_an_emulated_hef_without_sigmoid_or_nms(config, tmp_path):
    """The YOLO26n demo: its ONNX path reads the export's own top-k rows, its emulated HEF ends at the six
    one-to-one head convolutions (no sigmoid, no NMS op, as Ultralytics compiles it), decoded on the host;
    a first run blesses its baselines, the next one passes every gate against them."""
    from harness.inputs.demo import DEMO26_ONNX

    yolo26 = replace(config, onnx=DEMO26_ONNX, golden_root=tmp_path / "golden", report_dir=tmp_path / "report")
    lines: list[str] = []
    blessed = run_job(replace(yolo26, update_golden=True), log=lines.append)
    assert [g.name for g in blessed.gates if not g.passed] == []
    hef_line = next(line for line in lines if line.startswith("Hailo path:"))
    assert "class logits, yolo26-one2one heads" in hef_line and "NMS" not in hef_line
    onnx, emulated = (r.metrics for r in blessed.results)
    assert onnx.map50 > 0.6 and abs(onnx.map50 - emulated.map50) < 0.05
    again = run_job(yolo26, log=lambda line: None)
    assert [g.name for g in again.gates if not g.passed] == []
    assert len(again.gates) == len(planned_gates(yolo26))


def test_a_set_too_small_to_measure_is_blessed_only_knowingly_and_every_run_then_says_its_gates_cannot_fail(
    config, tmp_path
):
    from harness.verdict.golden import GoldenError

    write_dataset(tmp_path / "d", Recipe(seed=9, train=0, val=2, calib=0))
    small = replace(
        config,
        dataset=tmp_path / "d",
        golden_root=tmp_path / "golden",
        report_dir=tmp_path / "report",
        update_golden=True,
    )
    first = run_job(replace(small, update_golden=False), log=lambda line: None)
    unblessed = next(g for g in first.gates if g.name == "test_map[d-onnx]")
    assert "blessing this run would be refused, its baseline too weak to fail: " in unblessed.message
    assert "fewer than 10" in unblessed.message and "--update-golden --accept-weak-baseline" in unblessed.message
    with pytest.raises(
        GoldenError,
        match=r"labelled objects, fewer than 10: too few to measure a mAP; .*"
        r"--update-golden --accept-weak-baseline",
    ):
        run_job(small, log=lambda line: None)
    assert not (tmp_path / "golden").exists()
    blessed = run_job(replace(small, accept_weak_baseline=True), log=lambda line: None)
    again = run_job(replace(small, update_golden=False), log=lambda line: None)
    weak = [g.name for g in again.gates if g.weak]
    assert {"test_map[d-onnx]", "test_map[d-emulated-hailo]"} <= set(weak), weak
    marked = [line for line in summary_lines(again) if line.startswith("WEAK PASS  ")]
    assert [line.split()[2].rstrip(":") for line in marked] == weak and all("too few" in line for line in marked)
    assert summary_lines(again)[-1].endswith(
        f"; {len(weak)} of them held to weak baselines that cannot fail (blessed with --accept-weak-baseline)"
    )
    assert blessed.golden_changes
    markdown = again.reports["markdown"].read_text()
    assert f"# Accuracy report: WEAK PASS ({len(weak)} of {len(again.gates)} gates held to weak baselines" in markdown
    assert "; blessed weak knowingly (few\\_objects" in markdown  # Markdown-escaped
    document = json.loads(again.reports["json"].read_text())
    sha = again.results[0].provenance.model_sha256
    assert document["baselines"][0]["blessed_sha256"] == sha == document["baselines"][0]["run_sha256"]


@pytest.mark.parametrize("data", ["demo", "fire_smoke_val", "fire_smoke_val images only"])
def test_bless_then_rerun_the_same_job_and_every_gate_passes(config, shared_fixtures, tmp_path, data):
    """The demo, and the demo model on real fire/smoke images (its agreement with the ONNX path, 84 %, is
    blessed: the rerun holds it to its own)."""
    real = shared_fixtures / "datasets" / "fire_smoke_val"
    where = {"demo": {}, "fire_smoke_val": {"dataset": real}, "fire_smoke_val images only": {"images": real / "images"}}
    job = replace(config, **where[data], golden_root=tmp_path / "golden", report_dir=tmp_path / "report")
    run_job(replace(job, update_golden=True, accept_weak_baseline=data != "demo"), log=lambda line: None)
    again = run_job(job, log=lambda line: None)
    assert [g.name for g in again.gates] == [str(g) for g in planned_gates(job)]
    assert [g.text for g in again.gates if not g.passed] == []
    agreement = again.gates[-1]
    assert agreement.id.kind == "path_agreement" and agreement.baseline == pytest.approx(agreement.observed, abs=1e-6)
    assert "held to blessed" in agreement.text


def test_the_bootstrap_beside_the_map_gates_measures_with_the_runs_metric(tmp_path):
    """Under --metric ultralytics the interval's point is the difference of Ultralytics' mAPs, not COCO's."""
    case = synth.report_case(tmp_path / "case")
    truths = case.dataset.ground_truths
    points = {}
    for metric in MetricProtocol:
        settings = replace(synth.SETTINGS, class_map=(0, 1), metric=metric)
        onnx, hailo = (
            replace(r, settings=settings, metrics=METRICS[metric](truths, r.predictions, synth.NAMES, 0.2))
            for r in (case.onnx, case.hailo)
        )
        boot = path_bootstrap(case.dataset, onnx, hailo)
        assert boot.map50.point == pytest.approx(hailo.metrics.map50 - onnx.metrics.map50, abs=1e-12), metric
        assert boot.map50_95.point == pytest.approx(hailo.metrics.map50_95 - onnx.metrics.map50_95, abs=1e-12)
        points[metric] = boot.map50.point
    assert points[MetricProtocol.COCO] != pytest.approx(points[MetricProtocol.ULTRALYTICS], abs=1e-6)
