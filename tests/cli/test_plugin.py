"""The pytest plugin, driven through pytester exactly as a user's pytest run would."""

from pathlib import Path

import pytest

from harness.backends.dfc import CompileRequest, compile_hef
from harness.conformance.suite import properties
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.synthetic import Recipe, write_dataset

from support.interrupt import interrupt_at, slow_inference

pytest_plugins = ["pytester"]
PROPERTIES = properties()  # the same sentences for every head family

EMPTY_DECODER = """
from harness.core.detections import Detections

def decode(outputs, specs, config):
    return Detections.empty()
"""

BUILTIN_DECODER_TEST = """
from harness.families.yolov8.decode import decode

def test_builtin(decoder_conformance):
    decoder_conformance(decode)
"""


def test_decoder_option_adds_one_named_item_per_conformance_property(pytester):
    pytester.makepyfile(userdec=EMPTY_DECODER)
    result = pytester.runpytest_subprocess("--decoder", "userdec:decode", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["*test_decoder_conformance[[]finds_every_planted_object_with_its_box_score_and_class[]]*"]
    )
    assert result.stdout.str().count("test_decoder_conformance[") == len(PROPERTIES)


def test_broken_decoder_fails_naming_the_property_and_what_it_got(pytester):
    pytester.makepyfile(userdec=EMPTY_DECODER)
    result = pytester.runpytest_subprocess("--decoder", "userdec:decode", "-q")
    result.assert_outcomes(failed=len(PROPERTIES))
    result.stdout.fnmatch_lines(
        ["*breaks 'applies the sigmoid to logit class outputs'*expected * planted detections, got 0*"]
    )


def test_decoder_can_be_set_as_an_ini_key(pytester):
    pytester.makepyfile(userdec=EMPTY_DECODER)
    pytester.makeini("[pytest]\nharness_decoder = userdec:decode\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.stdout.str().count("test_decoder_conformance[") == len(PROPERTIES)


def test_unimportable_decoder_is_a_usage_error_not_a_traceback(pytester):
    result = pytester.runpytest_subprocess("--decoder", "no_such_module:decode")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot import module 'no_such_module'*"])


def test_malformed_decoder_target_names_the_expected_form(pytester):
    result = pytester.runpytest_subprocess("--decoder", "just_a_module")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected 'package.module:function'*"])


def test_decoder_head_runs_the_yolo26_properties_against_a_yolo26_decoder(pytester):
    pytester.makepyfile(userdec="from harness.families.yolo26.one2one.decode import decode\n")
    result = pytester.runpytest_subprocess("--decoder", "userdec:decode", "--decoder-head", "yolo26-one2one", "-q")
    result.assert_outcomes(passed=len(PROPERTIES))
    # the same decoder held to YOLOv8's DFL heads fails every property
    pytester.runpytest_subprocess("--decoder", "userdec:decode", "-q").assert_outcomes(failed=len(PROPERTIES))


def test_a_bbox_only_decoder_head_runs_the_bbox_only_properties(pytester):
    pytester.makepyfile(
        userdec="from harness.conformance.suite import bbox_only_decoder\n"
        "from harness.core.head_family import HeadFamily\n"
        "decode = bbox_only_decoder(HeadFamily.YOLOV5)\n"
    )
    result = pytester.runpytest_subprocess("--decoder", "userdec:decode", "--decoder-head", "yolov5-bbox-only", "-q")
    result.assert_outcomes(passed=4)
    result = pytester.runpytest_subprocess("--decoder", "userdec:decode", "--decoder-head", "yolox-bbox-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'yolox': HailoRT has no bbox-only op for it*"])


def test_an_unknown_decoder_head_or_one_without_a_decoder_is_a_usage_error(pytester):
    pytester.makepyfile(userdec=EMPTY_DECODER)
    result = pytester.runpytest_subprocess("--decoder", "userdec:decode", "--decoder-head", "yolo5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--decoder-head yolo5: expected one of ['yolov8', 'yolo26-one2one'*"])
    result = pytester.runpytest_subprocess("--decoder-head", "yolo26-one2one")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--decoder-head yolo26-one2one: belongs to --decoder*"])


def test_conformance_fixture_takes_the_head_family_of_the_decoder(pytester):
    pytester.makepyfile(
        test_user="""
from harness.families.yolo26.one2many.decode import decode as decode_one2many

def test_yolo26(decoder_conformance):
    decoder_conformance(decode_one2many, "yolo26-one2many")
"""
    )
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)


def test_conformance_fixture_passes_the_builtin_decoder(pytester):
    pytester.makepyfile(test_user=BUILTIN_DECODER_TEST)
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)


def test_hef_option_runs_each_static_check_as_its_own_item(pytester, shared_fixtures):
    hef = shared_fixtures / "hef" / "hailo8_mnist_cnn.hef"
    onnx = shared_fixtures / "onnx" / "yolov8n_coco80_640_int8.onnx"
    result = pytester.runpytest_subprocess(f"--hef={hef}", f"--onnx={onnx}", "-rs")
    result.assert_outcomes(failed=1, skipped=12)
    result.stdout.fnmatch_lines(
        [
            "*HEF static check input_shape failed: input MNIST_CNN/input_layer1 shape: found 32x32x1, "
            "expected 640x640x3*Fix: *",
            "*no NMS op in the HEF*",
        ]
    )


def test_unreadable_hef_is_one_failing_item_that_says_why(pytester, shared_fixtures):
    hef = shared_fixtures / "hef_bad" / "hailo8l_yolov8s_nms_truncated.hef"
    result = pytester.runpytest_subprocess(f"--hef={hef}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*truncated: header declares 31240818 bytes, file has 2883584*"])


def test_static_check_results_are_junit_properties(pytester, shared_fixtures):
    hef = shared_fixtures / "hef" / "hailo8_mnist_cnn.hef"
    onnx = shared_fixtures / "onnx" / "yolo11n_coco80_320_int8.onnx"
    pytester.runpytest_subprocess(f"--hef={hef}", f"--onnx={onnx}", "--junitxml=out.xml")
    xml = (pytester.path / "out.xml").read_text()
    assert '<property name="check" value="input_shape"' in xml
    assert "320x320x3" in xml


def test_onnx_option_collects_the_named_gates_of_both_paths(pytester):
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--collect-only", "-q")
    out = result.stdout.str()
    for name in (
        "test_map[synthetic_fire_smoke_seed0-onnx]",
        "test_map[synthetic_fire_smoke_seed0-emulated-hailo]",
        "test_score_saturation[synthetic_fire_smoke_seed0-emulated-hailo]",
        "test_box_count[synthetic_fire_smoke_seed0-emulated-hailo]",
        "test_path_agreement[synthetic_fire_smoke_seed0-emulated-hailo]",
    ):
        assert name in out
    assert "9 tests collected" in out  # the gates themselves, as many as then run


def test_a_bad_option_value_is_a_usage_error_naming_the_option_and_what_was_expected(pytester):
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--score-threshold=abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--score-threshold 'abc': expected a number from 0 to 1*"])


def test_hailort_backend_needs_a_hef_and_says_what_is_missing_here(pytester, shared_fixtures, tmp_path):
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--backend", "hailort")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--backend hailort: needs --hef M.hef*"])
    hef = shared_fixtures / "hef" / "hailo8_mnist_cnn.hef"
    data = tmp_path / "fire_smoke_val"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    result = pytester.runpytest_subprocess(
        f"--onnx={DEMO}", f"--hef={hef}", f"--dataset={data}", "--backend", "hailort", "-k", "test_box_count and hailo]"
    )
    result.assert_outcomes(failed=1, deselected=21)
    result.stdout.fnmatch_lines(["*the evaluation could not run:*hailo_platform*emulator*"])
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--har", "m.har")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--har m.har: the Hailo Dataflow Compiler is not installed*"])
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--hailo-format", "int4")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--hailo-format 'int4': expected one of ['float32', 'uint8']" in result.stderr.str()


def test_har_option_adds_the_stage_gate_run_by_the_dataflow_compiler(pytester, sdk, tmp_path):
    data = tmp_path / "data"
    write_dataset(data, Recipe(seed=3, train=0, val=6, calib=64))
    har = compile_hef(CompileRequest(DEMO, data / "images" / "calib"), tmp_path / "out", tmp_path / "cache").har
    pytester.makeconftest(
        f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from support import fake_hailo_sdk_client
sys.modules["hailo_sdk_client"] = fake_hailo_sdk_client
"""
    )
    calibration = str(data / "images" / "calib")
    args = (f"--onnx={DEMO}", f"--dataset={data}", f"--calibration={calibration}", f"--har={har}")
    result = pytester.runpytest_subprocess(*args, "--collect-only", "-q")
    assert "hailo-harness::test_stages[data]" in result.stdout.lines
    result = pytester.runpytest_subprocess(*args, "-k", "test_stages", "--junitxml=stages.xml")
    result.assert_outcomes(passed=1, deselected=9)
    assert '<property name="observed"' in (pytester.path / "stages.xml").read_text()


def test_gates_run_under_xdist_and_attach_their_numbers_to_junit_xml(pytester):
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "-n", "2", "-p", "xdist", "--junitxml=gates.xml")
    result.assert_outcomes(passed=9)
    xml = (pytester.path / "gates.xml").read_text()
    assert '<property name="observed"' in xml and '<property name="baseline"' in xml
    assert 'name="test_map[synthetic_fire_smoke_seed0-emulated-hailo]"' in xml


def test_missing_baseline_fails_with_the_command_that_creates_it(pytester, tmp_path):
    data = tmp_path / "small"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    args = (f"--onnx={DEMO}", f"--dataset={data}", "--golden", "empty", "-k", "test_box_count and onnx")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(failed=1, deselected=8)
    result.stdout.fnmatch_lines(
        [
            "*no baseline at empty/*review this run's report */report.html, then create the baseline with: "
            "pytest *--update-golden*",
            "report: */report.html",
        ]
    )


def test_a_gate_held_to_a_weak_baseline_passes_as_a_warning_never_as_a_plain_pass(pytester, tmp_path):
    """Two images: a mAP blessed knowingly weak (``--accept-weak-baseline``) cannot fail; pytest says so for
    each such gate among its warnings, and the JUnit XML carries why."""
    data = tmp_path / "two"
    write_dataset(data, Recipe(seed=9, train=0, val=2, calib=0))
    args = (f"--onnx={DEMO}", f"--dataset={data}", f"--golden={tmp_path / 'golden'}", "-k", "test_map and onnx]")
    pytester.runpytest_subprocess(*args, "--update-golden", "--accept-weak-baseline").assert_outcomes(
        passed=2, deselected=7, warnings=2
    )
    result = pytester.runpytest_subprocess(*args, "--junitxml=weak.xml")
    result.assert_outcomes(passed=2, deselected=7, warnings=2)  # test_map and test_map50_95
    result.stdout.fnmatch_lines(["*WeakBaselineWarning: test_map[[]two-onnx]: WEAK PASS, its baseline cannot fail: *"])
    assert '<property name="weak" value="' in (pytester.path / "weak.xml").read_text()


def test_the_demo_is_held_against_its_shipped_baselines_until_the_project_blesses_its_own(pytester):
    """Run from a subfolder: the defaults lie in the rootdir, an ini key's path is relative to its file."""
    pytester.makeini("[pytest]\nharness_report = ci-report\n")
    sub = pytester.mkdir("sub")
    args = (f"--onnx={DEMO}", "-k", "test_map and onnx]")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)
        result = pytester.runpytest_subprocess(*args)
        result.assert_outcomes(passed=2, deselected=7)
        assert not (pytester.path / "golden").exists()
        result = pytester.runpytest_subprocess(*args, "--update-golden")
        result.assert_outcomes(passed=2, deselected=7)
    blessed = pytester.path / "golden" / DEMO.stem
    assert len(list(blessed.glob("*.json"))) == 2, "the blessing goes to the project's rootdir"
    assert (pytester.path / "ci-report" / "report.json").exists()
    assert (pytester.path / ".harness-cache").is_dir() and list(sub.iterdir()) == []


def test_hardware_and_compiler_markers_skip_with_a_reason_here(pytester):
    pytester.makepyfile(
        test_hw="""
import pytest

@pytest.mark.hailo_hw
def test_on_device():
    raise AssertionError("must not run without a device")

@pytest.mark.dfc
def test_compile():
    raise AssertionError("must not run without the compiler")
"""
    )
    result = pytester.runpytest_subprocess("-rs", "--strict-markers")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*hailo_platform*not installed*", "*Dataflow Compiler*not installed*"])


def test_a_dataset_given_by_its_yaml_names_the_items_after_the_folder_its_gates_are_named_after(pytester, tmp_path):
    data = tmp_path / "fire_smoke_small"
    write_dataset(data, Recipe(seed=4, train=0, val=6, calib=0))
    args = (f"--onnx={DEMO}", f"--dataset={data / 'data.yaml'}", f"--golden={tmp_path / 'golden'}")
    collected = pytester.runpytest_subprocess(*args, "--collect-only", "-q").stdout.lines
    assert "hailo-harness::test_map[fire_smoke_small-onnx]" in collected
    assert "hailo-harness::test_path_agreement[fire_smoke_small-emulated-hailo]" in collected
    result = pytester.runpytest_subprocess(*args, "--update-golden", f"--cache={tmp_path / 'cache'}")
    result.assert_outcomes(passed=9)  # every item found its gate: none says "the run produced no such gate"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            ("--onnx", "onnx/yolov8n_coco80_640_int8.onnx"),
            "*the evaluation gates need images: give --dataset D (labelled*or --images DIR (without labels)*",
        ),
        (("--dataset", "datasets/coco128_val16"), "*--dataset *coco128_val16: needs --onnx M.onnx*"),
        (
            ("--backend", "hailort"),
            "*--backend is an option of the harness's gates, and none was asked for: the evaluation gates need "
            "--onnx M.onnx with --dataset D (or --images DIR), the HEF's static checks --hef M.hef",
        ),
        (("--update-golden", "--batch", "2"), "*--batch, --update-golden are options of the harness's gates*"),
        (("--score-threshold", "0.3"), "*--score-threshold is an option of the harness's gates, and none was*"),
    ],
)
def test_an_option_without_its_partner_is_a_usage_error_naming_what_is_missing(
    pytester, shared_fixtures, given, expected
):
    flag, *value = given
    args = [f"{flag}={shared_fixtures / value[0]}"] if value and "/" in value[0] else given
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # 4, never 0 for a run that would check nothing
    result.stderr.fnmatch_lines([expected])


def test_a_hef_that_no_static_check_applies_to_fails_instead_of_skipping_everything(pytester, shared_fixtures):
    result = pytester.runpytest_subprocess(f"--hef={shared_fixtures / 'hef' / 'hailo10h_lightface_slim.hef'}")
    result.assert_outcomes(failed=1, skipped=13)
    result.stdout.fnmatch_lines(["*none of the 13 static checks applies to *, so nothing was checked*"])


def _project_beside_another_checkout(pytester: pytest.Pytester) -> tuple[Path, Path]:
    """A project whose ini declares a marker, and a sibling checkout whose config deselects everything."""
    project, other = pytester.mkdir("project"), pytester.mkdir("other")
    (project / "pytest.ini").write_text("[pytest]\nmarkers =\n    mine: a marker only the user's project declares\n")
    (project / "test_mine.py").write_text("import pytest\n\n@pytest.mark.mine\ndef test_mine():\n    pass\n")
    (project / "models").mkdir()
    (other / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-k nothing_of_yours"\n')
    return project, other


@pytest.mark.parametrize(
    ("option", "where"),
    [("--hef={}", "other"), ("--hef {}", "project/models"), ("--hef {}", "project")],
    ids=["equals-other-checkout", "space-inside-project", "space-in-ini-folder"],
)
def test_a_path_option_leaves_the_users_rootdir_and_config_where_they_are(pytester, option, where):
    """``--hef=PATH`` anywhere, and ``--hef PATH`` where pytest's choice provably does not depend on it."""
    project, _ = _project_beside_another_checkout(pytester)
    hef = pytester.path / where / "model.hef"
    hef.write_bytes(b"not a HEF")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        result = pytester.runpytest_subprocess(*option.format(hef).split(" "), "--strict-markers", "-k", "test_mine")
    result.stdout.fnmatch_lines([f"rootdir: {project}", "configfile: pytest.ini"])
    result.assert_outcomes(passed=1, deselected=1)


@pytest.mark.parametrize("where", ["other", "project/models"], ids=["sibling-checkout", "checkout-inside-project"])
def test_a_path_value_pytest_chose_its_rootdir_from_is_a_usage_error_saying_how_to_write_it(pytester, where):
    """pytest reads ``--hef PATH``'s value as a test path before the plugin loads: where that may have
    moved its rootdir or config, the run is refused (no public API chooses them again)."""
    project, _ = _project_beside_another_checkout(pytester)
    (pytester.path / where / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-k theirs"\n')
    hef = pytester.path / where / "model.hef"
    hef.write_bytes(b"not a HEF")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        result = pytester.runpytest_subprocess("--hef", str(hef), "-k", "test_mine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--hef {hef}: pytest chose its rootdir ({hef.parent})*write --hef={hef}"])
    assert "test_mine" not in result.stdout.str()


def test_an_export_the_emulator_cannot_take_is_one_usage_error_not_a_failure_per_gate(pytester, shared_fixtures):
    onnx = shared_fixtures / "onnx" / "yolo11n_coco80_320_int8.onnx"
    dataset = shared_fixtures / "datasets" / "coco128_val16"
    result = pytester.runpytest_subprocess(f"--onnx={onnx}", f"--dataset={dataset}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*yolo11n_coco80_320_int8.onnx*quantized ops*expected a float export*"])
    assert "FAILED" not in result.stdout.str()


JOB_RAISES = """
import errno
import harness.pipeline.job

def run_job(config, log):
    raise {error}

harness.pipeline.job.run_job = run_job
"""


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            "OSError(errno.ENOSPC, 'No space left on device', 'reports/latest/report.md')",
            "the evaluation could not run: cannot use 'reports/latest/report.md': No space left on device "
            "(free some space on its disk*",
        ),
        (
            "RuntimeError('boom')",
            "the evaluation could not run: internal error of the harness: RuntimeError: boom; the traceback is in "
            "*.harness-cache*logs*.log (please report it with that file)",
        ),
    ],
    ids=["full-disk", "internal"],
)
def test_a_job_that_fails_inside_fails_its_gates_with_one_clear_line_not_a_traceback(pytester, error, says):
    pytester.makeconftest(JOB_RAISES.format(error=error))
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "-q")
    result.assert_outcomes(failed=9)
    result.stdout.fnmatch_lines([says, "*the evaluation could not run: see test_map[[]*[]] for why*"])
    assert "Traceback" not in result.stdout.str() and "raise " not in result.stdout.str()
    if error.startswith("RuntimeError"):
        (log,) = (pytester.path / ".harness-cache" / "logs").iterdir()
        assert "RuntimeError: boom" in log.read_text() and "command: pytest " in log.read_text()


def test_a_bad_dataset_is_one_usage_error_as_a_bad_model_is_not_a_failure_per_gate(pytester, tmp_path):
    data = tmp_path / "no_yaml"
    write_dataset(data, Recipe(seed=4, train=0, val=3, calib=0))
    (data / "data.yaml").unlink()  # labelled images, but nothing names their classes
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", f"--dataset={data}", f"--cache={tmp_path / 'cache'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line]
    assert line.startswith(f"ERROR: {data}: ") and "yaml" in line  # the dataset loader's own words
    assert "FAILED" not in result.stdout.str() and "collected 0 items" in result.stdout.str()


def test_ctrl_c_during_the_job_ends_pytest_with_one_line_and_the_rerun_recovers(pytester, tmp_path):
    """SIGINT while the job infers (held there by the test)."""
    data = tmp_path / "fire_smoke_small"
    write_dataset(data, Recipe(seed=4, train=0, val=6, calib=0))
    args = (f"--onnx={DEMO}", f"--dataset={data}", f"--cache={tmp_path / 'cache'}", f"--golden={tmp_path / 'golden'}")
    inferring = tmp_path / "inferring"
    command = slow_inference(inferring, "pytest", "-p", "no:cacheprovider", *args)
    stopped = interrupt_at(command, "hailo-harness: onnx: predicting", cwd=pytester.path, sentinel=inferring)
    said = stopped.out[len(stopped.said_before) :] + stopped.err
    assert stopped.returncode == pytest.ExitCode.INTERRUPTED, said
    assert "! Interrupted: hailo-harness stopped; nothing half-written is kept, and a rerun resumes" in said
    assert not [word for word in ("KeyboardInterrupt", "Traceback", ".py:", "site-packages") if word in said], said
    rerun = pytester.runpytest_subprocess(*args, "--update-golden")
    rerun.assert_outcomes(passed=9)


@pytest.mark.parametrize("name", ["harness", "hailo-harness"])
def test_switching_the_plugin_off_by_a_name_it_does_not_have_is_a_usage_error_naming_the_right_one(pytester, name):
    result = pytester.runpytest_subprocess("-p", f"no:{name}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: -p no:{name}: no plugin has that name*: -p no:hailo_harness"])


def test_the_documented_name_switches_the_plugin_off(pytester):
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    assert pytester.runpytest_subprocess("--score-threshold=0.3").ret == pytest.ExitCode.USAGE_ERROR  # the plugin's
    result = pytester.runpytest_subprocess("-p", "no:hailo_harness", "--score-threshold=0.3")
    result.stderr.fnmatch_lines(["*unrecognized arguments: --score-threshold=0.3*"])  # no plugin declares it
    pytester.runpytest_subprocess("-p", "no:hailo_harness").assert_outcomes(passed=1)


def test_require_signed_is_a_plugin_option_that_sets_the_signing_policy_of_the_run(pytester):
    pytester.makeconftest(
        """
import os

def pytest_collection_finish(session):
    print("REQUIRE_SIGNED=" + os.environ.get("HARNESS_REQUIRE_SIGNED", "unset"))
"""
    )
    assert "--require-signed" in pytester.runpytest_subprocess("--help").stdout.str()
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--require-signed", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["REQUIRE_SIGNED=1"])
    result = pytester.runpytest_subprocess(f"--onnx={DEMO}", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["REQUIRE_SIGNED=unset"])
