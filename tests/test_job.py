"""The main job on the shipped demo, and the field report as a test: the same model calibrated on
64 off-domain frames must fail its gates with the score cap named as the cause."""

from dataclasses import replace

import pytest

from harness.job import OFF_DOMAIN, JobConfig, run_job, summary_lines


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> JobConfig:
    tmp = tmp_path_factory.mktemp("job")
    return JobConfig(report_dir=tmp / "report", cache_dir=tmp / "cache", progress=False)


def test_main_job_on_the_demo_passes_every_gate_against_the_shipped_golden(config):
    job = run_job(config, log=lambda line: None)
    assert [g.name for g in job.gates if not g.passed] == []
    names = {g.name for g in job.gates}
    assert "test_map[synthetic_fire_smoke_seed0-emulated-hailo]" in names
    assert "test_path_agreement[synthetic_fire_smoke_seed0-emulated-hailo]" in names
    assert [r.label for r in job.results] == ["onnx", "emulated-hailo (emulated)"]
    assert all(p.exists() for p in job.reports.values())
    assert "emulated" in job.reports["html"].read_text()
    assert "Worst layers" not in job.reports["markdown"].read_text()  # localisation only explains failures
    assert summary_lines(job)[-1] == f"PASSED: {len(job.gates)} of {len(job.gates)} gates passed"


def test_off_domain_calibration_fails_the_gate_and_names_the_score_cap(config):
    off = replace(config, calibration=OFF_DOMAIN, report_dir=config.report_dir.parent / "report-off")
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
