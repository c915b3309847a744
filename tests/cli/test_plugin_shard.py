"""The plugin's share of a fleet: ``--shard K/N`` stores this runner's share for ``hailo-harness
merge``, and under pytest-xdist each worker takes a device of its own from ``--hailo-device``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.inputs.demo import DEMO_ONNX as DEMO

pytest_plugins = ["pytester"]


def test_a_plugin_shard_is_one_item_and_merges_with_a_run_shard_into_the_gates_of_the_whole_set(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache, stores = tmp_path / "cache", [tmp_path / "s1", tmp_path / "s2"]
    args = [f"--onnx={DEMO}", f"--cache={cache}", f"--report={stores[0]}", "--shard=1/2"]
    result = pytester.runpytest_subprocess(*args, "-q", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED hailo-harness::test_shard[[]1/2[]]"])
    assert json.loads((stores[0] / "shard.json").read_text())["shard"] == "1/2"
    # the other runner is the command line: the plugin's store and run's make one job
    other = ["--onnx", str(DEMO), "--cache", str(cache), "--report", str(stores[1]), "--shard", "2/2"]
    assert cli.main(["run", *other]) == 0
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
