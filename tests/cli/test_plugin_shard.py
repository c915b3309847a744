"""The plugin's share of a fleet: ``--shard K/N`` stores this runner's share for ``hailo-harness
merge``, and under pytest-xdist each worker takes a device of its own from ``--hailo-device``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.inputs.demo import DEMO_ONNX as DEMO

pytest_plugins = ["pytester"]


def test_shards_run_as_one_item_each_and_merge_into_the_gates_of_the_whole_set(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, stores = tmp_path / "cache", [tmp_path / "s1", tmp_path / "s2"]
    for index, store in enumerate(stores, 1):
        args = [f"--onnx={DEMO}", f"--cache={cache}", f"--report={store}", f"--shard={index}/2"]
        result = pytester.runpytest_subprocess(*args, "-q", "-rA")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"PASSED hailo-harness::test_shard[[]{index}/2[]]"])
        assert json.loads((store / "shard.json").read_text())["shard"] == f"{index}/2"
    report = tmp_path / "merged"
    assert cli.main(["merge", *map(str, stores), "--cache", str(cache), "--report", str(report)]) == 0
    assert "PASSED: 9 of 9 gates passed" in capsys.readouterr().out
    assert (report / "report.json").is_file()


def test_an_xdist_worker_without_a_device_of_its_own_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    result = pytester.runpytest_subprocess("--hailo-device", "0000:01:00.0", "--hailo-device", "0000:02:00.0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-xdist worker gw2 has no device of its own (2 devices)*pytest -n 2*"])
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")  # its own device: what is missing is then the gates
    result = pytester.runpytest_subprocess("--hailo-device", "0000:01:00.0", "--hailo-device", "0000:02:00.0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--hailo-device is an option of the harness's gates, and none was asked for*"])
