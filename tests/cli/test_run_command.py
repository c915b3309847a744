"""``hailo-harness run``: its options reach the main job as they say; the job itself is tested in test_job.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness.pipeline.job as job_module
from harness.cli import main as cli
from harness.core.specs import FormatType
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.job import JobResult
from harness.pipeline.spec import Backend, JobConfig

from support.interrupt import interrupt_at, slow_inference


@pytest.fixture
def configs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[JobConfig]:
    """The configs the command hands to the job; the job 'passes' without running."""
    seen: list[JobConfig] = []

    def fake_job(config: JobConfig, log: object) -> JobResult:
        seen.append(config)
        return JobResult(results=(), gates=(), reports={})

    monkeypatch.setattr(job_module, "run_job", fake_job)  # run imports it when it runs
    monkeypatch.chdir(tmp_path)
    return seen


def test_a_hef_implies_the_hailort_backend_with_the_devices_asked_for(configs: list[JobConfig]) -> None:
    argv = [
        "run",
        "--onnx",
        "m.onnx",
        "--hef",
        "m.hef",
        "--hailo-device",
        "0000:01:00.0",
        "--hailo-device",
        "0000:02:00.0",
    ]
    assert cli.main([*argv, "--hailo-format", "uint8"]) == 0
    (config,) = configs
    assert config.hailo.hailo_format is FormatType.UINT8
    assert (config.hailo.backend, config.hailo.hef, config.hailo.hailo_devices) == (
        Backend.HAILORT,
        Path("m.hef"),
        ("0000:01:00.0", "0000:02:00.0"),
    )
    assert config.invocation[:2] == ("hailo-harness", "run")


def test_without_a_hef_the_hailo_path_is_emulated_and_a_har_adds_its_stages(configs: list[JobConfig]) -> None:
    assert cli.main(["run", "--onnx", "m.onnx", "--har", "model_optimized.har", "--calibration", "off-domain"]) == 0
    (config,) = configs
    assert (config.hailo.backend, config.har, config.hailo.calibration) == (
        Backend.EMULATOR,
        Path("model_optimized.har"),
        "off-domain",
    )
    assert config.hailo.hailo_format is FormatType.FLOAT32
    assert [s.stage.value for s in config.stages] == ["fp_optimized", "quantized"]


def test_a_device_without_the_hailort_backend_is_refused(
    configs: list[JobConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--hailo-device", "0000:01:00.0"]) == 2
    assert "--hailo-device belongs to --backend hailort, not --backend emulator" in capsys.readouterr().err
    assert configs == []


def test_a_hef_or_har_without_its_export_is_refused_not_paired_with_the_demo_model(
    configs: list[JobConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--hef", "m.hef"]) == 2
    assert "--hef: needs --onnx M.onnx (the model's export, for its class names)" in capsys.readouterr().err
    assert configs == []


@pytest.mark.parametrize("flag", ["--har", "--hef", "--replay"])
def test_a_model_file_that_is_not_there_is_refused_before_anything_runs(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--onnx", "m.onnx", flag, "/nope.file"]) == 2
    assert f"{flag} /nope.file: expected a file, found nothing" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing generated, nothing written


@pytest.fixture
def no_evaluation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real job up to its evaluation, which fails the test."""

    def evaluate(*args: object) -> None:
        raise AssertionError("a path was evaluated")

    monkeypatch.setattr(job_module, "evaluate_spec", evaluate)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name", [os.fsdecode(b"caf\xe9"), "d" * 240], ids=["not-utf8", "240-characters"])
def test_a_dataset_name_no_baseline_file_can_have_is_refused_in_one_line_before_the_work(
    name: str, no_evaluation: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / name
    write_dataset(data, Recipe(seed=3, train=0, val=2, calib=0))
    assert cli.main(["run", "--dataset", str(data)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("hailo-harness run: error: ")
    assert "caf\\udce9" in err or "make a baseline file name longer than 200 bytes" in err
    assert not (tmp_path / ".harness-cache" / "predictions").exists() and not (tmp_path / "reports").exists()


def test_a_report_folder_that_cannot_be_made_is_refused_before_the_work(
    no_evaluation: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "small"
    write_dataset(data, Recipe(seed=3, train=0, val=2, calib=0))
    (tmp_path / "file").write_text("not a folder")
    assert cli.main(["run", "--dataset", str(data), "--report", str(tmp_path / "file" / "rep")]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == (
        f"hailo-harness run: error: cannot use {str(tmp_path / 'file' / 'rep')!r}: Not a directory "
        "(part of that path is a file, not a folder: check the path)"
    )


def test_ctrl_c_mid_run_is_one_line_exit_130_and_the_rerun_recovers(tmp_path: Path) -> None:
    """A real run, sent SIGINT while it infers (held there by the test); run again, it finishes from what
    its caches kept."""
    data = tmp_path / "fire_smoke_small"
    write_dataset(data, Recipe(seed=4, train=0, val=6, calib=0))
    places = ("--cache", "cache", "--golden", "golden", "--report", "reports")
    args = ("run", "--onnx", str(DEMO), "--dataset", str(data), *places)
    command = [sys.executable, "-m", "harness.cli.main", *args]
    inferring = tmp_path / "inferring"
    held = slow_inference(inferring, "harness.cli.main", *args)
    stopped = interrupt_at(held, "onnx: predicting", stream="stderr", cwd=tmp_path, sentinel=inferring)
    assert stopped.returncode == 130, stopped.err
    said = stopped.err[len(stopped.said_before) :]
    assert said.splitlines()[-1] == "hailo-harness run: interrupted; nothing half-written is kept", said
    assert not [word for word in ("KeyboardInterrupt", "Traceback", ".py", "site-packages") if word in said], said
    assert not (tmp_path / "golden").exists() and not (tmp_path / "reports" / "report.json").exists()
    rerun = subprocess.run([*command, "--update-golden"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert (tmp_path / "reports" / "report.json").is_file()
