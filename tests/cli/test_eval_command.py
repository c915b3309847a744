"""``hailo-harness eval`` on a real export and the 16 COCO images."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
from pathlib import Path

import pytest
import yaml
from PIL import Image

from harness.backends.dfc import CompileRequest, compile_hef
from harness.backends.onnx.runner import FullHeadRunner
from harness.cli import main as cli
from harness.cli.commands.eval import coco_image_id, write_json
from harness.core.errors import HarnessError
from harness.inputs.dataset_yolo import load_yolo
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.synthetic import Recipe, write_dataset

MODEL = "yolo11n_coco80_320_int8.onnx"


@pytest.fixture(autouse=True)
def command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(cli.COMMANDS, "eval", "harness.cli.commands.eval")
    monkeypatch.chdir(tmp_path)  # the default cache folder lands here, if anywhere


@pytest.fixture(scope="module")
def model(shared_fixtures: Path) -> str:
    return os.fspath(shared_fixtures / "onnx" / MODEL)


@pytest.fixture(scope="module")
def dataset(shared_fixtures: Path) -> str:
    return os.fspath(shared_fixtures / "datasets/coco128_val16/config.yaml")


def test_eval_prints_json_metrics_and_writes_coco_predictions(model, dataset, tmp_path, capsys):
    saved = tmp_path / "predictions.json"
    argv = ["eval", "--onnx", model, "--dataset", dataset, "--json", "--save-predictions", str(saved)]
    assert cli.main([*argv, "--cache", str(tmp_path / "cache")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["path"], result["emulated"], result["n_images"]) == ("onnx", False, 16)
    assert result["settings"]["input_hw"] == [320, 320] and result["settings"]["score_threshold"] == 0.2
    assert 0.2 < result["metrics"]["map50"] < 1 and result["metrics"]["map50_95"] < result["metrics"]["map50"]
    assert result["provenance"]["dataset_manifest"] and "onnxruntime" in result["provenance"]["environment"]
    rows = json.loads(saved.read_text())
    assert len(rows) == result["box_counts"]["total"] > 16
    sizes = {int(p.stem): Image.open(p).size for p in (Path(dataset).parent / "images/val2017").glob("*.jpg")}
    for row in rows:
        width, height = sizes[row["image_id"]]
        x, y, w, h = row["bbox"]
        assert 0 <= x and 0 <= y and w > 0 and h > 0 and x + w <= width + 1e-3 and y + h <= height + 1e-3
        assert 0 <= row["category_id"] < 80 and 0.2 <= row["score"] <= 1


def test_eval_rerun_answers_from_the_cache_without_inference(model, dataset, tmp_path, capsys, monkeypatch):
    argv = ["eval", "--onnx", model, "--dataset", dataset, "--cache", str(tmp_path / "cache")]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out

    def no_inference(self, feed):
        raise AssertionError("inference on a cached image")

    monkeypatch.setattr(FullHeadRunner, "infer", no_inference)
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == first


def test_eval_text_report_states_settings_metrics_and_classes(model, dataset, capsys):
    assert cli.main(["eval", "--onnx", model, "--dataset", dataset, "--no-cache", "--nms", "ultralytics"]) == 0
    out = capsys.readouterr().out
    assert "eval onnx: " in out and "(16 images)" in out
    assert "settings: letterbox 320x320, ultralytics NMS, score threshold 0.2, IoU threshold 0.7" in out
    assert "mAP@0.5 0." in out and "\nperson " in out
    assert not Path(".harness-cache").exists()


def test_eval_hailort_backend_without_hailort_says_so_and_names_the_emulator(model, dataset, capsys, shared_fixtures):
    if importlib.util.find_spec("hailo_platform") is not None:
        pytest.skip("HailoRT is installed here")
    hef = shared_fixtures / "hef" / "hailo8_mnist_cnn.hef"  # read for compiled NMS thresholds: it has none
    assert cli.main(["eval", "--hef", str(hef), "--dataset", dataset]) == 2
    assert "needs --onnx M.onnx (the model's export, for its class names)" in capsys.readouterr().err
    assert cli.main(["eval", "--hef", str(hef), "--onnx", model, "--dataset", dataset, "--backend", "hailort"]) == 2
    err = capsys.readouterr().err
    assert "hailo_platform, HailoRT's Python wheel, which is not installed" in err and "--backend emulator" in err


def _renamed_dataset(root: Path, source: str, names: list[str]) -> Path:
    """Three of the images (linked) with their labels, under other class names."""
    images, labels = root / "images", root / "labels"
    images.mkdir(parents=True)
    labels.mkdir()
    for image in sorted((Path(source).parent / "images/val2017").glob("*.jpg"))[:3]:
        (images / image.name).symlink_to(image)
        label = Path(source).parent / "labels/val2017" / f"{image.stem}.txt"
        kept = [line for line in label.read_text().splitlines() if line.split()[0] in ("0", "1")]
        (labels / label.name).write_text("\n".join(kept) + "\n")
    (root / "data.yaml").write_text(yaml.safe_dump({"names": names}))
    return root


def test_eval_refuses_other_class_names_unless_mapped(model, dataset, tmp_path, capsys):
    data = str(_renamed_dataset(tmp_path / "d", dataset, ["human", "bicycle"]))
    assert cli.main(["eval", "--onnx", model, "--dataset", data, "--no-cache"]) == 2
    advice = "different names; map each dataset class the model lacks with --map-class DATASET=MODEL"
    assert advice in capsys.readouterr().err
    assert cli.main(["eval", "--onnx", model, "--dataset", data, "--no-cache", "--map-class", "human=person"]) == 0
    with pytest.raises(SystemExit) as exited:  # refused by the parser, before anything runs
        cli.main(["eval", "--onnx", model, "--dataset", data, "--no-cache", "--map-class", "human"])
    assert exited.value.code == 2
    assert "argument --map-class: 'human': expected DATASET_NAME=MODEL_NAME" in capsys.readouterr().err


def test_eval_emulator_backend_refuses_a_calibration_folder_that_is_not_one(model, dataset, tmp_path, capsys):
    argv = ["eval", "--onnx", model, "--backend", "emulator", "--dataset", dataset, "--calibration", "nope"]
    assert cli.main([*argv, "--cache", str(tmp_path)]) == 2
    assert (
        "--calibration nope: not a folder of images nor a list file (*.txt) of them (or 'in-domain' / 'off-domain')"
        in capsys.readouterr().err
    )


def test_calibration_belongs_to_the_emulator_backend(model, dataset, capsys):
    assert cli.main(["eval", "--onnx", model, "--dataset", dataset, "--calibration", "calib"]) == 2
    assert "--calibration belongs to --backend emulator, not --backend onnx" in capsys.readouterr().err


def test_coco_image_id_is_the_numeric_stem_or_the_dataset_id():
    assert coco_image_id("images/val2017/000000000802.jpg") == 802
    assert coco_image_id("images/val/fire_01.jpg") == "images/val/fire_01.jpg"


def test_eval_emulator_backend_runs_the_emulated_hef_with_raw_heads_or_its_nms(tmp_path, capsys):
    write_dataset(tmp_path / "syn", Recipe(seed=5, train=0, val=4, calib=4))
    base = ["eval", "--onnx", str(DEMO), "--dataset", str(tmp_path / "syn" / "data.yaml"), "--json"]
    emulator = [
        "--backend",
        "emulator",
        "--calibration",
        str(tmp_path / "syn/images/calib"),
        "--calibration-count",
        "4",
    ]
    results = {}
    for variant in (["--no-sigmoid-inside", "--no-hef-nms"], []):  # default: both compiled in, as a HEF is
        assert cli.main([*base, *emulator, *variant, "--cache", str(tmp_path / "cache")]) == 0
        results[not variant] = json.loads(capsys.readouterr().out)
    raw, nms = results[False], results[True]
    assert raw["label"] == nms["label"] == "emulated-hailo (emulated)" and raw["emulated"] is True
    assert raw["cells"]["cells"] == 4 * (32 * 32 + 16 * 16 + 8 * 8) and nms["cells"] is None
    assert raw["n_images"] == nms["n_images"] == 4
    assert len(list((tmp_path / "cache").glob("predictions/emulated-hailo-*.bin"))) == 2


def test_eval_dfc_backend_runs_each_emulation_stage_of_the_har(tmp_path, capsys, sdk):
    write_dataset(tmp_path / "syn", Recipe(seed=5, train=0, val=4, calib=4))
    request = CompileRequest(DEMO, tmp_path / "syn/images/calib", calibration_count=4)
    har = compile_hef(request, tmp_path / "out", cache_root=tmp_path / "dfc").har
    base = ["eval", "--onnx", str(DEMO), "--dataset", str(tmp_path / "syn" / "data.yaml"), "--json", "--no-cache"]
    results = {}
    for stage in ("fp_optimized", "quantized"):
        assert cli.main([*base, "--har", str(har), "--stage", stage]) == 0
        results[stage] = json.loads(capsys.readouterr().out)
    assert cli.main([*base, "--backend", "onnx"]) == 0
    onnx = json.loads(capsys.readouterr().out)
    assert results["fp_optimized"]["label"] == "dfc-fp-optimized (emulated)"
    assert results["quantized"]["path"] == "dfc-quantized" and results["quantized"]["fps"] is None
    assert results["fp_optimized"]["metrics"]["map50"] == pytest.approx(onnx["metrics"]["map50"], abs=1e-6)
    assert results["quantized"]["provenance"]["model_path"] == str(har)


def test_eval_refuses_device_and_har_options_of_another_backend(capsys):
    base = ["eval", "--onnx", str(DEMO), "--dataset", "d"]
    assert cli.main([*base, "--hailo-device", "0000:01:00.0"]) == 2
    assert "--hailo-device belongs to --backend hailort, not --backend onnx" in capsys.readouterr().err
    assert cli.main([*base, "--har", "m.har", "--backend", "emulator"]) == 2
    assert "--har belongs to --backend dfc, not --backend emulator" in capsys.readouterr().err
    assert cli.main([*base, "--backend", "dfc"]) == 2
    assert "--backend dfc: needs --har M.har" in capsys.readouterr().err


def test_eval_dfc_backend_refuses_a_har_compiled_at_other_thresholds(tmp_path, capsys, sdk):
    write_dataset(tmp_path / "syn", Recipe(seed=5, train=0, val=1, calib=2))
    request = CompileRequest(DEMO, tmp_path / "syn/images/calib", calibration_count=2)
    har = compile_hef(request, tmp_path / "out", cache_root=tmp_path / "dfc").har
    argv = ["eval", "--onnx", str(DEMO), "--dataset", str(tmp_path / "syn"), "--har", str(har)]
    assert cli.main([*argv, "--score-threshold", "0.001"]) == 2
    assert "the evaluation is at 0.001 / 0.7" in capsys.readouterr().err


def test_eval_reads_a_coco_dataset_with_its_image_folder_and_measures_what_the_yolo_layout_gives(tmp_path, capsys):
    write_dataset(tmp_path / "syn", Recipe(seed=6, train=0, val=4, calib=0))
    yolo = load_yolo(tmp_path / "syn")
    coco = {
        "images": [
            {"id": i, "file_name": Path(s.image_id).name, "height": s.original_hw[0], "width": s.original_hw[1]}
            for i, s in enumerate(yolo.samples)
        ],
        "categories": [{"id": k + 1, "name": name} for k, name in enumerate(yolo.names)],
        "annotations": [
            {"id": 100 * i + j, "image_id": i, "category_id": int(c) + 1, "bbox": [x0, y0, x1 - x0, y1 - y0]}
            for i, s in enumerate(yolo.samples)
            for j, ((x0, y0, x1, y1), c) in enumerate(
                zip(s.ground_truth.boxes.tolist(), s.ground_truth.class_ids, strict=True)
            )
        ],
    }
    (tmp_path / "val.json").write_text(json.dumps(coco))
    base = ["eval", "--onnx", str(DEMO), "--no-cache", "--json"]
    assert cli.main([*base, "--dataset", str(tmp_path / "syn")]) == 0
    from_yolo = json.loads(capsys.readouterr().out)
    assert cli.main([*base, "--dataset", str(tmp_path / "val.json"), "--images", str(tmp_path / "syn/images/val")]) == 0
    from_coco = json.loads(capsys.readouterr().out)
    assert from_coco["metrics"]["map50"] == pytest.approx(from_yolo["metrics"]["map50"], abs=1e-6)
    assert from_coco["n_images"] == 4 and from_coco["box_counts"] == from_yolo["box_counts"]
    assert cli.main([*base, "--dataset", str(tmp_path / "val.json")]) == 2
    assert "a COCO annotations file needs --images DIR" in capsys.readouterr().err


def test_eval_of_a_hef_with_a_compiled_nms_is_held_at_its_compiled_thresholds_unless_told_otherwise(
    model, dataset, tmp_path, capsys
):
    """A HEF whose NMS op keeps score >= 0.25 has nothing below it: the evaluation takes its thresholds
    (and says so) when none is given, and the given one otherwise."""
    from harness.pipeline.factory import compiled_thresholds, load_dataset, prepare_run
    from harness.pipeline.spec import Backend, CompiledThresholds, PathSpec, SettingsSpec

    assert compiled_thresholds(PathSpec(Backend.ONNX)) is None
    compiled = CompiledThresholds(0.25, 0.6, "NMS op compiled into m.hef")
    data = load_dataset(dataset)
    lines: list[str] = []
    run = prepare_run(model, data, SettingsSpec(), tmp_path, log=lines.append)
    assert (run.settings.score_threshold, run.settings.iou_threshold) == (0.2, 0.7)
    assert run.thresholds == "score threshold 0.2, IoU threshold 0.7 (the defaults)"
    resolved = SettingsSpec().resolve((256, 256), (), compiled)
    assert (resolved.score_threshold, resolved.iou_threshold) == (0.25, 0.6)
    told = SettingsSpec(score_threshold=0.001).resolve((256, 256), (), compiled)
    assert (told.score_threshold, told.iou_threshold) == (0.001, 0.6)


def test_predictions_that_cannot_be_saved_keep_the_old_file_and_are_refused_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = tmp_path / "predictions.json"
    saved.write_text("[]\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(HarnessError, match=r"--save-predictions '.*predictions.json': cannot be written \(No space"):
        write_json(saved, [{"image_id": 1}])
    monkeypatch.undo()
    assert saved.read_text() == "[]\n" and [p.name for p in tmp_path.iterdir()] == ["predictions.json"]


def test_eval_takes_an_ssd_export_with_its_config_on_the_onnx_and_emulated_paths_and_refuses_it_otherwise(
    tmp_path, capsys
):
    import onnx

    from support.ssd_exports import config_document, ssd_export

    write_dataset(tmp_path / "syn", Recipe(seed=5, train=0, val=4, calib=4))
    export, config = tmp_path / "ssd.onnx", tmp_path / "ssd.yaml"
    onnx.save(ssd_export(), export)
    config.write_text(yaml.safe_dump(config_document()))
    base = ["eval", "--onnx", str(export), "--dataset", str(tmp_path / "syn" / "data.yaml"), "--json"]
    base += ["--cache", str(tmp_path / "cache")]
    emulated = [
        "--backend",
        "emulator",
        "--calibration",
        str(tmp_path / "syn/images/calib"),
        "--calibration-count",
        "4",
    ]
    results = {}
    for backend in (["--backend", "onnx"], emulated):
        assert cli.main([*base, "--ssd-config", str(config), *backend]) == 0
        results[backend[1]] = json.loads(capsys.readouterr().out)
    assert results["onnx"]["label"] == "onnx" and results["emulator"]["label"] == "emulated-hailo (emulated)"
    assert results["onnx"]["n_images"] == results["emulator"]["n_images"] == 4
    assert cli.main([*base, "--backend", "onnx"]) == 2  # no config: refused naming the option
    assert "--ssd-config FILE" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**config_document(), "centers_scale_factor": 0}))
    with pytest.raises(SystemExit) as usage:
        cli.main([*base, "--ssd-config", str(bad)])
    assert usage.value.code == 2 and f"{bad}: field centers_scale_factor" in capsys.readouterr().err
    demo = ["eval", "--onnx", str(DEMO), "--dataset", str(tmp_path / "syn" / "data.yaml"), "--ssd-config", str(config)]
    assert cli.main([*demo, "--cache", str(tmp_path / "cache")]) == 2
    assert "an SSD config (--ssd-config) given for an export that is not SSD" in capsys.readouterr().err


@pytest.mark.parametrize("given", [["--hef", "BADFOLDER"], ["--hef", "BADFOLDER/model.hef"], ["--hef", "missing.hef"]])
def test_eval_refuses_a_hef_without_its_export_before_any_image_is_read_or_made(given, tmp_path, capsys, monkeypatch):
    from harness.pipeline import factory

    def read(*args, **kwargs):
        raise AssertionError("the dataset was read (or the demo set made) before the refusal")

    monkeypatch.setattr(factory, "load_dataset", read)
    monkeypatch.setattr(factory, "demo_set", read)
    (tmp_path / "BADFOLDER").mkdir()
    (tmp_path / "BADFOLDER" / "model.hef").write_bytes(b"not a HEF\n")  # no metadata.yaml beside it
    assert cli.main(["eval", *given, "--cache", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--hef" in err
