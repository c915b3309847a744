"""``hailo-harness compile``: --dry-run writes and checks the scripts without the DFC; without --dry-run it
needs the DFC (here the fake) and says what to install when it is missing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from PIL import Image

from harness.backends.dfc.compiler import DfcNotInstalled, calibration_shortfall
from harness.cli.commands import compile as compile_command
from harness.core.errors import HarnessError
from harness.inputs.demo import DEMO_ONNX as DEMO
from harness.inputs.onnx_graph import find_heads, load_model


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
    assert "SKIP  layer_names" in text and "FAIL" not in text
    assert "change_output_activation(UNRESOLVED_cls_stride8, sigmoid)" in alls.read_text()
    assert json.loads(nms.read_text())["classes"] == 2


def test_too_few_calibration_images_for_the_dfcs_optimization_level_is_warned_before_compiling(
    calibration: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(*_base(calibration, tmp_path / "out"), "--dry-run") == 0
    err = capsys.readouterr().err
    assert "warning: 2 calibration images, below the 1024 the Dataflow Compiler wants for optimization level 2" in err
    assert "give --calibration-count 1024 or more images" in err
    assert calibration_shortfall(1024) is None and calibration_shortfall(1023) is not None


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
