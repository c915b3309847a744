"""``hailo-harness compile``: --dry-run writes and checks the scripts without the DFC; without --dry-run it
needs the DFC (here the fake) and says what to install when it is missing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import pytest
from PIL import Image

from harness.backends.dfc.compiler import DfcNotInstalled
from harness.cli.commands import compile as compile_command
from harness.core.errors import HarnessError
from harness.families.yolo26.onnx import find_yolo26_heads
from harness.families.yolov8.onnx import find_heads
from harness.inputs.calibration import calibration_shortfall
from harness.inputs.demo import DEMO26_ONNX as DEMO26
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.onnx_graph import load_model

from support.yolo26_exports import one_to_many_export
from support.yolov5_exports import yolov5_export


@pytest.fixture
def calibration(tmp_path: Path) -> Path:
    folder = tmp_path / "calib"
    folder.mkdir()
    for i in range(2):
        Image.fromarray(np.full((40, 70, 3), 60 * i, dtype=np.uint8)).save(folder / f"{i}.jpg")
    return folder


def _run(*argv: str | Path) -> int:
    parser = argparse.ArgumentParser()
    compile_command.add_arguments(parser)
    return compile_command.run(parser.parse_args([str(a) for a in argv]))


def _base(calibration: Path, out: Path) -> list[str | Path]:
    return ["--onnx", DEMO, "--calibration", calibration, "--calibration-count", "2", "--out", out]


def test_dry_run_writes_both_files_and_marks_the_placeholder_names(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _run(*_base(calibration, out), "--dry-run") == 0
    text = capsys.readouterr().out
    alls, nms = out / "fire_smoke_yolo11n_256.alls", out / "fire_smoke_yolo11n_256_nms_config.json"
    assert f"wrote {alls}" in text and f"wrote {nms}" in text and "layer names: placeholder" in text
    assert "head: the YOLOv8/YOLO11 head (DFL box maps; sigmoid and NMS op compiled in)" in text
    assert "SKIP  layer_names" in text and "FAIL" not in text
    assert "change_output_activation(UNRESOLVED_cls_stride8, sigmoid)" in alls.read_text()
    assert json.loads(nms.read_text())["classes"] == 2


def test_too_few_calibration_images_for_the_dfcs_optimization_level_is_warned_before_compiling(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(*_base(calibration, tmp_path / "out"), "--dry-run") == 0
    err = capsys.readouterr().err
    assert "warning: 2 calibration images, below the 1024 the Dataflow Compiler wants for optimization level 2" in err
    assert "; this set holds no more; 1024 need a larger set (--calibration DIR)" in err  # the folder holds 2
    assert "--calibration-count 1024" not in err
    assert calibration_shortfall(1024) is None and calibration_shortfall(1023) is not None


@pytest.mark.parametrize(
    ("count", "available", "remedy"),
    [
        (64, None, "give --calibration-count 1024 or more images"),
        (64, 5000, "give --calibration-count 1024 or more images"),
        (64, 500, "--calibration-count 500 takes all of it; 1024 need a larger set (--calibration DIR)"),
        (64, 64, "this set holds no more; 1024 need a larger set (--calibration DIR)"),
    ],
)
def test_the_calibration_advice_asks_only_for_what_the_set_can_give(
    count: int, available: int | None, remedy: str
) -> None:
    said = calibration_shortfall(count, available=available)
    assert said is not None and said.endswith(f"(scores and boxes may drift from the float model); {remedy}")


def test_dry_run_with_a_layer_map_uses_the_given_names(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    heads = find_heads(load_model(DEMO))
    layer_map = tmp_path / "names.json"
    layer_map.write_text(json.dumps({h.node: f"conv{51 + i}" for i, h in enumerate(heads)}))
    out = tmp_path / "out"
    assert _run(*_base(calibration, out), "--dry-run", "--layer-map", layer_map) == 0
    assert "PASS  layer_names" in capsys.readouterr().out
    decoders = json.loads((out / "fire_smoke_yolo11n_256_nms_config.json").read_text())["bbox_decoders"]
    assert [d["reg_layer"] for d in decoders] == ["conv51", "conv53", "conv55"]

    layer_map.write_text(json.dumps({h.node: "conv51" for h in heads}))
    with pytest.raises(HarnessError, match="expected a different layer name for each end node"):
        _run(*_base(calibration, out), "--dry-run", "--layer-map", layer_map)


@pytest.mark.parametrize(
    ("option", "text", "words"),
    [
        ("--layer-map", '{"a": "conv1", "a": "conv2"}', "names.json: key 'a' given twice in one object"),
        ("--layer-map", b'{"a": "\xff"}', "names.json: not UTF-8 text (byte 7)"),
        ("--hn", '{"layers": ' + "[" * 100 + "]" * 100 + "}", "names.json: nested deeper than 64 levels"),
        ("--hn", '{"layers": {"x": {"output_shapes": [[-1, 1e400, 2, 3]]}}}', "the number '1e400' is too large"),
    ],
)
def test_a_layer_map_or_hn_json_is_read_strictly_naming_the_file(
    calibration: Path, tmp_path: Path, option: str, text: str | bytes, words: str
) -> None:
    given = tmp_path / "names.json"
    given.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(HarnessError, match=None) as caught:
        _run(*_base(calibration, tmp_path / "out"), "--dry-run", option, given)
    assert words in str(caught.value), str(caught.value)


def test_dry_run_with_the_translated_graph_checks_names_against_it(
    sdk: ModuleType, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = sdk.ClientRunner(hw_arch="hailo8")
    runner.translate_onnx_model(str(DEMO), "demo", end_node_names=[h.node for h in find_heads(load_model(DEMO))])
    hn = tmp_path / "demo.hn"
    hn.write_text(json.dumps(runner.get_hn()))
    assert _run(*_base(calibration, tmp_path / "out"), "--dry-run", "--hn", hn) == 0
    text = capsys.readouterr().out
    assert "layer names: parsed" in text and "PASS  layer_names" in text

    graph = json.loads(hn.read_text())
    graph["layers"]["demo/conv52"]["output_shapes"] = [[-1, 16, 16, 2]]  # the class conv of another grid
    hn.write_text(json.dumps(graph))
    assert _run(*_base(calibration, tmp_path / "out"), "--dry-run", "--hn", hn) == 1
    text = capsys.readouterr().out
    assert (
        "FAIL  decoder_pairing: bbox_decoders[0] pairing: found reg_layer conv51 32x32 with cls_layer conv52 16x16"
        in text
    )


def test_dry_run_refuses_a_calibration_folder_with_too_few_images(calibration: Path, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"2 images, expected at least 5 \(--calibration-count N asks for fewer\)"):
        _run("--onnx", DEMO, "--calibration", calibration, "--calibration-count", "5", "--out", tmp_path, "--dry-run")


def test_compiling_without_the_dfc_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, calibration: Path, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "hailo_sdk_client", None)
    with pytest.raises(DfcNotInstalled, match=r"install the DFC wheel hailo_dataflow_compiler"):
        _run(*_base(calibration, tmp_path / "out"))
    with pytest.raises(HarnessError, match="--hn and --layer-map apply to --dry-run"):
        _run(*_base(calibration, tmp_path / "out"), "--layer-map", tmp_path / "names.json")


def test_compile_with_the_dfc_writes_the_hef_and_reuses_it(
    sdk: ModuleType, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*_base(calibration, tmp_path / "out"), "--hw-arch", "hailo8l", "--cache", tmp_path / "cache"]
    assert _run(*argv) == 0
    hef = tmp_path / "out" / "fire_smoke_yolo11n_256.hef"
    assert hef.read_bytes() == sdk.HEF_BYTES
    assert [kwargs["hw_arch"] for call, kwargs in sdk.CALLS if call == "ClientRunner"] == ["hailo8l"]
    assert f"wrote {hef}\n" in capsys.readouterr().out
    assert _run(*argv) == 0
    assert f"wrote {hef} (from the cache)" in capsys.readouterr().out


def test_compiling_an_int8_export_is_refused_naming_its_quantized_ops_before_the_dfc_is_called(
    sdk: ModuleType, shared_fixtures: Path, calibration: Path, tmp_path: Path
) -> None:
    from harness.core.errors import GraphError

    onnx = shared_fixtures / "onnx" / "yolo11n_coco80_320_int8.onnx"
    argv = ["--onnx", onnx, "--calibration", calibration, "--calibration-count", "2", "--out", tmp_path / "out"]
    with pytest.raises(GraphError, match=r"320_int8.onnx.*holds quantized ops .*expected a float export"):
        _run(*argv, "--cache", tmp_path / "cache")
    assert sdk.CALLS == [] and not (tmp_path / "out").exists()


def test_compile_bbox_only_loads_the_bbox_only_op_into_the_dfc_and_is_refused_for_a_head_without_nms(
    sdk: ModuleType, calibration: Path, tmp_path: Path
) -> None:
    argv = [*_base(calibration, tmp_path / "out"), "--cache", tmp_path / "cache", "--bbox-only"]
    assert _run(*argv) == 0
    (load,) = [kwargs for call, kwargs in sdk.CALLS if call == "load_model_script"]
    assert "meta_arch=yolov8, engine=cpu, bbox_decoding_only=True)" in load["script"]
    assert "bbox_decoding_only=True" in (tmp_path / "out" / "fire_smoke_yolo11n_256.alls").read_text()
    with pytest.raises(HarnessError, match=r"asked for YOLO26's one-to-one head .*, whose HEF has no NMS op"):
        _run(*_base26(calibration, tmp_path / "out26"), "--dry-run", "--bbox-only")


def test_dry_run_of_a_yolov8_fixture_export_writes_its_nms_config(
    shared_fixtures: Path, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture export is Ultralytics' int8 one: its scripts follow from its structure, and the float_export
    check fails (the DFC parses a float export only), the one check that does."""
    onnx = shared_fixtures / "onnx" / "yolov8n_coco80_640_int8.onnx"
    out = tmp_path / "out"
    argv = ["--onnx", onnx, "--calibration", calibration, "--calibration-count", "2", "--out", out, "--dry-run"]
    assert _run(*argv) == 1
    text = capsys.readouterr().out
    assert "head: the YOLOv8/YOLO11 head" in text
    assert [line.split(":")[0] for line in text.splitlines() if line.startswith("FAIL")] == ["FAIL  float_export"]
    assert "holds quantized ops ['ConvInteger', 'DynamicQuantizeLinear'], expected a float export" in text
    assert "end nodes: " + " ".join(h.node for h in find_heads(load_model(onnx))) in text
    config = json.loads((out / "yolov8n_coco80_640_int8_nms_config.json").read_text())
    assert config["classes"] == 80 and config["image_dims"] == [640, 640]
    assert (
        'nms_postprocess("yolov8n_coco80_640_int8_nms_config.json", meta_arch=yolov8'
        in (out / "yolov8n_coco80_640_int8.alls").read_text()
    )


# ---------------------------------------------------------------------------------------------- YOLO26

# ultralytics: ultralytics/engine/exporter.py, export_hailo (end nodes of the one-to-one head, box maps first)
YOLO26_END_NODES = [f"/model.23/one2one_cv{b}.{i}/one2one_cv{b}.{i}.2/Conv" for b in (2, 3) for i in range(3)]
A16_OUTPUTS = "quantization_param([output_layer1, output_layer2, output_layer3, output_layer4, output_layer5, "


def _base26(calibration: Path, out: Path, onnx: Path = DEMO26) -> list[str | Path]:
    return ["--onnx", onnx, "--calibration", calibration, "--calibration-count", "2", "--out", out]


def test_dry_run_of_a_yolo26_export_writes_its_model_script_without_nms(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _run(*_base26(calibration, out), "--dry-run") == 0
    text = capsys.readouterr().out
    alls = out / "fire_smoke_yolo26n_256.alls"
    assert sorted(p.name for p in out.iterdir()) == ["fire_smoke_yolo26n_256.alls", "layer_names.json"]
    assert f"wrote {alls}\nwrote {out / 'layer_names.json'}\n" in text
    assert "head: YOLO26's one-to-one head (one2one_cv2/one2one_cv3; sigmoid and top-k on the host, no NMS)" in text
    assert f"end nodes: {' '.join(YOLO26_END_NODES)}\n" in text
    assert "layer names: placeholder" in text and "SKIP  layer_names" in text and "FAIL" not in text
    for check in ("a16_w16", "no_nms", "no_activation_change", "normalization", "optimization_level", "finetune"):
        assert f"PASS  {check}:" in text
    script = alls.read_text()
    assert A16_OUTPUTS + "output_layer6], precision_mode=a16_w16)" in script
    assert "post_quantization_optimization(finetune, policy=enabled, dataset_size=2)" in script
    assert "nms_postprocess" not in script and "change_output_activation" not in script
    assert list(json.loads((out / "layer_names.json").read_text())) == [
        h.node for h in find_yolo26_heads(load_model(DEMO26))
    ]


def test_dry_run_of_a_yolo26_export_with_the_translated_graph_names_its_output_layers(
    sdk: ModuleType, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = sdk.ClientRunner(hw_arch="hailo8")
    runner.translate_onnx_model(str(DEMO26), "demo26", end_node_names=YOLO26_END_NODES)
    hn = tmp_path / "demo26.hn"
    graph = runner.get_hn()
    for i, conv in enumerate(n for n, layer in graph["layers"].items() if layer["type"] == "conv" and layer["output"]):
        old = graph["layers"][conv]["output"][0]  # number the outputs from 11: the names must come from the graph
        new = f"demo26/output_layer{11 + i}"
        graph["layers"][conv]["output"] = [new]
        graph["layers"][new] = graph["layers"].pop(old)
    hn.write_text(json.dumps(graph))
    out = tmp_path / "out"
    assert _run(*_base26(calibration, out), "--dry-run", "--hn", hn) == 0
    text = capsys.readouterr().out
    assert "layer names: parsed" in text and "PASS  layer_names" in text and "FAIL" not in text
    expected = ", ".join(f"output_layer{11 + i}" for i in range(6))
    script = (out / "fire_smoke_yolo26n_256.alls").read_text()
    assert f"quantization_param([{expected}], precision_mode=a16_w16)" in script


def test_the_head_a_yolo26_export_does_not_carry_is_refused_and_the_one_it_carries_is_compiled(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(
        HarnessError, match=r"found YOLO26's one-to-one head .*Fix: export the model with end2end=False"
    ):
        _run(*_base26(calibration, tmp_path / "out"), "--dry-run", "--head", "one2many")
    with pytest.raises(HarnessError, match=r"head yolo26-one2one asked for, but the export carries the YOLOv8/YOLO11"):
        _run(*_base(calibration, tmp_path / "out"), "--dry-run", "--head", "one2one")

    onnx = tmp_path / "yolo26n_one2many.onnx"
    onnx.write_bytes(one_to_many_export(load_model(DEMO26)).SerializeToString())
    with pytest.raises(HarnessError, match=r"found YOLO26's one-to-many head .*give --head one2many"):
        _run(*_base26(calibration, tmp_path / "out", onnx), "--dry-run")
    capsys.readouterr()
    assert _run(*_base26(calibration, tmp_path / "out", onnx), "--dry-run", "--head", "one2many") == 0
    text = capsys.readouterr().out
    assert "head: YOLO26's one-to-many head (cv2/cv3; sigmoid and NMS on the host)" in text and "FAIL" not in text
    assert "end nodes: /model.23/cv2.0/cv2.0.2/Conv /model.23/cv2.1/cv2.1.2/Conv" in text


def test_compile_of_a_yolo26_export_with_the_dfc_loads_its_script_and_keeps_16_bit_outputs(
    sdk: ModuleType, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _run(*_base26(calibration, out), "--cache", tmp_path / "cache") == 0
    assert "head: YOLO26's one-to-one head" in capsys.readouterr().out
    (translate,) = [kwargs for call, kwargs in sdk.CALLS if call == "translate_onnx_model"]
    assert translate["end_node_names"] == YOLO26_END_NODES
    (load,) = [kwargs for call, kwargs in sdk.CALLS if call == "load_model_script"]
    assert load["script"] == (out / "fire_smoke_yolo26n_256.alls").read_text()
    assert (out / "fire_smoke_yolo26n_256.hef").read_bytes() == sdk.HEF_BYTES
    assert not list(out.glob("*nms_config.json"))

    # Each emulated output is within one 16-bit step (its calibrated range / 65535) of the float one, far
    # below half an 8-bit step.
    har = sdk.ClientRunner(har=str(out / "fire_smoke_yolo26n_256_optimized.har"))
    frames = np.random.default_rng(0).integers(0, 256, (2, 256, 256, 3)).astype(np.float32)
    native = har.infer(sdk.InferenceContext.SDK_NATIVE, frames)
    quantized = har.infer(sdk.InferenceContext.SDK_QUANTIZED, frames)
    for (low, high), n, q in zip(har._emulation["ranges"], native, quantized, strict=True):
        inside = (n >= low) & (n <= high)
        error = np.abs(n - q)[inside].max()
        assert error <= (high - low) / sdk.LEVELS_16

    runner = sdk.ClientRunner(hw_arch="hailo8")
    runner.translate_onnx_model(str(DEMO26), "demo26", end_node_names=YOLO26_END_NODES)
    with pytest.raises(sdk.AllocatorScriptParserException, match=r"\['output_layer7'\] are not in the network"):
        runner.load_model_script(A16_OUTPUTS + "output_layer7], precision_mode=a16_w16)\n")


# ---------------------------------------------------------------------------------------------- YOLOv5

YOLOV5_END_NODES = [f"/model.24/m.{i}/Conv" for i in range(3)]  # tests/support/yolov5_exports.py, as YOLOv5 names them
# Autoanchored: YOLOv5's defaults moved, in fractions of a pixel.
AUTOANCHORS = (
    ((11.6, 14.3), (18.2, 33.9), (37.5, 25.1)),
    ((33.4, 66.8), (70.2, 49.6), (64.1, 131.7)),
    ((126.3, 97.4), (171.8, 214.2), (390.5, 347.9)),
)


@pytest.fixture
def yolov5(tmp_path: Path) -> Path:
    path = tmp_path / "fire_yolov5s_64.onnx"
    onnx.save(yolov5_export(64, 2, AUTOANCHORS), path)
    return path


def test_dry_run_of_a_yolov5_export_writes_its_model_script_and_nms_config_with_its_anchors(
    yolov5: Path, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _run(*_base26(calibration, out, yolov5), "--dry-run") == 0
    text = capsys.readouterr().out
    alls, nms = out / "fire_yolov5s_64.alls", out / "fire_yolov5s_64_nms_config.json"
    assert sorted(p.name for p in out.iterdir()) == [alls.name, nms.name, "layer_names.json"]
    assert f"wrote {alls}\nwrote {nms}\nwrote {out / 'layer_names.json'}\n" in text
    assert "head: the YOLOv5/YOLOv7 anchored head (one map of anchors x (5 + nc) channels per stride" in text
    assert f"end nodes: {' '.join(YOLOV5_END_NODES)}\n" in text
    assert "layer names: placeholder" in text and "SKIP  layer_names" in text and "FAIL" not in text
    for check in (
        "nms_keys",
        "image_dims",
        "classes",
        "decoder_strides",
        "encoded_layer",
        "sigmoid",
        "nms_postprocess",
    ):
        assert f"PASS  {check}:" in text
    assert (
        "PASS  anchors: every decoder holds its stride's anchors of the export, in order, (w, h) in whole pixels; "
        in (text)
    )
    assert "rounded to whole pixels from the export's stride 8 [(11.6, 14.3), (18.2, 33.9), (37.5, 25.1)]" in text
    assert alls.read_text() == (
        "normalization1 = normalization([0.0, 0.0, 0.0], [255.0, 255.0, 255.0])\n"
        "change_output_activation(sigmoid)\n"
        'nms_postprocess("fire_yolov5s_64_nms_config.json", meta_arch=yolov5, engine=cpu)\n'
    )
    config = json.loads(nms.read_text())
    assert config["classes"] == 2 and config["image_dims"] == [64, 64]
    assert [(d["stride"], d["w"], d["h"], d["encoded_layer"]) for d in config["bbox_decoders"]] == [
        (8, [12, 18, 38], [14, 34, 25], "UNRESOLVED_encoded_stride8"),
        (16, [33, 70, 64], [67, 50, 132], "UNRESOLVED_encoded_stride16"),
        (32, [126, 172, 390], [97, 214, 348], "UNRESOLVED_encoded_stride32"),
    ]
    assert list(json.loads((out / "layer_names.json").read_text())) == YOLOV5_END_NODES


def test_dry_run_of_a_yolov5_export_with_a_layer_map_or_the_translated_graph_checks_the_encoded_layers(
    sdk: ModuleType, yolov5: Path, calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layer_map = tmp_path / "names.json"
    layer_map.write_text(json.dumps(dict(zip(YOLOV5_END_NODES, ("conv55", "conv63", "conv70"), strict=True))))
    out = tmp_path / "out"
    assert _run(*_base26(calibration, out, yolov5), "--dry-run", "--layer-map", layer_map) == 0
    assert "PASS  layer_names" in capsys.readouterr().out
    decoders = json.loads((out / "fire_yolov5s_64_nms_config.json").read_text())["bbox_decoders"]
    assert [(d["name"], d["encoded_layer"]) for d in decoders] == [
        ("bbox_decoder55", "conv55"),
        ("bbox_decoder63", "conv63"),
        ("bbox_decoder70", "conv70"),
    ]

    runner = sdk.ClientRunner(hw_arch="hailo8")
    runner.translate_onnx_model(str(yolov5), "v5", end_node_names=YOLOV5_END_NODES)
    graph = runner.get_hn()
    graph["layers"]["v5/conv52"]["output_shapes"] = [[-1, 4, 4, 14]]  # stride 16's head conv with two anchors
    hn = tmp_path / "v5.hn"
    hn.write_text(json.dumps(graph))
    assert _run(*_base26(calibration, out, yolov5), "--dry-run", "--hn", hn) == 1
    text = capsys.readouterr().out
    assert "layer names: parsed" in text and "PASS  layer_names" in text
    assert (
        "FAIL  encoded_layer: bbox_decoders[1].encoded_layer conv52: found grid 4x4, 14 channels, expected the head "
        "conv of stride 16: grid 4x4, 21 channels (3 anchors x (5 + 2 classes))"
    ) in text


def test_a_yolov5_export_takes_no_head_and_is_cut_at_its_head_convolutions(
    yolov5: Path, calibration: Path, tmp_path: Path
) -> None:
    with pytest.raises(HarnessError, match=r"head yolo26-one2one asked for, but the export carries the YOLOv5/YOLOv7"):
        _run(*_base26(calibration, tmp_path / "out", yolov5), "--dry-run", "--head", "one2one")
    with pytest.raises(HarnessError, match=r"a YOLOv5/YOLOv7 export is cut at its head convolutions"):
        _run(*_base26(calibration, tmp_path / "out", yolov5), "--dry-run", "--end-nodes", YOLOV5_END_NODES[0])
    assert _run(*_base26(calibration, tmp_path / "out", yolov5), "--dry-run", "--end-nodes", *YOLOV5_END_NODES) == 0


def test_dry_run_of_an_ssd_export_takes_its_ssd_config_and_refuses_the_export_without_it(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import onnx

    from support.ssd_exports import ANCHORS, ssd_export

    export, config = tmp_path / "ssd.onnx", tmp_path / "ssd.json"
    onnx.save(ssd_export(side=64, nc=3, seed=3), export)
    decoders = [{"w": [w for w, _ in layer], "h": [h for _, h in layer]} for layer in ANCHORS]
    config.write_text(
        json.dumps(
            {
                "centers_scale_factor": 10,
                "bbox_dimensions_scale_factor": 5,
                "bbox_decoders": decoders,
                "background_removal_index": 0,
            }
        )
    )
    argv = ["--onnx", export, "--calibration", calibration, "--calibration-count", "2", "--out", tmp_path / "out"]
    assert _run(*argv, "--dry-run", "--ssd-config", config) == 0
    text = capsys.readouterr().out
    assert "head: the SSD head" in text and "PASS  anchors" in text and "FAIL" not in text
    assert json.loads((tmp_path / "out" / "ssd_nms_config.json").read_text())["classes"] == 3
    with pytest.raises(HarnessError, match=r"give them in an SSD config file \(--ssd-config FILE"):
        _run(*argv, "--dry-run")
