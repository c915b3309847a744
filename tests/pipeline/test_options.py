"""The option table: every surface reads the same names, defaults and parsing from it, and the same
options turn into the same path, settings and job."""

import argparse
import re
from pathlib import Path

import pytest

from harness.backends.dfc.writing import NmsSettings
from harness.backends.emulator import EmulatorOptions
from harness.core import defaults, signing
from harness.core.errors import HarnessError
from harness.core.path_names import EmulationStage
from harness.core.settings import DecodeConfig, EvalSettings, MetricProtocol, NmsMode, Preprocess
from harness.core.specs import FormatType
from harness.inputs.demo import DEMO_ONNX
from harness.pipeline.argparse_options import add_options
from harness.pipeline.backends.descriptor import CompiledThresholds
from harness.pipeline.options import (
    DOCTOR_OPTIONS,
    EVAL_OPTIONS,
    JOB_OPTIONS,
    MERGE_OPTIONS,
    OPTIONS,
    backend_of,
    from_text,
    job_config,
    onnx_of,
    path_spec,
    settings_spec,
)
from harness.pipeline.spec import Backend, PathSpec, SettingsSpec, thresholds_note


def _parse(names, *argv):
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_options(parser, names)
    return vars(parser.parse_args(argv))


def test_a_surface_that_is_given_nothing_gets_the_defaults_of_the_settings_the_path_and_the_job():
    values = _parse(JOB_OPTIONS)
    assert settings_spec(values) == SettingsSpec()
    config = job_config(values, invocation=("test",))
    assert config.hailo == PathSpec(Backend.EMULATOR)
    assert (config.onnx, config.golden_root, config.report_dir, config.cache_dir) == (
        DEMO_ONNX,
        defaults.GOLDEN_DIR,
        defaults.REPORT_DIR,
        defaults.CACHE_DIR,
    )


def test_every_layer_that_has_a_default_has_the_same_one():
    settings, decode = EvalSettings((640, 640)), DecodeConfig((640, 640))
    emulator, nms = EmulatorOptions(), NmsSettings()
    for name, value in (
        ("score_threshold", defaults.SCORE_THRESHOLD),
        ("iou_threshold", defaults.IOU_THRESHOLD),
        ("max_per_class", defaults.MAX_PER_CLASS),
        ("max_total", defaults.MAX_TOTAL),
    ):
        # the thresholds are left open (None) until a Hailo path's compiled ones or the defaults fill them
        given = OPTIONS[name].default
        assert given == getattr(SettingsSpec(), name), name
        assert getattr(SettingsSpec().resolve((640, 640), ()), name) == getattr(settings, name) == value, name
        assert given in (None, value) and getattr(decode, name) == value, name
    assert (
        (emulator.score_threshold, emulator.iou_threshold, emulator.max_proposals_per_class)
        == (
            nms.score_threshold,
            nms.iou_threshold,
            nms.max_proposals_per_class,
        )
        == (defaults.SCORE_THRESHOLD, defaults.IOU_THRESHOLD, defaults.MAX_PER_CLASS)
    )
    assert OPTIONS["calibration_count"].default == PathSpec().calibration_count == emulator.calibration_count


def test_the_command_line_and_the_plugin_text_parse_every_option_to_the_same_value():
    argv = {
        "score_threshold": "0.35",
        "iou_threshold": "0.5",
        "max_per_class": "20",
        "nms": "ultralytics",
        "preprocess": "resize",
        "calibration_count": "8",
        "hailo_format": "uint8",
        "backend": "hailort",
        "hef": "m.hef",
        "golden": "g",
    }
    cli = _parse(JOB_OPTIONS, *[x for k, v in argv.items() for x in (OPTIONS[k].flag, v)])
    for name, text in argv.items():
        assert from_text(name, text) == cli[name], name
    assert cli["nms"] is NmsMode.ULTRALYTICS and cli["preprocess"] is Preprocess.RESIZE
    assert (
        from_text("hailo_device", "a, b")
        == ["a", "b"]
        == _parse(JOB_OPTIONS, "--hailo-device", "a", "--hailo-device", "b")["hailo_device"]
    )
    assert from_text("update_golden", "true") is True and from_text("update_golden", None) is False


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("score_threshold", "2", "--score-threshold '2': expected a number from 0 to 1"),
        ("score_threshold", "-1", "--score-threshold '-1': expected a number from 0 to 1"),
        ("score_threshold", "nan", "--score-threshold 'nan': expected a number from 0 to 1"),
        ("score_threshold", "abc", "--score-threshold 'abc': expected a number from 0 to 1"),
        ("max_total", "many", "--max-total 'many': expected a whole number of at least 1"),
        ("calibration_count", "0", "--calibration-count '0': expected a whole number of at least 1"),
        ("backend", "tpu", "--backend 'tpu': expected one of ['onnx', 'emulator', 'hailort', 'dfc', 'replay']"),
        (
            "map_class",
            "human",
            "--map-class 'human': expected DATASET_NAME=MODEL_NAME, or DATASET_NAME= to leave that class's labels out",
        ),
        ("update_golden", "maybe", "--update-golden 'maybe': expected true or false"),
    ],
)
def test_a_bad_value_is_refused_naming_the_option_the_value_and_what_was_expected(name, text, expected):
    with pytest.raises(HarnessError) as caught:
        from_text(name, text)
    assert str(caught.value) == expected


def test_one_dataset_class_mapped_twice_is_refused_naming_the_option_and_both_values():
    twice = _parse(JOB_OPTIONS, "--map-class", "fire=fire", "--map-class", "fire=smoke")
    with pytest.raises(HarnessError) as caught:
        settings_spec(twice)
    assert str(caught.value) == (
        "--map-class fire=fire and --map-class fire=smoke: dataset class 'fire' mapped twice, expected one "
        "--map-class per dataset class"
    )
    with pytest.raises(HarnessError, match=r"^--map-class steam=smoke and --map-class steam=: dataset class 'steam'"):
        settings_spec({"map_class": from_text("map_class", "steam=smoke, steam=")})
    same = _parse(JOB_OPTIONS, "--map-class", "fire=smoke", "--map-class", "fire=smoke", "--map-class", "smoke=fire")
    assert settings_spec(same).map_class == (("fire", "smoke"), ("fire", "smoke"), ("smoke", "fire"))


def test_a_folder_option_with_a_file_in_its_place_is_refused_when_parsed_not_after_the_run(tmp_path):
    existing = tmp_path / "notes.txt"
    existing.write_text("mine")
    for name in ("report", "cache", "golden"):
        with pytest.raises(HarnessError) as caught:
            from_text(name, str(existing))
        flag = "--" + name
        assert (
            str(caught.value) == f"{flag} {str(existing)!r}: expected a folder (made when missing), found a file there"
        )
    assert from_text("report", str(tmp_path / "new")) == tmp_path / "new"
    assert existing.read_text() == "mine"


def test_argparse_refuses_the_same_bad_values_before_anything_runs():
    with pytest.raises(argparse.ArgumentError, match="expected a number from 0 to 1"):
        _parse(EVAL_OPTIONS, "--score-threshold", "2")


def test_a_hef_means_the_device_on_every_surface_and_a_har_alone_the_dfc_for_one_path():
    assert backend_of({"hef": Path("m.hef")}, single=True) is Backend.HAILORT
    assert backend_of({"hef": Path("m.hef")}, single=False) is Backend.HAILORT
    assert backend_of({"har": Path("m.har")}, single=True) is Backend.DFC
    assert backend_of({"har": Path("m.har")}, single=False) is Backend.EMULATOR  # a job adds the HAR's stages
    assert backend_of({}, single=True) is Backend.ONNX and backend_of({}, single=False) is Backend.EMULATOR


def test_options_of_another_backend_are_refused_naming_both():
    with pytest.raises(HarnessError, match="--hailo-device belongs to --backend hailort, not --backend emulator"):
        path_spec({"hailo_device": ["0"]}, single=False)
    with pytest.raises(HarnessError, match="--calibration belongs to --backend emulator, not --backend hailort"):
        path_spec({"hef": Path("m.hef"), "calibration": "c"}, single=True)
    with pytest.raises(HarnessError, match="--har belongs to --backend dfc, not --backend onnx"):
        path_spec({"har": Path("m.har"), "backend": "onnx"}, single=True)
    with pytest.raises(HarnessError, match=r"--hef belongs to --backend hailort \(or replay\), not --backend emulator"):
        path_spec({"hef": Path("m.hef"), "backend": "emulator"}, single=False)
    beside = path_spec({"hef": Path("m.hef"), "backend": "emulator"}, single=False, hef_checked=True)
    assert beside == PathSpec(Backend.EMULATOR)  # the plugin reads that HEF for its static checks only
    with pytest.raises(HarnessError, match="--backend dfc: needs --har"):
        path_spec({"backend": "dfc"}, single=True)
    with pytest.raises(HarnessError, match="a job's Hailo path is emulator, hailort or replay"):
        job_config({"backend": "onnx"}, invocation=())


def test_a_model_file_without_its_export_is_refused_rather_than_paired_with_the_demo():
    assert onnx_of({}) == DEMO_ONNX
    with pytest.raises(HarnessError, match=r"--hef and --har: needs --onnx M\.onnx"):
        onnx_of({"hef": Path("m.hef"), "har": Path("m.har")})


def test_eval_doctor_and_the_job_share_their_path_and_settings_options():
    shared = set(JOB_OPTIONS) & set(EVAL_OPTIONS) & set(DOCTOR_OPTIONS)
    assert {"onnx", "dataset", "calibration", "score_threshold", "iou_threshold", "map_class"} <= shared
    spec = path_spec(_parse(EVAL_OPTIONS, "--har", "m.har", "--stage", "fp_optimized"), single=True)
    assert (spec.backend, spec.stage, spec.path_name) == (Backend.DFC, EmulationStage.FP_OPTIMIZED, "dfc-fp-optimized")
    assert path_spec(_parse(EVAL_OPTIONS, "--hef", "m.hef"), single=True).hailo_format is FormatType.FLOAT32


def test_batch_is_a_whole_number_of_at_least_one_taken_by_every_surface_that_runs_paths():
    assert "batch" in JOB_OPTIONS and "batch" in EVAL_OPTIONS and "batch" not in DOCTOR_OPTIONS
    assert _parse(EVAL_OPTIONS)["batch"] == defaults.BATCH
    assert job_config(_parse(JOB_OPTIONS, "--batch", "16"), invocation=("test",)).batch == 16
    assert job_config(_parse(JOB_OPTIONS), invocation=("test",)).batch == defaults.BATCH
    assert from_text("batch", "4") == 4 and from_text("batch", "") == defaults.BATCH
    for text in ("0", "-2", "1.5", "eight"):
        with pytest.raises(HarnessError, match=rf"--batch '{re.escape(text)}': expected a whole number of at least 1"):
            from_text("batch", text)


def test_accepting_a_weak_baseline_belongs_to_a_blessing_and_is_refused_without_one():
    with pytest.raises(HarnessError, match=r"--accept-weak-baseline: belongs to --update-golden"):
        job_config(_parse(JOB_OPTIONS, "--accept-weak-baseline"), invocation=("test",))
    blessing = job_config(_parse(JOB_OPTIONS, "--update-golden", "--accept-weak-baseline"), invocation=("test",))
    assert blessing.accept_weak_baseline and blessing.update_golden


def test_a_release_name_belongs_to_a_blessing_and_a_bad_one_is_refused_naming_the_option():
    with pytest.raises(HarnessError, match=r"^--release: belongs to --update-golden"):
        job_config(_parse(JOB_OPTIONS, "--release", "v1.3"), invocation=("test",))
    blessing = job_config(_parse(JOB_OPTIONS, "--update-golden", "--release", "v1.3"), invocation=("test",))
    assert blessing.release == "v1.3" and job_config(_parse(JOB_OPTIONS), invocation=("test",)).release is None
    with pytest.raises(HarnessError, match=r"^--release 'v 1\.3': expected a release name of at most 64 letters"):
        from_text("release", "v 1.3")


def test_the_stage_gates_floor_belongs_to_a_har_and_is_the_jobs_when_given():
    with pytest.raises(HarnessError, match=r"^--stage-drop: belongs to --har"):
        job_config(_parse(JOB_OPTIONS, "--stage-drop", "0.05"), invocation=("test",))
    har = job_config(
        _parse(JOB_OPTIONS, "--onnx", "m.onnx", "--har", "m.har", "--stage-drop", "0.05"), invocation=("t",)
    )
    assert har.stage_drop == 0.05
    assert job_config(_parse(JOB_OPTIONS, "--onnx", "m.onnx", "--har", "m.har"), invocation=("t",)).stage_drop == 0.02
    with pytest.raises(HarnessError, match=r"--stage-drop"):
        from_text("stage_drop", "1.5")


def test_an_ssd_config_file_is_read_into_the_settings_and_a_bad_one_refused_naming_the_option_file_and_key(tmp_path):
    import json

    from support.ssd_exports import config_document, ssd_config

    good, yaml_file = tmp_path / "ssd.json", tmp_path / "ssd.yaml"
    good.write_text(json.dumps(config_document()))
    yaml_file.write_text(
        "centers_scale_factor: 10\nbbox_dimensions_scale_factor: 5\nbackground_removal_index: 0\n"
        "bbox_decoders:\n  - {w: [0.2, 0.28, 0.14], h: [0.2, 0.14, 0.28]}\n"
        "  - {w: [0.45, 0.6], h: [0.45, 0.32]}\n"
    )
    assert settings_spec({"ssd_config": from_text("ssd_config", str(good))}).ssd == ssd_config()
    assert from_text("ssd_config", str(yaml_file)) == ssd_config()
    assert settings_spec({}).ssd is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**config_document(), "bbox_decoders": [{"w": [0.2], "h": [0.2, 0.3]}]}))
    with pytest.raises(
        HarnessError,
        match=rf"^--ssd-config '{re.escape(str(bad))}': {re.escape(str(bad))}: field bbox_decoders\[0\]\.h",
    ):
        from_text("ssd_config", str(bad))
    with pytest.raises(HarnessError, match=r"^--ssd-config '.*missing.json': .*missing.json"):
        from_text("ssd_config", str(tmp_path / "missing.json"))
    with pytest.raises(argparse.ArgumentError, match=r"bad.json: field bbox_decoders\[0\]\.h"):
        _parse(EVAL_OPTIONS, "--ssd-config", str(bad))


def test_an_ssd_config_for_an_export_that_is_not_ssd_is_refused_naming_the_option(tmp_path):
    from harness.pipeline.factory import load_dataset, prepare_run

    from support.ssd_exports import ssd_config

    dataset = load_dataset(None, cache_dir=tmp_path)
    with pytest.raises(HarnessError, match=r"an SSD config \(--ssd-config\) given for an export that is not SSD"):
        prepare_run(DEMO_ONNX, dataset, SettingsSpec(ssd=ssd_config()), tmp_path, log=lambda line: None)


def test_require_signed_is_an_option_of_every_surface_that_reads_baselines_and_sets_the_policy(monkeypatch):
    monkeypatch.setenv(signing.REQUIRE_VARIABLE, "0")  # set here, so that the option's setting is undone after
    monkeypatch.setattr(signing, "_required_by_option", False)
    assert all("require_signed" in names for names in (JOB_OPTIONS, MERGE_OPTIONS, DOCTOR_OPTIONS))
    assert "HARNESS_SIGNING_KEY" in OPTIONS["require_signed"].help
    job_config(_parse(JOB_OPTIONS), invocation=("test",))
    assert not signing.policy().require_signed
    job_config(_parse(JOB_OPTIONS, "--require-signed"), invocation=("test",))
    assert signing.policy().require_signed and signing.os.environ[signing.REQUIRE_VARIABLE] == "1"


YOLO_VAL_FLAGS = ("--nms", "ultralytics", "--score-threshold", "0.001", "--iou-threshold", "0.7", "--max-total", "300")


@pytest.mark.parametrize("names", [JOB_OPTIONS, EVAL_OPTIONS, DOCTOR_OPTIONS])
def test_the_ultralytics_metric_alone_sets_what_the_five_options_set(names):
    alone = settings_spec(_parse(names, "--metric", "ultralytics")).resolve((640, 640), ())
    five = _parse(names, "--metric", "ultralytics", *YOLO_VAL_FLAGS, "--preprocess", "ultralytics-val")
    assert alone == settings_spec(five).resolve((640, 640), ())
    assert (alone.nms_mode, alone.score_threshold, alone.iou_threshold, alone.max_total, alone.preprocess) == (
        NmsMode.ULTRALYTICS,
        0.001,
        0.7,
        300,
        Preprocess.ULTRALYTICS_VAL,
    )
    plugin = settings_spec({n: from_text(n, "ultralytics" if n == "metric" else None) for n in names})
    assert plugin.resolve((640, 640), ()) == alone
    coco = settings_spec(_parse(names)).resolve((640, 640), ())
    assert (coco.nms_mode, coco.score_threshold, coco.preprocess) == (
        NmsMode.HAILORT,
        defaults.SCORE_THRESHOLD,
        Preprocess.LETTERBOX,
    )


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (("--score-threshold", "0.25"), "score_threshold", 0.25),
        (("--score-threshold", "0"), "score_threshold", 0.0),
        (("--iou-threshold", "0.5"), "iou_threshold", 0.5),
        (("--max-total", "100"), "max_total", 100),
        (("--nms", "hailort"), "nms_mode", NmsMode.HAILORT),
        (("--preprocess", "letterbox"), "preprocess", Preprocess.LETTERBOX),
    ],
)
def test_each_setting_of_the_ultralytics_protocol_is_overridden_by_its_own_option(argv, field, value):
    resolved = settings_spec(_parse(EVAL_OPTIONS, "--metric", "ultralytics", *argv)).resolve((640, 640), ())
    protocol = settings_spec(_parse(EVAL_OPTIONS, "--metric", "ultralytics")).resolve((640, 640), ())
    assert getattr(resolved, field) == value != getattr(protocol, field)
    assert resolved.differences(protocol) == [f"{field}: {_dict_value(value)!r} vs {protocol.to_dict()[field]!r}"]
    overridden = MetricProtocol.ULTRALYTICS.protocol.differences(resolved.to_dict())
    assert overridden == [f"{field} {_dict_value(value)} (the protocol's: {protocol.to_dict()[field]})"]


def _dict_value(value):
    return getattr(value, "value", value)


def test_a_hailo_paths_compiled_thresholds_stand_before_the_protocols_and_the_given_ones_before_both():
    compiled = CompiledThresholds(0.25, 0.45, "NMS op compiled into m.hef")
    alone = settings_spec(_parse(JOB_OPTIONS, "--metric", "ultralytics"))
    resolved = alone.resolve((640, 640), (), compiled)
    assert (resolved.score_threshold, resolved.iou_threshold, resolved.nms_mode) == (0.25, 0.45, NmsMode.ULTRALYTICS)
    assert "every path evaluated at the score threshold and iou threshold NMS op compiled" in thresholds_note(
        alone, resolved, compiled
    )
    given = settings_spec(_parse(JOB_OPTIONS, "--metric", "ultralytics", "--score-threshold", "0.3"))
    assert given.resolve((640, 640), (), compiled).score_threshold == 0.3
    assert thresholds_note(alone, alone.resolve((640, 640), ()), None) == (
        "score threshold 0.001, IoU threshold 0.7 (--metric ultralytics's protocol)"
    )
