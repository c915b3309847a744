"""The pipeline factory: one description of a path -> the detection path every surface gets, with the
calibration images chosen by one rule and the class names settled before anything runs."""

import hashlib
import inspect
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.conformance.suite import run_conformance
from harness.core.errors import HarnessError
from harness.families.yolov8.decode import decode
from harness.inputs.dataset import DatasetError
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX, IN_DOMAIN, OFF_DOMAIN, demo_root, demo_split
from harness.inputs.synthetic import Recipe, write_dataset
from harness.pipeline.detect import DecoderPath, NmsBufferPath, OnnxPath, RawHeadsPath
from harness.pipeline.factory import calibration_source, evaluate_spec, open_path, preflight, prepare_run
from harness.pipeline.spec import REFERENCE, Backend, JobConfig, PathSpec, SettingsSpec
from harness.verdict.result import PathResult


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("factory") / "syn"
    write_dataset(root, Recipe(seed=11, train=0, val=3, calib=3))
    return root


@pytest.fixture(scope="module")
def run(data):
    return prepare_run(DEMO_ONNX, load_yolo(data), cache_dir=data.parent / "cache", progress=False, log=lambda _: None)


def test_each_backend_description_opens_the_path_it_names(run):
    emulated = PathSpec(
        Backend.EMULATOR, calibration=str(Path(run.dataset.root) / "images" / "calib"), calibration_count=3
    )
    with open_path(REFERENCE, run) as path:
        assert isinstance(path, OnnxPath) and path.name == "onnx"
    with open_path(emulated, run) as path:
        assert isinstance(path, NmsBufferPath) and path.name == "emulated-hailo" and path.emulated
    with open_path(replace(emulated, hef_nms=False), run) as path:
        assert isinstance(path, RawHeadsPath)
    with open_path(PathSpec(Backend.ONNX, decoder=decode), run) as path:
        assert isinstance(path, DecoderPath) and path.name == "onnx" and not path.emulated
        digest = hashlib.sha256(Path(inspect.getsourcefile(decode)).read_bytes()).hexdigest()[:16]
        assert path.variant == f"float heads+decode@{digest}" and not any(run_conformance(path.decoder).values())


def test_a_host_decoder_over_the_float_heads_finds_what_the_reference_finds(run):
    reference = evaluate_spec(REFERENCE, run)
    heads = evaluate_spec(PathSpec(Backend.ONNX, decoder=decode), run)
    assert heads.metrics.map50 == pytest.approx(reference.metrics.map50, abs=0.02)
    assert heads.box_counts.total == pytest.approx(reference.box_counts.total, abs=2)


def test_calibration_is_the_demo_split_on_the_demo_and_the_evaluated_images_elsewhere(run, data):
    source, count = calibration_source(PathSpec(Backend.EMULATOR), run)
    assert source == [s.path for s in run.dataset.samples] and count == 3  # fewer than 64: all of them
    folder, count = calibration_source(PathSpec(Backend.EMULATOR, calibration=str(data / "images" / "calib")), run)
    assert (folder, count) == (data / "images" / "calib", 64)
    named, _ = calibration_source(PathSpec(Backend.EMULATOR, calibration=OFF_DOMAIN), run)
    assert named == demo_split(run.cache_dir, OFF_DOMAIN)
    with pytest.raises(HarnessError, match="--calibration nope: not a folder of images"):
        calibration_source(PathSpec(Backend.EMULATOR, calibration="nope"), run)


def test_on_the_demo_set_the_default_calibration_is_its_in_domain_split(run, tmp_path):
    namesake = replace(run, dataset=replace(run.dataset, root=tmp_path / "synthetic_fire_smoke_seed0"))
    assert isinstance(calibration_source(PathSpec(Backend.EMULATOR), namesake)[0], list)  # only its name is the demo's
    demo = replace(run, dataset=replace(run.dataset, root=demo_root(run.cache_dir)))
    source, count = calibration_source(PathSpec(Backend.EMULATOR), demo)
    assert (source, count) == (demo_split(run.cache_dir, IN_DOMAIN), 64)


def test_other_class_names_are_refused_when_the_run_is_prepared_and_accepted_when_mapped(data, tmp_path):
    (tmp_path / "images").symlink_to(data / "images" / "val")
    (tmp_path / "labels").symlink_to(data / "labels" / "val")
    (tmp_path / "data.yaml").write_text("names: {0: flame, 1: smoke}\n")
    renamed = load_yolo(tmp_path)
    with pytest.raises(
        DatasetError,
        match=r"map each dataset class the model lacks with --map-class DATASET=MODEL, or leave its labels out with "
        r"--map-class DATASET= \(leaving them all out: --map-class flame=\)",
    ):
        prepare_run(DEMO_ONNX, renamed, cache_dir=tmp_path / "cache")
    mapped = prepare_run(DEMO_ONNX, renamed, SettingsSpec(map_class=(("flame", "fire"),)), tmp_path / "cache")
    assert mapped.settings.class_map == (0, 1)


def test_a_split_with_a_coco_file_is_refused_naming_the_option(tmp_path):
    from harness.pipeline.factory import load_dataset

    (tmp_path / "annotations.json").write_text("{}")
    with pytest.raises(HarnessError, match=r"--split test: a COCO annotations file holds one split"):
        load_dataset(tmp_path / "annotations.json", "test", tmp_path, tmp_path, lambda line: None)


def _evaluate_both(data: Path, cache: Path) -> tuple[PathResult, PathResult]:
    run = prepare_run(DEMO_ONNX, load_yolo(data), cache_dir=cache, progress=False, log=lambda _: None)
    emulated = PathSpec(Backend.EMULATOR, calibration=str(data / "images" / "calib"), calibration_count=3)
    return evaluate_spec(REFERENCE, run), evaluate_spec(emulated, run)


def test_a_rerun_with_every_prediction_cached_opens_no_onnxruntime_session_and_gives_the_same_results(
    data, tmp_path, monkeypatch
):
    import onnxruntime

    opened: list[object] = []
    session = onnxruntime.InferenceSession

    def spy(*args, **kwargs):
        opened.append(args[0])
        return session(*args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", spy)
    first = _evaluate_both(data, tmp_path / "cache")
    assert len(opened) >= 2  # the spy sees the sessions the first run opens: the export's and the emulated HEF's
    assert [r.provenance.from_cache for r in first] == [0, 0]
    opened.clear()
    again = _evaluate_both(data, tmp_path / "cache")
    assert opened == []
    assert [r.provenance.from_cache for r in again] == [3, 3]
    for was, now in zip(first, again, strict=True):
        assert now.metrics == was.metrics and now.image_ids == was.image_ids
        for a, b in zip(was.predictions, now.predictions, strict=True):
            assert np.array_equal(a.boxes, b.boxes) and np.array_equal(a.scores, b.scores)
            assert np.array_equal(a.class_ids, b.class_ids)


def test_a_rerun_with_every_prediction_cached_imports_neither_onnx_nor_onnxruntime(data, tmp_path):
    preflight(JobConfig(dataset=data, cache_dir=tmp_path / "cache"))
    _evaluate_both(data, tmp_path / "cache")
    script = f"""
import sys
from pathlib import Path
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX
from harness.pipeline.factory import evaluate_spec, preflight, prepare_run
from harness.pipeline.spec import REFERENCE, Backend, JobConfig, PathSpec

data, cache = Path({str(data)!r}), Path({str(tmp_path / "cache")!r})
preflight(JobConfig(dataset=data, cache_dir=cache))
run = prepare_run(DEMO_ONNX, load_yolo(data), cache_dir=cache, progress=False, log=lambda _: None)
emulated = PathSpec(Backend.EMULATOR, calibration=str(data / "images" / "calib"), calibration_count=3)
results = [evaluate_spec(spec, run) for spec in (REFERENCE, emulated)]
print([r.provenance.from_cache for r in results], sorted({{"onnx", "onnxruntime", "matplotlib"}} & set(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[3, 3] []"


def test_reading_the_dataset_and_the_export_facts_are_stages_of_the_runs_clock(data, tmp_path):
    from harness.core.stage_clock import Stage, listening
    from harness.pipeline.factory import load_dataset, model_facts

    with listening() as clock:
        load_dataset(data)
        model_facts(DEMO_ONNX, tmp_path / "cache")
        model_facts(DEMO_ONNX, tmp_path / "cache")  # the second from its sidecar
    assert clock.calls == {Stage.DATASET.value: 1, Stage.EXPORT_FACTS.value: 2}


def test_preparing_a_run_says_once_which_dataset_classes_it_leaves_out(data, tmp_path):
    (tmp_path / "images").symlink_to(data / "images" / "val")
    (tmp_path / "labels").symlink_to(data / "labels" / "val")
    (tmp_path / "data.yaml").write_text("names: {0: fire, 1: smoke, 2: steam}\n")
    lines: list[str] = []
    settings = SettingsSpec(map_class=(("fire", "fire"), ("smoke", "smoke"), ("steam", "")))
    prepare_run(DEMO_ONNX, load_yolo(tmp_path), settings, tmp_path / "cache", log=lines.append)
    said = [line for line in lines if line.startswith("left out of the evaluation")]
    assert said == ["left out of the evaluation: the 0 labels of class 'steam' (--map-class steam=)"]


def test_an_emulated_yolo26_hef_has_16_bit_outputs_as_ultralytics_compiles_it_unless_8_are_asked_for(run, data):
    from harness.inputs.demo import DEMO26_ONNX
    from harness.pipeline.factory import emulated_hef

    calibration = {"calibration": str(data / "images" / "calib"), "calibration_count": 3}
    yolo26 = prepare_run(DEMO26_ONNX, load_yolo(data), cache_dir=data.parent / "cache", log=lambda _: None)
    assert emulated_hef(PathSpec(Backend.EMULATOR, **calibration), yolo26).options.output_bits == 16
    assert emulated_hef(PathSpec(Backend.EMULATOR, output_bits=8, **calibration), yolo26).options.output_bits == 8
    assert emulated_hef(PathSpec(Backend.EMULATOR, **calibration), run).options.output_bits == 8  # YOLOv8
    with pytest.raises(HarnessError, match=r"^--output-bits belongs to --backend emulator, not --backend onnx$"):
        PathSpec(Backend.ONNX, output_bits=16)


def test_a_job_hashes_its_export_once_and_a_replayed_path_takes_its_sha256_from_the_run(data, tmp_path, monkeypatch):
    """The emulator's preflight reads the export's facts and hands them to the run; a replayed path checks
    its store against the sha256 in them: the export (10 MB for the demo) is not hashed again."""
    from harness.inputs import export_facts
    from harness.pipeline import detect
    from harness.pipeline.job import prepare_job

    calibration = PathSpec(Backend.EMULATOR, calibration=str(data / "images" / "calib"), calibration_count=3)
    store = tmp_path / "emulated.rec"
    config = JobConfig(dataset=data, cache_dir=tmp_path / "cache", report_dir=tmp_path / "report", progress=False)
    run, _ = prepare_job(replace(config, hailo=calibration), log=lambda _: None)
    evaluate_spec(replace(calibration, record=store), run)
    hashed: list[str] = []
    real = export_facts.file_sha256

    def counting(path):
        hashed.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(export_facts, "file_sha256", counting)
    monkeypatch.setattr(detect, "file_sha256", counting)
    prepare_job(replace(config, hailo=calibration), log=lambda _: None)
    assert hashed == [DEMO_ONNX.name]  # once, by the preflight: not again to prepare the run
    hashed.clear()
    replayed = PathSpec(Backend.REPLAY, replay=store)
    run, _ = prepare_job(replace(config, hailo=replayed), log=lambda _: None)
    assert hashed == [DEMO_ONNX.name, DEMO_ONNX.name]  # the store checked before the work, the run's facts
    hashed.clear()
    with open_path(replayed, run) as path:
        assert path.name == "emulated-hailo"
    assert DEMO_ONNX.name not in hashed  # the store checked against the run's facts, the export not read again


def test_the_emulator_with_the_bbox_only_op_measures_what_it_measures_with_the_nms_op(run):
    """The same emulated heads, the NMS in the HEF or on the host with the same thresholds: the same
    detections within float rounding, so the same mAP and box counts."""
    from harness.pipeline.detect import BboxOnlyPath

    calib = str(Path(run.dataset.root) / "images" / "calib")
    nms_op = PathSpec(Backend.EMULATOR, calibration=calib, calibration_count=3)
    bbox_only = replace(nms_op, bbox_only=True)
    with open_path(bbox_only, run) as path:
        assert isinstance(path, BboxOnlyPath) and path.emulated and "bbox-only op" in path.runtime
    ours, theirs = evaluate_spec(bbox_only, run), evaluate_spec(nms_op, run)
    assert ours.box_counts.total == theirs.box_counts.total > 0
    assert ours.metrics.map50_95 == pytest.approx(theirs.metrics.map50_95, abs=1e-6)


def test_bbox_only_belongs_to_the_emulator():
    with pytest.raises(HarnessError, match=r"--bbox-only belongs to --backend emulator, not --backend onnx"):
        PathSpec(Backend.ONNX, bbox_only=True)


def test_the_trained_yolox_export_keeps_its_onnx_map_on_an_emulated_hef_of_8_and_of_16_bit_outputs(tmp_path):
    """tests/support/data/fire_smoke_yolox_256.onnx (MODEL_CARD_yolox.md) on the 100 demo images at score 0.2:
    the emulated HEF (the sigmoid on its objectness and class maps, HailoRT's YOLOX op) within 0.03 mAP@0.5 of
    the export's own decoded rows, with 8-bit outputs and with 16-bit ones (measured: 0.8487 ONNX, 0.8345 and
    0.8410 emulated)."""
    from harness.inputs.demo import demo_data

    model = Path(__file__).resolve().parents[1] / "support" / "data" / "fire_smoke_yolox_256.onnx"
    dataset = load_yolo(demo_data(tmp_path / "cache"))
    run = prepare_run(
        model, dataset, SettingsSpec(score_threshold=0.2), tmp_path / "cache", progress=False, log=lambda _: None
    )
    onnx = evaluate_spec(REFERENCE, run).metrics.map50
    emulated = [evaluate_spec(PathSpec(Backend.EMULATOR, output_bits=b), run).metrics.map50 for b in (8, 16)]
    assert onnx > 0.8 and all(abs(onnx - m) < 0.03 for m in emulated), (onnx, emulated)


def test_the_trained_ssd_export_keeps_its_onnx_map_on_an_emulated_hef_of_8_and_of_16_bit_outputs(tmp_path):
    """tests/support/data/fire_smoke_ssd_256.onnx (MODEL_CARD_ssd.md) with its SSD config file on the 100 demo
    images at score 0.2: the emulated HEF (the sigmoid on its class maps, HailoRT's SSD op with the config)
    within 0.03 mAP@0.5 and mAP@0.5:0.95 of the export's own boxes and scores, with 8-bit outputs and with
    16-bit ones (measured: mAP@0.5 0.8576 ONNX, 0.8528 and 0.8514 emulated; mAP@0.5:0.95 0.5356, 0.5271 and
    0.5258)."""
    from harness.inputs.demo import demo_data

    from support.ssd_exports import TRAINED, trained_config

    dataset = load_yolo(demo_data(tmp_path / "cache"))
    settings = SettingsSpec(score_threshold=0.2, ssd=trained_config())
    run = prepare_run(TRAINED, dataset, settings, tmp_path / "cache", progress=False, log=lambda _: None)
    onnx = evaluate_spec(REFERENCE, run).metrics
    emulated = [evaluate_spec(PathSpec(Backend.EMULATOR, output_bits=b), run).metrics for b in (8, 16)]
    measured = [(m.map50, m.map50_95) for m in (onnx, *emulated)]
    assert onnx.map50 > 0.8, measured
    assert all(abs(onnx.map50 - m.map50) < 0.03 and abs(onnx.map50_95 - m.map50_95) < 0.03 for m in emulated), measured
