"""The plugin under pytest-xdist: a usage error reaches the user as it does without it (status 4, the
same one line), and ``--hef`` without images runs the HEF's static checks alone and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.synthetic import Recipe, write_dataset

pytest_plugins = ["pytester"]

DEVICES = ("--hailo-device", "0000:01:00.0", "--hailo-device", "0000:02:00.0")  # the README's several devices
MNIST = "hef/hailo8_mnist_cnn.hef"  # a HEF no demo gate applies to (shared fixtures)


def _error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines if line.startswith("ERROR:")]


def _refused_alike(pytester: pytest.Pytester, args: list[str]) -> str:
    """The run refused without pytest-xdist and under ``-n 2``: status 4 and the same one line both
    times, no test run and no traceback; the line."""
    alone = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    spread = pytester.runpytest_subprocess("-n", "2", *args, "-p", "no:cacheprovider")
    for result in (alone, spread):
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
    (line,) = _error_lines(alone)
    assert _error_lines(spread) == [line]
    return line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([f"--onnx={DEMO}", "--score-threshold=2"], "--score-threshold '2': expected a number from 0 to 1"),
        ([f"--onnx={DEMO}", "--backend=hailort"], "--backend hailort: needs --hef M.hef"),
        ([f"--onnx={DEMO}", "--hailo-format=int4"], "--hailo-format 'int4': expected one of ['float32', 'uint8']"),
        ([f"--onnx={DEMO}", "--batch=0"], "--batch '0': expected"),
        ([f"--onnx={DEMO}", "--nms=bogus"], "--nms 'bogus': expected one of"),
        ([f"--onnx={DEMO}", "--shard=3/2"], "--shard '3/2': expected"),
        ([f"--onnx={DEMO}", "--release=v1"], "--release: belongs to --update-golden"),
        ([f"--onnx={DEMO}", "--har=m.har"], "--har m.har: the Hailo Dataflow Compiler is not installed"),
        (["--decoder-head=yolo26-one2one"], "--decoder-head yolo26-one2one: belongs to --decoder"),
        (["--decoder=no_such_module:decode"], "cannot import module 'no_such_module'"),
        (["-p", "no:harness"], "-p no:harness: no plugin has that name"),
    ],
    ids=lambda v: " ".join(v).replace(f"--onnx={DEMO}", "demo") if isinstance(v, list) else "",
)
def test_a_bad_option_is_refused_under_xdist_with_the_status_and_line_it_has_without(
    pytester: pytest.Pytester, args: list[str], says: str
) -> None:
    assert says in _refused_alike(pytester, args)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ([], "--hailo-device is an option of the harness's gates, and none was asked for"),
        ([f"--onnx={DEMO}"], "--hailo-device belongs to --backend hailort, not --backend emulator"),
        ([f"--onnx={DEMO}", "--hef={hef}"], "--hailo-device is an option of the evaluation gates, and --hef"),
    ],
    ids=["alone", "onnx", "onnx_hef_no_dataset"],
)
def test_the_readmes_several_devices_recipe_missing_a_part_is_refused_alike_under_xdist(
    pytester: pytest.Pytester, shared_fixtures: Path, given: list[str], says: str
) -> None:
    args = [arg.format(hef=shared_fixtures / MNIST) for arg in given]
    assert says in _refused_alike(pytester, [*DEVICES, *args])


@pytest.mark.parametrize("workers", [("-n", "3"), ("--tx", "3*popen", "--dist", "load")], ids=["n", "tx"])
def test_more_workers_than_devices_is_refused_by_the_controller_before_any_worker_runs_the_job(
    pytester: pytest.Pytester, tmp_path: Path, workers: tuple[str, ...]
) -> None:
    data = tmp_path / "fire_smoke_val"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    args = [f"--onnx={DEMO}", f"--dataset={data}", "--backend=hailort", "--hef=m.hef", *DEVICES]
    result = pytester.runpytest_subprocess(*workers, *args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert _error_lines(result) == [
        "ERROR: --hailo-device 0000:01:00.0,0000:02:00.0: pytest-xdist worker gw2 has no device of its own "
        "(2 devices); expected one --hailo-device per worker (pytest -n 2)"
    ]
    assert "workers [" not in result.stdout.str()  # no worker was started


def test_fewer_workers_than_devices_is_refused_by_the_controller_naming_the_unused_device(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    data = tmp_path / "fire_smoke_val"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    args = [f"--onnx={DEMO}", f"--dataset={data}", "--backend=hailort", "--hef=m.hef", *DEVICES]
    result = pytester.runpytest_subprocess("-n", "1", *args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert _error_lines(result) == [
        "ERROR: --hailo-device 0000:01:00.0,0000:02:00.0: 2 devices for 1 pytest-xdist worker(s), so "
        "0000:02:00.0 would not be used; expected one worker per device (pytest -n 2)"
    ]
    assert "workers [" not in result.stdout.str()  # no worker was started


def test_an_ini_key_the_option_table_refuses_is_refused_alike_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\nharness_onnx = {DEMO}\nharness_iou_threshold = 1.5\n")
    assert "--iou-threshold '1.5': expected a number from 0 to 1" in _refused_alike(pytester, [])


def test_a_dataset_the_loader_refuses_is_refused_alike_under_xdist(pytester: pytest.Pytester, tmp_path: Path) -> None:
    data = tmp_path / "no_yaml"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    (data / "data.yaml").unlink()  # labelled images, but nothing names their classes
    line = _refused_alike(pytester, [f"--onnx={DEMO}", f"--dataset={data}", f"--cache={tmp_path / 'cache'}"])
    assert line.startswith(f"ERROR: {data}: ") and "yaml" in line


def test_a_usage_error_a_worker_alone_meets_reaches_the_controllers_terminal_with_status_4(
    pytester: pytest.Pytester,
) -> None:
    """A refusal the controller could not foresee (here a conftest changes an option in the workers only)
    is not lost with the worker that met it."""
    pytester.makeconftest(
        "import os\n\n"
        "def pytest_configure(config):\n"
        "    if os.environ.get('PYTEST_XDIST_WORKER'):\n"
        "        config.option.harness_score_threshold = '2'\n"
    )
    result = pytester.runpytest_subprocess(
        "-n", "2", "--decoder=harness.families.yolov8.decode:decode", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert _error_lines(result) == ["ERROR: --score-threshold '2': expected a number from 0 to 1"]


def test_the_gates_of_a_valid_run_are_planned_and_run_under_xdist(pytester: pytest.Pytester) -> None:
    """The controller's plan refuses nothing a valid run asks for."""
    result = pytester.runpytest_subprocess(
        "-n", "2", "--decoder=harness.families.yolov8.decode:decode", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.OK
    assert "passed" in result.stdout.str() and not _error_lines(result)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["alone", "xdist"])
def test_a_hef_without_images_runs_its_static_checks_alone_and_says_what_the_evaluation_gates_need(
    pytester: pytest.Pytester, shared_fixtures: Path, xdist: tuple[str, ...]
) -> None:
    args = [*xdist, f"--hef={shared_fixtures / MNIST}", f"--onnx={DEMO}", "-rf", "-p", "no:cacheprovider"]
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(failed=1, skipped=12)  # the static checks: the input shape differs, the rest skip
    assert "test_hef_static[input_shape]" in result.stdout.str()
    assert "test_map[" not in result.stdout.str() and "demo set" not in result.stdout.str()  # no job, no demo set
    result.stdout.fnmatch_lines(
        [
            f"hailo-harness: --hef {shared_fixtures / MNIST}: the HEF's static checks only; the evaluation gates "
            "(the Hailo path against the ONNX export and the baselines) need --onnx M.onnx with --dataset D "
            "(labelled) or --images DIR"
        ]
    )


def test_a_hef_beside_a_dataset_adds_the_device_paths_gates_to_its_static_checks(
    pytester: pytest.Pytester, shared_fixtures: Path, tmp_path: Path
) -> None:
    data = tmp_path / "fire_smoke_val"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    args = (f"--onnx={DEMO}", f"--hef={shared_fixtures / MNIST}", f"--dataset={data}", "--collect-only", "-q")
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert "test_map[fire_smoke_val-hailo]" in result.stdout.str()
    assert "the HEF's static checks only" not in result.stdout.str()
